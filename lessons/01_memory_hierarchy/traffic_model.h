/**
 * @file traffic_model.h
 * @brief Lesson 01's paper model of standard attention: the bytes its three kernels move through
 *        HBM, the flops they execute, the memory the score matrix S needs, and the roofline.
 *
 * Plain C with no CUDA and no harness types, so the drill (drills/01_traffic_model.c) can be built
 * against it alone. Everything is fp32 (4 bytes per element) and counted in bytes and flops as
 * doubles (exact for every integer below 2^53).
 *
 * Standard attention as a framework runs it, for query head h of sequence b (KV head h / (heads /
 * kv_heads)):
 *
 *     kernel 1   S = Q K^T * scale        reads Q and K, writes S  [batch, heads, seq_q, seq_kv]
 *     kernel 2   P = softmax(S) by rows   reads S, writes P (and the fp32 log-sum-exp per row)
 *     kernel 3   O = P V                  reads P and V, writes O
 *
 * The mask changes no byte: the naive kernels still write and read every entry of S and P (a masked
 * entry holds -inf in S and 0 in P), and still multiply every pair.
 */
#ifndef L01_TRAFFIC_MODEL_H
#define L01_TRAFFIC_MODEL_H

#ifdef __cplusplus
extern "C" {
#endif

/** One attention shape, the fields of attn_problem that the model needs. */
typedef struct l01_shape {
  int batch;    /**< sequences */
  int heads;    /**< query heads */
  int kv_heads; /**< key/value heads (divides heads) */
  int seq_q;    /**< query tokens per sequence */
  int seq_kv;   /**< key/value tokens per sequence */
  int dim;      /**< head dimension */
  int causal;   /**< 1: bottom-right causal mask (query i sees key j if j <= i + seq_kv - seq_q) */
} l01_shape;

/** HBM bytes of the three naive kernels, each tensor counted once per kernel that touches it. */
typedef struct l01_traffic {
  double qk;      /**< kernel 1: Q and K read, S written */
  double softmax; /**< kernel 2: S read, P and the log-sum-exp written */
  double pv;      /**< kernel 3: P and V read, O written */
  double total;   /**< the sum of the three */
} l01_traffic;

/** Bytes of one fp32 score matrix S `[batch, heads, seq_q, seq_kv]` (P is the same size). */
double l01_s_bytes(const l01_shape *s);

/** Fill @p t with the HBM traffic of the three naive kernels (fp32 everywhere). */
void l01_naive_traffic(const l01_shape *s, l01_traffic *t);

/** Bytes a fused kernel that never writes S must still move: Q, K, V read once, O written once. */
double l01_fused_bytes(const l01_shape *s);

/** (query, key) pairs the mask lets through, over the whole batch and every head. */
double l01_visible_pairs(const l01_shape *s);

/** Flops the naive kernels execute: 2*dim for each entry of S and 2*dim for each entry of P times
 *  V, over every pair, masked or not. */
double l01_naive_flops(const l01_shape *s);

/** Flops that count (the harness's work model): 4*dim per visible pair. */
double l01_useful_flops(const l01_shape *s);

/** Arithmetic intensity, flops per byte; 0 when @p bytes is not positive. */
double l01_intensity(double flops, double bytes);

/** The ridge point of a roofline, flops per byte: @p peak_tflops (1e12 flop/s) over @p peak_gbs
 *  (1e9 byte/s). Below it a kernel is memory-bound, above it compute-bound. */
double l01_ridge(double peak_tflops, double peak_gbs);

/** The roofline: the best rate (TFLOP/s) a kernel of intensity @p flop_per_byte can reach under
 *  @p peak_tflops and @p peak_gbs. */
double l01_roofline_tflops(double flop_per_byte, double peak_tflops, double peak_gbs);

#ifdef __cplusplus
}
#endif

#endif /* L01_TRAFFIC_MODEL_H */
