/* Drill 01: the HBM traffic and flop model of standard attention. Fill in the bodies, then
 * `make drill-1`.
 *
 * lessons/01_memory_hierarchy/traffic_model.h says what each function must return. Try it from the
 * three kernels alone before you read it:
 *     kernel 1  S = Q K^T * scale   reads Q and K, writes S    [batch, heads, seq_q, seq_kv], fp32
 *     kernel 2  P = softmax(S)      reads S, writes P and one fp32 log-sum-exp per row
 *     kernel 3  O = P V             reads P and V, writes O
 * Q and O are [batch, seq_q, heads, dim]; K and V are [batch, seq_kv, kv_heads, dim] (GQA).
 * Causal masking is bottom-right aligned: query i sees key j when j <= i + seq_kv - seq_q.
 * Count in double: 4 * 32 * 8192 * 8192 overflows a 32-bit int.
 * The lesson's answers are in lessons/01_memory_hierarchy/traffic_model.c.
 */
#include "traffic_model.h"

double l01_s_bytes(const l01_shape *s) {
  (void)s;
  /* TODO: bytes of the fp32 score matrix */
  return 0.0;
}

void l01_naive_traffic(const l01_shape *s, l01_traffic *t) {
  (void)s;
  /* TODO: bytes each kernel moves, and their total */
  t->qk = 0.0;
  t->softmax = 0.0;
  t->pv = 0.0;
  t->total = 0.0;
}

double l01_fused_bytes(const l01_shape *s) {
  (void)s;
  /* TODO: Q, K, V read once and O written once */
  return 0.0;
}

double l01_visible_pairs(const l01_shape *s) {
  (void)s;
  /* TODO: (query, key) pairs the mask lets through, every sequence and head */
  return 0.0;
}

double l01_naive_flops(const l01_shape *s) {
  (void)s;
  /* TODO: flops the three kernels execute, masked pairs included */
  return 0.0;
}

double l01_useful_flops(const l01_shape *s) {
  (void)s;
  /* TODO: 4 * dim per visible pair */
  return 0.0;
}

double l01_intensity(double flops, double bytes) {
  (void)flops;
  (void)bytes;
  /* TODO: flops per byte */
  return 0.0;
}

double l01_ridge(double peak_tflops, double peak_gbs) {
  (void)peak_tflops;
  (void)peak_gbs;
  /* TODO: the intensity where the two roofs meet */
  return 0.0;
}

double l01_roofline_tflops(double flop_per_byte, double peak_tflops, double peak_gbs) {
  (void)flop_per_byte;
  (void)peak_tflops;
  (void)peak_gbs;
  /* TODO: the attainable rate */
  return 0.0;
}
