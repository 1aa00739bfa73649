/** @file
 * @brief Version 2's writer: quantise-on-append. A server appends each new token's K and V rows to
 * the cache before the step that reads them (lesson 07's l07_append()); with an FP8 cache the
 * append is where the rows become e4m3 codes and their scales.
 *
 * A row is one token's dim values of one KV head, of K or of V. Its scale is its largest |x| over
 * 448, the largest e4m3 value: the row's largest value becomes the code +-448 and every other one
 * keeps e4m3's 3 mantissa bits relative to itself. Nothing outside the row is read or written,
 * so a page's earlier rows never change when a later token brings a larger value (a scale per
 * page would have to grow, and its old codes be rewritten or clip).
 *
 * The work: dim / 8 threads per row, each reading 16 bytes (8 bf16), the row's max |x| by
 * shuffles among them, then 8 codes (8 bytes) each and one scale per row. The same arithmetic
 * as l10_fp8_quantise_row() on the host (one fp32 division for 448 / amax, one multiply per
 * value, round to nearest even, saturating), so the two give the same codes.
 */
#include <math.h>

#include "attn_cuda.cuh"
#include "serving_decode.h"

#define L10_APPEND_THREADS 256 /**< threads per block of the append */

/** The largest |x| of 8 bf16 values (one 16-byte chunk). */
static __device__ __forceinline__ float absmax8(uint4 c) {
  const uint32_t w[4] = {c.x, c.y, c.z, c.w};
  float m = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    m = fmaxf(m, fabsf(__uint_as_float(w[j] << 16)));
    m = fmaxf(m, fabsf(__uint_as_float(w[j] & 0xFFFF0000u)));
  }
  return m;
}

/** Two fp32 values rounded to e4m3 (nearest, ties to even, saturating at +-448) and packed: @p lo
 * in the low byte. sm_89 and later; the launcher refuses older GPUs. */
static __device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 890
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
#else
  (void)lo, (void)hi;
  __trap();
  return 0u;
#endif
}

/** Thread i: 16-byte chunk i % (dim / 8) of row i / (dim / 8); row r is K (r even) or V (odd) of
 * KV head (r / 2) % kv_heads of token r / (2 kv_heads). */
static __global__ void __launch_bounds__(L10_APPEND_THREADS)
    l10_fp8_append_kernel(const attn_bf16 *__restrict__ k_new, const attn_bf16 *__restrict__ v_new,
                          const int *__restrict__ slots, int n_tokens, int kv_heads, int dim,
                          int shift, uint8_t *__restrict__ k8, uint8_t *__restrict__ v8,
                          float *__restrict__ k_scale, float *__restrict__ v_scale) {
  const int per_row = dim / 8; /* 8, 16 or 32: a row's threads lie in one warp */
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long row = i / per_row, rows = 2LL * n_tokens * kv_heads;
  const int c = (int)(i % per_row);
  int is_v = 0, h = 0, t = 0, slot = -1;
  if (row < rows) {
    is_v = (int)(row & 1);
    h = (int)((row >> 1) % kv_heads);
    t = (int)((row >> 1) / kv_heads);
    slot = __ldg(slots + t);
  }
  uint4 x = make_uint4(0u, 0u, 0u, 0u);
  const size_t src = ((size_t)t * kv_heads + h) * dim + (size_t)c * 8;
  if (slot >= 0) x = __ldg((const uint4 *)((is_v ? v_new : k_new) + src));
  float amax = absmax8(x); /* every lane takes part in the shuffles */
  for (int off = per_row / 2; off > 0; off >>= 1)
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  if (slot < 0) return;
  const float inv = amax > 0.f ? __fdiv_rn(L10_E4M3_MAX, amax) : 0.f;
  const uint32_t w[4] = {x.x, x.y, x.z, x.w};
  uint32_t b[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    b[j] = e4m3x2(__fmul_rn(__uint_as_float(w[j] << 16), inv),
                  __fmul_rn(__uint_as_float(w[j] & 0xFFFF0000u), inv));
  const size_t dst = ((size_t)slot * kv_heads + h) * dim + (size_t)c * 8;
  *(uint2 *)((is_v ? v8 : k8) + dst) = make_uint2(b[0] | (b[1] << 16), b[2] | (b[3] << 16));
  if (c == 0) {
    const size_t mask = ((size_t)1 << shift) - 1;
    const size_t sidx = ((((size_t)slot >> shift) * kv_heads + h) << shift) | ((size_t)slot & mask);
    (is_v ? v_scale : k_scale)[sidx] = amax > 0.f ? __fdiv_rn(amax, L10_E4M3_MAX) : 0.f;
  }
}

extern "C" cudaError_t l10_fp8_append(const void *k_new, const void *v_new, const int *slots,
                                      int n_tokens, int kv_heads, int dim, int block_size, void *k8,
                                      void *v8, float *k_scale, float *v_scale,
                                      cudaStream_t stream) {
  if (n_tokens < 0 || kv_heads < 1 || (dim != 64 && dim != 128 && dim != 256) || block_size < 1 ||
      (block_size & (block_size - 1)) != 0)
    return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  if (!k_new || !v_new || !slots || !k8 || !v8 || !k_scale || !v_scale)
    return cudaErrorInvalidValue;
  int dev = 0, major = 0, minor = 0;
  ATTN_TRY(cudaGetDevice(&dev));
  ATTN_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  ATTN_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (major * 10 + minor < 89) return cudaErrorNotSupported; /* no e4m3 conversion below 8.9 */
  int shift = 0;
  while ((1 << shift) < block_size) ++shift;
  const long long threads = 2LL * n_tokens * kv_heads * (dim / 8);
  const long long blocks = (threads + L10_APPEND_THREADS - 1) / L10_APPEND_THREADS;
  if (blocks > 0x7FFFFFFFLL) return cudaErrorInvalidConfiguration;
  l10_fp8_append_kernel<<<(unsigned)blocks, L10_APPEND_THREADS, 0, stream>>>(
      (const attn_bf16 *)k_new, (const attn_bf16 *)v_new, slots, n_tokens, kv_heads, dim, shift,
      (uint8_t *)k8, (uint8_t *)v8, k_scale, v_scale);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
