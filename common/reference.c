/* The CPU reference: double-precision attention, row by row. See attn_reference.h. */
#include "attn_reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_progress.h"
#include "attn_rng.h"
#include "attn_verify.h"

void attn_row_coords(const attn_problem *p, size_t r, int *b, int *i, int *h) {
  *h = (int)(r % (size_t)p->heads);
  size_t bi = r / (size_t)p->heads;
  *i = (int)(bi % (size_t)p->seq_q);
  *b = (int)(bi / (size_t)p->seq_q);
}

size_t attn_row_lse_index(const attn_problem *p, size_t r) {
  int b, i, h;
  attn_row_coords(p, r, &b, &i, &h);
  return ((size_t)b * p->heads + h) * p->seq_q + i;
}

/* One row: scores into s (length seq_kv), then lse and the weighted sum of V. */
static void reference_row(const attn_problem *p, const float *q, const float *k, const float *v,
                          size_t r, double *s, double *o, double *lse) {
  int b, i, h;
  attn_row_coords(p, r, &b, &i, &h);
  const int D = p->dim;
  const int g = h / (p->heads / p->kv_heads); /* the KV head this query head reads */
  const double scale = attn_scale(p);
  const int n = attn_visible_keys_in(p, b, i); /* keys 0..n-1 are visible */
  const float *qr = q + r * (size_t)D;

  for (int d = 0; d < D; ++d) o[d] = 0.0;
  if (n == 0) {
    if (lse) *lse = -INFINITY;
    return;
  }
  double m = -INFINITY;
  for (int j = 0; j < n; ++j) {
    const float *kr = k + (((size_t)b * p->seq_kv + j) * p->kv_heads + g) * (size_t)D;
    double dot = 0.0;
    for (int d = 0; d < D; ++d) dot += (double)qr[d] * (double)kr[d];
    s[j] = dot * scale;
    if (s[j] > m) m = s[j];
  }
  double l = 0.0;
  for (int j = 0; j < n; ++j) {
    s[j] = exp(s[j] - m);
    l += s[j];
  }
  for (int j = 0; j < n; ++j) {
    const float *vr = v + (((size_t)b * p->seq_kv + j) * p->kv_heads + g) * (size_t)D;
    double w = s[j] / l;
    for (int d = 0; d < D; ++d) o[d] += w * (double)vr[d];
  }
  if (lse) *lse = m + log(l);
}

void attn_reference(const attn_problem *p, const float *q, const float *k, const float *v,
                    const size_t *rows, size_t n_rows, double *o, double *lse) {
  attn_progress pr;
  attn_progress_begin(&pr, "reference", "rows", (double)n_rows);
  long done = 0;
#pragma omp parallel
  {
    double *s = (double *)malloc(sizeof(double) * (size_t)(p->seq_kv > 0 ? p->seq_kv : 1));
#pragma omp for schedule(dynamic, 8)
    for (long t = 0; t < (long)n_rows; ++t) {
      size_t r = rows ? rows[t] : (size_t)t;
      reference_row(p, q, k, v, r, s, o + (size_t)t * p->dim, lse ? lse + t : NULL);
      long now_done;
#pragma omp atomic capture
      now_done = ++done;
      /* One thread at a time updates the line; the others go on computing. */
      if ((now_done & 15) == 0) {
#pragma omp critical(attn_progress_line)
        attn_progress_update(&pr, (double)now_done);
      }
    }
    free(s);
  }
  attn_progress_end(&pr);
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

size_t *attn_sample_rows(const attn_problem *p, int per_head, uint64_t seed, size_t *n_rows) {
  const size_t total = attn_rows(p);
  const double macs = 2.0 * attn_visible_pairs(p) * p->dim; /* QK^T and PV */
  size_t *rows;
  if (macs <= ATTN_FULL_CHECK_MACS) {
    rows = (size_t *)malloc(sizeof(size_t) * (total ? total : 1));
    if (!rows) return NULL;
    for (size_t r = 0; r < total; ++r) rows[r] = r;
    *n_rows = total;
    return rows;
  }
  if (per_head < 0) per_head = 0;
  const size_t per = (size_t)per_head + 2;
  const size_t heads_total = (size_t)p->batch * p->heads;
  rows = (size_t *)malloc(sizeof(size_t) * per * heads_total);
  if (!rows) return NULL;
  attn_rng rng;
  attn_rng_seed(&rng, seed, 0x5A3B1E5u);
  size_t n = 0;
  for (int b = 0; b < p->batch; ++b) {
    for (int h = 0; h < p->heads; ++h) {
      for (size_t t = 0; t < per; ++t) {
        int i = t == 0 ? 0 : t == 1 ? p->seq_q - 1 : (int)attn_rng_below(&rng, (uint32_t)p->seq_q);
        rows[n++] = ((size_t)b * p->seq_q + i) * p->heads + h;
      }
    }
  }
  qsort(rows, n, sizeof(size_t), cmp_size);
  size_t u = 0;
  for (size_t t = 0; t < n; ++t)
    if (u == 0 || rows[t] != rows[u - 1]) rows[u++] = rows[t];
  *n_rows = u;
  return rows;
}

int attn_cpu_check(const attn_problem *p, uint64_t seed, attn_cpu_attention_fn fn, void *ctx,
                   attn_verdict *vo, attn_verdict *vl) {
  const size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p), rows = attn_rows(p);
  float *q = (float *)malloc(sizeof(float) * (nq ? nq : 1));
  float *k = (float *)malloc(sizeof(float) * (nkv ? nkv : 1));
  float *v = (float *)malloc(sizeof(float) * (nkv ? nkv : 1));
  float *o = (float *)malloc(sizeof(float) * (nq ? nq : 1));
  float *lse = (float *)malloc(sizeof(float) * (rows ? rows : 1));
  double *ro = (double *)malloc(sizeof(double) * (nq ? nq : 1));
  double *rl = (double *)malloc(sizeof(double) * (rows ? rows : 1));
  attn_verdict o_v, l_v;
  if (!vo) vo = &o_v;
  if (!vl) vl = &l_v;
  int rc = -1;
  if (!q || !k || !v || !o || !lse || !ro || !rl) goto done;
  attn_fill_attention_input(q, nq, seed, 1);
  attn_fill_attention_input(k, nkv, seed, 2);
  attn_fill_attention_input(v, nkv, seed, 3);
  memset(o, ATTN_POISON_BYTE, sizeof(float) * nq); /* unwritten elements must show */
  memset(lse, ATTN_POISON_BYTE, sizeof(float) * rows);
  if (fn(p, q, k, v, o, lse, ctx) != 0) goto done;
  attn_reference(p, q, k, v, NULL, rows, ro, rl);
  attn_verdict_init(vo, ATTN_F32);
  attn_verdict_scan(vo, ATTN_F32, o, nq, 0);
  for (size_t x = 0; x < nq; ++x) attn_verdict_add(vo, o[x], ro[x]);
  attn_verdict_finish(vo);
  attn_verdict_init_lse(vl, ATTN_F32);
  attn_verdict_scan(vl, ATTN_F32, lse, rows, 1);
  for (size_t r = 0; r < rows; ++r) attn_verdict_add(vl, lse[attn_row_lse_index(p, r)], rl[r]);
  attn_verdict_finish(vl);
  rc = vo->pass && vl->pass ? 0 : 1;
done:
  free(q);
  free(k);
  free(v);
  free(o);
  free(lse);
  free(ro);
  free(rl);
  return rc;
}
