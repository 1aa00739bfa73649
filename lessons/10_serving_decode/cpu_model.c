/* Lesson 10's CPU model: version 1's decomposition of a step, in float, so that every index and
 * every merge of the kernel can be checked without a GPU (l10_cpu_model() in serving_decode.h).
 *
 *   block   (sequence b, KV head kvh, unit u): up to L10_UNIT_ROWS query rows of the KV head's
 *           group; group row gr = u * L10_UNIT_ROWS + r is draft token gr / G of query head
 *           kvh * G + gr % G (G = heads / kv_heads), and rows past G * q_b are absent;
 *   chunk   c: keys [c * chunk, (c + 1) * chunk) clipped to the sequence's n_b keys; a sequence
 *           has ceil(n_b / chunk) of them;
 *   warp    w of four: the 16-key tiles t of the chunk with t % 4 == w, each folded into the
 *           warp's online softmax (running max m, sum l, unnormalised O) in base 2, as the kernel
 *           does it (scores x scale x log2(e), exp2f);
 *   then    the four warps merged into the chunk's state (normalised O, natural-log LSE), and the
 *           chunks merged into the row with l10_merge_state().
 *
 * Version 2 (s->k_scale and s->v_scale set; here host arrays, `[pages, kv_heads, block_size]`):
 * the pools hold the e4m3 codes' values and each key row its scales. A score is the key's K scale
 * times Q . code; each warp keeps sigma, the largest V scale of its tiles so far, adds P x
 * (v_scale / sigma) x code to O, rescales O by sigma_old / sigma_new when sigma grows, and
 * multiplies O by sigma before the warps are merged: the kernel's algebra, whose answer is the
 * attention over code x scale.
 */
#include <math.h>
#include <stdlib.h>

#include "paging.h" /* l07_kv_offset(): the page-table address (lesson 07) */
#include "serving_decode.h"

#define MODEL_WARPS 4 /* warps of a block, each with its own share of a chunk's tiles */
#define MODEL_TILE 16 /* keys per tile: one tensor-core tile's columns */

static const float kLog2e = 1.44269504088896340736f; /* log2(e): exp(x) = exp2(x * log2(e)) */
static const float kLn2 = 0.69314718055994530942f;   /* ln(2): back from base 2 to natural log */

static int clamp_int(int x, int lo, int hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* One block's scratch: the warps' states and the chunk's, for L10_UNIT_ROWS rows. */
typedef struct scratch {
  float *m;                 /* [MODEL_WARPS][rows] running max of scores x scale x log2(e) */
  float *l;                 /* [MODEL_WARPS][rows] running sum of exp2(score - m) */
  float *acc;               /* [MODEL_WARPS][rows][dim] unnormalised O */
  float *o;                 /* [rows][dim] the chunk's normalised O */
  float *lse;               /* [rows] the chunk's natural-log LSE */
  float *score;             /* [MODEL_TILE] one row's scores over one tile */
  float sigma[MODEL_WARPS]; /* version 2: each warp's largest V scale so far (0: none) */
} scratch;

static int scratch_alloc(scratch *w, int dim) {
  const size_t rows = L10_UNIT_ROWS, dd = (size_t)dim;
  w->m = (float *)malloc(sizeof(float) * MODEL_WARPS * rows);
  w->l = (float *)malloc(sizeof(float) * MODEL_WARPS * rows);
  w->acc = (float *)malloc(sizeof(float) * MODEL_WARPS * rows * dd);
  w->o = (float *)malloc(sizeof(float) * rows * dd);
  w->lse = (float *)malloc(sizeof(float) * rows);
  w->score = (float *)malloc(sizeof(float) * MODEL_TILE);
  return w->m && w->l && w->acc && w->o && w->lse && w->score ? 0 : -1;
}

static void scratch_free(scratch *w) {
  free(w->m), free(w->l), free(w->acc), free(w->o), free(w->lse), free(w->score);
}

/* Block (b, kvh, u) over one chunk [k0, k1): the warps' online softmaxes, then their merge into
 * the chunk state w->o, w->lse of the block's rows 0..rows-1. row0: q_start[b]; table: the
 * sequence's row of the block table. */
/* Key j's scale in a scale array of version 2 (`[pages, kv_heads, block_size]`), or 1 without
 * one (version 1). */
static float key_scale(const l10_step *s, const float *scales, const int *table, int j, int kvh) {
  if (!scales) return 1.0f;
  const int page = table[j / s->block_size];
  return scales[((size_t)page * s->kv_heads + kvh) * s->block_size + j % s->block_size];
}

static void model_chunk(const l10_step *s, const float *q, int row0, const uint32_t *tree,
                        const float *k_cache, const float *v_cache, const int *table, int q_b,
                        int n_b, int kvh, int u, int rows, int k0, int k1, scratch *w) {
  const int dim = s->dim, G = s->heads / s->kv_heads;
  const float scale_log2 = s->scale * kLog2e;
  for (int x = 0; x < MODEL_WARPS * rows; ++x) w->m[x] = -INFINITY, w->l[x] = 0.0f;
  for (size_t x = 0; x < (size_t)MODEL_WARPS * rows * dim; ++x) w->acc[x] = 0.0f;
  for (int wp = 0; wp < MODEL_WARPS; ++wp) w->sigma[wp] = s->v_scale ? 0.0f : 1.0f;

  /* Tile t of the chunk goes to warp t % 4: each warp walks every fourth tile. */
  for (int t = 0; k0 + t * MODEL_TILE < k1; ++t) {
    const int wp = t % MODEL_WARPS, t0 = k0 + t * MODEL_TILE;
    const int t1 = t0 + MODEL_TILE < k1 ? t0 + MODEL_TILE : k1;
    if (s->v_scale) { /* version 2: sigma grows to the tile's largest V scale */
      float vmax = 0.0f;
      for (int j = t0; j < t1; ++j) vmax = fmaxf(vmax, key_scale(s, s->v_scale, table, j, kvh));
      if (vmax > w->sigma[wp]) {
        const float ratio = w->sigma[wp] / vmax; /* O is kept in units of sigma */
        for (size_t x = (size_t)wp * rows * dim; x < (size_t)(wp + 1) * rows * dim; ++x)
          w->acc[x] *= ratio;
        w->sigma[wp] = vmax;
      }
    }
    for (int r = 0; r < rows; ++r) {
      const int gr = u * L10_UNIT_ROWS + r, i = gr / G, h = kvh * G + gr % G;
      const size_t row = (size_t)row0 + (size_t)i; /* the token's row of q */
      const uint32_t bits = s->mask == L10_MASK_TREE ? tree[row] : 0u;
      const float *qr = q + (row * s->heads + h) * dim;
      /* The tile's scores, -inf for the keys this token does not see; and their max. */
      float mt = -INFINITY;
      for (int j = t0; j < t1; ++j) {
        float sc = -INFINITY;
        if (l10_sees(s->mask, bits, i, q_b, n_b, j)) {
          const float *kj =
              k_cache + l07_kv_offset(table, s->block_size, s->kv_heads, dim, j, kvh, 0);
          float dot = 0.0f;
          for (int d = 0; d < dim; ++d) dot += qr[d] * kj[d];
          sc = key_scale(s, s->k_scale, table, j, kvh) * dot * scale_log2;
        }
        w->score[j - t0] = sc;
        mt = fmaxf(mt, sc);
      }
      float *m = w->m + wp * rows + r, *l = w->l + wp * rows + r;
      float *acc = w->acc + ((size_t)wp * rows + r) * dim;
      const float m_new = fmaxf(*m, mt);
      if (m_new == -INFINITY) continue;      /* nothing seen yet: the state stays empty */
      const float alpha = exp2f(*m - m_new); /* rescale what the warp had: 0 when it was empty */
      *l *= alpha;
      for (int d = 0; d < dim; ++d) acc[d] *= alpha;
      for (int j = t0; j < t1; ++j) {
        if (w->score[j - t0] == -INFINITY) continue;
        const float p = exp2f(w->score[j - t0] - m_new);
        const float *vj =
            v_cache + l07_kv_offset(table, s->block_size, s->kv_heads, dim, j, kvh, 0);
        /* version 2: P' = P x v_scale / sigma, at most P (0 while every V scale seen is 0) */
        const float sg = w->sigma[wp];
        const float pv = !s->v_scale ? p
                         : sg > 0.0f ? p * (key_scale(s, s->v_scale, table, j, kvh) / sg)
                                     : 0.0f;
        *l += p;
        for (int d = 0; d < dim; ++d) acc[d] += pv * vj[d];
      }
      *m = m_new;
    }
  }

  /* The four warps' states into one: relative to the largest max, as the kernel's merge does. */
  for (int r = 0; r < rows; ++r) {
    float mx = -INFINITY;
    for (int wp = 0; wp < MODEL_WARPS; ++wp) mx = fmaxf(mx, w->m[wp * rows + r]);
    float *o = w->o + (size_t)r * dim;
    for (int d = 0; d < dim; ++d) o[d] = 0.0f;
    if (mx == -INFINITY) { /* no warp saw a key of this chunk */
      w->lse[r] = -INFINITY;
      continue;
    }
    float l = 0.0f;
    for (int wp = 0; wp < MODEL_WARPS; ++wp) {
      const float c = exp2f(w->m[wp * rows + r] - mx); /* 0 for an empty warp */
      const float *acc = w->acc + ((size_t)wp * rows + r) * dim;
      l += c * w->l[wp * rows + r];
      for (int d = 0; d < dim; ++d) o[d] += c * w->sigma[wp] * acc[d]; /* O in its own units */
    }
    for (int d = 0; d < dim; ++d) o[d] /= l;
    w->lse[r] = (mx + log2f(l)) * kLn2; /* base 2 back to natural log */
  }
}

int l10_cpu_model(const l10_step *s, int chunk, const float *q, const int *q_start,
                  const int *q_lens, const uint32_t *tree, const float *k_cache,
                  const float *v_cache, const int *block_table, const int *seq_lens, float *o,
                  float *lse) {
  const int dim = s->dim, G = s->heads / s->kv_heads;
  if (chunk < 1) chunk = s->max_seq_kv > 0 ? s->max_seq_kv : 1; /* no chunk: one per sequence */
  const int units = l10_units_per_kv_head(s->heads, s->kv_heads, s->max_q);
  /* Every row starts empty (lse -inf, O 0); the chunks are merged into it one by one. */
  for (int b = 0; b < s->batch; ++b) {
    const int q_b = clamp_int(q_lens[b], 1, s->max_q);
    for (size_t x = (size_t)q_start[b] * s->heads; x < ((size_t)q_start[b] + q_b) * s->heads; ++x) {
      lse[x] = -INFINITY;
      for (int d = 0; d < dim; ++d) o[x * dim + d] = 0.0f;
    }
  }
  /* The grid: one block per (sequence, KV head, unit); distinct blocks write distinct rows. */
  const long blocks = (long)s->batch * s->kv_heads * units;
  int failed = 0;
#pragma omp parallel reduction(| : failed)
  {
    scratch w;
    if (scratch_alloc(&w, dim) != 0) failed = 1;
#pragma omp for schedule(dynamic, 1)
    for (long blk = 0; blk < blocks; ++blk) {
      if (failed) continue; /* this thread has no scratch */
      const int b = (int)(blk / ((long)s->kv_heads * units));
      const int kvh = (int)(blk / units % s->kv_heads), u = (int)(blk % units);
      const int q_b = clamp_int(q_lens[b], 1, s->max_q);
      const int n_b = clamp_int(seq_lens[b], q_b, s->max_seq_kv);
      const int present = G * q_b - u * L10_UNIT_ROWS; /* the unit's rows that exist */
      if (present <= 0) continue;
      const int rows = present < L10_UNIT_ROWS ? present : L10_UNIT_ROWS;
      const int *table = block_table + (size_t)b * s->max_blocks;
      for (int k0 = 0; k0 < n_b; k0 += chunk) { /* ceil(n_b / chunk) chunks */
        const int k1 = n_b - k0 < chunk ? n_b : k0 + chunk;
        model_chunk(s, q, q_start[b], tree, k_cache, v_cache, table, q_b, n_b, kvh, u, rows, k0, k1,
                    &w);
        for (int r = 0; r < rows; ++r) {
          const int gr = u * L10_UNIT_ROWS + r, h = kvh * G + gr % G;
          const size_t x = ((size_t)q_start[b] + (size_t)(gr / G)) * s->heads + h;
          l10_merge_state(lse + x, o + x * dim, w.lse[r], w.o + (size_t)r * dim, dim);
        }
      }
    }
    scratch_free(&w);
  }
  return failed ? -1 : 0;
}
