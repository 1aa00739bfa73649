/** @file
 * @brief Version 1: naive softmax, one thread per row.
 *
 *     y_j = exp(x_j) / sum_k exp(x_k)
 *
 * What changed: nothing yet: the formula as written. Thread r owns row r and walks it twice: once
 * to sum exp(x), once to write exp(x) / sum. Two reads and one write of the matrix.
 *
 * Why: to see what goes wrong. fp32 holds numbers up to FLT_MAX = 3.4e38 = e^88.7. A score of 89
 * makes exp() infinite, the sum infinite, and inf / inf = NaN; a row whose scores are all below
 * -103.9 makes every exp() zero (below the smallest subnormal), the sum 0, and the row comes out
 * all zeros instead of summing to 1. Attention scores past 88 are rare but real (no scaling, large
 * activations, or a model's attention sinks), and nothing here warns: the NaN simply flows
 * downstream. Version 2 fixes it with one identity: softmax(x) = softmax(x - c) for any constant c;
 * choose c = max(x). The lesson runs this version on small scores (uniform in [-4, 4)) so its table
 * row is a real check; the CPU part and the report show it overflowing, and tests/lesson02 check
 * that it does.
 *
 * Prediction: thread r reads row r, so the 32 threads of a warp touch 32 addresses `cols` floats
 * apart: every load instruction needs 32 separate memory sectors. A small fraction of HBM
 * bandwidth.
 *
 * Measured: NVIDIA H200, 2026-11-23, 16384 x 4096 fp32 (data in [-4, 4)): 1.54554 ms, 521.05 GB/s
 * = 10.82% of HBM on its own two reads and one write; 4096 x 32768 fp32: 9.70618 ms, 165.94 GB/s =
 * 3.45%. The small fraction predicted.
 *
 * Run: `./run 1` and `./run 1 --heads 4 --seq 1024 --kv-seq 32768`
 */
#include "online_softmax.h"

#include "attn_cuda.cuh"

/** One thread per row: the thread sums exp(x) over its row (in double), then writes
 * y = exp(x) / sum. No max is subtracted, so a large x overflows. */
static __global__ void l02_softmax_v1_kernel(const float *x, float *y, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float *xr = x + (size_t)r * cols; /* [cols] */
  float *yr = y + (size_t)r * cols;       /* [cols] */

  /* The sum is kept in double: see version 2 for why a one-thread sum needs it. */
  double l = 0.0;
  for (int j = 0; j < cols; ++j) l += expf(xr[j]);
  /* A fully masked row (every x = -inf) sums to 0; its softmax is defined as zeros. Otherwise
   * y = exp(x) / l; with l = inf (an overflowed exp) that is 0 for finite exps and inf * 0 = NaN.
   */
  const double inv = l > 0.0 ? 1.0 / l : 0.0;
  for (int j = 0; j < cols; ++j) yr[j] = (float)(expf(xr[j]) * inv);
}

extern "C" cudaError_t l02_softmax_v1_naive(const float *x, float *y, int rows, int cols,
                                            cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  const int threads = 128;
  l02_softmax_v1_kernel<<<attn_cdiv(rows, threads), threads, 0, stream>>>(x, y, rows, cols);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
