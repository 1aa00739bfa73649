/** @file
 * @brief Version 2: safe softmax, one thread per row, three passes.
 *
 * What changed: from version 1, the row's max is subtracted before exp. Because
 *
 *     exp(x_j - c) / sum_k exp(x_k - c) = exp(x_j) / sum_k exp(x_k)   for any c,
 *
 * choosing c = m = max_k x_k changes nothing mathematically. Finding m costs a pass of its own:
 * max, then sum, then normalise. Three reads and one write, where version 1 had two reads.
 *
 * Why: every exp argument is now <= 0, so exp is in (0, 1]; the largest term is exactly 1, so the
 * sum is in [1, cols] and never overflows or vanishes. Masked entries are -inf: exp(-inf - m) = 0,
 * they weigh nothing. A row that is all -inf has m = -inf and x - m = -inf + inf = NaN, so that
 * case is tested first: its output is zeros.
 * One thread adds up all `cols` terms in a row, one after the other. In fp32 such a sum drifts:
 * each addition rounds the new term to the ulp of a sum that is already much larger, and for
 * positive terms the errors lean the same way. Simulated on the lesson's data the relative error of
 * the sum is about 3.6e-6 at 4096 terms and grows linearly, 5.6e-5 at 65536: every output of the
 * row inherits it, and the check allows 1e-5. So this version (and version 1) keeps the sum in
 * double. The parallel versions need not: a thread adds at most cols / 32 terms and the rest is a
 * tree of additions.
 *
 * Prediction: correct on every input, at the price of a third of extra traffic. Same access
 * pattern as version 1 (uncoalesced), so the same poor bandwidth, and slower for the extra pass.
 *
 * Measured: NVIDIA H200, 2026-11-23, 16384 x 4096 fp32: 1.78168 ms, 602.66 GB/s = 12.52% of HBM on
 * its own three reads and one write; 4096 x 32768 fp32: 11.29952 ms, 190.05 GB/s = 3.95%. As poor
 * as version 1 (1.54554 and 9.70618 ms) and slower, as predicted.
 *
 * Run: `./run 2` and `./run 2 --heads 4 --seq 1024 --kv-seq 32768`
 */
#include "online_softmax.h"

#include "attn_cuda.cuh"

/** One thread per row, three passes over it: the max, the sum of exp(x - max), then
 * y = exp(x - max) / sum. */
static __global__ void l02_softmax_v2_kernel(const float *x, float *y, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float *xr = x + (size_t)r * cols; /* [cols] */
  float *yr = y + (size_t)r * cols;       /* [cols] */

  float m = -INFINITY; /* pass 1: the max */
  for (int j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
  if (m == -INFINITY) { /* fully masked row */
    for (int j = 0; j < cols; ++j) yr[j] = 0.0f;
    return;
  }
  double l = 0.0; /* pass 2: the sum, relative to the max: 1 <= l <= cols */
  for (int j = 0; j < cols; ++j) l += expf(xr[j] - m);
  const float inv = (float)(1.0 / l); /* pass 3: normalise */
  for (int j = 0; j < cols; ++j) yr[j] = expf(xr[j] - m) * inv;
}

extern "C" cudaError_t l02_softmax_v2_safe_thread(const float *x, float *y, int rows, int cols,
                                                  cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  const int threads = 128;
  l02_softmax_v2_kernel<<<attn_cdiv(rows, threads), threads, 0, stream>>>(x, y, rows, cols);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
