/** @file
 * @brief Version 5: online softmax, one block per row: max and sum in one pass, then normalise.
 *
 * What changed from version 4: passes 1 and 2 become one. Each thread keeps a running pair (m, l):
 * the max of the scores it has seen and the sum of exp(x - m) over them. When a new score raises
 * the max from m to m', everything already in l was measured against the old max, so it is
 * rescaled:
 *
 *     m' = max(m, x)
 *     l' = l * exp(m - m') + exp(x - m')
 *
 * (exp(m - m') = 1 when the max does not move.) The threads' pairs are then combined with the
 * merge, the same rescaling applied to two partial sums:
 *
 *     m = max(m1, m2),   l = l1 * exp(m1 - m) + l2 * exp(m2 - m)
 *
 * which is associative and commutative, so it can run as a shuffle butterfly and across warps
 * exactly like the max and sum did (softmax_reduce.cuh: warp_ml, block_ml). One reduction, one
 * barrier, where version 4 had two.
 *
 * What it should buy: two reads and one write instead of three and one: the model says 3/4 of
 * version 4's time when memory bound. It costs a second exp per element (the rescale), which is
 * cheap next to the memory traffic. The same update with (m, l, O) is the heart of FlashAttention
 * (version 8).
 *
 * Measured, H200, 16384 x 4096, 2026-11-21: 0.1817 ms, 4432 GB/s = 92.1% of HBM on its own two
 * reads and one write (2955 GB/s, 61.4% on 1 R + 1 W). The 3/4 prediction does not hold at this
 * shape: version 5 is slower than version 4 (0.1447 ms), whose extra passes were mostly cache
 * hits. On 4096 x 32768 it does win, 0.5054 ms against 0.6020 (0.84 of the time, not 3/4).
 */
#include "online_softmax.h"

#include "softmax_reduce.cuh"

/** Threads per block: 8 warps share a row. */
#define THREADS 256

/** One block of THREADS threads per row (blockIdx.x): one pass of online (m, l) updates per
 * thread, merged across the block, then one pass writing y = exp(x - m) / l. */
static __global__ void __launch_bounds__(THREADS)
    softmax_online_block_kernel(const float *x, float *y, int cols) {
  __shared__ float smem_m[WARP_SIZE], smem_l[WARP_SIZE];
  const float *xr = x + (size_t)blockIdx.x * cols; /* [cols] */
  float *yr = y + (size_t)blockIdx.x * cols;       /* [cols] */

  float m = -INFINITY, l = 0.0f; /* one pass: the online update */
  for (int j = threadIdx.x; j < cols; j += THREADS) ml_push(&m, &l, xr[j]);
  block_ml(&m, &l, smem_m, smem_l); /* every thread: the row's (m, l) */

  /* Normalise. A fully masked row has l = 0 and comes out as zeros. */
  const float m_ref = m == -INFINITY ? 0.0f : m;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (int j = threadIdx.x; j < cols; j += THREADS) yr[j] = expf(xr[j] - m_ref) * inv;
}

extern "C" cudaError_t softmax_v5_online_block(const float *x, float *y, int rows, int cols,
                                               cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  softmax_online_block_kernel<<<rows, THREADS, 0, stream>>>(x, y, cols);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
