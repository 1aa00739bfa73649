/* Lesson 3, GPU: every version through the harness (poisoned outputs, the reference, O and LSE
 * checked) on awkward shapes; and the FA1 kernel with explicit group counts. Exits 77 without a
 * GPU. Sanitizer-sized (ATTN_TEST_SANITIZER=1, attn_test.h), attn_test_sized() picks the second
 * shape of each pair: the same case with fewer heads and a few hundred tokens, still past one tile
 * on the H200 (Bc 224 / Br 64 at d 64, Bc 96 / Br 96 at d 128); longer_sequence is left out. */
#include <string.h>

#include "attn_test.h"
#include "fa1_tiling.h"

static attn_device g_dev;

/* Run every version of @p lesson on @p p and require each to PASS. */
static void run_all(const attn_lesson *lesson, attn_problem p) {
  attn_options o;
  memset(&o, 0, sizeof o);
  o.problem = p;
  o.seed = 3;
  o.iters = 1;
  o.warmup = 0;
  o.check_only = 1;
  attn_result res[8];
  ck_assert_int_le(lesson->n_versions, 8);
  const int failures = attn_run_versions(lesson, &o, &g_dev, res, stdout);
  for (int i = 0; i < lesson->n_versions; ++i)
    ck_assert_msg(
        res[i].status == ATTN_PASS,
        "%s on b%d h%d/%d seq %d/%d d%d causal %d: %s %s (O max_abs %.3g, LSE max_abs %.3g)",
        lesson->versions[i].name, p.batch, p.heads, p.kv_heads, p.seq_q, p.seq_kv, p.dim, p.causal,
        attn_status_name(res[i].status), res[i].note, res[i].verdict.max_abs,
        res[i].verdict_lse.max_abs);
  ck_assert_int_eq(failures, 0);
}

static void run(attn_problem p) {
  run_all(&l03_lesson, p);
}

/* attn_test_problem() under a short name. A shape in attn_test_sized(full, small) is the full one,
 * or in a sanitizer-sized run the small one: the same case on fewer heads and tokens. */
#define P attn_test_problem

START_TEST(one_token) {
  run(P(1, 2, 2, 1, 1, 64, 0));
  run(P(1, 2, 2, 1, 1, 64, 1));
  run(P(1, 2, 2, 1, 1, 128, 0));
}
END_TEST

START_TEST(one_tile_minus_one) {
  /* The H200 tiles: Bc 224 / Br 64 (d 64), Bc 96 / Br 96 (d 128); on other GPUs other edges. */
  run(P(1, 2, 2, 63, 223, 64, 0));
  run(P(1, 2, 2, 223, 223, 64, 1));
  run(P(1, 2, 2, 95, 95, 128, 1));
}
END_TEST

START_TEST(not_a_tile_multiple) {
  /* sanitizer-sized, H200 tiles: 300 tokens at d 64 are 2 key tiles and 5 query tiles, 150 at
   * d 128 2 and 2 */
  run(attn_test_sized(P(2, 3, 3, 500, 500, 64, 0), P(1, 2, 2, 300, 300, 64, 0)));
  run(attn_test_sized(P(2, 3, 3, 500, 500, 64, 1), P(1, 2, 2, 300, 300, 64, 1)));
  run(attn_test_sized(P(1, 2, 2, 333, 333, 128, 0), P(1, 2, 2, 150, 150, 128, 0)));
  run(attn_test_sized(P(1, 2, 2, 333, 333, 128, 1), P(1, 2, 2, 150, 150, 128, 1)));
}
END_TEST

START_TEST(gqa_8_to_1) {
  run(attn_test_sized(P(2, 8, 1, 130, 300, 64, 0), P(1, 8, 1, 70, 230, 64, 0)));
  run(attn_test_sized(P(1, 8, 1, 300, 300, 128, 1), P(1, 8, 1, 150, 150, 128, 1)));
}
END_TEST

START_TEST(causal_fewer_queries_than_keys) {
  run(attn_test_sized(P(1, 4, 2, 100, 700, 64, 1), P(1, 4, 2, 100, 300, 64, 1)));
  run(attn_test_sized(P(2, 4, 4, 1, 1000, 64, 1), P(2, 2, 2, 1, 300, 64, 1))); /* decode */
  run(attn_test_sized(P(1, 2, 2, 70, 450, 128, 1), P(1, 2, 2, 70, 250, 128, 1)));
}
END_TEST

START_TEST(causal_more_queries_than_keys) {
  /* Rows that see no key: O = 0, LSE = -inf, and they must still be written. */
  run(attn_test_sized(P(1, 4, 2, 700, 100, 64, 1), P(1, 4, 2, 300, 100, 64, 1)));
  run(attn_test_sized(P(1, 2, 2, 450, 70, 128, 1), P(1, 2, 2, 250, 70, 128, 1)));
  run(P(1, 2, 2, 300, 1, 64, 1));
}
END_TEST

START_TEST(longer_sequence) {
  run(P(1, 4, 4, 2048, 2048, 64, 1));
  run(P(1, 2, 1, 1500, 2100, 128, 0));
}
END_TEST

/* FA1 with group counts the automatic choice would not pick: Tr not a multiple of the count. */
#define FA1_FIXED(name, groups)                                                               \
  static cudaError_t name(const attn_problem *p, const attn_args *a, cudaStream_t s) {        \
    const float *q = (const float *)a->q, *k = (const float *)a->k, *v = (const float *)a->v; \
    float *ws = (float *)a->workspace;                                                        \
    if (p->dim == 64) return l03_fa1_d64(p, q, k, v, (float *)a->o, a->lse, ws, groups, s);   \
    return l03_fa1_d128(p, q, k, v, (float *)a->o, a->lse, ws, groups, s);                    \
  }
FA1_FIXED(fa1_groups_2, 2)
FA1_FIXED(fa1_groups_3, 3)
FA1_FIXED(fa1_groups_1000, 1000) /* clamped to Tr: one query tile per block */

static const attn_version kGroupVersions[] = {
    {.name = "fa1-g2",
     .summary = "two blocks per head",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .writes_lse = 1,
     .launch = fa1_groups_2,
     .workspace = l03_fa1_workspace_bytes},
    {.name = "fa1-g3",
     .summary = "three blocks per head",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .writes_lse = 1,
     .launch = fa1_groups_3,
     .workspace = l03_fa1_workspace_bytes},
    {.name = "fa1-gmax",
     .summary = "one block per query tile",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .writes_lse = 1,
     .launch = fa1_groups_1000,
     .workspace = l03_fa1_workspace_bytes},
};

START_TEST(fa1_explicit_groups) {
  attn_lesson l = l03_lesson;
  l.versions = kGroupVersions;
  l.n_versions = 3;
  /* H200 tiles: Tr 8 at d 64 (sanitizer-sized: 5), 5 at d 128 */
  run_all(&l, attn_test_sized(P(1, 3, 1, 500, 400, 64, 0), P(1, 3, 1, 300, 250, 64, 0)));
  run_all(&l, attn_test_sized(P(1, 3, 1, 500, 400, 64, 1), P(1, 3, 1, 300, 250, 64, 1)));
  run_all(&l, attn_test_sized(P(2, 2, 2, 470, 470, 128, 1), P(1, 1, 1, 400, 400, 128, 1)));
}
END_TEST

START_TEST(device_plan_is_printed_and_sane) {
  attn_problem p = attn_test_problem(1, 16, 16, 4096, 4096, 64, 0);
  l03_fa1_plan one, many;
  ck_assert_int_eq(l03_fa1_device_plan_d64(&p, 1, &one), cudaSuccess);
  ck_assert_int_eq(l03_fa1_qgroups_plan_d64(&p, &many), cudaSuccess);
  ck_assert_int_eq((long)one.smem_floats, (long)(g_dev.smem_per_block_optin / 4));
  ck_assert_int_eq(one.q_groups, 1);
  ck_assert_int_ge(one.slots, g_dev.sm_count);
  ck_assert_int_eq(many.slots, one.slots);
  ck_assert_int_ge(many.q_groups, 1);
  ck_assert_int_le(many.q_groups, many.tr);
  ck_assert_uint_le(one.smem_bytes, g_dev.smem_per_block_optin);
  printf("device plan, d 64: Bc %d (paper %d) Br %d, %zu B shared, %d groups on %d SMs\n", one.bc,
         one.bc_paper, one.br, one.smem_bytes, many.q_groups, g_dev.sm_count);
  p.dim = 128;
  ck_assert_int_eq(l03_fa1_qgroups_plan_d128(&p, &many), cudaSuccess);
  ck_assert_uint_le(many.smem_bytes, g_dev.smem_per_block_optin);
  /* Version 2's planner takes a group count of at least 1: choosing one is version 3's job. */
  ck_assert_int_eq(l03_fa1_device_plan_d128(&p, 0, &one), cudaErrorInvalidValue);
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  Suite *s = suite_create("lesson03_gpu");
  TCase *t = tcase_create("versions");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, one_token);
  tcase_add_test(t, one_tile_minus_one);
  tcase_add_test(t, not_a_tile_multiple);
  tcase_add_test(t, gqa_8_to_1);
  tcase_add_test(t, causal_fewer_queries_than_keys);
  tcase_add_test(t, causal_more_queries_than_keys);
  if (!attn_test_sanitizer_sized())
    tcase_add_test(t, longer_sequence);
  else
    attn_test_left_out("longer_sequence", -1,
                       "2048 and 2100 keys (10 and 22 key tiles on the H200)");
  tcase_add_test(t, fa1_explicit_groups);
  tcase_add_test(t, device_plan_is_printed_and_sane);
  suite_add_tcase(s, t);
  return attn_test_run(s, 1);
}
