/* Lesson 02 on the CPU: the lesson's data, softmax rows three ways (naive, safe, online), the
 * double-precision reference the GPU versions are checked against, and the work model.
 * See online_softmax.h for what each function promises.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "online_softmax.h"
#include "online_state.h"

/* RNG streams of the lesson's data (attn_rng.h): one per purpose, so changing one does not shift
 * another. */
enum { STREAM_VALUES = 21, STREAM_OFFSETS = 22, STREAM_WILD = 23, STREAM_CHECK = 24 };

size_t l02_softmax_rows(const attn_problem *p) {
  return attn_rows(p);
}

int l02_softmax_cols(const attn_problem *p) {
  return p->seq_kv;
}

const char *l02_softmax_shape_supports(const attn_problem *p) {
  const size_t rows = l02_softmax_rows(p);
  if (rows > 0x7fffffffu) return "more than 2^31 - 1 rows";
  if ((double)rows * (double)l02_softmax_cols(p) > (double)L02_MAX_ELEMS)
    return "the scores matrix has more than 2^32 elements (16 GiB of fp32)";
  return NULL;
}

void l02_softmax_fill(float *x, size_t rows, int cols, l02_softmax_data kind, uint64_t seed) {
  const size_t n = rows * (size_t)cols;
  if (kind == L02_DATA_SMALL) {
    attn_fill_uniform(x, n, -4.0f, 4.0f, seed, STREAM_VALUES);
    return;
  }
  attn_fill_uniform(x, n, -8.0f, 8.0f, seed, STREAM_VALUES);
  if (kind == L02_DATA_SCORES) {
    attn_rng r;
    attn_rng_seed(&r, seed, STREAM_OFFSETS);
    for (size_t i = 7; i < rows; i += 8) {
      const float offset = -1e4f + 2e4f * attn_rng_uniform(&r);
      float *row = x + i * (size_t)cols;
      for (int j = 0; j < cols; ++j) row[j] += offset;
    }
    return;
  }
  /* L02_DATA_WILD */
  attn_rng r;
  attn_rng_seed(&r, seed, STREAM_WILD);
  for (size_t i = 0; i < rows; ++i) {
    float *row = x + i * (size_t)cols;
    for (int j = 0; j < cols; ++j) {
      if (i % 5 == 4) {
        row[j] = -INFINITY;
        continue;
      }
      const uint32_t pick = attn_rng_below(&r, 16);
      if (pick == 0) row[j] = -1e4f + 2e4f * attn_rng_uniform(&r);
      if (pick == 1) row[j] = -INFINITY;
    }
  }
}

void l02_softmax_mask_causal(float *x, const attn_problem *p) {
  if (!p->causal) return;
  const size_t rows = l02_softmax_rows(p);
  const int cols = l02_softmax_cols(p);
  for (size_t r = 0; r < rows; ++r) {
    int b, i, h;
    attn_row_coords(p, r, &b, &i, &h);
    float *row = x + r * (size_t)cols;
    for (int j = attn_visible_keys(p, i); j < cols; ++j) row[j] = -INFINITY;
  }
}

void l02_softmax_row_naive_cpu(const float *x, int n, float *y) {
  float l = 0.0f;
  for (int j = 0; j < n; ++j) l += expf(x[j]);
  for (int j = 0; j < n; ++j) y[j] = l > 0.0f ? expf(x[j]) / l : 0.0f;
}

void l02_softmax_row_safe_cpu(const float *x, int n, float *y) {
  float m = -INFINITY;
  for (int j = 0; j < n; ++j) m = fmaxf(m, x[j]);
  if (m == -INFINITY) {
    for (int j = 0; j < n; ++j) y[j] = 0.0f;
    return;
  }
  float l = 0.0f;
  for (int j = 0; j < n; ++j) l += expf(x[j] - m);
  const float inv = 1.0f / l;
  for (int j = 0; j < n; ++j) y[j] = expf(x[j] - m) * inv;
}

void l02_softmax_row_online_cpu(const float *x, int n, float *y) {
  l02_online_ml s = l02_online_ml_empty();
  for (int j = 0; j < n; ++j) s = l02_online_ml_push(s, x[j]);
  const float m_ref = s.m == -INFINITY ? 0.0f : s.m;
  const float inv = s.l > 0.0f ? 1.0f / s.l : 0.0f;
  for (int j = 0; j < n; ++j) y[j] = expf(x[j] - m_ref) * inv;
}

void l02_softmax_row_reference(const float *x, int n, double *y) {
  double m = -INFINITY;
  for (int j = 0; j < n; ++j)
    if (x[j] > m) m = x[j];
  if (m == -INFINITY) {
    for (int j = 0; j < n; ++j) y[j] = 0.0;
    return;
  }
  double l = 0.0;
  for (int j = 0; j < n; ++j) {
    y[j] = exp((double)x[j] - m);
    l += y[j];
  }
  for (int j = 0; j < n; ++j) y[j] /= l;
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

size_t *l02_softmax_check_rows(size_t rows, int cols, uint64_t seed, size_t *n) {
  *n = 0;
  if (rows == 0) return (size_t *)malloc(1);
  if ((double)rows * cols <= (double)(1 << 22)) {
    size_t *all = (size_t *)malloc(sizeof(size_t) * rows);
    if (!all) return NULL;
    for (size_t r = 0; r < rows; ++r) all[r] = r;
    *n = rows;
    return all;
  }
  enum { DRAWN = 253 };
  size_t *list = (size_t *)malloc(sizeof(size_t) * (DRAWN + 3));
  if (!list) return NULL;
  size_t k = 0;
  list[k++] = 0;
  list[k++] = rows - 1;
  if (rows > 7) list[k++] = 7; /* the first row the table's data shifts */
  attn_rng r;
  attn_rng_seed(&r, seed, STREAM_CHECK);
  for (int d = 0; d < DRAWN; ++d)
    list[k++] = rows <= 0xffffffffu ? attn_rng_below(&r, (uint32_t)rows)
                                    : (size_t)attn_rng_u32(&r) * rows >> 32;
  qsort(list, k, sizeof(size_t), cmp_size);
  size_t u = 0; /* drop duplicates */
  for (size_t i = 0; i < k; ++i)
    if (u == 0 || list[i] != list[u - 1]) list[u++] = list[i];
  *n = u;
  return list;
}

int l02_softmax_judge(attn_verdict *v, const float *x, const float *y, size_t rows, int cols,
                      const size_t *check, size_t n) {
  attn_verdict_scan(v, ATTN_F32, y, rows * (size_t)cols, 0);
  double *ref = (double *)malloc(sizeof(double) * (size_t)cols);
  if (!ref) return -1;
  for (size_t c = 0; c < n; ++c) {
    const size_t r = check[c];
    l02_softmax_row_reference(x + r * (size_t)cols, cols, ref);
    for (int j = 0; j < cols; ++j) attn_verdict_add(v, y[r * (size_t)cols + j], ref[j]);
  }
  free(ref);
  return 0;
}

double l02_softmax_model_bytes(int reads, size_t rows, int cols) {
  return (reads + 1.0) * (double)rows * (double)cols * sizeof(float);
}
