/** @file
 * @brief Version 6: the row in registers, 16-byte loads: one read, one write.
 *
 * What changed from version 5: the row is read once. Each thread of the row's block loads its share
 * straight into registers, 8 float4 (32 floats) per thread, all 8 loads issued before any is used,
 * and keeps them there through the reduction; the output is computed from the registers. The only
 * HBM traffic is the one read and the one write the problem needs.
 *
 *     block of T threads = one row; T = cols / 32 rounded up to a multiple of 32
 *     thread t holds float4 number t, t + T, t + 2T, ..., t + 7T   (coalesced: a warp's load
 *     instruction reads 32 consecutive float4 = 512 bytes)
 *     4096 columns -> T = 128       16384 -> T = 512       32768 -> T = 1024 (the limit)
 *
 * With the row on chip the thread can be exact about its own values before it talks to anyone: its
 * max m over its 32 values, then e = exp(x - m) in place and l = sum of e. The block merges the
 * threads' (m, l) pairs (one barrier) into the row's (M, L), and each value becomes
 * e * exp(m - M) / L: one exp per element and one block reduction, the online merge doing the work
 * that took two reductions before.
 *
 * Why 16-byte loads: one LDG.128 moves four floats, so a quarter of the load instructions and of
 * the address arithmetic; the memory system sees the same 128-byte lines either way, but fewer
 * instructions keep more bytes in flight per warp. They need each row to start on a 16-byte
 * boundary: cols a multiple of 4 (softmax_v6_supports() says so otherwise).
 *
 * Limits: `float4 v[8]` is indexed only by the unrolled loop counters, so it lives in registers
 * (check with -Xptxas -v: no local memory, no spill). 1024 threads x 32 floats = 32768 columns is
 * the most one block can hold (the register file is 64K 32-bit registers per SM: at 32768 columns
 * one row fills an SM). Longer rows: version 5 (two reads) or version 7.
 *
 * What it should buy: the floor of (read + write) / bandwidth. At 4096 columns a block is 128
 * threads, so many rows are in flight per SM; at 32768 one row fills the SM and its reduction
 * leaves the SM's memory pipe idle for a moment (version 7 addresses that).
 *
 * Measured, H200, 2026-11-21 (1 read + 1 write):
 *   16384 x 4096: 0.1295 ms, 4146 GB/s = 86.1% of HBM
 *   4096 x 32768: 0.2643 ms, 4062 GB/s = 84.4% of HBM
 * Close to the floor (112 and 224 us at 4.8 TB/s) but not at it, and only a little lower on the
 * long rows. torch.softmax on the same shapes (bench/lesson02_peers.py): 0.2102 and 0.4008 ms.
 */
#include "online_softmax.h"

#include <stdint.h>

#include "softmax_reduce.cuh"

/** Max of a float4's four values. */
static __device__ __forceinline__ float max4(float4 v) {
  return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
}

/** One block per row (blockIdx.x): each thread loads its share of the row, up to
 * SOFTMAX_REG_VECS float4, into registers once, computes its own (m, l) and exponentials there,
 * merges (m, l) across the block and writes its share of y: one read and one write of the row. */
static __global__ void __launch_bounds__(SOFTMAX_MAX_THREADS)
    softmax_regs_kernel(const float *x, float *y, int cols) {
  __shared__ float smem_m[WARP_SIZE], smem_l[WARP_SIZE];
  const int n4 = cols / 4; /* float4 per row */
  const int T = blockDim.x;
  const float4 *xr = (const float4 *)(x + (size_t)blockIdx.x * cols); /* [n4] */
  float4 *yr = (float4 *)(y + (size_t)blockIdx.x * cols);             /* [n4] */
  const float4 masked = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);

  float4 v[SOFTMAX_REG_VECS]; /* this thread's share of the row */
#pragma unroll
  for (int k = 0; k < SOFTMAX_REG_VECS; ++k) {
    const int i = threadIdx.x + k * T;
    v[k] = i < n4 ? xr[i] : masked;
  }

  /* This thread's (m, l): exact, from its own values. */
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < SOFTMAX_REG_VECS; ++k) m = fmaxf(m, max4(v[k]));
  const float m_ref = m == -INFINITY ? 0.0f : m; /* all masked: exp(-inf - 0) = 0 */
  float l = 0.0f;
#pragma unroll
  for (int k = 0; k < SOFTMAX_REG_VECS; ++k) {
    v[k].x = expf(v[k].x - m_ref);
    v[k].y = expf(v[k].y - m_ref);
    v[k].z = expf(v[k].z - m_ref);
    v[k].w = expf(v[k].w - m_ref);
    l += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }

  /* The row's (M, L), in every thread; then re-base this thread's values on M and normalise. */
  float M = m, L = l;
  block_ml(&M, &L, smem_m, smem_l);
  const float s = ml_scale(m, M, L);
#pragma unroll
  for (int k = 0; k < SOFTMAX_REG_VECS; ++k) {
    const int i = threadIdx.x + k * T;
    if (i < n4) yr[i] = make_float4(v[k].x * s, v[k].y * s, v[k].z * s, v[k].w * s);
  }
}

extern "C" const char *softmax_v6_supports(int cols) {
  if (cols % 4 != 0)
    return "cols is not a multiple of 4: rows do not start on 16-byte boundaries, so no float4 "
           "loads (versions 1-5 take any length)";
  if (cols > SOFTMAX_REGS_MAX_COLS)
    return "a row longer than 32768 floats does not fit in one block's registers (1024 threads x "
           "32 floats); versions 5 and 7 take it";
  return NULL;
}

extern "C" int softmax_v6_threads(int cols) {
  const int per_thread = SOFTMAX_REG_VECS * 4;
  int t = attn_cdiv(attn_cdiv(cols, per_thread), WARP_SIZE) * WARP_SIZE;
  return t < WARP_SIZE ? WARP_SIZE : t;
}

extern "C" cudaError_t softmax_v6_online_regs(const float *x, float *y, int rows, int cols,
                                              cudaStream_t stream) {
  if (softmax_v6_supports(cols) || ((uintptr_t)x | (uintptr_t)y) % 16 != 0) {
    attn_cuda_report(cudaErrorInvalidValue, "softmax_v6_online_regs: shape or alignment", __FILE__,
                     __LINE__);
    return cudaErrorInvalidValue;
  }
  if (rows <= 0) return cudaSuccess;
  softmax_regs_kernel<<<rows, softmax_v6_threads(cols), 0, stream>>>(x, y, cols);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
