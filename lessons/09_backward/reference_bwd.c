/* Lesson 09's CPU reference: the exact backward pass of attention in double precision, row by row.
 * See reference_bwd.h. Every gradient is computed from its definition, with nothing cached across
 * calls, so a row's result is the same bit for bit whether it is asked for alone or with every
 * other row. */
#include "reference_bwd.h"

#include <math.h>
#include <stdlib.h>

#include "attn_progress.h"
#include "attn_reference.h"
#include "attn_rng.h"

/* Row (b, i, h) of Q, O or dO. */
static const float *l09_q_row(const attn_problem *p, const float *x, int b, int i, int h) {
  return x + (((size_t)b * p->seq_q + i) * p->heads + h) * (size_t)p->dim;
}

/* Row (b, j, g) of K or V. */
static const float *l09_kv_row(const attn_problem *p, const float *x, int b, int j, int g) {
  return x + (((size_t)b * p->seq_kv + j) * p->kv_heads + g) * (size_t)p->dim;
}

/* a . b in double. Four partial sums, so that the additions of one do not wait on the last one's
 * (a single chain of dependent additions runs several times slower); the order is fixed, so every
 * call gives the same bits. */
static double l09_dot(const float *a, const float *b, int n) {
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  int d = 0;
  for (; d + 4 <= n; d += 4)
    for (int x = 0; x < 4; ++x) s[x] += (double)a[d + x] * (double)b[d + x];
  for (; d < n; ++d) s[0] += (double)a[d] * (double)b[d];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/* The forward pass of query row (b, i, h) from the definition, in double: the probabilities of
 * its visible keys into prob[0, n), its output into o[0, dim), its log-sum-exp and its D term
 * dO . O. Returns n, the number of keys it sees; with none, lse is -inf and O and D are 0. */
static int l09_row_forward(const attn_problem *p, const float *q, const float *k, const float *v,
                           const float *d_o, int b, int i, int h, double *prob, double *o,
                           double *lse, double *dterm) {
  const int dim = p->dim;
  const int g = h / (p->heads / p->kv_heads); /* the KV head of query head h */
  const double scale = attn_scale(p);
  const int n = attn_visible_keys_in(p, b, i); /* keys 0..n-1 */
  const float *qi = l09_q_row(p, q, b, i, h);
  for (int d = 0; d < dim; ++d) o[d] = 0.0;
  if (n == 0) { /* nothing to attend to: O = 0, and so D = 0 */
    *lse = -INFINITY;
    *dterm = 0.0;
    return 0;
  }
  double m = -INFINITY;
  for (int j = 0; j < n; ++j) {
    prob[j] = scale * l09_dot(qi, l09_kv_row(p, k, b, j, g), dim);
    if (prob[j] > m) m = prob[j];
  }
  double l = 0.0;
  for (int j = 0; j < n; ++j) {
    prob[j] = exp(prob[j] - m);
    l += prob[j];
  }
  for (int j = 0; j < n; ++j) {
    const float *vj = l09_kv_row(p, v, b, j, g);
    prob[j] /= l;
    for (int d = 0; d < dim; ++d) o[d] += prob[j] * (double)vj[d];
  }
  *lse = m + log(l);
  const float *doi = l09_q_row(p, d_o, b, i, h);
  double dt = 0.0;
  for (int d = 0; d < dim; ++d) dt += (double)doi[d] * o[d];
  *dterm = dt;
  return n;
}

/* dQ of O row r: scale * sum_j P_j (dP_j - D) K_j over the keys the row sees. */
static void l09_dq_row(const attn_problem *p, const float *q, const float *k, const float *v,
                       const float *d_o, size_t r, double *prob, double *o, double *dq) {
  int b, i, h;
  attn_row_coords(p, r, &b, &i, &h);
  const int dim = p->dim, g = h / (p->heads / p->kv_heads);
  double lse, dterm;
  const int n = l09_row_forward(p, q, k, v, d_o, b, i, h, prob, o, &lse, &dterm);
  const float *doi = l09_q_row(p, d_o, b, i, h);
  for (int d = 0; d < dim; ++d) dq[d] = 0.0;
  for (int j = 0; j < n; ++j) {
    const float *kj = l09_kv_row(p, k, b, j, g);
    const double dp = l09_dot(doi, l09_kv_row(p, v, b, j, g), dim);
    const double ds = prob[j] * (dp - dterm);
    for (int d = 0; d < dim; ++d) dq[d] += ds * (double)kj[d];
  }
  const double scale = attn_scale(p);
  for (int d = 0; d < dim; ++d) dq[d] *= scale;
}

/* dK and dV of K row r, from the log-sum-exp and D of every query row of its group, `[group,
 * seq_q]` in lse and dterm: sums over the rows i and heads h of the group that see key j. */
static void l09_dkv_row(const attn_problem *p, const float *q, const float *k, const float *v,
                        const float *d_o, const double *lse, const double *dterm, size_t r,
                        double *dk, double *dv) {
  const int dim = p->dim, group = p->heads / p->kv_heads;
  const int g = (int)(r % (size_t)p->kv_heads);
  const size_t bj = r / (size_t)p->kv_heads;
  const int j = (int)(bj % (size_t)p->seq_kv), b = (int)(bj / (size_t)p->seq_kv);
  const double scale = attn_scale(p);
  for (int d = 0; d < dim; ++d) dk[d] = dv[d] = 0.0;
  /* With lengths, a key past its sequence's end is seen by no row: it is not even read. */
  if (j >= attn_kv_len(p, b)) return;
  const float *kj = l09_kv_row(p, k, b, j, g), *vj = l09_kv_row(p, v, b, j, g);
  for (int x = 0; x < group; ++x) {
    const int h = g * group + x;
    for (int i = 0; i < p->seq_q; ++i) {
      /* Rows that see no key at all (lse -inf) fail this test too: nothing flows from them. */
      if (j >= attn_visible_keys_in(p, b, i)) continue;
      const float *qi = l09_q_row(p, q, b, i, h), *doi = l09_q_row(p, d_o, b, i, h);
      const size_t at = (size_t)x * p->seq_q + i;
      const double pr = exp(scale * l09_dot(qi, kj, dim) - lse[at]); /* P recomputed */
      const double ds = pr * (l09_dot(doi, vj, dim) - dterm[at]);
      for (int d = 0; d < dim; ++d) {
        dk[d] += ds * (double)qi[d];
        dv[d] += pr * (double)doi[d];
      }
    }
  }
  for (int d = 0; d < dim; ++d) dk[d] *= scale;
}

/* Loops with fewer multiply-adds than this run on one thread. A finite-difference check calls the
 * loss thousands of times on a tiny problem; waking a team of threads for each call costs more
 * than the work, and far more on a loaded machine, where the team waits on every descheduled
 * thread at each barrier. */
#define L09_PARALLEL_MACS 1.0e6

/* Scratch of one thread for l09_row_forward(): the probabilities, then O. */
static double *l09_row_scratch(const attn_problem *p) {
  return (double *)malloc(sizeof(double) * ((size_t)p->seq_kv + (size_t)p->dim + 1));
}

/* One finished unit of a parallel loop: count it and, now and then, update the progress line.
 * The critical section is unnamed: a named one would export a symbol (.gomp_critical_user_NAME)
 * without the lesson's prefix. */
static void l09_progress_step(attn_progress *pr, long *done) {
  long now_done;
#pragma omp atomic capture
  now_done = ++*done;
  if ((now_done & 15) == 0) {
#pragma omp critical
    attn_progress_update(pr, (double)now_done);
  }
}

void l09_reference_dq(const attn_problem *p, const float *q, const float *k, const float *v,
                      const float *d_o, const size_t *rows, size_t n_rows, double *dq) {
  attn_progress pr;
  attn_progress_begin(&pr, "backward reference (dQ)", "rows", (double)n_rows);
  long done = 0;
  const int parallel = (double)n_rows * p->seq_kv * p->dim * 3.0 >= L09_PARALLEL_MACS;
#pragma omp parallel if (parallel)
  {
    double *buf = l09_row_scratch(p);
#pragma omp for schedule(dynamic, 8)
    for (long t = 0; t < (long)n_rows; ++t) {
      double *out = dq + (size_t)t * p->dim;
      if (!buf) { /* out of memory: a row no check can pass */
        for (int d = 0; d < p->dim; ++d) out[d] = NAN;
        continue;
      }
      const size_t r = rows ? rows[t] : (size_t)t;
      l09_dq_row(p, q, k, v, d_o, r, buf, buf + p->seq_kv, out);
      l09_progress_step(&pr, &done);
    }
    free(buf);
  }
  attn_progress_end(&pr);
}

int l09_reference_dkv(const attn_problem *p, const float *q, const float *k, const float *v,
                      const float *d_o, const size_t *rows, size_t n_rows, double *dk, double *dv) {
  const int group = p->heads / p->kv_heads;
  const size_t pairs = (size_t)p->batch * p->kv_heads, per_pair = (size_t)group * p->seq_q;
  unsigned char *wanted = (unsigned char *)calloc(pairs ? pairs : 1, 1);
  double *lse = (double *)malloc(sizeof(double) * (per_pair ? per_pair : 1));
  double *dterm = (double *)malloc(sizeof(double) * (per_pair ? per_pair : 1));
  int failed = !wanted || !lse || !dterm;
  /* The (batch, KV head) pairs the listed rows belong to: K row r = (b * seq_kv + j) * kv_heads + g
   * is pair b * kv_heads + g. */
  size_t n_pairs = 0;
  for (size_t t = 0; !failed && t < n_rows; ++t) {
    const size_t r = rows ? rows[t] : t;
    const size_t pair = r / ((size_t)p->seq_kv * p->kv_heads) * p->kv_heads + r % p->kv_heads;
    n_pairs += !wanted[pair];
    wanted[pair] = 1;
  }
  attn_progress pr;
  attn_progress_begin(&pr, "backward reference (dK, dV)", "rows",
                      (double)(n_pairs * per_pair + n_rows));
  long done = 0;
  const int stats_parallel = (double)per_pair * p->seq_kv * p->dim * 2.0 >= L09_PARALLEL_MACS;
  const int rows_parallel =
      (double)n_rows / (double)(n_pairs ? n_pairs : 1) * per_pair * p->dim * 4.0 >=
      L09_PARALLEL_MACS;
  for (size_t pair = 0; !failed && pair < pairs; ++pair) {
    if (!wanted[pair]) continue;
    const int b = (int)(pair / (size_t)p->kv_heads), g = (int)(pair % (size_t)p->kv_heads);
    /* 1. The log-sum-exp and D of every query row of the group: each key row sums over them all. */
#pragma omp parallel if (stats_parallel)
    {
      double *buf = l09_row_scratch(p);
      if (!buf) {
#pragma omp atomic write
        failed = 1;
      }
#pragma omp for schedule(dynamic, 8)
      for (long x = 0; x < (long)per_pair; ++x) {
        if (!buf) continue;
        const int h = g * group + (int)(x / p->seq_q), i = (int)(x % p->seq_q);
        l09_row_forward(p, q, k, v, d_o, b, i, h, buf, buf + p->seq_kv, &lse[x], &dterm[x]);
        l09_progress_step(&pr, &done);
      }
      free(buf);
    }
    if (failed) break;
#pragma omp parallel for schedule(dynamic, 4) if (rows_parallel)
    for (long t = 0; t < (long)n_rows; ++t) { /* 2. The listed key rows of this pair. */
      const size_t r = rows ? rows[t] : (size_t)t;
      if (r / ((size_t)p->seq_kv * p->kv_heads) != (size_t)b || r % p->kv_heads != (size_t)g)
        continue;
      l09_dkv_row(p, q, k, v, d_o, lse, dterm, r, dk + (size_t)t * p->dim, dv + (size_t)t * p->dim);
      l09_progress_step(&pr, &done);
    }
  }
  attn_progress_end(&pr);
  free(wanted);
  free(lse);
  free(dterm);
  return failed ? -1 : 0;
}

double l09_reference_loss(const attn_problem *p, const float *q, const float *k, const float *v,
                          const float *d_o) {
  /* L = sum over rows of dO_i . O_i: the sum of every row's D term. The rows' terms are kept and
   * added in order, so the loss does not depend on the number of threads (a finite difference
   * subtracts two losses that differ in the sixth digit or so). */
  const size_t n = attn_rows(p);
  double *terms = (double *)malloc(sizeof(double) * (n ? n : 1));
  if (!terms) return NAN;
  int failed = 0;
  const int parallel = (double)n * p->seq_kv * p->dim * 2.0 >= L09_PARALLEL_MACS;
#pragma omp parallel if (parallel)
  {
    double *buf = l09_row_scratch(p);
    if (!buf) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(dynamic, 8)
    for (long t = 0; t < (long)n; ++t) {
      if (!buf) continue;
      int b, i, h;
      double lse;
      attn_row_coords(p, (size_t)t, &b, &i, &h);
      l09_row_forward(p, q, k, v, d_o, b, i, h, buf, buf + p->seq_kv, &lse, &terms[t]);
    }
    free(buf);
  }
  double loss = 0.0;
  for (size_t t = 0; t < n; ++t) loss += terms[t];
  free(terms);
  return failed ? NAN : loss;
}

static int l09_cmp_size(const void *a, const void *b) {
  const size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

size_t *l09_sample_kv_rows(const attn_problem *p, int per_head, uint64_t seed, size_t *n_rows) {
  const size_t total = (size_t)p->batch * p->seq_kv * p->kv_heads;
  /* The dK/dV reference of every key row: the log-sum-exp and D of each query row (Q K^T and
   * P V, 2 x dim per visible pair), then for each visible pair Q K^T, dO V^T, dK and dV again. */
  const double macs = 6.0 * p->dim * attn_visible_pairs(p);
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
  rows = (size_t *)malloc(sizeof(size_t) * 2 * per);
  if (!rows) return NULL;
  attn_rng rng;
  attn_rng_seed(&rng, seed, 0xB4C3u);
  size_t n = 0;
  /* The first pair (batch 0, KV head 0) and the last (batch - 1, kv_heads - 1): the last shows an
   * error in the batch or head stride if there is one. When batch and kv_heads are 1 they are the
   * same pair, sampled once. */
  const int pair_b[2] = {0, p->batch - 1}, pair_g[2] = {0, p->kv_heads - 1};
  const int n_pairs = p->batch == 1 && p->kv_heads == 1 ? 1 : 2;
  for (int x = 0; x < n_pairs; ++x)
    for (size_t t = 0; t < per; ++t) {
      const int j = t == 0   ? 0
                    : t == 1 ? p->seq_kv - 1
                             : (int)attn_rng_below(&rng, (uint32_t)p->seq_kv);
      rows[n++] = ((size_t)pair_b[x] * p->seq_kv + j) * p->kv_heads + pair_g[x];
    }
  qsort(rows, n, sizeof(size_t), l09_cmp_size);
  size_t u = 0;
  for (size_t t = 0; t < n; ++t)
    if (u == 0 || rows[t] != rows[u - 1]) rows[u++] = rows[t];
  *n_rows = u;
  return rows;
}
