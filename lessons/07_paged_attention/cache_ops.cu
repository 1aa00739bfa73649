/** @file
 * @brief The cache's two data movers on the GPU: append (reshape-and-cache: each new token's K and
 * V written into its slot) and the block copies that copy-on-write asks for.
 *
 * A token's K (or V) row is kv_heads * dim bf16, contiguous both in the new tokens and in its slot
 * of the pool, so both kernels copy whole rows with 16-byte loads and stores.
 */
#include <limits.h>
#include <stdint.h>

#include "attn_cuda.cuh"
#include "paged_attention.h"

/** One block per new token: its K and V rows (vec 16-byte words each) into slot slots[t] of the
 * pools; a slot below 0 (a padding token) is skipped. */
static __global__ void l07_append_kernel(const uint4 *__restrict__ k_new,
                                         const uint4 *__restrict__ v_new,
                                         const int *__restrict__ slots, uint4 *__restrict__ k_cache,
                                         uint4 *__restrict__ v_cache, int vec) {
  const size_t t = blockIdx.x;
  const int slot = slots[t];
  if (slot < 0) return;
  for (int i = threadIdx.x; i < vec; i += blockDim.x) {
    k_cache[(size_t)slot * vec + i] = k_new[t * vec + i];
    v_cache[(size_t)slot * vec + i] = v_new[t * vec + i];
  }
}

/** One block per copy: the first tokens rows of block src into block dst, K and V. */
static __global__ void l07_copy_kernel(const l07_copy *__restrict__ copies,
                                       uint4 *__restrict__ k_cache, uint4 *__restrict__ v_cache,
                                       int block_size, int vec) {
  const l07_copy c = copies[blockIdx.x];
  const size_t n = (size_t)c.tokens * vec;
  const size_t src = (size_t)c.src * block_size * vec, dst = (size_t)c.dst * block_size * vec;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    k_cache[dst + i] = k_cache[src + i];
    v_cache[dst + i] = v_cache[src + i];
  }
}

/** 16-byte words in one token's row of kv_heads * dim bf16; 0 when it is not a whole number. */
static int row_words(int kv_heads, int dim) {
  const long long bytes = 2LL * kv_heads * dim;
  return kv_heads < 1 || dim < 1 || bytes % 16 || bytes / 16 > INT_MAX ? 0 : (int)(bytes / 16);
}

extern "C" cudaError_t l07_append(const void *k_new, const void *v_new, const int *slots,
                                  int n_tokens, int kv_heads, int dim, void *k_cache, void *v_cache,
                                  cudaStream_t stream) {
  const int vec = row_words(kv_heads, dim);
  if (!vec || n_tokens < 0 || (n_tokens && (!k_new || !v_new || !slots || !k_cache || !v_cache)))
    return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  const int threads = vec < 256 ? (vec + 31) / 32 * 32 : 256;
  l07_append_kernel<<<(unsigned)n_tokens, threads, 0, stream>>>(
      (const uint4 *)k_new, (const uint4 *)v_new, slots, (uint4 *)k_cache, (uint4 *)v_cache, vec);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l07_copy_blocks(const l07_copy *copies, int n_copies, int block_size,
                                       int kv_heads, int dim, void *k_cache, void *v_cache,
                                       cudaStream_t stream) {
  const int vec = row_words(kv_heads, dim);
  if (!vec || n_copies < 0 || block_size < 1 || (n_copies && (!copies || !k_cache || !v_cache)))
    return cudaErrorInvalidValue;
  if (n_copies == 0) return cudaSuccess;
  l07_copy_kernel<<<(unsigned)n_copies, 256, 0, stream>>>(copies, (uint4 *)k_cache,
                                                          (uint4 *)v_cache, block_size, vec);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
