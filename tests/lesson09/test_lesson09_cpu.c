/* Lesson 09, CPU: the double-precision backward reference (reference_bwd.h) against central
 * differences of the loss it differentiates, sampled rows against full calls, the choice of key
 * rows to check, rows that see no key and keys no row sees, the D term against the forward
 * reference's O, and the checklist's Q tile bounds (bwd_plan.h) against the ones the kernels call
 * (attn_causal.h). No GPU needed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_causal.h"
#include "attn_test.h"
#include "bwd_plan.h"
#include "dq_staging.h"
#include "reference_bwd.h"

/* Q, K, V and dO of one problem, drawn as the harness draws its inputs (bf16-exact, not centred).
 */
typedef struct inputs {
  size_t nq, nkv;
  float *q, *k, *v, *d_o;
} inputs;

static inputs make_inputs(const attn_problem *p, uint64_t seed) {
  inputs in = {attn_q_elems(p), attn_kv_elems(p), NULL, NULL, NULL, NULL};
  in.q = malloc(sizeof(float) * in.nq);
  in.k = malloc(sizeof(float) * in.nkv);
  in.v = malloc(sizeof(float) * in.nkv);
  in.d_o = malloc(sizeof(float) * in.nq);
  ck_assert(in.q && in.k && in.v && in.d_o);
  attn_fill_attention_input(in.q, in.nq, seed, 1);
  attn_fill_attention_input(in.k, in.nkv, seed, 2);
  attn_fill_attention_input(in.v, in.nkv, seed, 3);
  attn_fill_attention_input(in.d_o, in.nq, seed, 4);
  return in;
}

static void free_inputs(inputs *in) {
  free(in->q), free(in->k), free(in->v), free(in->d_o);
}

static double *doubles(size_t n) {
  double *x = malloc(sizeof(double) * (n ? n : 1));
  ck_assert_ptr_nonnull(x);
  return x;
}

/* Every gradient of a problem: dQ for every O row, dK and dV for every K row (rows NULL). */
static void full_gradients(const attn_problem *p, const inputs *in, double *dq, double *dk,
                           double *dv) {
  l09_reference_dq(p, in->q, in->k, in->v, in->d_o, NULL, attn_rows(p), dq);
  const size_t kv_rows = (size_t)p->batch * p->seq_kv * p->kv_heads;
  ck_assert_int_eq(l09_reference_dkv(p, in->q, in->k, in->v, in->d_o, NULL, kv_rows, dk, dv), 0);
}

/* ---- (1) The gradients are the derivatives of the loss ---- */

/* batch, heads, kv_heads, seq_q, seq_kv, dim, causal (attn_test_problem()'s order), then the
 * softmax scale x 1000 (0: 1/sqrt(dim)) */
static const int kFdShapes[][8] = {
    {1, 2, 1, 5, 7, 8, 0, 0},   /* GQA 2:1, seq_q < seq_kv */
    {1, 2, 1, 5, 7, 8, 1, 0},   /* the same, causal: query 0 sees keys 0..2 */
    {2, 4, 2, 7, 5, 8, 1, 0},   /* causal with seq_q > seq_kv: queries 0 and 1 see no key; two
                                   sequences, two KV heads of two query heads each */
    {1, 3, 3, 1, 6, 4, 0, 300}, /* one query, MHA, a scale of its own */
    {1, 2, 2, 6, 1, 8, 1, 0},   /* one key: P is 1 where it is seen, and dQ, dK are 0 */
};
enum { N_FD_SHAPES = sizeof kFdShapes / sizeof kFdShapes[0] };

/* Central differences of l09_reference_loss over every element of one input tensor x, against the
 * reference's gradient g of it. The perturbed values are rounded to fp32 when stored, so the step
 * taken is the difference of the two stored values, not 2 eps. */
static void check_fd(const attn_problem *p, inputs *in, float *x, size_t n, const double *g,
                     const char *name) {
  const double eps = 1e-3, tol = 1e-6;
  double big = 0.0;
  for (size_t e = 0; e < n; ++e) big = fmax(big, fabs(g[e]));
  for (size_t e = 0; e < n; ++e) {
    const float keep = x[e], up = (float)(keep + eps), down = (float)(keep - eps);
    x[e] = up;
    const double l_up = l09_reference_loss(p, in->q, in->k, in->v, in->d_o);
    x[e] = down;
    const double l_down = l09_reference_loss(p, in->q, in->k, in->v, in->d_o);
    x[e] = keep;
    const double fd = (l_up - l_down) / ((double)up - (double)down);
    ck_assert_msg(fabs(g[e] - fd) <= tol * (1.0 + big),
                  "shape %d/%d/%d/%d/%d/%d causal %d: d loss / d %s[%zu]: reference %.10g, central "
                  "difference %.10g",
                  p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim, p->causal, name, e,
                  g[e], fd);
  }
}

START_TEST(gradients_match_finite_differences) {
  const int *s = kFdShapes[_i];
  attn_problem p = attn_test_problem(s[0], s[1], s[2], s[3], s[4], s[5], s[6]);
  p.scale = (float)s[7] / 1000.0f;
  inputs in = make_inputs(&p, 91 + (uint64_t)_i);
  double *dq = doubles(in.nq), *dk = doubles(in.nkv), *dv = doubles(in.nkv);
  full_gradients(&p, &in, dq, dk, dv);
  ck_assert(isfinite(l09_reference_loss(&p, in.q, in.k, in.v, in.d_o)));
  check_fd(&p, &in, in.q, in.nq, dq, "Q");
  check_fd(&p, &in, in.k, in.nkv, dk, "K");
  check_fd(&p, &in, in.v, in.nkv, dv, "V");
  /* Softmax ignores a shift of a row's scores, so each row's dS sum to 0, and the dK of a (batch,
   * KV head) sum to 0 over its keys, element by element. */
  for (int b = 0; b < p.batch; ++b)
    for (int g = 0; g < p.kv_heads; ++g)
      for (int d = 0; d < p.dim; ++d) {
        double sum = 0.0, mag = 0.0;
        for (int j = 0; j < p.seq_kv; ++j) {
          const double x = dk[(((size_t)b * p.seq_kv + j) * p.kv_heads + g) * p.dim + d];
          sum += x, mag += fabs(x);
        }
        ck_assert_msg(fabs(sum) <= 1e-12 * (1.0 + mag), "batch %d KV head %d: sum_j dK[j][%d] = %g",
                      b, g, d, sum);
      }
  free(dq), free(dk), free(dv);
  free_inputs(&in);
}
END_TEST

/* ---- (2) Sampled rows are the same rows of a full call ---- */

/* Big enough that the full calls run on every thread and the short lists on one: the rows must
 * not depend on which thread computed them, or on the rows listed with them. */
enum { S_SQ = 65, S_SKV = 97, S_KVH = 2 };

START_TEST(sampled_rows_equal_full_rows) {
  const attn_problem p = attn_test_problem(2, 4, S_KVH, S_SQ, S_SKV, 64, _i);
  inputs in = make_inputs(&p, 5);
  double *dq = doubles(in.nq), *dk = doubles(in.nkv), *dv = doubles(in.nkv);
  full_gradients(&p, &in, dq, dk, dv);
  /* dQ: every third O row, last to first, then row 0 again. */
  const size_t n_q_rows = attn_rows(&p), dim = (size_t)p.dim;
  size_t q_rows[2 * 4 * S_SQ / 3 + 2], nq = 0;
  for (size_t r = n_q_rows; r-- > 0;)
    if (r % 3 == 1) q_rows[nq++] = r;
  q_rows[nq++] = 0;
  double *sq = doubles(nq * dim);
  l09_reference_dq(&p, in.q, in.k, in.v, in.d_o, q_rows, nq, sq);
  for (size_t t = 0; t < nq; ++t)
    for (size_t d = 0; d < dim; ++d)
      ck_assert_msg(sq[t * dim + d] == dq[q_rows[t] * dim + d],
                    "dQ of row %zu, sampled %.17g, full %.17g", q_rows[t], sq[t * dim + d],
                    dq[q_rows[t] * dim + d]);
      /* dK and dV: rows of three of the four (batch, KV head) pairs, out of order, one twice. */
#define KV_ROW(b, j, g) (((size_t)(b)*S_SKV + (j)) * S_KVH + (g))
  const size_t kv_rows[] = {KV_ROW(1, S_SKV - 1, 1), KV_ROW(0, 0, 0),        KV_ROW(1, 3, 1),
                            KV_ROW(0, 20, 1),        KV_ROW(0, 0, 0),        KV_ROW(1, 0, 1),
                            KV_ROW(0, S_SKV - 1, 0), KV_ROW(0, S_SKV / 2, 0)};
#undef KV_ROW
  const size_t nkv = sizeof kv_rows / sizeof kv_rows[0];
  double *sk = doubles(nkv * dim), *sv = doubles(nkv * dim);
  ck_assert_int_eq(l09_reference_dkv(&p, in.q, in.k, in.v, in.d_o, kv_rows, nkv, sk, sv), 0);
  for (size_t t = 0; t < nkv; ++t)
    for (size_t d = 0; d < dim; ++d) {
      const size_t at = kv_rows[t] * dim + d;
      ck_assert_msg(sk[t * dim + d] == dk[at] && sv[t * dim + d] == dv[at],
                    "K row %zu: sampled dK %.17g dV %.17g, full dK %.17g dV %.17g", kv_rows[t],
                    sk[t * dim + d], sv[t * dim + d], dk[at], dv[at]);
    }
  /* The full call with the rows listed is the full call with NULL. */
  const size_t n_kv_rows = (size_t)p.batch * p.seq_kv * p.kv_heads;
  size_t *all = malloc(sizeof(size_t) * n_kv_rows);
  double *ak = doubles(in.nkv), *av = doubles(in.nkv);
  ck_assert_ptr_nonnull(all);
  for (size_t r = 0; r < n_kv_rows; ++r) all[r] = r;
  ck_assert_int_eq(l09_reference_dkv(&p, in.q, in.k, in.v, in.d_o, all, n_kv_rows, ak, av), 0);
  ck_assert(memcmp(ak, dk, sizeof(double) * in.nkv) == 0);
  ck_assert(memcmp(av, dv, sizeof(double) * in.nkv) == 0);
  free(all), free(ak), free(av), free(sk), free(sv), free(sq);
  free(dq), free(dk), free(dv);
  free_inputs(&in);
}
END_TEST

/* ---- (3) Which key rows are checked ---- */

/* The checks a sample of key rows must pass: sorted, unique, within the problem, only the first
 * and the last (batch, KV head), each with its first and its last key. */
static void check_sample(const attn_problem *p, int per_head, uint64_t seed) {
  size_t n = 0;
  size_t *rows = l09_sample_kv_rows(p, per_head, seed, &n);
  ck_assert_ptr_nonnull(rows);
  const size_t total = (size_t)p->batch * p->seq_kv * p->kv_heads, pair_rows = p->seq_kv;
  const size_t last_pair = (size_t)(p->batch - 1) * p->kv_heads + (p->kv_heads - 1);
  const size_t per = (size_t)(per_head > 0 ? per_head : 0) + 2;
  ck_assert_uint_le(n, (last_pair == 0 ? 1 : 2) * per);
  ck_assert_uint_lt(n, total);
  int have[4] = {0, 0, 0, 0}; /* first key and last key, first pair and last pair */
  for (size_t t = 0; t < n; ++t) {
    ck_assert_uint_lt(rows[t], total);
    if (t > 0) ck_assert_msg(rows[t] > rows[t - 1], "rows %zu then %zu", rows[t - 1], rows[t]);
    const size_t g = rows[t] % p->kv_heads, bj = rows[t] / p->kv_heads;
    const size_t j = bj % pair_rows, pair = bj / pair_rows * p->kv_heads + g;
    ck_assert_msg(pair == 0 || pair == last_pair, "row %zu is in (batch, KV head) pair %zu",
                  rows[t], pair);
    for (int x = 0; x < 2; ++x)
      if (pair == (x ? last_pair : 0)) {
        have[2 * x] |= j == 0;
        have[2 * x + 1] |= j == pair_rows - 1;
      }
  }
  ck_assert_msg(have[0] && have[1] && have[2] && have[3],
                "first key %d, last key %d of the first pair; %d, %d of the last", have[0], have[1],
                have[2], have[3]);
  /* The same seed gives the same rows. */
  size_t n2 = 0;
  size_t *again = l09_sample_kv_rows(p, per_head, seed, &n2);
  ck_assert_ptr_nonnull(again);
  ck_assert_uint_eq(n2, n);
  ck_assert(memcmp(again, rows, n * sizeof(size_t)) == 0);
  free(again);
  free(rows);
}

START_TEST(small_problems_check_every_key_row) {
  const attn_problem shapes[] = {
      attn_test_problem(2, 4, 2, 33, 47, 16, 1),
      attn_test_problem(1, 1, 1, 1, 1, 64, 0),
      /* 6 * 64 * 1000 * 1000 = 3.84e8 multiply-adds: at most ATTN_FULL_CHECK_MACS */
      attn_test_problem(1, 1, 1, 1000, 1000, 64, 0),
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    const attn_problem *p = &shapes[s];
    size_t n = 0;
    size_t *rows = l09_sample_kv_rows(p, 8, 1, &n);
    ck_assert_ptr_nonnull(rows);
    ck_assert_uint_eq(n, (size_t)p->batch * p->seq_kv * p->kv_heads);
    for (size_t r = 0; r < n; ++r) ck_assert_uint_eq(rows[r], r);
    free(rows);
  }
}
END_TEST

START_TEST(big_problems_check_two_pairs) {
  /* 6 * 64 * 1100 * 1000 = 4.2e8: just past ATTN_FULL_CHECK_MACS */
  const attn_problem just_past = attn_test_problem(1, 1, 1, 1100, 1000, 64, 0);
  check_sample(&just_past, 8, 1);
  const attn_problem big = attn_test_problem(3, 8, 4, 2048, 2048, 128, 0);
  check_sample(&big, 10, 7);
  check_sample(&big, 0, 7);
  check_sample(&big, -3, 7);
  check_sample(&big, 400, 9);
  /* Causal, seq_q != seq_kv both ways; MQA with one sequence: one pair. */
  const attn_problem causal_more_q = attn_test_problem(2, 16, 2, 8192, 3000, 64, 1);
  check_sample(&causal_more_q, 16, 3);
  const attn_problem one_pair = attn_test_problem(1, 8, 1, 1024, 16384, 128, 1);
  check_sample(&one_pair, 16, 3);
  /* Without draws, exactly the four corners. */
  size_t n = 0;
  size_t *rows = l09_sample_kv_rows(&big, 0, 7, &n);
  ck_assert_ptr_nonnull(rows);
  ck_assert_uint_eq(n, 4);
  const size_t total = (size_t)3 * 2048 * 4;
  ck_assert_uint_eq(rows[0], 0);
  ck_assert_uint_eq(rows[1], (size_t)2047 * 4);
  ck_assert_uint_eq(rows[2], (size_t)2 * 2048 * 4 + 3);
  ck_assert_uint_eq(rows[3], total - 1);
  free(rows);
  /* Another seed draws other keys. */
  size_t na = 0, nb = 0;
  size_t *a = l09_sample_kv_rows(&big, 16, 1, &na), *b = l09_sample_kv_rows(&big, 16, 2, &nb);
  ck_assert(a && b);
  ck_assert(na != nb || memcmp(a, b, na * sizeof(size_t)) != 0);
  free(a), free(b);
}
END_TEST

/* ---- (4) Rows that see no key, keys that no row sees ---- */

/* Causal with seq_q 8 > seq_kv 3: queries 0..4 see no key, query 5 sees key 0 alone (P = 1, so its
 * dQ is 0 too, as the gradient of a constant), queries 6 and 7 see two and three keys. The Q and
 * dO of the rows that see nothing are NaN here: a reference that took anything from them would
 * show it. */
START_TEST(rows_without_keys_get_zero_not_nan) {
  const attn_problem p = attn_test_problem(1, 2, 1, 8, 3, 16, 1);
  inputs in = make_inputs(&p, 11);
  for (int i = 0; i < 5; ++i)
    for (int h = 0; h < 2; ++h)
      for (int d = 0; d < 16; ++d) {
        const size_t at = ((size_t)i * 2 + h) * 16 + d;
        in.q[at] = in.d_o[at] = NAN;
      }
  double *dq = doubles(in.nq), *dk = doubles(in.nkv), *dv = doubles(in.nkv);
  full_gradients(&p, &in, dq, dk, dv);
  for (size_t e = 0; e < in.nq; ++e) {
    const int i = (int)(e / (2 * 16));
    if (i < 5)
      ck_assert_msg(dq[e] == 0.0, "query %d: dQ %g, want 0", i, dq[e]);
    else
      ck_assert_msg(isfinite(dq[e]) && (i == 5 || dq[e] != 0.0), "query %d: dQ %g", i, dq[e]);
  }
  for (size_t e = 0; e < in.nkv; ++e)
    ck_assert_msg(isfinite(dk[e]) && isfinite(dv[e]), "K element %zu: dK %g dV %g", e, dk[e],
                  dv[e]);
  ck_assert(isfinite(l09_reference_loss(&p, in.q, in.k, in.v, in.d_o)));
  /* Under the bottom-right mask the last query sees every key, so every key has a gradient. */
  for (size_t e = 0; e < in.nkv; ++e) ck_assert(dv[e] != 0.0);
  free(dq), free(dk), free(dv);
  free_inputs(&in);
}
END_TEST

/* A dense problem has no key that no row sees: the last query sees them all. With lengths per
 * sequence it has: the keys past a sequence's end. They are NaN here, as the harness fills them;
 * their dK and dV must be 0 and nothing else may turn NaN, and the short sequence's gradients must
 * be those of a dense problem of its length. */
START_TEST(keys_no_row_sees_get_zero) {
  const int lens[2] = {7, 4};
  attn_problem p = attn_test_problem(2, 4, 2, 5, 7, 8, _i);
  p.kv_lens = lens;
  inputs in = make_inputs(&p, 13);
  const size_t row = (size_t)p.kv_heads * p.dim; /* one key position, every KV head */
  for (size_t e = (7 + 4) * row; e < 14 * row; ++e) in.k[e] = in.v[e] = NAN;
  double *dq = doubles(in.nq), *dk = doubles(in.nkv), *dv = doubles(in.nkv);
  full_gradients(&p, &in, dq, dk, dv);
  for (size_t e = 0; e < in.nq; ++e) ck_assert_msg(isfinite(dq[e]), "dQ[%zu] = %g", e, dq[e]);
  for (size_t e = 0; e < in.nkv; ++e) {
    ck_assert_msg(isfinite(dk[e]) && isfinite(dv[e]), "dK[%zu] %g dV %g", e, dk[e], dv[e]);
    if (e >= (7 + 4) * row) ck_assert_msg(dk[e] == 0.0 && dv[e] == 0.0, "unseen key: %zu", e);
  }
  /* Sequence 1 alone, as a dense problem of 4 keys. */
  const attn_problem one = attn_test_problem(1, 4, 2, 5, 4, 8, _i);
  inputs o = {attn_q_elems(&one), attn_kv_elems(&one), in.q + in.nq / 2,
              in.k + 7 * row,     in.v + 7 * row,      in.d_o + in.nq / 2};
  double *oq = doubles(o.nq), *ok = doubles(o.nkv), *ov = doubles(o.nkv);
  full_gradients(&one, &o, oq, ok, ov);
  for (size_t e = 0; e < o.nq; ++e) ck_assert(oq[e] == dq[in.nq / 2 + e]);
  for (size_t e = 0; e < o.nkv; ++e)
    ck_assert(ok[e] == dk[7 * row + e] && ov[e] == dv[7 * row + e]);
  free(oq), free(ok), free(ov);
  free(dq), free(dk), free(dv);
  free_inputs(&in);
}
END_TEST

/* ---- (5) The D term ---- */

/* l09_d_term(dO, O) on the forward reference's O, rounded to fp32 as a kernel writes it, is the
 * double dot product; rows that see no key have D = 0; and the loss is the sum of the rows' D. */
START_TEST(d_term_of_the_reference_output) {
  const attn_problem p = attn_test_problem(1, 4, 2, 13, 9, 64, 1);
  inputs in = make_inputs(&p, 17);
  const size_t rows = attn_rows(&p), dim = (size_t)p.dim;
  double *o = doubles(in.nq), *lse = doubles(rows);
  attn_reference(&p, in.q, in.k, in.v, NULL, rows, o, lse);
  float of[64];
  double sum = 0.0;
  for (size_t r = 0; r < rows; ++r) {
    double want = 0.0, mag = 0.0;
    for (size_t d = 0; d < dim; ++d) {
      of[d] = (float)o[r * dim + d];
      want += (double)in.d_o[r * dim + d] * o[r * dim + d];
      mag += fabs((double)in.d_o[r * dim + d] * o[r * dim + d]);
    }
    const float got = l09_d_term(in.d_o + r * dim, of, p.dim);
    ck_assert_msg(fabs(got - want) <= 1e-6 * (1.0 + mag), "row %zu: D %.9g, dO . O %.9g", r, got,
                  want);
    int b, i, h;
    attn_row_coords(&p, r, &b, &i, &h);
    if (attn_visible_keys(&p, i) == 0)
      ck_assert_msg(got == 0.0f, "row %zu sees no key: D %g", r, got);
    sum += want;
  }
  const double loss = l09_reference_loss(&p, in.q, in.k, in.v, in.d_o);
  ck_assert_msg(fabs(loss - sum) <= 1e-12 * (1.0 + fabs(sum)), "loss %.17g, sum of D %.17g", loss,
                sum);
  free(o), free(lse);
  free_inputs(&in);
}
END_TEST

/* ---- (6) The checklist's bounds are the kernels' bounds ---- */

/* (seq_q, seq_kv): equal, one token on either side, more queries than keys and fewer, lengths
 * one off a tile, and lengths that are no multiple of any tile below. */
static const int kBoundLens[][2] = {{1, 1},     {1, 200},   {200, 1},    {64, 64},    {63, 65},
                                    {65, 63},   {100, 37},  {37, 100},   {128, 4096}, {4096, 128},
                                    {129, 129}, {255, 257}, {4096, 4096}};
static const int kBoundBr[] = {1, 3, 16, 64, 128}, kBoundBc[] = {1, 7, 32, 64, 128};
enum { N_BOUND_LENS = sizeof kBoundLens / sizeof kBoundLens[0] };

/* l09_first_q_tile() and l09_first_unmasked_q_tile(), the checklist's answers, against
 * attn_first_q_tile() and attn_first_unmasked_q_tile(), which versions 4-7 call on the GPU: the
 * same tile for every K/V tile start j0 from 0 to seq_kv (on a tile boundary and off it), both
 * tile lengths, causal or not. */
START_TEST(plan_bounds_equal_the_kernels_bounds) {
  const int sq = kBoundLens[_i][0], skv = kBoundLens[_i][1];
  for (int causal = 0; causal < 2; ++causal)
    for (size_t a = 0; a < sizeof kBoundBr / sizeof kBoundBr[0]; ++a)
      for (size_t c = 0; c < sizeof kBoundBc / sizeof kBoundBc[0]; ++c) {
        const int br = kBoundBr[a], bc = kBoundBc[c];
        for (int j0 = 0; j0 <= skv; ++j0) {
          const int first = l09_first_q_tile(j0, br, sq, skv, causal);
          const int want_first = attn_first_q_tile(j0, br, sq, skv, causal);
          ck_assert_msg(first == want_first,
                        "seq_q %d seq_kv %d causal %d, Br %d, j0 %d: l09_first_q_tile %d, "
                        "attn_first_q_tile %d",
                        sq, skv, causal, br, j0, first, want_first);
          const int unmasked = l09_first_unmasked_q_tile(j0, bc, br, sq, skv, causal);
          const int want_unmasked = attn_first_unmasked_q_tile(j0, bc, br, sq, skv, causal);
          ck_assert_msg(unmasked == want_unmasked,
                        "seq_q %d seq_kv %d causal %d, Br %d, Bc %d, j0 %d: "
                        "l09_first_unmasked_q_tile %d, attn_first_unmasked_q_tile %d",
                        sq, skv, causal, br, bc, j0, unmasked, want_unmasked);
        }
      }
}
END_TEST

/* Version 7's reordered staging stores still write every element of a warpgroup's dQ block once:
 * over its 16 turns each lane stores each of its 16 (block, row half) pairs once, and the
 * warpgroup's 2048 8-byte stores cover the 16 KB tile without overlap. */
START_TEST(dq_staging_reordered_writes_every_element_once) {
  static unsigned char hits[64 * 64 * 4];
  memset(hits, 0, sizeof hits);
  for (int warp = 0; warp < 4; ++warp)
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane >> 2, t4 = lane & 3;
      int seen = 0; /* bit 2 block + hf: the lane's pairs stored so far */
      for (int nt = 0; nt < 8; ++nt) {
        const int block = l09_dq_staging_block(nt, t4);
        ck_assert(block >= 0 && block < 8 && block >> 2 == nt >> 2); /* the same box */
        for (int hf = 0; hf < 2; ++hf) {
          const int bit = 1 << (2 * block + hf);
          ck_assert_msg(!(seen & bit), "lane %d stores block %d, half %d twice", lane, block, hf);
          seen |= bit;
          const unsigned off = l09_dq_staging_offset(16 * warp + g + 8 * hf, 8 * block + 2 * t4);
          ck_assert(off % 8 == 0 && off + 8 <= sizeof hits);
          for (int k = 0; k < 8; ++k) ++hits[off + k];
        }
      }
      ck_assert_int_eq(seen, 0xffff);
    }
  for (size_t i = 0; i < sizeof hits; ++i)
    ck_assert_msg(hits[i] == 1, "byte %zu of the tile written %d times", i, hits[i]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson09-cpu");
  TCase *r = tcase_create("backward reference");
  tcase_add_loop_test(r, gradients_match_finite_differences, 0, N_FD_SHAPES);
  tcase_add_loop_test(r, sampled_rows_equal_full_rows, 0, 2);
  tcase_add_test(r, rows_without_keys_get_zero_not_nan);
  tcase_add_loop_test(r, keys_no_row_sees_get_zero, 0, 2);
  tcase_add_test(r, d_term_of_the_reference_output);
  suite_add_tcase(s, r);
  TCase *k = tcase_create("key rows to check");
  tcase_add_test(k, small_problems_check_every_key_row);
  tcase_add_test(k, big_problems_check_two_pairs);
  suite_add_tcase(s, k);
  TCase *q = tcase_create("dQ staging");
  tcase_add_test(q, dq_staging_reordered_writes_every_element_once);
  suite_add_tcase(s, q);
  TCase *t = tcase_create("Q tile bounds");
  tcase_add_loop_test(t, plan_bounds_equal_the_kernels_bounds, 0, N_BOUND_LENS);
  suite_add_tcase(s, t);
  return attn_test_run(s, 0);
}
