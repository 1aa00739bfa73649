/* Lesson 01's traffic and flop model of standard attention (the solution of drill 1).
 *
 * Every count is a product of small integers, done in double so that no shape overflows. */
#include "traffic_model.h"

/* Bytes of one fp32 element. */
static const double l01_f32 = 4.0;

double l01_s_bytes(const l01_shape *s) {
  return l01_f32 * s->batch * s->heads * (double)s->seq_q * s->seq_kv;
}

/* Q and O have the same shape; so do K and V. */
static double l01_q_bytes(const l01_shape *s) {
  return l01_f32 * s->batch * s->seq_q * (double)s->heads * s->dim;
}

static double l01_kv_bytes(const l01_shape *s) {
  return l01_f32 * s->batch * s->seq_kv * (double)s->kv_heads * s->dim;
}

void l01_naive_traffic(const l01_shape *s, l01_traffic *t) {
  const double q = l01_q_bytes(s), kv = l01_kv_bytes(s), sp = l01_s_bytes(s);
  const double lse = l01_f32 * s->batch * s->heads * (double)s->seq_q;
  t->qk = q + kv + sp;        /* read Q, read K, write S */
  t->softmax = sp + sp + lse; /* read S, write P, write the log-sum-exp */
  t->pv = sp + kv + q;        /* read P, read V, write O */
  t->total = t->qk + t->softmax + t->pv;
}

double l01_fused_bytes(const l01_shape *s) {
  return 2.0 * l01_q_bytes(s) + 2.0 * l01_kv_bytes(s);
}

double l01_visible_pairs(const l01_shape *s) {
  double per_sequence = 0.0;
  if (!s->causal) {
    per_sequence = (double)s->seq_q * s->seq_kv;
  } else {
    /* Bottom-right alignment: query i sees keys 0 .. i + (seq_kv - seq_q), clipped to
     * [0, seq_kv]. */
    const long long offset = (long long)s->seq_kv - s->seq_q;
    for (long long i = 0; i < s->seq_q; ++i) {
      long long seen = i + offset + 1;
      if (seen < 0) seen = 0;
      if (seen > s->seq_kv) seen = s->seq_kv;
      per_sequence += (double)seen;
    }
  }
  return per_sequence * s->batch * s->heads;
}

double l01_naive_flops(const l01_shape *s) {
  return 4.0 * s->batch * s->heads * (double)s->seq_q * s->seq_kv * s->dim;
}

double l01_useful_flops(const l01_shape *s) {
  return 4.0 * s->dim * l01_visible_pairs(s);
}

double l01_intensity(double flops, double bytes) {
  return bytes > 0.0 ? flops / bytes : 0.0;
}

double l01_ridge(double peak_tflops, double peak_gbs) {
  return peak_gbs > 0.0 ? peak_tflops * 1e12 / (peak_gbs * 1e9) : 0.0;
}

double l01_roofline_tflops(double flop_per_byte, double peak_tflops, double peak_gbs) {
  const double memory_roof = flop_per_byte * peak_gbs * 1e9 / 1e12;
  return memory_roof < peak_tflops ? memory_roof : peak_tflops;
}
