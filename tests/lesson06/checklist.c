/* Lesson 06's checklist: the split plan and the combine of partial states (split_plan.h). Built
 * against the lesson's answers (checklist-6, must pass) and against drills/06 (drill-6). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "split_plan.h"

enum { N = 700, DIM = 4 };

/* Scores and value rows of one query row, fixed and varied (a wide range of scores). */
static float g_s[N], g_v[N][DIM];

static void fill(void) {
  for (int j = 0; j < N; ++j) {
    g_s[j] = 6.0f * sinf(0.37f * j) + 0.01f * j;
    for (int d = 0; d < DIM; ++d) g_v[j][d] = cosf(0.11f * j * (d + 1));
  }
}

/* The partial state of keys [j0, j1) computed directly: (lse, normalised O); (-inf, 0) if empty. */
static float state(int j0, int j1, float *o) {
  double m = -INFINITY, l = 0.0, acc[DIM] = {0};
  for (int j = j0; j < j1; ++j) m = fmax(m, g_s[j]);
  for (int j = j0; j < j1; ++j) {
    const double e = exp(g_s[j] - m);
    l += e;
    for (int d = 0; d < DIM; ++d) acc[d] += e * g_v[j][d];
  }
  for (int d = 0; d < DIM; ++d) o[d] = l > 0.0 ? (float)(acc[d] / l) : 0.0f;
  return l > 0.0 ? (float)(m + log(l)) : -INFINITY;
}

static void assert_close(float lse, const float *o, float want_lse, const float *want_o) {
  ck_assert_msg(fabsf(lse - want_lse) < 1e-4f, "lse %g, want %g", lse, want_lse);
  for (int d = 0; d < DIM; ++d)
    ck_assert_msg(fabsf(o[d] - want_o[d]) < 1e-5f, "o[%d] %g, want %g", d, o[d], want_o[d]);
}

/* Cutting the keys into chunks and combining their states gives the unsplit softmax. */
START_TEST(combine_equals_unsplit_softmax) {
  fill();
  float want_o[DIM], lse[8], o[8][DIM], out_lse, out_o[DIM];
  const float want_lse = state(0, N, want_o);
  const int cuts[9] = {0, 1, 64, 100, 255, 256, 500, 699, N}; /* 8 uneven chunks */
  for (int c = 0; c < 8; ++c) lse[c] = state(cuts[c], cuts[c + 1], o[c]);
  l06_combine(lse, &o[0][0], 8, DIM, &out_lse, out_o);
  assert_close(out_lse, out_o, want_lse, want_o);
}
END_TEST

/* Pairwise merges in any order and any grouping give the same row as the combine. */
START_TEST(merge_any_order_any_grouping) {
  fill();
  float want_o[DIM], lse[4], o[4][DIM];
  const float want_lse = state(0, N, want_o);
  const int cuts[5] = {0, 200, 201, 650, N};
  for (int c = 0; c < 4; ++c) lse[c] = state(cuts[c], cuts[c + 1], o[c]);
  /* left to right: ((0 1) 2) 3 */
  float a = lse[0], oa[DIM];
  memcpy(oa, o[0], sizeof oa);
  for (int c = 1; c < 4; ++c) l06_merge(&a, oa, lse[c], o[c], DIM);
  assert_close(a, oa, want_lse, want_o);
  /* right to left: 3 (2 (1 0)) */
  a = lse[3];
  memcpy(oa, o[3], sizeof oa);
  for (int c = 2; c >= 0; --c) l06_merge(&a, oa, lse[c], o[c], DIM);
  assert_close(a, oa, want_lse, want_o);
  /* a tree: (0 2) (3 1) */
  float b = lse[3], ob[DIM];
  a = lse[0];
  memcpy(oa, o[0], sizeof oa);
  memcpy(ob, o[3], sizeof ob);
  l06_merge(&a, oa, lse[2], o[2], DIM);
  l06_merge(&b, ob, lse[1], o[1], DIM);
  l06_merge(&a, oa, b, ob, DIM);
  assert_close(a, oa, want_lse, want_o);
}
END_TEST

/* A chunk that saw no key, (-inf, 0), changes nothing, wherever it is; all empty stays empty. */
START_TEST(empty_chunk_is_ignored) {
  fill();
  float want_o[DIM], lse[3], o[3][DIM], out_lse, out_o[DIM];
  const float want_lse = state(0, N, want_o);
  lse[0] = state(0, 0, o[0]); /* empty first */
  lse[1] = state(0, N, o[1]);
  lse[2] = state(N, N, o[2]); /* empty last */
  ck_assert(isinf(lse[0]) && lse[0] < 0);
  l06_combine(lse, &o[0][0], 3, DIM, &out_lse, out_o);
  assert_close(out_lse, out_o, want_lse, want_o);
  float a = lse[0], oa[DIM];
  memcpy(oa, o[0], sizeof oa);
  l06_merge(&a, oa, lse[1], o[1], DIM);
  l06_merge(&a, oa, lse[2], o[2], DIM);
  assert_close(a, oa, want_lse, want_o);
  /* Every chunk empty: lse -inf, O 0, no NaN. */
  const float none[2] = {-INFINITY, -INFINITY}, zeros[2][DIM] = {{0}};
  out_o[0] = 7.0f;
  l06_combine(none, &zeros[0][0], 2, DIM, &out_lse, out_o);
  ck_assert(isinf(out_lse) && out_lse < 0);
  for (int d = 0; d < DIM; ++d) ck_assert(out_o[d] == 0.0f);
}
END_TEST

/* Large scores: the states hold log-sum-exps near 1000, far past fp32's exp range. */
START_TEST(combine_never_overflows) {
  const float lse[2] = {1000.0f, 1000.0f + logf(3.0f)}, o[2][DIM] = {{1, 1, 1, 1}, {5, 5, 5, 5}};
  float out_lse, out_o[DIM];
  l06_combine(lse, &o[0][0], 2, DIM, &out_lse, out_o);
  ck_assert(fabsf(out_lse - (1000.0f + logf(4.0f))) < 1e-3f);
  for (int d = 0; d < DIM; ++d) ck_assert(fabsf(out_o[d] - 4.0f) < 1e-3f); /* (1 + 3 * 5) / 4 */
}
END_TEST

START_TEST(splits_stay_in_bounds) {
  const int slots[3] = {1, 108, 264}, units[4] = {1, 8, 32, 100000};
  const int kv[5] = {1, 300, 4096, 32768, 1 << 20}, maxes[3] = {1, 16, L06_MAX_SPLITS};
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 5; ++c)
        for (int d = 0; d < 3; ++d) {
          const int n = l06_num_splits(slots[a], units[b], kv[c], maxes[d]);
          ck_assert_msg(n >= 1 && n <= maxes[d], "slots %d units %d kv %d max %d: %d", slots[a],
                        units[b], kv[c], maxes[d], n);
          ck_assert_msg(n == 1 || kv[c] / n >= L06_MIN_CHUNK, "kv %d cut into %d chunks", kv[c], n);
          ck_assert_msg(n == 1 || (long)n * units[b] <= slots[a], "slots %d units %d: %d chunks",
                        slots[a], units[b], n);
          /* no chunk without a key: the last one starts before the end */
          ck_assert_msg((long)(n - 1) * l06_chunk_len(kv[c], n) < kv[c], "kv %d: %d chunks of %d",
                        kv[c], n, l06_chunk_len(kv[c], n));
        }
  ck_assert_int_eq(l06_num_splits(0, 0, 0, 0), 1); /* nonsense in, no split out */
}
END_TEST

/* At batch 1 the units alone fill a few of the slots; the split fills at least half of them, in
 * one wave (a single unit as far as the cap allows). */
START_TEST(splits_fill_one_wave_at_small_batch) {
  for (int units = 1; units <= 64; units *= 2) {
    const int n = l06_num_splits(264, units, 1 << 17, L06_MAX_SPLITS);
    ck_assert_msg((long)n * units <= 264, "units %d: %d splits, a second wave", units, n);
    ck_assert_msg(2L * n * units > 264 || n == L06_MAX_SPLITS, "units %d: %d splits", units, n);
  }
  /* 264 / 8 = 33 chunks of 1024 keys would leave the 33rd empty: 32. */
  ck_assert_int_eq(l06_num_splits(264, 8, 32768, L06_MAX_SPLITS), 32);
  ck_assert_int_eq(l06_num_splits(132, 8, 32768, L06_MAX_SPLITS), 16);
  /* Enough units to fill the GPU by themselves: no split. */
  ck_assert_int_eq(l06_num_splits(264, 2048, 32768, L06_MAX_SPLITS), 1);
  ck_assert_int_eq(l06_num_splits(264, 265, 1 << 20, L06_MAX_SPLITS), 1);
}
END_TEST

START_TEST(short_kv_is_not_split) {
  for (int kv = 1; kv < 2 * L06_MIN_CHUNK; kv += 37)
    ck_assert_int_eq(l06_num_splits(132, 1, kv, L06_MAX_SPLITS), 1);
  ck_assert_int_eq(l06_num_splits(132, 1, 2 * L06_MIN_CHUNK, L06_MAX_SPLITS), 2);
}
END_TEST

/* The chunks of a split cover every key, in whole alignment units. */
START_TEST(chunks_cover_the_keys) {
  const int kv[6] = {1, 17, 255, 1237, 32768, 131071};
  for (int a = 0; a < 6; ++a)
    for (int n = 1; n <= 20; ++n) {
      const int len = l06_chunk_len(kv[a], n);
      ck_assert_int_eq(len % L06_CHUNK_ALIGN, 0);
      ck_assert_msg((long)len * n >= kv[a], "kv %d, %d chunks of %d", kv[a], n, len);
      ck_assert_msg((long)(len - L06_CHUNK_ALIGN) * n < kv[a], "kv %d, %d chunks of %d: too long",
                    kv[a], n, len);
    }
  ck_assert_int_eq(l06_chunk_len(32768, 17), 1984);
}
END_TEST

int main(void) {
  Suite *s = suite_create("checklist-6");
  TCase *tc = tcase_create("split_plan");
  tcase_add_test(tc, combine_equals_unsplit_softmax);
  tcase_add_test(tc, merge_any_order_any_grouping);
  tcase_add_test(tc, empty_chunk_is_ignored);
  tcase_add_test(tc, combine_never_overflows);
  tcase_add_test(tc, splits_stay_in_bounds);
  tcase_add_test(tc, splits_fill_one_wave_at_small_batch);
  tcase_add_test(tc, short_kv_is_not_split);
  tcase_add_test(tc, chunks_cover_the_keys);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
