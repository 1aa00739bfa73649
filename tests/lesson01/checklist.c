/* Checklist 01: can you count what standard attention moves through HBM and what it computes, say
 * how much memory S needs, and place it on the roofline?
 *
 * Built twice (cmake/AttnLesson.cmake): checklist-1 against the lesson's own model (must pass) and
 * drill-1 against drills/01_traffic_model.c (fails until the reader fills it in). Every expected
 * value is worked out by hand in the comment beside it, not taken from the functions under test.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "traffic_model.h"

static l01_shape shape(int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                       int causal) {
  l01_shape s = {batch, heads, kv_heads, seq_q, seq_kv, dim, causal};
  return s;
}

#define ck_near(got, want)                                                                       \
  ck_assert_msg(fabs((got) - (want)) <= 1e-9 * fabs(want) + 1e-12, "%s = %.17g, expected %.17g", \
                #got, (double)(got), (double)(want))

/* Memory of S: 4 bytes per (batch, head, query, key). */
START_TEST(s_memory) {
  /* 8k tokens, 32 heads: 32 * 8192^2 * 4 = 8 GiB, more than the weights of a 1B model. */
  const l01_shape a = shape(1, 32, 32, 8192, 8192, 128, 0);
  ck_near(l01_s_bytes(&a), 8589934592.0);
  /* The lesson's default shape: 16 * 4096^2 * 4 = 1 GiB. */
  const l01_shape b = shape(1, 16, 16, 4096, 4096, 64, 0);
  ck_near(l01_s_bytes(&b), 1073741824.0);
  /* Rectangular, GQA (kv_heads does not enter), causal (the mask does not shrink the buffer):
   * 2 * 8 * 3 * 5 * 4 = 960. */
  const l01_shape c = shape(2, 8, 2, 3, 5, 4, 1);
  ck_near(l01_s_bytes(&c), 960.0);
}
END_TEST

/* The three kernels' HBM traffic, default shape:
 *   Q = O = K = V = 4 * 4096 * 16 * 64 = 16 MiB = 16777216; S = P = 1073741824; lse = 4 * 16 * 4096
 *   = 262144 kernel 1 = Q + K + S = 1107296256; kernel 2 = S + P + lse = 2147745792; kernel 3 = P +
 *   V + O = 1107296256; total 4362338304. */
START_TEST(naive_traffic_default) {
  const l01_shape s = shape(1, 16, 16, 4096, 4096, 64, 0);
  l01_traffic t = {0, 0, 0, 0};
  l01_naive_traffic(&s, &t);
  ck_near(t.qk, 1107296256.0);
  ck_near(t.softmax, 2147745792.0);
  ck_near(t.pv, 1107296256.0);
  ck_near(t.total, 4362338304.0);
}
END_TEST

/* GQA and seq_q != seq_kv: batch 2, heads 8, kv_heads 2, seq 3 / 5, dim 4.
 *   Q = 4*2*3*8*4 = 768, K = V = 4*2*5*2*4 = 320, S = 960, lse = 4*2*8*3 = 192
 *   kernel 1 = 768 + 320 + 960 = 2048; kernel 2 = 960 + 960 + 192 = 2112; kernel 3 = 960 + 320 +
 *   768 = 2048; total 6208. A fused kernel: 768 + 320 + 320 + 768 = 2176. */
START_TEST(naive_traffic_gqa) {
  const l01_shape s = shape(2, 8, 2, 3, 5, 4, 1);
  l01_traffic t = {0, 0, 0, 0};
  l01_naive_traffic(&s, &t);
  ck_near(t.qk, 2048.0);
  ck_near(t.softmax, 2112.0);
  ck_near(t.pv, 2048.0);
  ck_near(t.total, 6208.0);
  ck_near(l01_fused_bytes(&s), 2176.0);
}
END_TEST

/* What the fused kernel saves on the default shape: 4 * 16 MiB = 67108864 bytes, 65x less. */
START_TEST(fused_versus_naive) {
  const l01_shape s = shape(1, 16, 16, 4096, 4096, 64, 0);
  l01_traffic t = {0, 0, 0, 0};
  l01_naive_traffic(&s, &t);
  ck_near(l01_fused_bytes(&s), 67108864.0);
  ck_assert(t.total / l01_fused_bytes(&s) > 64.0);
}
END_TEST

/* Bottom-right causal mask: query i sees j <= i + seq_kv - seq_q.
 *   4 x 4: 1 + 2 + 3 + 4 = 10.   2 x 5 (offset 3): 4 + 5 = 9.   5 x 2 (offset -3): 0+0+0+1+2 = 3.
 *   Full 3 x 5: 15.  Batch and heads multiply: 2 * 3 * 10 = 60. */
START_TEST(visible_pairs_bottom_right) {
  l01_shape s = shape(1, 1, 1, 4, 4, 8, 1);
  ck_near(l01_visible_pairs(&s), 10.0);
  s = shape(1, 1, 1, 2, 5, 8, 1);
  ck_near(l01_visible_pairs(&s), 9.0);
  s = shape(1, 1, 1, 5, 2, 8, 1);
  ck_near(l01_visible_pairs(&s), 3.0);
  s = shape(1, 1, 1, 3, 5, 8, 0);
  ck_near(l01_visible_pairs(&s), 15.0);
  s = shape(2, 3, 1, 4, 4, 8, 1);
  ck_near(l01_visible_pairs(&s), 60.0);
}
END_TEST

/* Flops: 2*dim per entry of S, 2*dim per entry of P times V.
 *   Default: 4 * 16 * 4096^2 * 64 = 68719476736 executed, mask or not.
 *   Causal, same shape: 16 * (4096 * 4097 / 2) = 134250496 visible pairs, * 4 * 64 = 34368126976
 *   useful; the naive kernels still execute 68719476736. */
START_TEST(flops_executed_and_useful) {
  l01_shape s = shape(1, 16, 16, 4096, 4096, 64, 0);
  ck_near(l01_naive_flops(&s), 68719476736.0);
  ck_near(l01_useful_flops(&s), 68719476736.0);
  s.causal = 1;
  ck_near(l01_naive_flops(&s), 68719476736.0);
  ck_near(l01_useful_flops(&s), 34368126976.0);
}
END_TEST

/* Intensity and the roofline. Default shape: 68719476736 / 4362338304 = 15.7530... flop/B, about
 * dim / 4. Ridge of 66.9 TFLOP/s over 4800 GB/s: 66.9e12 / 4.8e12 = 13.9375 flop/B. At intensity 4
 * the memory roof gives 4 * 4.8 = 19.2 TFLOP/s; at 16 the compute roof, 66.9. */
START_TEST(intensity_ridge_roofline) {
  ck_near(l01_intensity(68719476736.0, 4362338304.0), 68719476736.0 / 4362338304.0);
  ck_assert(l01_intensity(68719476736.0, 4362338304.0) > 15.75);
  ck_assert(l01_intensity(68719476736.0, 4362338304.0) < 15.76);
  ck_near(l01_ridge(66.9, 4800.0), 13.9375);
  ck_near(l01_roofline_tflops(4.0, 66.9, 4800.0), 19.2);
  ck_near(l01_roofline_tflops(16.0, 66.9, 4800.0), 66.9);
}
END_TEST

/* Why standard attention is memory-bound on tensor cores: with bf16 at 989 TFLOP/s and 4.8 TB/s the
 * ridge is 206 flop/B, thirteen times the intensity of the default shape. */
START_TEST(memory_bound_against_tensor_cores) {
  const l01_shape s = shape(1, 16, 16, 4096, 4096, 64, 0);
  l01_traffic t = {0, 0, 0, 0};
  l01_naive_traffic(&s, &t);
  const double ai = l01_intensity(l01_naive_flops(&s), t.total);
  ck_near(l01_ridge(989.0, 4800.0), 989.0 / 4.8);
  ck_assert(ai > 0.0);
  ck_assert(ai * 10.0 < l01_ridge(989.0, 4800.0));
  ck_assert(l01_roofline_tflops(ai, 989.0, 4800.0) < 100.0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("checklist-1");
  TCase *tc = tcase_create("traffic model");
  tcase_add_test(tc, s_memory);
  tcase_add_test(tc, naive_traffic_default);
  tcase_add_test(tc, naive_traffic_gqa);
  tcase_add_test(tc, fused_versus_naive);
  tcase_add_test(tc, visible_pairs_bottom_right);
  tcase_add_test(tc, flops_executed_and_useful);
  tcase_add_test(tc, intensity_ridge_roofline);
  tcase_add_test(tc, memory_bound_against_tensor_cores);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
