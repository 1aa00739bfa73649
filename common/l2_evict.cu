/** @file
 * @brief The L2 flush behind attn_flush_l2(): read a zeroed buffer twice the L2's size and write
 * nothing.
 *
 * Why a read and not a cudaMemset: a memset leaves the L2 full of dirty lines, and the next (timed)
 * kernel pays to write them back to HBM as its own reads evict them: up to an L2's worth of extra
 * traffic, about 11% for a 0.5 GB kernel on an H200. A read leaves clean lines, which cost nothing
 * to evict, and it also writes back, outside the timed region, whatever the previous run left
 * dirty.
 */
#include "attn_types.h"

/** Grid-stride read of n float4 of a zeroed buffer: each thread sums what it reads and stores
 * nothing (the sum is 0), so the L2 ends up full of clean lines of this buffer. */
static __global__ void l2_evict(const float4 *buf, size_t n, float *sink) {
  float acc = 0.0f;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float4 v = buf[i];
    acc += v.x + v.y + v.z + v.w;
  }
  // The buffer is all zeros, so this store never happens; it keeps the loads from being removed.
  if (acc != 0.0f) *sink = acc;
}

/** Launch l2_evict() over the first `bytes` of `zeroed` (1024 blocks of 256 threads) on
 * `stream`. Called by attn_flush_l2() in timer.c. */
extern "C" cudaError_t attn_l2_evict(const void *zeroed, size_t bytes, cudaStream_t stream) {
  l2_evict<<<1024, 256, 0, stream>>>((const float4 *)zeroed, bytes / sizeof(float4),
                                     (float *)zeroed);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
