/* Checklist 02: can you write the online softmax update and the merge of two partial states, for
 * the plain softmax (m, l) and for attention (m, l, O)? And a warp's max and sum from the xor
 * shuffle alone, with the result in every lane?
 *
 * Built twice (cmake/AttnLesson.cmake): checklist-2 against the lesson's own functions (must pass)
 * and drill-2 against drills/02_online_softmax.c (fails until the reader fills it in).
 * Every expected value is computed here in double, from the definitions, not from the functions
 * under test.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "online_state.h"

/* The scores used throughout: a mix of signs, a masked entry, a repeated max, and a late new max.
 */
static const float kX[] = {0.5f, -1.0f, 3.0f, -INFINITY, 2.5f, 10.0f, -20.0f, 10.0f, 11.5f, -3.0f};
#define NX ((int)(sizeof kX / sizeof kX[0]))

/* (m, l) of x[lo, hi) in double, from the definition. */
static void ml_expected(const float *x, int lo, int hi, double *m, double *l) {
  *m = -INFINITY;
  for (int j = lo; j < hi; ++j)
    if (x[j] > *m) *m = x[j];
  *l = 0.0;
  if (*m == -INFINITY) return;
  for (int j = lo; j < hi; ++j) *l += exp((double)x[j] - *m);
}

static l02_online_ml push_range(const float *x, int lo, int hi) {
  l02_online_ml s = l02_online_ml_empty();
  for (int j = lo; j < hi; ++j) s = l02_online_ml_push(s, x[j]);
  return s;
}

static void assert_ml(l02_online_ml s, double m, double l) {
  ck_assert_msg(s.m == (float)m, "m = %g, expected %g", s.m, m);
  ck_assert_msg(fabs(s.l - l) <= 1e-5 * l + 1e-30, "l = %.8g, expected %.8g", s.l, l);
}

START_TEST(push_matches_definition) {
  double m, l;
  for (int n = 1; n <= NX; ++n) {
    ml_expected(kX, 0, n, &m, &l);
    assert_ml(push_range(kX, 0, n), m, l);
  }
}
END_TEST

START_TEST(push_large_magnitudes) {
  const float x[] = {1e4f, -1e4f, 9999.0f, 0.0f, 1e4f};
  double m, l;
  ml_expected(x, 0, 5, &m, &l); /* m = 1e4, l = 2 + e^-1 (the rest underflows) */
  l02_online_ml s = push_range(x, 0, 5);
  ck_assert(isfinite(s.l));
  assert_ml(s, m, l);
}
END_TEST

START_TEST(push_masked_keeps_empty) {
  l02_online_ml s = l02_online_ml_push(l02_online_ml_empty(), -INFINITY);
  ck_assert(s.m == -INFINITY && s.l == 0.0f);
  s = l02_online_ml_push(s, 2.0f);
  ck_assert(s.m == 2.0f && s.l == 1.0f);
  s = l02_online_ml_push(s, -INFINITY); /* a masked score changes nothing */
  ck_assert(s.m == 2.0f && s.l == 1.0f);
}
END_TEST

START_TEST(merge_of_any_split_is_the_whole) {
  double m, l;
  ml_expected(kX, 0, NX, &m, &l);
  for (int k = 0; k <= NX; ++k) {
    l02_online_ml a = push_range(kX, 0, k), b = push_range(kX, k, NX);
    l02_online_ml ab = l02_online_ml_merge(a, b), ba = l02_online_ml_merge(b, a);
    assert_ml(ab, m, l);
    ck_assert_msg(ab.m == ba.m && ab.l == ba.l, "merge is not commutative at split %d", k);
  }
}
END_TEST

START_TEST(merge_is_associative) {
  double m, l;
  ml_expected(kX, 0, NX, &m, &l);
  l02_online_ml a = push_range(kX, 0, 3), b = push_range(kX, 3, 6), c = push_range(kX, 6, NX);
  l02_online_ml left = l02_online_ml_merge(l02_online_ml_merge(a, b), c);
  l02_online_ml right = l02_online_ml_merge(a, l02_online_ml_merge(b, c));
  assert_ml(left, m, l);
  assert_ml(right, m, l);
}
END_TEST

START_TEST(merge_with_empty_is_identity) {
  l02_online_ml s = push_range(kX, 0, NX), e = l02_online_ml_empty();
  l02_online_ml r1 = l02_online_ml_merge(s, e), r2 = l02_online_ml_merge(e, s),
                r3 = l02_online_ml_merge(e, e);
  ck_assert(r1.m == s.m && r1.l == s.l);
  ck_assert(r2.m == s.m && r2.l == s.l);
  ck_assert(r3.m == -INFINITY && r3.l == 0.0f);
}
END_TEST

/* ---- the attention form ---- */

#define DIM 5
#define NK 9
static const float kS[NK] = {0.3f, -2.0f, 1.7f, -INFINITY, 4.0f, 0.0f, 3.9f, -1.0f, 2.2f};

static float value(int j, int d) {
  return 0.25f + (float)((j * 7 + d * 3) % 11) / 11.0f - 0.5f;
}

/* Softmax-weighted sum of value rows over keys [lo, hi), and the log-sum-exp, in double. */
static void attn_expected(int lo, int hi, double *o, double *lse) {
  double m = -INFINITY, l = 0.0;
  for (int j = lo; j < hi; ++j)
    if (kS[j] > m) m = kS[j];
  for (int d = 0; d < DIM; ++d) o[d] = 0.0;
  if (m == -INFINITY) {
    *lse = -INFINITY;
    return;
  }
  for (int j = lo; j < hi; ++j) l += exp((double)kS[j] - m);
  for (int j = lo; j < hi; ++j)
    for (int d = 0; d < DIM; ++d) o[d] += exp((double)kS[j] - m) / l * value(j, d);
  *lse = m + log(l);
}

static void push_keys(l02_online_mlo *s, int lo, int hi) {
  float v[DIM];
  for (int j = lo; j < hi; ++j) {
    for (int d = 0; d < DIM; ++d) v[d] = value(j, d);
    l02_online_mlo_push(s, kS[j], v, DIM);
  }
}

static void assert_finished(const l02_online_mlo *s, const double *o, double lse) {
  float out[DIM], got_lse = NAN;
  for (int d = 0; d < DIM; ++d) out[d] = NAN;
  l02_online_mlo_finish(s, DIM, out, &got_lse);
  for (int d = 0; d < DIM; ++d)
    ck_assert_msg(fabs(out[d] - o[d]) <= 1e-6, "O[%d] = %.8g, expected %.8g", d, out[d], o[d]);
  if (isinf(lse))
    ck_assert_msg(got_lse == (float)lse, "lse = %g, expected %g", got_lse, lse);
  else
    ck_assert_msg(fabs(got_lse - lse) <= 1e-5, "lse = %.8g, expected %.8g", got_lse, lse);
}

START_TEST(mlo_push_matches_definition) {
  double o[DIM], lse;
  for (int n = 1; n <= NK; ++n) {
    float store[DIM];
    l02_online_mlo s;
    l02_online_mlo_init(&s, store, DIM);
    push_keys(&s, 0, n);
    attn_expected(0, n, o, &lse);
    assert_finished(&s, o, lse);
  }
}
END_TEST

START_TEST(mlo_merge_of_splits_is_the_whole) {
  double o[DIM], lse;
  attn_expected(0, NK, o, &lse);
  for (int k1 = 0; k1 <= NK; ++k1) {
    for (int k2 = k1; k2 <= NK; ++k2) {
      float sa[DIM], sb[DIM], sc[DIM];
      l02_online_mlo a, b, c;
      l02_online_mlo_init(&a, sa, DIM);
      l02_online_mlo_init(&b, sb, DIM);
      l02_online_mlo_init(&c, sc, DIM);
      push_keys(&a, 0, k1);
      push_keys(&b, k1, k2);
      push_keys(&c, k2, NK);
      l02_online_mlo_merge(&c, &a, DIM); /* out of order on purpose: the merge does not care */
      l02_online_mlo_merge(&c, &b, DIM);
      assert_finished(&c, o, lse);
    }
  }
}
END_TEST

START_TEST(mlo_empty_and_masked) {
  float store[DIM], empty_store[DIM];
  l02_online_mlo s, e;
  l02_online_mlo_init(&s, store, DIM);
  l02_online_mlo_init(&e, empty_store, DIM);
  double zeros[DIM] = {0};
  float v[DIM] = {1, 2, 3, 4, 5};
  l02_online_mlo_push(&s, -INFINITY, v, DIM); /* a masked key: still empty */
  assert_finished(&s, zeros, -INFINITY);      /* fully masked: O = 0, lse = -inf */
  push_keys(&s, 0, NK);
  double o[DIM], lse;
  attn_expected(0, NK, o, &lse);
  l02_online_mlo_merge(&s, &e, DIM); /* merging the empty state changes nothing */
  assert_finished(&s, o, lse);
  l02_online_mlo_merge(&e, &s, DIM); /* and the empty state merged with s becomes s */
  assert_finished(&e, o, lse);
}
END_TEST

/* ---- the warp reduction ---- */

/* The lane values of case c, reproducible: a small xorshift fills the random ones. */
enum {
  LANES_RANDOM,     /* mixed signs, the max somewhere in the middle */
  LANES_MASKED,     /* random, with a third of the lanes -inf (masked scores) */
  LANES_ONE_FINITE, /* -inf everywhere but lane 19 */
  LANES_ALL_MASKED, /* every lane -inf: the max is -inf */
  LANES_ALL_EQUAL,  /* 32 copies of one value */
  LANES_MAX_LAST,   /* the max in lane 31, the smallest in lane 0 */
  LANES_WEIGHTS,    /* exp(x - m) weights: what the softmax sums, from tiny to 1 */
  LANES_MAGNITUDES, /* large and small magnitudes of both signs */
  N_LANE_CASES
};

static void lane_case(int c, float *x) {
  uint32_t r = 2463534242u + 977u * (uint32_t)c;
  for (int i = 0; i < L02_LANES; ++i) {
    r ^= r << 13;
    r ^= r >> 17;
    r ^= r << 5;
    const float u = (float)(r >> 8) / 16777216.0f; /* [0, 1) */
    switch (c) {
      case LANES_RANDOM:
        x[i] = 6.0f * u - 2.5f;
        break;
      case LANES_MASKED:
        x[i] = i % 3 == 1 ? -INFINITY : 6.0f * u - 2.5f;
        break;
      case LANES_ONE_FINITE:
        x[i] = i == 19 ? -7.25f : -INFINITY;
        break;
      case LANES_ALL_MASKED:
        x[i] = -INFINITY;
        break;
      case LANES_ALL_EQUAL:
        x[i] = 0.8125f;
        break;
      case LANES_MAX_LAST:
        x[i] = (float)i * 0.5f - 3.0f + 0.1f * u;
        break;
      case LANES_WEIGHTS:
        x[i] = expf(-12.0f * u);
        break;
      default:
        x[i] = (u - 0.5f) * (i % 4 == 0 ? 3e4f : 3e-2f);
        break;
    }
  }
  if (c == LANES_RANDOM) x[13] = 4.0f; /* above every other lane (they are below 3.5) */
}

static double lanes_max(const float *x) {
  double m = -INFINITY;
  for (int i = 0; i < L02_LANES; ++i)
    if (x[i] > m) m = x[i];
  return m;
}

/* The sum in double, and a bound on the float sum's error: each lane's value passes through five
 * roundings of half an ulp at most, so 5 ulps of the sum of magnitudes leaves a factor 2 to spare.
 * A lane of -inf makes the sum -inf (and the bound infinite: the caller compares exactly). */
static double lanes_sum(const float *x, double *tol) {
  double s = 0.0, mag = 0.0;
  for (int i = 0; i < L02_LANES; ++i) {
    s += x[i];
    mag += fabs((double)x[i]);
  }
  *tol = 5.0 * FLT_EPSILON * mag;
  return s;
}

START_TEST(warp_max_matches_sequential) {
  for (int c = 0; c < N_LANE_CASES; ++c) {
    float x[L02_LANES];
    lane_case(c, x);
    const double want = lanes_max(x);
    l02_warp_max(x);
    ck_assert_msg(x[0] == (float)want, "case %d: lane 0 holds %g, the max is %g", c, x[0], want);
  }
}
END_TEST

START_TEST(warp_sum_matches_sequential) {
  for (int c = 0; c < N_LANE_CASES; ++c) {
    float x[L02_LANES];
    lane_case(c, x);
    double tol;
    const double want = lanes_sum(x, &tol);
    l02_warp_sum(x);
    if (isinf(want))
      ck_assert_msg(x[0] == (float)want, "case %d: lane 0 holds %g, the sum is %g", c, x[0], want);
    else
      ck_assert_msg(fabs(x[0] - want) <= tol, "case %d: lane 0 holds %.9g, the sum is %.9g", c,
                    x[0], want);
  }
  /* 32 equal values: every partial sum is a power-of-two multiple of the value, so it is exact. */
  float x[L02_LANES];
  lane_case(LANES_ALL_EQUAL, x);
  l02_warp_sum(x);
  ck_assert_msg(x[0] == 32.0f * 0.8125f, "all lanes 0.8125: lane 0 holds %.9g, not 26", x[0]);
}
END_TEST

/* A reduction to lane 0 alone (the shared-memory tree, or shuffles that only move values down)
 * passes the two tests above; the butterfly leaves the result in every lane, to the bit, because
 * a lane and its partner combine the same two values. */
START_TEST(warp_every_lane_holds_the_result) {
  for (int c = 0; c < N_LANE_CASES; ++c) {
    float x[L02_LANES], y[L02_LANES];
    lane_case(c, x);
    memcpy(y, x, sizeof x);
    const double want_max = lanes_max(x);
    l02_warp_max(x);
    for (int i = 0; i < L02_LANES; ++i)
      ck_assert_msg(x[i] == (float)want_max, "case %d, max: lane %d holds %g, the max is %g", c, i,
                    x[i], want_max);
    double tol;
    const double want_sum = lanes_sum(y, &tol);
    l02_warp_sum(y);
    for (int i = 0; i < L02_LANES; ++i) {
      ck_assert_msg(memcmp(&y[i], &y[0], sizeof(float)) == 0,
                    "case %d, sum: lane %d holds %.9g, lane 0 %.9g (must be the same bits)", c, i,
                    y[i], y[0]);
      ck_assert_msg(isinf(want_sum) ? y[i] == (float)want_sum : fabs(y[i] - want_sum) <= tol,
                    "case %d, sum: lane %d holds %.9g, the sum is %.9g", c, i, y[i], want_sum);
    }
  }
}
END_TEST

static Suite *checklist_suite(void) {
  Suite *s = suite_create("checklist-2: online softmax");
  TCase *t = tcase_create("softmax (m, l)");
  tcase_add_test(t, push_matches_definition);
  tcase_add_test(t, push_large_magnitudes);
  tcase_add_test(t, push_masked_keeps_empty);
  tcase_add_test(t, merge_of_any_split_is_the_whole);
  tcase_add_test(t, merge_is_associative);
  tcase_add_test(t, merge_with_empty_is_identity);
  suite_add_tcase(s, t);
  TCase *a = tcase_create("attention (m, l, O)");
  tcase_add_test(a, mlo_push_matches_definition);
  tcase_add_test(a, mlo_merge_of_splits_is_the_whole);
  tcase_add_test(a, mlo_empty_and_masked);
  suite_add_tcase(s, a);
  TCase *w = tcase_create("warp reduction");
  tcase_add_test(w, warp_max_matches_sequential);
  tcase_add_test(w, warp_sum_matches_sequential);
  tcase_add_test(w, warp_every_lane_holds_the_result);
  suite_add_tcase(s, w);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(checklist_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
