/**
 * @file bwd.cuh
 * @brief Lesson 09's device helpers, shared by versions 2-5: the D term kernel (which also clears
 *        the fp32 dQ accumulator), the kernel that turns that accumulator into bf16 dQ, and the
 *        argument checks every launcher makes.
 *
 * Included by a version file after HEAD_DIM is defined (CMake builds each version once per head
 * dimension). Everything here is static: each version file gets its own copy.
 */
#ifndef L09_BWD_CUH
#define L09_BWD_CUH

#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "attn_cuda.cuh"
#include "backward.h"

#define BW_LOG2E 1.4426950408889634f /**< e^x = 2^(x log2 e) */
#define BW_VEC 8                     /**< bf16 per 16-byte load */

/** Token pasting, after expanding `b`. */
#define BW_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define BW_CAT(a, b) BW_CAT_(a, b)

/** Eight bf16 in one 16-byte word to fp32 (a bf16 is the top half of the fp32 of equal value). */
static __device__ __forceinline__ void bw_unpack8(uint4 w, float f[8]) {
  const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(u[i] << 16);
    f[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
  }
}

/* The two kernels below are named through BW_CAT(), which Doxygen does not expand: it would read
 * their bodies as declarations, so they are kept out of the HTML (their launchers, bw_dterm() and
 * bw_dq_convert(), are documented). */
/** @cond */

/**
 * D = rowsum(dO o O) for every query row, one warp per row (HEAD_DIM / 8 lanes read 16 bytes each
 * of both rows), written as `[batch, heads, seq_q]` like the log-sum-exp. When @p dq_acc is not
 * NULL the warp also clears that row of the fp32 dQ accumulator `[batch, seq_q, heads, dim]`, so
 * the main kernel can add into it.
 */
static __global__ void __launch_bounds__(256)
    BW_CAT(l09_dterm_kernel_d, HEAD_DIM)(const attn_bf16 *__restrict__ o,
                                         const attn_bf16 *__restrict__ d_o, float *__restrict__ dd,
                                         float *__restrict__ dq_acc, int heads, int seq_q,
                                         long long rows) {
  const long long row =
      (long long)blockIdx.x * 8 + (threadIdx.x >> 5); /* (b * seq_q + i) * H + h */
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  float sum = 0.f;
  if (lane < HEAD_DIM / BW_VEC) {
    float a[8], c[8];
    bw_unpack8(*(const uint4 *)(o + row * HEAD_DIM + lane * BW_VEC), a);
    bw_unpack8(*(const uint4 *)(d_o + row * HEAD_DIM + lane * BW_VEC), c);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum = fmaf(a[e], c[e], sum);
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  const int h = (int)(row % heads);
  const long long bi = row / heads, b = bi / seq_q, i = bi % seq_q;
  if (lane == 0) dd[(b * heads + h) * seq_q + i] = sum;
  if (dq_acc) {
    float4 *z = (float4 *)(dq_acc + row * HEAD_DIM);
    for (int e = lane; e < HEAD_DIM / 4; e += 32) z[e] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

/** dQ = scale * the fp32 accumulator, rounded to bf16: 8 elements per thread. */
static __global__ void __launch_bounds__(256)
    BW_CAT(l09_dq_convert_kernel_d, HEAD_DIM)(const float *__restrict__ acc,
                                              attn_bf16 *__restrict__ dq, float scale,
                                              long long n8) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n8) return;
  const float4 x = ((const float4 *)acc)[2 * t], y = ((const float4 *)acc)[2 * t + 1];
  __nv_bfloat162 r[4];
  r[0] = __floats2bfloat162_rn(x.x * scale, x.y * scale);
  r[1] = __floats2bfloat162_rn(x.z * scale, x.w * scale);
  r[2] = __floats2bfloat162_rn(y.x * scale, y.y * scale);
  r[3] = __floats2bfloat162_rn(y.z * scale, y.w * scale);
  ((uint4 *)dq)[t] = *(const uint4 *)r;
}

/** @endcond */

/** Wait until every cp.async this thread committed has landed (visible to other threads after a
 * __syncthreads() that follows). */
static __device__ __forceinline__ void bw_cp_async_wait_all(void) {
  asm volatile("cp.async.wait_group 0;\n" ::);
}

/** Copy 4 bytes global -> shared (cp.async.ca: the sizes below 16 go through L1). @p src_bytes 4
 * or 0; with 0 nothing is read and the 4 bytes are zero-filled. */
static __device__ __forceinline__ void bw_cp_async_4(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}

/** The launcher's checks: a valid shape, and at least @p need bytes of workspace. */
static inline __host__ cudaError_t bw_check(const l09_grad_args *a, size_t need) {
  ATTN_TRY(attn_check_shape(a->batch, a->heads, a->kv_heads, a->seq_q, a->seq_kv));
  if (a->workspace_bytes < need || (need && !a->workspace)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

/** Enqueue the D kernel (l09_dterm_kernel_d64 or _d128: one warp per row, 8 rows to a block of
 * 256 threads) for every row, D into @p dd `[batch, heads, seq_q]` (and clear @p dq_acc when it
 * is not NULL). */
static inline __host__ cudaError_t bw_dterm(const l09_grad_args *a, float *dd, float *dq_acc,
                                            cudaStream_t stream) {
  const long long rows = (long long)a->batch * a->seq_q * a->heads;
  const long long blocks = (rows + 7) / 8;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  BW_CAT(l09_dterm_kernel_d, HEAD_DIM)<<<(unsigned)blocks, 256, 0, stream>>>(
      (const attn_bf16 *)a->o, (const attn_bf16 *)a->d_o, dd, dq_acc, a->heads, a->seq_q, rows);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

/** Enqueue the conversion of the fp32 dQ accumulator into bf16 dQ (times the softmax scale):
 * l09_dq_convert_kernel_d64 or _d128, 8 elements per thread. */
static inline __host__ cudaError_t bw_dq_convert(const l09_grad_args *a, const float *acc,
                                                 cudaStream_t stream) {
  const long long n8 = (long long)a->batch * a->seq_q * a->heads * HEAD_DIM / 8;
  const long long blocks = (n8 + 255) / 256;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  BW_CAT(l09_dq_convert_kernel_d, HEAD_DIM)<<<(unsigned)blocks, 256, 0, stream>>>(
      acc, (attn_bf16 *)a->dq, a->scale, n8);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

#endif /* L09_BWD_CUH */
