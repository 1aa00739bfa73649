/* Lesson 10's reference: one step of speculative decoding on the CPU in double precision, reading
 * K and V through the block table. A plain two-pass softmax per (row, head), no tiles and no
 * online rescaling: the answer every version and the CPU model are checked against. See
 * l10_reference() in serving_decode.h. */
#include <math.h>
#include <stdlib.h>

#include "paging.h" /* l07_kv_offset(): the page-table address (lesson 07) */
#include "serving_decode.h"

static int clamp_int(int x, int lo, int hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* Draft token i of sequence b, query head h: o and lse of its row. acc: dim doubles of scratch. */
static void reference_row(const l10_step *s, const float *q, const int *q_start, const int *q_lens,
                          const uint32_t *tree, const float *k_cache, const float *v_cache,
                          const int *block_table, const int *seq_lens, int b, int i, int h,
                          double *acc, float *o, float *lse) {
  const int dim = s->dim, g = h / (s->heads / s->kv_heads); /* the KV head this head reads */
  /* The lengths clamped as the kernels clamp them. */
  const int q_b = clamp_int(q_lens[b], 1, s->max_q);
  const int n_b = clamp_int(seq_lens[b], q_b, s->max_seq_kv);
  const size_t r = (size_t)q_start[b] + (size_t)i; /* the token's row of q, o and lse */
  const uint32_t bits = s->mask == L10_MASK_TREE ? tree[r] : 0u;
  const int *table = block_table + (size_t)b * s->max_blocks;
  const float *qr = q + (r * s->heads + h) * dim;
  float *orow = o + (r * s->heads + h) * dim;

  /* Pass 1: the largest score among the keys the token sees. */
  double m = -INFINITY;
  for (int j = 0; j < n_b; ++j) {
    if (!l10_sees(s->mask, bits, i, q_b, n_b, j)) continue;
    const float *kj = k_cache + l07_kv_offset(table, s->block_size, s->kv_heads, dim, j, g, 0);
    double dot = 0.0;
    for (int d = 0; d < dim; ++d) dot += (double)qr[d] * (double)kj[d];
    const double sc = dot * (double)s->scale;
    if (sc > m) m = sc;
  }
  if (m == -INFINITY) { /* it sees no key (a tree word with no bit, and no key before the drafts) */
    for (int d = 0; d < dim; ++d) orow[d] = 0.0f;
    lse[r * s->heads + h] = -INFINITY;
    return;
  }
  /* Pass 2: the weights exp(score - max), their sum, and the weighted sum of V. */
  double l = 0.0;
  for (int d = 0; d < dim; ++d) acc[d] = 0.0;
  for (int j = 0; j < n_b; ++j) {
    if (!l10_sees(s->mask, bits, i, q_b, n_b, j)) continue;
    const size_t off = l07_kv_offset(table, s->block_size, s->kv_heads, dim, j, g, 0);
    const float *kj = k_cache + off, *vj = v_cache + off;
    double dot = 0.0;
    for (int d = 0; d < dim; ++d) dot += (double)qr[d] * (double)kj[d];
    const double p = exp(dot * (double)s->scale - m);
    l += p;
    for (int d = 0; d < dim; ++d) acc[d] += p * (double)vj[d];
  }
  for (int d = 0; d < dim; ++d) orow[d] = (float)(acc[d] / l);
  lse[r * s->heads + h] = (float)(m + log(l)); /* natural log */
}

int l10_reference(const l10_step *s, const float *q, const int *q_start, const int *q_lens,
                  const uint32_t *tree, const float *k_cache, const float *v_cache,
                  const int *block_table, const int *seq_lens, const unsigned char *row_mask,
                  float *o, float *lse) {
  /* Every (sequence, draft token, head) that can exist; tokens beyond a sequence's count skip. */
  const long per_seq = (long)s->max_q * s->heads;
  const long total = (long)s->batch * per_seq;
#pragma omp parallel
  {
    double *acc = (double *)malloc(sizeof(double) * (size_t)(s->dim > 0 ? s->dim : 1));
#pragma omp for schedule(dynamic, 8)
    for (long t = 0; t < total; ++t) {
      const int b = (int)(t / per_seq), i = (int)(t % per_seq / s->heads);
      const int h = (int)(t % s->heads);
      if (i >= clamp_int(q_lens[b], 1, s->max_q)) continue;
      const size_t r = (size_t)q_start[b] + (size_t)i;
      if (row_mask && !row_mask[r]) continue;
      if (!acc) { /* out of memory: a row no check can pass */
        for (int d = 0; d < s->dim; ++d) o[(r * s->heads + h) * s->dim + d] = NAN;
        lse[r * s->heads + h] = NAN;
        continue;
      }
      reference_row(s, q, q_start, q_lens, tree, k_cache, v_cache, block_table, seq_lens, b, i, h,
                    acc, o, lse);
    }
    free(acc);
  }
  return 0;
}
