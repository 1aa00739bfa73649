/** @file
 * @brief Version 7: half of each thread's share in registers, half in shared memory, loaded by
 * cp.async.
 *
 * What changed: from version 6, each thread holds 16 float4 (64 floats) of its row instead of 8:
 * the first 8 in registers as before, the next 8 in its own slots of shared memory, copied by
 * cp.async (sm_80+), which moves global memory into shared memory without passing through
 * registers. Nothing else changes: one read, one write, one block merge of (m, l).
 *
 *     block of T threads = one row; T = cols / 64 rounded up to a multiple of 32
 *     registers: float4 number t + kT,        k = 0..7
 *     shared:    float4 number t + (8 + k)T,  k = 0..7, at stage[k * T + t] (each thread reads only
 *                the slots it copied, so no barrier is needed for them)
 *
 * Why: the register file of an SM is 256 KiB; a 32768-column row is 128 KiB, and in version 6 it
 * takes 1024 threads x 51 registers, so one row per SM. While that row reduces (shuffles, a
 * barrier, exps) the SM has no loads in flight. Here the same row takes 512 threads (about half the
 * registers) plus 64 KiB of shared memory, so two rows fit per SM and one loads while the other
 * reduces. Rows of up to 65536 columns fit (1024 threads, 128 KiB of shared memory: needs an opt-in
 * above 48 KiB, and an sm_80/sm_90 part; RTX 30/40 cards allow 99 KiB per block).
 *
 * Prediction: little at 4096 columns (version 6 already has several rows per SM); at 32768 it
 * should close part of the gap between version 6 and the bandwidth floor.
 *
 * Measured: NVIDIA H200, 2026-11-23, fp32, one read and one write: 16384 x 4096: 0.13344 ms,
 * 4023.31 GB/s = 83.57% of HBM; 4096 x 32768: 0.26557 ms, 4043.19 GB/s = 83.98%. The prediction
 * does not hold: version 7 is slightly slower than version 6 on both shapes (0.12930 and
 * 0.26440 ms), so the gap to the floor stays open.
 *
 * Run: `./run 7` and `./run 7 --heads 4 --seq 1024 --kv-seq 32768`
 */
#include "online_softmax.h"

#include <stdint.h>

#include "softmax_reduce.cuh"

/** cp.async.cg: copy 16 bytes global -> shared, bypassing L1 and registers (asynchronous). */
static __device__ __forceinline__ void cp_async_16(void *smem_dst, const void *gmem_src) {
  const unsigned dst = (unsigned)__cvta_generic_to_shared(smem_dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src) : "memory");
}

/** Close the group of cp.async issued so far. */
static __device__ __forceinline__ void cp_async_commit(void) {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/** Wait until every group this thread committed has landed in shared memory. */
static __device__ __forceinline__ void cp_async_wait_all(void) {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

/** Max of a float4's four values. */
static __device__ __forceinline__ float max4(float4 v) {
  return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
}

/** exp(v - m) for each of a float4's four values. */
static __device__ __forceinline__ float4 exp4_sub(float4 v, float m) {
  return make_float4(expf(v.x - m), expf(v.y - m), expf(v.z - m), expf(v.w - m));
}

/** One block per row (blockIdx.x): each thread holds L02_REG_VECS float4 of the row in
 * registers and L02_SMEM_VECS more in its own slots of shared memory (loaded by cp.async),
 * computes its (m, l) and exponentials, merges (m, l) across the block and writes its share. */
static __global__ void __launch_bounds__(L02_MAX_THREADS)
    l02_softmax_v7_kernel(const float *x, float *y, int cols) {
  extern __shared__ float4 stage[]; /* [L02_SMEM_VECS][T] */
  __shared__ float smem_m[L02_WARP_SIZE], smem_l[L02_WARP_SIZE];
  const int n4 = cols / 4;
  const int T = blockDim.x, t = threadIdx.x;
  const float4 *xr = (const float4 *)(x + (size_t)blockIdx.x * cols); /* [n4] */
  float4 *yr = (float4 *)(y + (size_t)blockIdx.x * cols);             /* [n4] */
  const float4 masked = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);

  /* Issue everything before using anything: the shared half first, then the register half. */
#pragma unroll
  for (int k = 0; k < L02_SMEM_VECS; ++k) {
    const int i = t + (L02_REG_VECS + k) * T;
    if (i < n4) cp_async_16(&stage[k * T + t], xr + i);
  }
  cp_async_commit();
  float4 v[L02_REG_VECS];
#pragma unroll
  for (int k = 0; k < L02_REG_VECS; ++k) {
    const int i = t + k * T;
    v[k] = i < n4 ? xr[i] : masked;
  }

  /* This thread's max over its 64 values. */
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < L02_REG_VECS; ++k) m = fmaxf(m, max4(v[k]));
  cp_async_wait_all();
#pragma unroll
  for (int k = 0; k < L02_SMEM_VECS; ++k) {
    const int i = t + (L02_REG_VECS + k) * T;
    if (i < n4) m = fmaxf(m, max4(stage[k * T + t])); /* slots past the row were never written */
  }

  /* e = exp(x - m) in place, in both halves, and l = their sum. */
  const float m_ref = m == -INFINITY ? 0.0f : m;
  float l = 0.0f;
#pragma unroll
  for (int k = 0; k < L02_REG_VECS; ++k) {
    v[k] = exp4_sub(v[k], m_ref);
    l += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
#pragma unroll
  for (int k = 0; k < L02_SMEM_VECS; ++k) {
    const int i = t + (L02_REG_VECS + k) * T;
    if (i < n4) {
      const float4 e = exp4_sub(stage[k * T + t], m_ref);
      stage[k * T + t] = e;
      l += (e.x + e.y) + (e.z + e.w);
    }
  }

  float M = m, L = l;
  block_ml(&M, &L, smem_m, smem_l);
  const float s = ml_scale(m, M, L);
#pragma unroll
  for (int k = 0; k < L02_REG_VECS; ++k) {
    const int i = t + k * T;
    if (i < n4) yr[i] = make_float4(v[k].x * s, v[k].y * s, v[k].z * s, v[k].w * s);
  }
#pragma unroll
  for (int k = 0; k < L02_SMEM_VECS; ++k) {
    const int i = t + (L02_REG_VECS + k) * T;
    if (i < n4) {
      const float4 e = stage[k * T + t];
      yr[i] = make_float4(e.x * s, e.y * s, e.z * s, e.w * s);
    }
  }
}

extern "C" const char *l02_softmax_v7_supports(int cols) {
  if (cols % 4 != 0)
    return "cols is not a multiple of 4: rows do not start on 16-byte boundaries, so no float4 "
           "loads (versions 1-5 take any length)";
  if (cols > L02_SMEM_MAX_COLS)
    return "a row longer than 65536 floats does not fit in one block's registers and shared "
           "memory; version 5 takes it";
  return NULL;
}

extern "C" int l02_softmax_v7_threads(int cols) {
  const int per_thread = (L02_REG_VECS + L02_SMEM_VECS) * 4;
  int t = attn_cdiv(attn_cdiv(cols, per_thread), L02_WARP_SIZE) * L02_WARP_SIZE;
  return t < L02_WARP_SIZE ? L02_WARP_SIZE : t;
}

extern "C" cudaError_t l02_softmax_v7_regs_smem(const float *x, float *y, int rows, int cols,
                                                cudaStream_t stream) {
  if (l02_softmax_v7_supports(cols) || ((uintptr_t)x | (uintptr_t)y) % 16 != 0) {
    attn_cuda_report(cudaErrorInvalidValue, "l02_softmax_v7_regs_smem: shape or alignment",
                     __FILE__, __LINE__);
    return cudaErrorInvalidValue;
  }
  if (rows <= 0) return cudaSuccess;
  const int threads = l02_softmax_v7_threads(cols);
  const size_t smem = (size_t)L02_SMEM_VECS * threads * sizeof(float4);
  /* Above 48 KiB of dynamic shared memory a kernel must opt in (cheap; the attribute is per
   * function). */
  if (smem > 48 * 1024)
    ATTN_TRY(cudaFuncSetAttribute(l02_softmax_v7_kernel,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  l02_softmax_v7_kernel<<<rows, threads, smem, stream>>>(x, y, cols);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
