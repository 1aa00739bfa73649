/** @file
 * @brief Version 6: the row in registers, 16-byte loads: one read, one write.
 *
 * What changed: from version 5, the row is read once. Each thread loads its share straight into
 * registers, 8 float4 (32 floats), all 8 loads issued before any is used, and keeps them there:
 * its own max m, then e = exp(x - m) in place and l = sum of e. The block merges the threads'
 * (m, l) into the row's (M, L) (one barrier) and each value becomes e * exp(m - M) / L: one exp
 * per element and one block reduction.
 *
 *     block of T threads = one row; T = cols / 32 rounded up to a multiple of 32
 *     thread t holds float4 number t, t + T, ..., t + 7T   (coalesced: a warp's load instruction
 *     reads 32 consecutive float4 = 512 bytes)
 *     4096 columns -> T = 128       16384 -> T = 512       32768 -> T = 1024 (the limit)
 *
 * Why: one read and one write are all the HBM traffic the problem needs. A 16-byte load (LDG.128)
 * moves four floats: a quarter of the load instructions, so more bytes in flight per warp. Rows
 * must start on 16-byte boundaries: cols a multiple of 4 (l02_softmax_v6_supports()).
 * `float4 v[8]` is indexed only by unrolled loop counters, so it stays in registers (-Xptxas -v:
 * no local memory, no spill); 32768 columns is the most one block holds, longer rows go to
 * version 5 or 7.
 *
 * Prediction: the floor of (read + write) / bandwidth, 112 us at 16384 x 4096 and 224 us at
 * 4096 x 32768 with 4.8 TB/s. At 4096 columns many rows are in flight per SM; at 32768 one row
 * fills the SM and its reduction leaves the memory pipe idle for a moment (version 7 addresses
 * that).
 *
 * Measured: NVIDIA H200, 2026-11-23, fp32, one read and one write: 16384 x 4096: 0.12930 ms,
 * 4152.26 GB/s = 86.25% of HBM; 4096 x 32768: 0.26440 ms, 4061.05 GB/s = 84.35%. Close to the
 * floor but not at it, and only a little lower on the long rows.
 *
 * Run: `./run 6` and `./run 6 --heads 4 --seq 1024 --kv-seq 32768`
 */
#include "online_softmax.h"

#include <stdint.h>

#include "softmax_reduce.cuh"

/** Max of a float4's four values. */
static __device__ __forceinline__ float max4(float4 v) {
  return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
}

/** One block per row (blockIdx.x): each thread loads its share of the row, up to
 * L02_REG_VECS float4, into registers once, computes its own (m, l) and exponentials there,
 * merges (m, l) across the block and writes its share of y: one read and one write of the row. */
static __global__ void __launch_bounds__(L02_MAX_THREADS)
    l02_softmax_v6_kernel(const float *x, float *y, int cols) {
  __shared__ float smem_m[L02_WARP_SIZE], smem_l[L02_WARP_SIZE];
  const int n4 = cols / 4; /* float4 per row */
  const int T = blockDim.x;
  const float4 *xr = (const float4 *)(x + (size_t)blockIdx.x * cols); /* [n4] */
  float4 *yr = (float4 *)(y + (size_t)blockIdx.x * cols);             /* [n4] */
  const float4 masked = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);

  float4 v[L02_REG_VECS]; /* this thread's share of the row */
#pragma unroll
  for (int k = 0; k < L02_REG_VECS; ++k) {
    const int i = threadIdx.x + k * T;
    v[k] = i < n4 ? xr[i] : masked;
  }

  /* This thread's (m, l): exact, from its own values. */
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < L02_REG_VECS; ++k) m = fmaxf(m, max4(v[k]));
  const float m_ref = m == -INFINITY ? 0.0f : m; /* all masked: exp(-inf - 0) = 0 */
  float l = 0.0f;
#pragma unroll
  for (int k = 0; k < L02_REG_VECS; ++k) {
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
  for (int k = 0; k < L02_REG_VECS; ++k) {
    const int i = threadIdx.x + k * T;
    if (i < n4) yr[i] = make_float4(v[k].x * s, v[k].y * s, v[k].z * s, v[k].w * s);
  }
}

extern "C" const char *l02_softmax_v6_supports(int cols) {
  if (cols % 4 != 0)
    return "cols is not a multiple of 4: rows do not start on 16-byte boundaries, so no float4 "
           "loads (versions 1-5 take any length)";
  if (cols > L02_REGS_MAX_COLS)
    return "a row longer than 32768 floats does not fit in one block's registers (1024 threads x "
           "32 floats); versions 5 and 7 take it";
  return NULL;
}

extern "C" int l02_softmax_v6_threads(int cols) {
  const int per_thread = L02_REG_VECS * 4;
  int t = attn_cdiv(attn_cdiv(cols, per_thread), L02_WARP_SIZE) * L02_WARP_SIZE;
  return t < L02_WARP_SIZE ? L02_WARP_SIZE : t;
}

extern "C" cudaError_t l02_softmax_v6_online_regs(const float *x, float *y, int rows, int cols,
                                                  cudaStream_t stream) {
  if (l02_softmax_v6_supports(cols) || ((uintptr_t)x | (uintptr_t)y) % 16 != 0) {
    attn_cuda_report(cudaErrorInvalidValue, "l02_softmax_v6_online_regs: shape or alignment",
                     __FILE__, __LINE__);
    return cudaErrorInvalidValue;
  }
  if (rows <= 0) return cudaSuccess;
  l02_softmax_v6_kernel<<<rows, l02_softmax_v6_threads(cols), 0, stream>>>(x, y, cols);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
