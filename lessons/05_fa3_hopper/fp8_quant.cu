/* Lesson 05, version 6's conversion: bf16 Q, K, V to e4m3 with one scale per tensor, V transposed
 * and its keys permuted (fp8_workspace.cuh), then the flat entry points of version 6. */
#include <limits.h>

#include "attn_cuda.cuh"
#include "fa3_hopper.h"
#include "fp8_convert.cuh"

/** The largest |x| of tensor blockIdx.y (0 Q, 1 K, 2 V) into amax[blockIdx.y], as float bits.
 * n[] counts 8-element chunks. */
static __global__ void l05_amax_kernel(const uint4 *__restrict__ q, const uint4 *__restrict__ k,
                                       const uint4 *__restrict__ v, size_t nq, size_t nkv,
                                       unsigned *__restrict__ amax) {
  const uint4 *x = blockIdx.y == 0 ? q : blockIdx.y == 1 ? k : v;
  const size_t n = blockIdx.y == 0 ? nq : nkv;
  float m = 0.f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const uint4 c = x[i];
    const uint32_t w[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      m = fmaxf(m, fabsf(__uint_as_float(w[j] << 16)));
      m = fmaxf(m, fabsf(__uint_as_float(w[j] & 0xFFFF0000u)));
    }
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(amax + blockIdx.y, __float_as_uint(m));
}

/** 448 / amax: the factor that maps a tensor onto e4m3's range (1 for an all-zero tensor). */
static __device__ __forceinline__ float to_fp8(const unsigned *amax, int t) {
  const float a = __uint_as_float(amax[t]);
  return a > 0.f ? L05_FP8_MAX / a : 1.f;
}

/** Q (blockIdx.y 0) or K (1) to e4m3, 8 elements per thread and step. */
static __global__ void l05_quant_kernel(const uint4 *__restrict__ q, const uint4 *__restrict__ k,
                                        uint2 *__restrict__ q8, uint2 *__restrict__ k8, size_t nq,
                                        size_t nk, const unsigned *__restrict__ amax) {
  const uint4 *x = blockIdx.y == 0 ? q : k;
  uint2 *y = blockIdx.y == 0 ? q8 : k8;
  const size_t n = blockIdx.y == 0 ? nq : nk;
  const float f = to_fp8(amax, blockIdx.y);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    y[i] = l05_e4m3x8(x[i], f);
}

/** One block per (tile of 128 keys, kv head, batch): V's tile staged in shared memory, then
 * written transposed, one row per head-dimension index, keys permuted by l05_fp8_key(). Keys past
 * seq_kv become zeros. 256 threads, dim 128. */
static __global__ void __launch_bounds__(256)
    l05_quant_vt_kernel(const attn_bf16 *__restrict__ v, uint32_t *__restrict__ vt, int seq_kv,
                        int kv_heads, int seq_pad, const unsigned *__restrict__ amax) {
  __shared__ attn_bf16 tile[L05_FP8_KEY_PAD * L05_VT_ROW];
  const int k0 = blockIdx.x * L05_FP8_KEY_PAD, kvh = blockIdx.y, b = blockIdx.z;
  const float f = to_fp8(amax, 2);
  /* stage: 128 keys x 128 dims, 8 bf16 (16 bytes) per thread and step, zeros past seq_kv */
  for (int c = threadIdx.x; c < L05_FP8_KEY_PAD * 16; c += blockDim.x) {
    const int key = c >> 4, d0 = (c & 15) * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (k0 + key < seq_kv)
      x = *(const uint4 *)(v + (((size_t)b * seq_kv + k0 + key) * kv_heads + kvh) * 128 + d0);
    const uint32_t w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) *(uint32_t *)&tile[key * L05_VT_ROW + d0 + 2 * j] = w[j];
  }
  __syncthreads();
  /* write: row d of the transposed tile is 128 bytes, 32 words of 4 keys each */
  l05_write_vt(tile, vt + (((size_t)b * kv_heads + kvh) * 128) * (seq_pad / 4) + k0 / 4, seq_pad, f,
               blockDim.x);
}

extern "C" size_t l05_fp8_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                          int dim) {
  if (dim != 128 || batch < 1 || heads < 1 || kv_heads < 1 || heads % kv_heads || seq_q < 1 ||
      seq_kv < 1)
    return 0;
  return l05_fp8_layout_of(batch, heads, kv_heads, seq_q, seq_kv, dim).bytes;
}

extern "C" cudaError_t l05_fp8_quantize(const void *q, const void *k, const void *v, int batch,
                                        int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                                        void *workspace, size_t workspace_bytes,
                                        cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  if (dim != 128) return cudaErrorInvalidValue;
  const l05_fp8_layout l = l05_fp8_layout_of(batch, heads, kv_heads, seq_q, seq_kv, dim);
  if (!workspace || workspace_bytes < l.bytes) return cudaErrorInvalidValue;
  if ((long long)batch * kv_heads > 65535 || l.seq_pad / L05_FP8_KEY_PAD > INT_MAX)
    return cudaErrorInvalidConfiguration;
  unsigned char *ws = (unsigned char *)workspace;
  unsigned *amax = (unsigned *)ws;
  const size_t nq = (size_t)batch * seq_q * heads * dim / 8,
               nkv = (size_t)batch * seq_kv * kv_heads * dim / 8;
  ATTN_TRY(cudaMemsetAsync(amax, 0, 16, stream));
  l05_amax_kernel<<<dim3(264, 3), 256, 0, stream>>>((const uint4 *)q, (const uint4 *)k,
                                                    (const uint4 *)v, nq, nkv, amax);
  ATTN_TRY_LAUNCH();
  l05_quant_kernel<<<dim3(264, 2), 256, 0, stream>>>(
      (const uint4 *)q, (const uint4 *)k, (uint2 *)(ws + l.q), (uint2 *)(ws + l.k), nq, nkv, amax);
  ATTN_TRY_LAUNCH();
  l05_quant_vt_kernel<<<dim3(l.seq_pad / L05_FP8_KEY_PAD, kv_heads, batch), 256, 0, stream>>>(
      (const attn_bf16 *)v, (uint32_t *)(ws + l.vt), seq_kv, kv_heads, l.seq_pad, amax);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l05_fp8_forward(const void *q, const void *k, const void *v, void *o,
                                       float *lse, int batch, int heads, int kv_heads, int seq_q,
                                       int seq_kv, int dim, int causal, float scale,
                                       void *workspace, size_t workspace_bytes,
                                       cudaStream_t stream) {
  ATTN_TRY(l05_fp8_quantize(q, k, v, batch, heads, kv_heads, seq_q, seq_kv, dim, workspace,
                            workspace_bytes, stream));
  return l05_fp8_attention(workspace, workspace_bytes, o, lse, batch, heads, kv_heads, seq_q,
                           seq_kv, dim, causal, scale, stream);
}
