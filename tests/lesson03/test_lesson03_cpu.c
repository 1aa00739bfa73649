/* Lesson 3, CPU: the model of Algorithm 1 against the reference on awkward shapes, its traffic
 * count against the closed form and hand counts, standard attention's count, the tile plan, the
 * group choice. Runs without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_test.h"
#include "fa1_tiling.h"

/* M that gives 32 x 32 tiles: Bc = ceil(M / 4d) = 32. Small tiles make short sequences span many.
 */
static long m_for_32(int d) {
  return 4L * 32 * d;
}

static l03_fa1_plan plan_for(const attn_problem *p, long m, int groups) {
  l03_fa1_plan plan;
  ck_assert_int_eq(l03_fa1_plan_make(p, m, &plan), 0);
  plan.q_groups = groups;
  return plan;
}

/* Run the model with data and judge O (fp32 tolerance) and the LSE (as the harness does). */
static void model_vs_reference(attn_problem p, long m, int groups) {
  const l03_fa1_plan plan = plan_for(&p, m, groups);
  l03_fa1_run run = {.plan = &plan};
  attn_verdict vo, vl;
  ck_assert_int_ge(attn_cpu_check(&p, 5, l03_fa1_attention, &run, &vo, &vl), 0);
  ck_assert_msg(vo.pass && vl.pass,
                "b%d h%d/%d seq %d/%d d%d causal %d, tiles %dx%d, groups %d: O max_abs %.3g rel_l2 "
                "%.3g unwritten %zu nonfinite %zu; LSE max_abs %.3g unwritten %zu nonfinite %zu",
                p.batch, p.heads, p.kv_heads, p.seq_q, p.seq_kv, p.dim, p.causal, plan.br, plan.bc,
                groups, vo.max_abs, vo.rel_l2, vo.unwritten, vo.nonfinite, vl.max_abs, vl.unwritten,
                vl.nonfinite);

  /* Counting without data walks the same loops. */
  l03_traffic dry;
  ck_assert_int_eq(l03_fa1_model(&p, &plan, NULL, NULL, NULL, NULL, NULL, &dry), 0);
  for (int a = 0; a < L03_N_ARRAYS; ++a) {
    ck_assert(dry.reads[a] == run.traffic.reads[a]);
    ck_assert(dry.writes[a] == run.traffic.writes[a]);
  }
}

/* ---- The model against the reference ---- */

START_TEST(model_one_token) {
  model_vs_reference(attn_test_problem(1, 1, 1, 1, 1, 64, 0), m_for_32(64), 1);
  model_vs_reference(attn_test_problem(1, 2, 2, 1, 1, 64, 1), m_for_32(64), 1);
  model_vs_reference(attn_test_problem(1, 1, 1, 1, 1, 128, 0), m_for_32(128), 1);
}
END_TEST

START_TEST(model_one_tile_minus_one) {
  model_vs_reference(attn_test_problem(1, 2, 2, 31, 31, 64, 0), m_for_32(64), 1);
  model_vs_reference(attn_test_problem(1, 2, 2, 31, 31, 64, 1), m_for_32(64), 1);
  model_vs_reference(attn_test_problem(1, 1, 1, 31, 63, 128, 0), m_for_32(128), 1);
}
END_TEST

START_TEST(model_not_a_tile_multiple) {
  model_vs_reference(attn_test_problem(2, 2, 2, 100, 100, 64, 0), m_for_32(64), 1);
  model_vs_reference(attn_test_problem(2, 2, 2, 100, 100, 64, 1), m_for_32(64), 1);
  model_vs_reference(attn_test_problem(1, 2, 1, 70, 70, 128, 1), m_for_32(128), 1);
}
END_TEST

START_TEST(model_gqa_8_to_1) {
  model_vs_reference(attn_test_problem(1, 8, 1, 45, 70, 64, 0), m_for_32(64), 1);
  model_vs_reference(attn_test_problem(2, 8, 1, 45, 70, 64, 1), m_for_32(64), 1);
}
END_TEST

START_TEST(model_causal_fewer_queries_than_keys) {
  model_vs_reference(attn_test_problem(1, 2, 2, 37, 100, 64, 1), m_for_32(64), 1);
  model_vs_reference(attn_test_problem(1, 2, 2, 1, 100, 64, 1), m_for_32(64), 1); /* decode */
}
END_TEST

START_TEST(model_causal_more_queries_than_keys) {
  /* Rows 0..62 see no key: O = 0 and LSE = -inf there. */
  model_vs_reference(attn_test_problem(1, 2, 2, 100, 37, 64, 1), m_for_32(64), 1);
  model_vs_reference(attn_test_problem(1, 1, 1, 100, 37, 128, 1), m_for_32(128), 1);
}
END_TEST

START_TEST(model_query_groups) {
  /* Several blocks per (batch, head), Tr not a multiple of the group count. */
  model_vs_reference(attn_test_problem(1, 2, 1, 100, 100, 64, 0), m_for_32(64), 3);
  model_vs_reference(attn_test_problem(1, 2, 1, 100, 100, 64, 1), m_for_32(64), 3);
  model_vs_reference(attn_test_problem(1, 2, 2, 130, 64, 64, 1), m_for_32(64), 2);
}
END_TEST

START_TEST(model_h200_tiles) {
  /* The tiles the kernel uses on an H200: 64 x 224 (d 64) and 96 x 96 (d 128). */
  model_vs_reference(attn_test_problem(1, 2, 1, 300, 300, 64, 1), L03_H200_SMEM_FLOATS, 1);
  model_vs_reference(attn_test_problem(1, 1, 1, 250, 400, 128, 0), L03_H200_SMEM_FLOATS, 1);
}
END_TEST

/* ---- Traffic ---- */

static void counts(const attn_problem *p, const l03_fa1_plan *plan, double *r, double *w,
                   l03_traffic *t) {
  ck_assert_int_eq(l03_fa1_model(p, plan, NULL, NULL, NULL, NULL, NULL, t), 0);
  *r = l03_traffic_reads(t);
  *w = l03_traffic_writes(t);
}

START_TEST(traffic_by_hand) {
  /* One head, 64 x 64, d 64, 32 x 32 tiles: Tc = Tr = 2.
   * reads:  K, V 2*64*64 = 8192; per tile pair 32 rows x (Q 64 + O 64 + l + m) = 4160, 4 pairs;
   *         the final l, m: 128.          8192 + 16640 + 128 = 24960
   * writes: init 64 x (64 + 2) = 4224; per pair 32 x 66 = 2112, 4 pairs; lse 64. 4224 + 8448 + 64
   */
  attn_problem p = attn_test_problem(1, 1, 1, 64, 64, 64, 0);
  l03_fa1_plan plan = plan_for(&p, m_for_32(64), 1);
  double r, w;
  l03_traffic t;
  counts(&p, &plan, &r, &w, &t);
  ck_assert(r == 24960.0);
  ck_assert(w == 12736.0);
  ck_assert_int_eq(t.tiles_visited, 4);
  /* Causal: pair (0, 1) is fully masked and skipped: 3 pairs. */
  p.causal = 1;
  counts(&p, &plan, &r, &w, &t);
  ck_assert_int_eq(t.tiles_visited, 3);
  ck_assert_int_eq(t.tiles_skipped, 1);
  ck_assert(r == 8192.0 + 3 * 4160.0 + 128.0);
  ck_assert(w == 4224.0 + 3 * 2112.0 + 64.0);
}
END_TEST

START_TEST(traffic_equals_closed_form) {
  /* Tile multiples, and (the form is exact for any non-causal shape) a few that are not. */
  const int shapes[][6] = {/* batch heads kv_heads seq_q seq_kv dim */
                           {2, 2, 1, 128, 128, 64}, {1, 4, 2, 64, 160, 64},
                           {1, 2, 2, 256, 96, 128}, {3, 1, 1, 100, 37, 64},
                           {1, 8, 1, 1, 1000, 64},  {1, 2, 2, 4096, 4096, 64}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
    for (int groups = 1; groups <= 4; groups *= 2) {
      const int *x = shapes[s];
      attn_problem p = attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], 0);
      l03_fa1_plan plan = plan_for(&p, m_for_32(x[5]), 1);
      plan.q_groups = groups < plan.tr ? groups : plan.tr;
      double r, w, fr, fw;
      l03_traffic t;
      counts(&p, &plan, &r, &w, &t);
      l03_fa1_formula(&p, &plan, &fr, &fw);
      ck_assert_msg(r == fr && w == fw, "shape %zu groups %d: counted %.0f/%.0f, formula %.0f/%.0f",
                    s, plan.q_groups, r, w, fr, fw);
    }
}
END_TEST

START_TEST(traffic_scales_as_n2_d2_over_m) {
  /* Square, Bc = M / 4d exactly: the count is about 12 N^2 d^2 / M (3 N d per key tile: Q_i, O_i
   * in, O_i out; Tc = 4 N d / M key tiles), plus lower-order terms. */
  attn_problem p = attn_test_problem(1, 1, 1, 4096, 4096, 64, 0);
  const long m = m_for_32(64);
  l03_fa1_plan plan = plan_for(&p, m, 1);
  double r, w;
  l03_traffic t;
  counts(&p, &plan, &r, &w, &t);
  const double ratio = (r + w) / (4096.0 * 4096.0 * 64.0 * 64.0 / m);
  ck_assert_msg(ratio > 12.0 && ratio < 12.5, "ratio %.3f", ratio);
  /* Twice the memory (plus room for the kernel's padding): Bc 64, half the key tiles, about half
   * the traffic. */
  l03_fa1_plan big = plan_for(&p, 2 * m + 1024, 1);
  double r2, w2;
  counts(&p, &big, &r2, &w2, &t);
  ck_assert_int_eq(big.bc, 64);
  ck_assert((r2 + w2) < 0.52 * (r + w) && (r2 + w2) > 0.48 * (r + w));
}
END_TEST

START_TEST(standard_attention_count) {
  /* 4 N d + 4 N^2 per head: N 4, d 2 -> 32 + 64. */
  attn_problem p = attn_test_problem(1, 1, 1, 4, 4, 2, 0);
  ck_assert(l03_standard_elems(&p) == 96.0);
  p = attn_test_problem(2, 3, 1, 4, 4, 2, 1); /* the mask does not change what is stored */
  ck_assert(l03_standard_elems(&p) == 6 * 96.0);
  /* Standard attention moves more than Algorithm 1 once N is large. */
  attn_problem big = attn_test_problem(1, 16, 16, 4096, 4096, 64, 0);
  l03_fa1_plan plan = plan_for(&big, L03_H200_SMEM_FLOATS, 1);
  double r, w;
  l03_traffic t;
  counts(&big, &plan, &r, &w, &t);
  ck_assert(l03_standard_elems(&big) > 2.0 * (r + w));
}
END_TEST

START_TEST(fused_row_count) {
  /* One row, 3 keys, d 2: q, o (2 each) + lse + 3 keys x (k + v) = 5 + 12. */
  attn_problem p = attn_test_problem(1, 1, 1, 1, 3, 2, 0);
  ck_assert(l03_fused_row_elems(&p) == 17.0);
}
END_TEST

/* ---- Plan ---- */

START_TEST(plan_h200) {
  attn_problem p = attn_test_problem(1, 16, 16, 4096, 4096, 64, 0);
  l03_fa1_plan plan = plan_for(&p, L03_H200_SMEM_FLOATS, 1);
  ck_assert_int_eq(plan.bc_paper, 227);
  ck_assert_int_eq(plan.br_paper, 64);
  ck_assert_int_eq(plan.bc, 224);
  ck_assert_int_eq(plan.br, 64);
  ck_assert_int_eq(plan.tc, 19);
  ck_assert_int_eq(plan.tr, 64);
  p.dim = 128;
  plan = plan_for(&p, L03_H200_SMEM_FLOATS, 1);
  ck_assert_int_eq(plan.bc_paper, 114);
  ck_assert_int_eq(plan.br_paper, 114);
  ck_assert_int_eq(plan.bc, 96);
  ck_assert_int_eq(plan.br, 96);
}
END_TEST

START_TEST(plan_fits_and_is_supported) {
  const long ms[] = {8192, 16384, 25344 /* 99 KB */, 41728 /* A100 */, 58112, 200000};
  const int dims[] = {64, 128};
  for (size_t a = 0; a < sizeof ms / sizeof ms[0]; ++a)
    for (int b = 0; b < 2; ++b) {
      attn_problem p = attn_test_problem(1, 1, 1, 1000, 1000, dims[b], 0);
      l03_fa1_plan plan;
      if (l03_fa1_plan_make(&p, ms[a], &plan) != 0) {
        ck_assert_int_lt(ms[a], 4L * 32 * dims[b] + 1); /* only refused when 32 keys cannot fit */
        continue;
      }
      ck_assert_int_eq(plan.bc % 32, 0);
      ck_assert_int_eq(plan.br % 16, 0);
      ck_assert_int_le(plan.bc, plan.bc_paper);
      ck_assert_int_le(plan.br, dims[b]);
      ck_assert_int_le(plan.br, plan.bc);
      ck_assert_int_ge(plan.ld_s, plan.br);
      ck_assert_int_eq(plan.ld_s % 32, 8);
      ck_assert_uint_le(plan.smem_bytes, (size_t)ms[a] * 4);
      ck_assert_uint_eq(plan.smem_bytes,
                        l03_fa1_smem_floats(plan.br, plan.bc, plan.ld_s, dims[b]) * sizeof(float));
    }
  attn_problem p = attn_test_problem(1, 1, 1, 10, 10, 64, 0);
  l03_fa1_plan plan;
  ck_assert_int_eq(l03_fa1_plan_make(&p, 1000, &plan), -1);
}
END_TEST

START_TEST(groups_fill_the_gpu) {
  /* 16 heads, 64 query tiles, 132 SMs: 8 groups -> 128 blocks, one wave. */
  ck_assert_int_eq(l03_fa1_choose_groups(16, 64, 132), 8);
  ck_assert_int_eq(l03_fa1_choose_groups(16, 1024, 132), 8);
  /* Enough (batch, head) pairs already: the paper's one block each. */
  ck_assert_int_eq(l03_fa1_choose_groups(128, 64, 132), 1);
  ck_assert_int_eq(l03_fa1_choose_groups(1, 1, 132), 1);
  for (int tr = 1; tr < 300; tr += 13)
    for (int bh = 1; bh < 70; bh += 9) {
      int g = l03_fa1_choose_groups(bh, tr, 132);
      ck_assert_int_ge(g, 1);
      ck_assert_int_le(g, tr);
    }
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson03_cpu");
  TCase *m = tcase_create("model");
  tcase_set_timeout(m, 120);
  tcase_add_test(m, model_one_token);
  tcase_add_test(m, model_one_tile_minus_one);
  tcase_add_test(m, model_not_a_tile_multiple);
  tcase_add_test(m, model_gqa_8_to_1);
  tcase_add_test(m, model_causal_fewer_queries_than_keys);
  tcase_add_test(m, model_causal_more_queries_than_keys);
  tcase_add_test(m, model_query_groups);
  tcase_add_test(m, model_h200_tiles);
  suite_add_tcase(s, m);
  TCase *t = tcase_create("traffic");
  tcase_add_test(t, traffic_by_hand);
  tcase_add_test(t, traffic_equals_closed_form);
  tcase_add_test(t, traffic_scales_as_n2_d2_over_m);
  tcase_add_test(t, standard_attention_count);
  tcase_add_test(t, fused_row_count);
  suite_add_tcase(s, t);
  TCase *pl = tcase_create("plan");
  tcase_add_test(pl, plan_h200);
  tcase_add_test(pl, plan_fits_and_is_supported);
  tcase_add_test(pl, groups_fill_the_gpu);
  suite_add_tcase(s, pl);
  return attn_test_run(s, 0);
}
