/* Lesson 10's reference: one step of speculative decoding on the CPU in double precision, reading
 * K and V through the block table. A plain two-pass softmax per (row, head), no tiles and no
 * online rescaling: the answer every version and the CPU model are checked against. The heads of
 * a KV group are done together, so that each key and value row is read once for all of them, and
 * the scores of the first pass are kept for the second. See l10_reference() in serving_decode.h. */
#include <math.h>
#include <stdlib.h>

#include "paging.h" /* l07_kv_offset(): the page-table address (lesson 07) */
#include "serving_decode.h"

static int clamp_int(int x, int lo, int hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* Draft token i of sequence b, the G query heads of KV head g: o and lse of their rows. Each key
 * and value row is read once for the G heads. sc: G x max_seq_kv doubles of scratch (the scores
 * of pass 1, kept for pass 2), acc: G x (dim + 2) (O's sums, then each head's max and sum). */
static void reference_group(const l10_step *s, const float *q, const int *q_start,
                            const int *q_lens, const uint32_t *tree, const float *k_cache,
                            const float *v_cache, const int *block_table, const int *seq_lens,
                            int b, int i, int g, double *sc, double *acc, float *o, float *lse) {
  const int dim = s->dim, G = s->heads / s->kv_heads, n_max = s->max_seq_kv;
  /* The lengths clamped as the kernels clamp them. */
  const int q_b = clamp_int(q_lens[b], 1, s->max_q);
  const int n_b = clamp_int(seq_lens[b], q_b, s->max_seq_kv);
  const size_t r = (size_t)q_start[b] + (size_t)i; /* the token's row of q, o and lse */
  const uint32_t bits = s->mask == L10_MASK_TREE ? tree[r] : 0u;
  const int *table = block_table + (size_t)b * s->max_blocks;
  double *m = acc + (size_t)G * dim, *l = m + G;    /* each head's largest score, its sum */
  const size_t row0 = r * s->heads + (size_t)g * G; /* the group's first head in o and lse */

  /* Pass 1: every score the token sees (the same keys for all G heads), each head's largest. */
  for (int h = 0; h < G; ++h) m[h] = -INFINITY;
  for (int j = 0; j < n_b; ++j) {
    if (!l10_sees(s->mask, bits, i, q_b, n_b, j)) continue;
    const float *kj = k_cache + l07_kv_offset(table, s->block_size, s->kv_heads, dim, j, g, 0);
    for (int h = 0; h < G; ++h) {
      const float *qr = q + (row0 + h) * dim;
      double dot = 0.0;
      for (int d = 0; d < dim; ++d) dot += (double)qr[d] * (double)kj[d];
      const double score = dot * (double)s->scale;
      sc[(size_t)h * n_max + j] = score;
      if (score > m[h]) m[h] = score;
    }
  }
  if (m[0] == -INFINITY) { /* it sees no key (a tree word with no bit, and no key before the
                              drafts): every head of the group alike */
    for (int h = 0; h < G; ++h) {
      for (int d = 0; d < dim; ++d) o[(row0 + h) * dim + d] = 0.0f;
      lse[row0 + h] = -INFINITY;
    }
    return;
  }
  /* Pass 2: the weights exp(score - max), their sum, and the weighted sum of V. */
  for (int h = 0; h < G; ++h) l[h] = 0.0;
  for (size_t e = 0; e < (size_t)G * dim; ++e) acc[e] = 0.0;
  for (int j = 0; j < n_b; ++j) {
    if (!l10_sees(s->mask, bits, i, q_b, n_b, j)) continue;
    const float *vj = v_cache + l07_kv_offset(table, s->block_size, s->kv_heads, dim, j, g, 0);
    for (int h = 0; h < G; ++h) {
      const double p = exp(sc[(size_t)h * n_max + j] - m[h]);
      double *ah = acc + (size_t)h * dim;
      l[h] += p;
      for (int d = 0; d < dim; ++d) ah[d] += p * (double)vj[d];
    }
  }
  for (int h = 0; h < G; ++h) {
    for (int d = 0; d < dim; ++d)
      o[(row0 + h) * dim + d] = (float)(acc[(size_t)h * dim + d] / l[h]);
    lse[row0 + h] = (float)(m[h] + log(l[h])); /* natural log */
  }
}

int l10_reference(const l10_step *s, const float *q, const int *q_start, const int *q_lens,
                  const uint32_t *tree, const float *k_cache, const float *v_cache,
                  const int *block_table, const int *seq_lens, const unsigned char *row_mask,
                  float *o, float *lse) {
  /* Every (sequence, draft token, KV head) that can exist; tokens beyond a sequence's count
   * skip. */
  const int G = s->heads / s->kv_heads;
  const long per_seq = (long)s->max_q * s->kv_heads;
  const long total = (long)s->batch * per_seq;
#pragma omp parallel
  {
    double *sc = (double *)malloc(sizeof(double) * (size_t)G * (size_t)s->max_seq_kv + 1);
    double *acc = (double *)malloc(sizeof(double) * (size_t)G * ((size_t)s->dim + 2));
#pragma omp for schedule(dynamic, 1)
    for (long t = 0; t < total; ++t) {
      const int b = (int)(t / per_seq), i = (int)(t % per_seq / s->kv_heads);
      const int g = (int)(t % s->kv_heads);
      if (i >= clamp_int(q_lens[b], 1, s->max_q)) continue;
      const size_t r = (size_t)q_start[b] + (size_t)i;
      if (row_mask && !row_mask[r]) continue;
      if (!sc || !acc) { /* out of memory: rows no check can pass */
        for (int h = g * G; h < (g + 1) * G; ++h) {
          for (int d = 0; d < s->dim; ++d) o[(r * s->heads + h) * s->dim + d] = NAN;
          lse[r * s->heads + h] = NAN;
        }
        continue;
      }
      reference_group(s, q, q_start, q_lens, tree, k_cache, v_cache, block_table, seq_lens, b, i, g,
                      sc, acc, o, lse);
    }
    free(sc), free(acc);
  }
  return 0;
}
