/* Lesson 06, CPU: the split plan, the CPU model of version 2 (chunks, partial states, combine)
 * against the double-precision reference on awkward shapes, chunks that see no key, the version
 * table and the flat entry point's argument checks. No GPU needed. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_test.h"
#include "flash_decoding.h"

/* batch, heads, kv_heads, seq_q, seq_kv, dim, causal (attn_test_problem()'s order), then the
 * chunks per row */
static const int kShapes[][8] = {
    {1, 4, 1, 1, 1, 64, 0, 1},       /* one key, MQA */
    {1, 4, 1, 1, 1, 128, 0, 4},      /* one key in 4 chunks: 3 empty per row */
    {2, 8, 1, 1, 17, 128, 0, 3},     /* 17 keys, GQA 8:1 */
    {1, 4, 4, 1, 255, 64, 0, 4},     /* 4 chunks of 64 minus one key */
    {1, 2, 2, 1, 1237, 128, 0, 5},   /* a length that is a multiple of nothing */
    {1, 8, 1, 1, 300, 64, 0, 2},     /* MQA */
    {1, 8, 2, 4, 37, 128, 1, 2},     /* causal, seq_q 4, kv 37: the second chunk is empty */
    {1, 4, 2, 8, 1000, 64, 1, 7},    /* seq_q 8, causal */
    {1, 2, 1, 8, 5, 64, 1, 2},       /* causal, seq_q > seq_kv: rows that see no key */
    {1, 32, 8, 1, 4097, 128, 0, 17}, /* 16 full chunks of 256 and one with a single key */
    {2, 16, 2, 2, 2305, 64, 1, 9},   /* 9 chunks of 320: the ninth sees no key */
};
enum { N_SHAPES = sizeof kShapes / sizeof kShapes[0] };

/* The chunks that see no key, counted the slow way. */
static long empty_chunks(const attn_problem *p, int splits) {
  const int len = l06_chunk_len(p->seq_kv, splits);
  long empty = 0;
  for (int i = 0; i < p->seq_q; ++i)
    for (int s = 0; s < splits; ++s) empty += (long)s * len >= attn_visible_keys(p, i);
  return empty * p->batch * p->heads;
}

START_TEST(cpu_model_matches_reference) {
  const int *x = kShapes[_i];
  const attn_problem p = attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
  l06_cpu_split split = {.num_splits = x[7], .empty_chunks = -2};
  attn_verdict vo, vl;
  const int rc = attn_cpu_check(&p, 7 + (uint64_t)_i, l06_cpu_attention, &split, &vo, &vl);
  ck_assert_int_ge(rc, 0);
  ck_assert_msg(vo.pass, "O: max_abs %g rel_l2 %g unwritten %zu nonfinite %zu", vo.max_abs,
                vo.rel_l2, vo.unwritten, vo.nonfinite);
  ck_assert_msg(vl.pass, "LSE: max_abs %g nonfinite %zu", vl.max_abs, vl.nonfinite);
  ck_assert_int_eq(split.empty_chunks, empty_chunks(&p, x[7]));
}
END_TEST

/* Rows that see no key at all: O is 0 and the log-sum-exp -inf, never NaN. */
START_TEST(rows_without_keys_are_zero_not_nan) {
  const attn_problem p = attn_test_problem(1, 2, 1, 8, 3, 64, 1);
  const size_t nq = attn_q_elems(&p), nkv = attn_kv_elems(&p);
  float *q = malloc(sizeof(float) * nq), *kv = malloc(sizeof(float) * nkv);
  float *o = malloc(sizeof(float) * nq), *lse = malloc(sizeof(float) * attn_rows(&p));
  ck_assert(q && kv && o && lse);
  for (size_t e = 0; e < nq; ++e) q[e] = (float)(e % 7) - 3.0f;
  for (size_t e = 0; e < nkv; ++e) kv[e] = (float)(e % 5) - 2.0f;
  ck_assert_int_eq(l06_cpu_split_forward(&p, q, kv, kv, o, lse, 3), 2 * (5 * 3 + 3 * 2));
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 8; ++i) {
      const float x = lse[h * 8 + i];
      if (i < 5) { /* i + 3 - 8 + 1 <= 0 keys */
        ck_assert(isinf(x) && x < 0);
        for (int d = 0; d < 64; ++d) ck_assert(o[((size_t)i * 2 + h) * 64 + d] == 0.0f);
      } else {
        ck_assert(isfinite(x));
      }
    }
  free(q), free(kv), free(o), free(lse);
}
END_TEST

/* The plan of the default shape, and of a batch that fills the GPU by itself. */
START_TEST(split_plan_of_the_lesson_shapes) {
  /* version 2 on 132 SMs x 16 blocks: 32 rows, 66 chunks of 512 keys */
  ck_assert_int_eq(l06_num_splits(132 * 16, 32, 32768, L06_MAX_SPLITS), 64);
  ck_assert_int_eq(l06_chunk_len(32768, 64), 512);
  ck_assert_int_eq(l06_num_splits(132, 64 * 32, 4096, L06_MAX_SPLITS), 1);
  ck_assert_int_eq(l06_num_splits(132 * 2, 1, 131072, L06_MAX_SPLITS), 128); /* capped */
  ck_assert_int_eq(l06_num_splits(132, 1, 2305, L06_MAX_SPLITS), 8);         /* by length */
  ck_assert_uint_eq(l06_split_workspace_bytes(17, 32, 128), (size_t)17 * 32 * 129 * 4);
  ck_assert_uint_eq(l06_workspace_bytes(1, 1, 32, 8, 1, 32768, 128), 0);
}
END_TEST

/* Version 6's chunk length: the one-wave rule on equal lengths, the balance rule when the
 * sequences outnumber a wave, and chunks in proportion to each length. */
START_TEST(varlen_chunk_plan) {
  /* equal lengths, 8 units, 132 slots: 16 chunks of 2048, as version 5 */
  ck_assert_int_eq(l06_varlen_chunk(132, 8, NULL, 1, 32768), 2048);
  ck_assert_int_eq(l06_varlen_chunks(2048, NULL, 1, 32768), 16);
  /* one long and 31 short: 256 > 132 slots; the average share is 162816 x 8 / 132 = 9868 keys,
   * the long sequence is longer, so a quarter share, 2467, rounded up to 2496 */
  int lens[32];
  lens[0] = 131072;
  for (int b = 1; b < 32; ++b) lens[b] = 1024;
  const int c = l06_varlen_chunk(132, 8, lens, 32, 131072);
  ck_assert_int_eq(c, 2496);
  ck_assert_int_eq(l06_varlen_chunks(c, lens, 32, 131072), 53 + 31);
  /* the same keys in 32 equal sequences: none is longer than the share, one chunk each */
  for (int b = 0; b < 32; ++b) lens[b] = 5088;
  ck_assert_int_eq(l06_varlen_chunk(132, 8, lens, 32, 5088), 5120);
  ck_assert_int_eq(l06_varlen_chunks(5120, lens, 32, 5088), 32);
  /* a few sequences that fit one wave: the shortest chunk that does, never under 256 keys */
  const int few[3] = {20000, 300, 5};
  const int c3 = l06_varlen_chunk(132, 8, few, 3, 20000);
  ck_assert_int_ge(c3, L06_MIN_CHUNK);
  ck_assert_int_le(8 * l06_varlen_chunks(c3, few, 3, 20000), 132);
  ck_assert_int_gt(8 * l06_varlen_chunks(c3 - L06_CHUNK_ALIGN, few, 3, 20000), 132);
  /* nonsense in: one chunk per sequence */
  ck_assert_int_eq(l06_varlen_chunk(0, 8, few, 3, 20000), 20032);
}
END_TEST

START_TEST(flat_entry_point_rejects_bad_arguments) {
  ck_assert_int_eq(
      l06_forward(0, 64, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1, 1, 1, 1, 1, 0, 0.f, 0),
      cudaErrorInvalidValue);
  ck_assert_int_eq(l06_forward(L06_VERSIONS + 1, 64, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1, 1, 1,
                               1, 1, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  ck_assert_int_eq(
      l06_forward(1, 96, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1, 1, 1, 1, 1, 0, 0.f, 0),
      cudaErrorInvalidValue);
  /* heads not a multiple of kv_heads, or more than 8 query rows: refused before any launch */
  ck_assert_int_eq(
      l06_forward(1, 64, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1, 6, 4, 1, 1, 0, 0.f, 0),
      cudaErrorInvalidValue);
  ck_assert_int_eq(
      l06_forward(1, 128, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1, 4, 4, 9, 64, 0, 0.f, 0),
      cudaErrorInvalidValue);
  /* version 2 without a workspace */
  ck_assert_int_eq(
      l06_forward(2, 128, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1, 4, 4, 1, 64, 0, 0.f, 0),
      cudaErrorInvalidValue);
}
END_TEST

START_TEST(version_table_is_consistent) {
  ck_assert_int_eq(l06_lesson.n_versions, L06_VERSIONS);
  ck_assert_int_eq(l06_lesson.number, 6);
  ck_assert_int_eq(l06_lesson.defaults.kv_heads, 8);
  ck_assert_int_eq(l06_lesson.defaults.seq_kv, 32768);
  for (int i = 0; i < L06_VERSIONS; ++i) {
    const attn_version *v = &l06_lesson.versions[i];
    ck_assert_str_eq(v->name, l06_version_name(i + 1));
    ck_assert_int_eq(v->dtype, ATTN_BF16);
    ck_assert_int_eq(v->writes_lse, 1);
    ck_assert_int_eq(v->min_sm, 80);
    ck_assert_ptr_nonnull(v->launch);
    ck_assert_int_eq(v->workspace != NULL, i >= 1); /* every version but one-block splits */
    attn_problem p = attn_test_problem(1, 4, 4, 1, 64, 96, 0);
    ck_assert_ptr_nonnull(v->supports(&p)); /* dim 96 is not built */
    p.dim = 64;
    ck_assert_ptr_null(v->supports(&p));
    p.seq_q = L06_MAX_SEQ_Q;
    ck_assert_ptr_null(v->supports(&p));
    p.seq_q = L06_MAX_SEQ_Q + 1;
    ck_assert_ptr_nonnull(v->supports(&p)); /* refused with a reason, never run */
  }
  ck_assert_ptr_null(l06_version_name(0));
  ck_assert_ptr_null(l06_version_name(L06_VERSIONS + 1));
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson06_cpu");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, cpu_model_matches_reference, 0, N_SHAPES);
  tcase_add_test(tc, rows_without_keys_are_zero_not_nan);
  tcase_add_test(tc, split_plan_of_the_lesson_shapes);
  tcase_add_test(tc, flat_entry_point_rejects_bad_arguments);
  tcase_add_test(tc, varlen_chunk_plan);
  tcase_add_test(tc, version_table_is_consistent);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
