/* Lesson 02, CPU suite: online softmax equals safe softmax (large magnitudes, masked entries, fully
 * masked rows, lengths 1 and not a multiple of 32), naive softmax overflows where documented, the
 * merge's algebra, the attention state split over warps as the GPU kernel splits it, and the
 * lesson's own plumbing (data, checked rows, verdicts, work model, supports). No GPU needed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_test.h"
#include "online_softmax.h"
#include "online_state.h"

static const int kLens[] = {1, 2, 7, 31, 32, 33, 100, 1000, 4097};
#define N_LENS ((int)(sizeof kLens / sizeof kLens[0]))

/* Largest |y - reference| over a row; NaN counts as infinite. */
static double row_err(const float *x, const float *y, int n) {
  double *ref = (double *)malloc(sizeof(double) * (size_t)n);
  ck_assert_ptr_nonnull(ref);
  l02_softmax_row_reference(x, n, ref);
  double e = 0.0;
  for (int j = 0; j < n; ++j) {
    double d = fabs((double)y[j] - ref[j]);
    if (!(d <= e)) e = isnan(d) ? INFINITY : d;
  }
  free(ref);
  return e;
}

typedef void (*row_fn)(const float *x, int n, float *y);

static void assert_row(row_fn f, const float *x, int n, double tol, const char *what) {
  float *y = (float *)malloc(sizeof(float) * (size_t)n);
  ck_assert_ptr_nonnull(y);
  f(x, n, y);
  double e = row_err(x, y, n);
  ck_assert_msg(e <= tol, "%s, n = %d: max |y - ref| = %g > %g", what, n, e, tol);
  free(y);
}

START_TEST(online_equals_safe_on_wild_rows) {
  /* Wild data: uniform [-8, 8) with +-1e4 entries, -inf entries and fully masked rows (r % 5 == 4).
   */
  for (int li = 0; li < N_LENS; ++li) {
    const int n = kLens[li], rows = 10;
    float *x = (float *)malloc(sizeof(float) * (size_t)n * rows);
    ck_assert_ptr_nonnull(x);
    l02_softmax_fill(x, rows, n, L02_DATA_WILD, 1234 + li);
    for (int r = 0; r < rows; ++r) {
      assert_row(l02_softmax_row_online_cpu, x + (size_t)r * n, n, 1e-6, "online");
      assert_row(l02_softmax_row_safe_cpu, x + (size_t)r * n, n, 1e-6, "safe");
    }
    free(x);
  }
}
END_TEST

START_TEST(large_magnitudes_and_ramps) {
  enum { N = 300 };
  float x[N];
  const float offsets[] = {1e4f, -1e4f, 88.0f, 200.0f, -200.0f};
  for (int k = 0; k < 5; ++k) {
    for (int j = 0; j < N; ++j) x[j] = offsets[k] + (float)((j * 37) % 17) * 0.25f;
    assert_row(l02_softmax_row_online_cpu, x, N, 1e-6, "online, offset row");
    assert_row(l02_softmax_row_safe_cpu, x, N, 1e-6, "safe, offset row");
  }
  /* Increasing: the running max moves at every element, so every step rescales. */
  for (int j = 0; j < N; ++j) x[j] = -1e4f + 70.0f * (float)j;
  assert_row(l02_softmax_row_online_cpu, x, N, 1e-6, "online, increasing ramp");
  for (int j = 0; j < N; ++j) x[j] = 0.05f * (float)j;
  assert_row(l02_softmax_row_online_cpu, x, N, 1e-6, "online, slow ramp");
  for (int j = 0; j < N; ++j) x[j] = 1e4f - 0.05f * (float)j;
  assert_row(l02_softmax_row_online_cpu, x, N, 1e-6, "online, decreasing ramp");
}
END_TEST

START_TEST(masked_rows_and_length_one) {
  float x[40], y[40];
  for (int j = 0; j < 40; ++j) x[j] = -INFINITY;
  row_fn fns[] = {l02_softmax_row_naive_cpu, l02_softmax_row_safe_cpu, l02_softmax_row_online_cpu};
  for (int f = 0; f < 3; ++f) {
    for (int j = 0; j < 40; ++j) y[j] = NAN;
    fns[f](x, 40, y); /* fully masked: defined as zeros */
    for (int j = 0; j < 40; ++j) ck_assert_msg(y[j] == 0.0f, "fn %d: y[%d] = %g", f, j, y[j]);
    fns[f](x, 1, y);
    ck_assert(y[0] == 0.0f);
    const float one = 1e4f;
    fns[f](&one, 1, y); /* a single score: probability 1, whatever its size (naive: inf/inf) */
    if (f > 0) ck_assert_msg(y[0] == 1.0f, "fn %d: softmax of one score = %g", f, y[0]);
  }
  x[17] = 3.0f; /* one visible entry among masked ones */
  l02_softmax_row_online_cpu(x, 40, y);
  ck_assert(y[17] == 1.0f && y[0] == 0.0f);
}
END_TEST

START_TEST(naive_fails_where_documented) {
  enum { N = 64 };
  float x[N], y[N];
  /* Small scores: right. */
  l02_softmax_fill(x, 1, N, L02_DATA_SMALL, 5);
  assert_row(l02_softmax_row_naive_cpu, x, N, 1e-6, "naive, small scores");
  /* One score above 88.7: exp overflows, inf / inf = NaN. */
  x[9] = 100.0f;
  l02_softmax_row_naive_cpu(x, N, y);
  ck_assert(isnan(y[9]));
  /* Every score below -103.9: every exp underflows to 0, the row sums to 0 instead of 1. */
  for (int j = 0; j < N; ++j) x[j] = -150.0f + (float)(j % 7);
  l02_softmax_row_naive_cpu(x, N, y);
  float sum = 0.0f;
  for (int j = 0; j < N; ++j) sum += y[j];
  ck_assert(sum == 0.0f);
  ck_assert(row_err(x, y, N) > 0.01);
}
END_TEST

START_TEST(table_data_breaks_naive) {
  /* The table's data for versions 2-7 has rows naive softmax cannot survive; version 1's data has
   * none. */
  enum { ROWS = 64, COLS = 128 };
  float *x = (float *)malloc(sizeof(float) * ROWS * COLS), y[COLS];
  ck_assert_ptr_nonnull(x);
  l02_softmax_fill(x, ROWS, COLS, L02_DATA_SCORES, 1);
  int broken = 0;
  for (int r = 0; r < ROWS; ++r) {
    l02_softmax_row_naive_cpu(x + r * COLS, COLS, y);
    if (!(row_err(x + r * COLS, y, COLS) <= 1e-6)) {
      broken++;
      ck_assert_msg(r % 8 == 7, "row %d is not a shifted row but breaks naive softmax", r);
    }
    assert_row(l02_softmax_row_online_cpu, x + r * COLS, COLS, 1e-6, "online, table data");
  }
  ck_assert_int_ge(broken, 6); /* 8 shifted rows; an offset within +-88 would not break it */
  l02_softmax_fill(x, ROWS, COLS, L02_DATA_SMALL, 1);
  for (int r = 0; r < ROWS; ++r)
    assert_row(l02_softmax_row_naive_cpu, x + r * COLS, COLS, 1e-6, "naive, small data");
  free(x);
}
END_TEST

/* ---- merge algebra ---- */

static l02_online_ml ml_of(const float *x, int lo, int hi) {
  l02_online_ml s = l02_online_ml_empty();
  for (int j = lo; j < hi; ++j) s = l02_online_ml_push(s, x[j]);
  return s;
}

START_TEST(merge_algebra) {
  enum { N = 500 };
  float x[N];
  l02_softmax_fill(x, 1, N, L02_DATA_WILD, 77);
  const l02_online_ml whole = ml_of(x, 0, N);
  const l02_online_ml e = l02_online_ml_empty();
  for (int k1 = 0; k1 <= N; k1 += 23) {
    for (int k2 = k1; k2 <= N; k2 += 41) {
      l02_online_ml a = ml_of(x, 0, k1), b = ml_of(x, k1, k2), c = ml_of(x, k2, N);
      l02_online_ml l = l02_online_ml_merge(l02_online_ml_merge(a, b), c);
      l02_online_ml r = l02_online_ml_merge(a, l02_online_ml_merge(b, c));
      l02_online_ml ab = l02_online_ml_merge(a, b), ba = l02_online_ml_merge(b, a);
      ck_assert(l.m == whole.m && r.m == whole.m);
      ck_assert_msg(fabsf(l.l - whole.l) <= 1e-6f * whole.l, "not associative within rounding");
      ck_assert_msg(fabsf(r.l - whole.l) <= 1e-6f * whole.l, "not associative within rounding");
      ck_assert_msg(ab.m == ba.m && ab.l == ba.l, "not commutative");
      l02_online_ml ae = l02_online_ml_merge(a, e), ea = l02_online_ml_merge(e, a);
      ck_assert(ae.m == a.m && ae.l == a.l && ea.m == a.m && ea.l == a.l); /* exact identity */
    }
  }
  l02_online_ml ee = l02_online_ml_merge(e, e);
  ck_assert(ee.m == -INFINITY && ee.l == 0.0f);
}
END_TEST

/* ---- the attention form, split as the GPU kernel splits it ---- */

START_TEST(attention_split_over_warps) {
  enum { DIM = 24, WARPS = L02_SPLIT_WARPS };
  const int lens[] = {1, 3, 8, 9, 100};
  for (int li = 0; li < 5; ++li) {
    const int n = lens[li];
    float *s = (float *)malloc(sizeof(float) * n), *v = (float *)malloc(sizeof(float) * n * DIM);
    ck_assert(s && v);
    l02_softmax_fill(s, 1, n, L02_DATA_WILD, 9 + li);
    attn_fill_uniform(v, (size_t)n * DIM, -1.0f, 1.0f, 3, 4);
    /* one state for the whole row */
    float o_all[DIM], out_all[DIM], lse_all;
    l02_online_mlo all;
    l02_online_mlo_init(&all, o_all, DIM);
    for (int j = 0; j < n; ++j) l02_online_mlo_push(&all, s[j], v + j * DIM, DIM);
    l02_online_mlo_finish(&all, DIM, out_all, &lse_all);
    /* one state per warp over a contiguous chunk (some empty when n < 8), folded as v8 does */
    float o_w[WARPS][DIM], o_acc[DIM], out[DIM], lse;
    l02_online_mlo acc;
    l02_online_mlo_init(&acc, o_acc, DIM);
    const int chunk = (n + WARPS - 1) / WARPS;
    for (int w = 0; w < WARPS; ++w) {
      l02_online_mlo st;
      l02_online_mlo_init(&st, o_w[w], DIM);
      const int j0 = w * chunk < n ? w * chunk : n, j1 = j0 + chunk < n ? j0 + chunk : n;
      for (int j = j0; j < j1; ++j) l02_online_mlo_push(&st, s[j], v + j * DIM, DIM);
      l02_online_mlo_merge(&acc, &st, DIM);
    }
    l02_online_mlo_finish(&acc, DIM, out, &lse);
    /* reference in double */
    double m = -INFINITY, l = 0.0;
    for (int j = 0; j < n; ++j) m = s[j] > m ? s[j] : m;
    for (int j = 0; j < n; ++j) l += exp((double)s[j] - m);
    for (int d = 0; d < DIM; ++d) {
      double ref = 0.0;
      for (int j = 0; j < n; ++j) ref += exp((double)s[j] - m) / l * v[j * DIM + d];
      if (m == -INFINITY) ref = 0.0;
      ck_assert_msg(fabs(out[d] - ref) <= 1e-5, "n %d d %d: %g vs %g", n, d, out[d], ref);
      ck_assert_msg(fabsf(out[d] - out_all[d]) <= 1e-5f, "split and whole disagree");
    }
    if (m == -INFINITY)
      ck_assert(lse == -INFINITY);
    else
      ck_assert(fabs(lse - (m + log(l))) <= 1e-4 * fmax(1.0, fabs(m)));
    free(s);
    free(v);
  }
}
END_TEST

/* ---- the lesson's plumbing ---- */

START_TEST(check_rows_and_verdicts) {
  size_t n = 0;
  size_t *all = l02_softmax_check_rows(100, 40, 1, &n);
  ck_assert_ptr_nonnull(all);
  ck_assert_uint_eq(n, 100);
  free(all);
  size_t *some = l02_softmax_check_rows(16384, 4096, 1, &n);
  ck_assert_ptr_nonnull(some);
  ck_assert(n > 100 && n <= 256);
  ck_assert(some[0] == 0 && some[n - 1] == 16383);
  int has7 = 0;
  for (size_t i = 1; i < n; ++i) ck_assert(some[i] > some[i - 1]); /* sorted, no duplicates */
  for (size_t i = 0; i < n; ++i) has7 |= some[i] == 7;
  ck_assert(has7);
  free(some);

  /* The judge passes a right answer and fails NaN, an unwritten element, and a wrong value. */
  enum { R = 3, C = 50 };
  float x[R * C], y[R * C];
  size_t rows[R] = {0, 1, 2};
  l02_softmax_fill(x, R, C, L02_DATA_WILD, 3);
  for (int r = 0; r < R; ++r) l02_softmax_row_safe_cpu(x + r * C, C, y + r * C);
  attn_verdict v;
  attn_verdict_init(&v, ATTN_F32);
  ck_assert_int_eq(l02_softmax_judge(&v, x, y, R, C, rows, R), 0);
  attn_verdict_finish(&v);
  ck_assert(v.pass);
  for (int bad = 0; bad < 3; ++bad) {
    float z[R * C];
    memcpy(z, y, sizeof z);
    if (bad == 0) z[5] = NAN;
    if (bad == 1) memset(&z[60], ATTN_POISON_BYTE, sizeof(float));
    if (bad == 2) z[70] += 1e-3f;
    attn_verdict_init(&v, ATTN_F32);
    l02_softmax_judge(&v, x, z, R, C, rows, R);
    attn_verdict_finish(&v);
    ck_assert_msg(!v.pass, "a broken output (case %d) passed", bad);
  }
}
END_TEST

START_TEST(shapes_supports_and_work) {
  attn_problem p = attn_test_problem(2, 3, 3, 5, 77, 64, 0);
  ck_assert_uint_eq(l02_softmax_rows(&p), 30);
  ck_assert_int_eq(l02_softmax_cols(&p), 77);
  ck_assert_ptr_null(l02_softmax_shape_supports(&p));
  const attn_lesson *L = &l02_lesson;
  ck_assert_uint_eq(l02_softmax_rows(&L->defaults) * (size_t)L->defaults.seq_kv,
                    (size_t)16384 * 4096);
  ck_assert_int_eq(L->n_versions, L02_N_VARIANTS + 1);
  /* One setup serves the softmax versions: each finds its variant through attn_version::user. */
  for (int i = 0; i < L02_N_VARIANTS; ++i) {
    ck_assert_ptr_eq(L->versions[i].user, &l02_softmax_variants[i]);
    ck_assert_ptr_eq(L->versions[i].custom, L->versions[0].custom);
    ck_assert_ptr_null(L->versions[i].supports);
  }
  ck_assert_ptr_null(L->versions[L02_N_VARIANTS].user);
  attn_problem odd = attn_test_problem(1, 1, 1, 2, 4097, 64, 0);
  ck_assert_ptr_null(l02_softmax_variant_supports(&l02_softmax_variants[4], &odd));
  ck_assert_ptr_nonnull(l02_softmax_variant_supports(&l02_softmax_variants[5], &odd));
  ck_assert_ptr_nonnull(l02_softmax_variant_supports(&l02_softmax_variants[6], &odd));

  ck_assert_ptr_null(l02_softmax_v6_supports(4));
  ck_assert_ptr_null(l02_softmax_v6_supports(32768));
  ck_assert_ptr_nonnull(l02_softmax_v6_supports(4097));
  ck_assert_ptr_nonnull(l02_softmax_v6_supports(32772));
  ck_assert_ptr_null(l02_softmax_v7_supports(65536));
  ck_assert_ptr_nonnull(l02_softmax_v7_supports(65540));
  ck_assert_ptr_nonnull(l02_softmax_v7_supports(30));
  ck_assert_int_eq(l02_softmax_v6_threads(4), 32);
  ck_assert_int_eq(l02_softmax_v6_threads(4096), 128);
  ck_assert_int_eq(l02_softmax_v6_threads(32768), 1024);
  ck_assert_int_eq(l02_softmax_v6_threads(1000), 32);
  ck_assert_int_eq(l02_softmax_v6_threads(1028), 64);
  ck_assert_int_eq(l02_softmax_v7_threads(32768), 512);
  ck_assert_int_eq(l02_softmax_v7_threads(65536), 1024);
  for (int c = 4; c <= L02_REGS_MAX_COLS; c += 4 * 97) /* every float4 has a thread */
    ck_assert(l02_softmax_v6_threads(c) * L02_REG_VECS * 4 >= c);

  /* The work model: version 6 moves the matrix twice, the three-pass versions four times. */
  ck_assert(l02_softmax_model_bytes(1, 10, 8) == 2.0 * 10 * 8 * 4);
  ck_assert_int_eq(l02_softmax_variants[5].reads, 1);
  ck_assert_int_eq(l02_softmax_variants[4].reads, 2);
  ck_assert_int_eq(l02_softmax_variants[1].reads, 3);
  ck_assert_int_eq(l02_softmax_variants[0].data, L02_DATA_SMALL);

  attn_problem big = attn_test_problem(1, 1, 1, 1, 64, 300, 0);
  ck_assert_ptr_nonnull(l02_attn_v8_supports(&big));
  big.dim = 256;
  ck_assert_ptr_null(l02_attn_v8_supports(&big));
}
END_TEST

START_TEST(causal_mask_of_the_matrix) {
  /* batch 1, heads 2, seq 3, kv-seq 2, causal: query i sees keys j <= i - 1 (bottom-right). */
  attn_problem p = attn_test_problem(1, 2, 2, 3, 2, 8, 1);
  float x[6 * 2];
  for (int i = 0; i < 12; ++i) x[i] = 1.0f;
  l02_softmax_mask_causal(x, &p);
  /* rows are (i, h): 0,1 -> i = 0 (sees nothing); 2,3 -> i = 1 (key 0); 4,5 -> i = 2 (both) */
  const int visible[6] = {0, 0, 1, 1, 2, 2};
  for (int r = 0; r < 6; ++r)
    for (int j = 0; j < 2; ++j)
      ck_assert_msg((x[r * 2 + j] == 1.0f) == (j < visible[r]), "row %d key %d", r, j);
}
END_TEST

START_TEST(cpu_part_runs) {
  attn_options o;
  memset(&o, 0, sizeof o);
  o.problem = attn_test_problem(1, 2, 2, 4, 100, 64, 0);
  o.seed = 1;
  ck_assert_int_eq(l02_lesson.cpu_part(&o), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson02 cpu");
  TCase *t = tcase_create("online softmax");
  tcase_add_test(t, online_equals_safe_on_wild_rows);
  tcase_add_test(t, large_magnitudes_and_ramps);
  tcase_add_test(t, masked_rows_and_length_one);
  tcase_add_test(t, naive_fails_where_documented);
  tcase_add_test(t, table_data_breaks_naive);
  tcase_add_test(t, merge_algebra);
  tcase_add_test(t, attention_split_over_warps);
  tcase_add_test(t, check_rows_and_verdicts);
  tcase_add_test(t, shapes_supports_and_work);
  tcase_add_test(t, causal_mask_of_the_matrix);
  tcase_add_test(t, cpu_part_runs);
  suite_add_tcase(s, t);
  return attn_test_run(s, 0);
}
