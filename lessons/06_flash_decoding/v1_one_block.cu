/** @file
 * @brief Version 1: one block per query row walks every key; its warps split the keys and merge
 * their (m, l, O) states.
 *
 * What changed: against lesson 04, the query side shrinks to at most 8 rows per sequence (decode:
 * one new token, or a few draft tokens), so the Q tile of FlashAttention-2 has nothing to tile.
 * What is left of its partition is one block per query row (batch, query head, row) and the keys
 * as the block's only loop. Lesson 02's version 8 did this in fp32 with one key per warp step;
 * here K and V are bf16 and a key's row is read by a group of lanes with one 16-byte load each
 * (8 lanes at dim 64, 16 at dim 128), so a warp reads 4 or 2 keys side by side, 4 steps' worth of
 * loads in flight before the first score is used:
 *
 *     block = one query row, 4 warps            keys 0 .. n-1 (n visible keys)
 *     warp w: keys [w n/4, (w+1) n/4)  ->  lane groups (m, l, O) -> shuffles -> (m_w, l_w, O_w)
 *     __syncthreads(); thread d folds the 4 warps' states for column d; O[d] = O/l, lse = m + log l
 *
 * Why: the baseline of version 2. Its grid is batch * heads * seq_q blocks: at batch 1 with 32
 * query heads that is 32 blocks for 132 SMs, so 100 SMs idle and the 32 busy ones each stream a
 * whole KV head (16 MiB at 32768 keys, dim 128) through the few loads one block keeps in flight.
 *
 * Prediction: the floor is K + V once per (batch, KV head): 2 * 32768 * 128 * 2 B = 16.8 MB per KV
 * head, 134 MB for 8 KV heads, 28 us at 4.8 TB/s. Version 1 cannot get near it: each of its 32
 * blocks keeps about 16 KiB of loads in flight (128 threads x 4 keys x K and V x 16 B), so 32
 * blocks hold about 0.5 MiB against the roughly 5 MB that 4.8 TB/s needs at about 1 us of
 * latency: expect around a tenth of the HBM rate (a few hundred us), whatever L2 saves on the 4
 * query heads that read each KV head.
 *
 * Measured: NVIDIA H200, 2026-11-24 (docs/results/h200-l06c-2026-11-24), batch 1, 32 heads, 8 KV
 * heads, kv 32768, dim 128: 0.868 ms, 155 GB/s, 3.2% of HBM: the tenth predicted was optimistic by
 * 3x. The rate is the same at kv 8192 and 131072 (152 and 156 GB/s) and grows only with the grid:
 * batch 8 gives 256 blocks and 1.14 TB/s, batch 32 at kv 8192 gives 1024 blocks and 1.95 TB/s.
 *
 * Run: `./run 1` (batch 1, 32 heads, 8 KV heads, kv-seq 32768, dim 128) and
 * `./run 1 --batch 64 --kv-seq 4096` (a grid of 2048 blocks: the case where one block per row is
 * enough).
 */
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <limits.h>

#include "decode.cuh"

/** Token pasting, after expanding `b`. */
#define FD_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FD_CAT(a, b) FD_CAT_(a, b)
/** This build's kernel: l06_one_block_kernel_d64 or l06_one_block_kernel_d128. */
#define FD_KERNEL FD_CAT(l06_one_block_kernel_d, HEAD_DIM)
/** This build's launcher: l06_one_block_d64() or l06_one_block_d128(), in flash_decoding.h. */
#define FD_LAUNCH FD_CAT(l06_one_block_d, HEAD_DIM)

/* The loop on a whiteboard (version 1: FlashAttention-2's online softmax, one query row a block).
 *
 *   block (b, i, h):  q = Q[b, i, h] * scale * log2(e),  n = keys row i sees (attn_keys_seen)
 *     keys [0, n), cut into 4 ranges, one per warp; a warp's lane groups take interleaved keys
 *     lane group:  m = -inf, l = 0, O = 0                        (8 of the d columns per lane)
 *     for each step of FD_STEP keys of the warp's range:        (every K and V load issued first)
 *       s_j = q . K[j]                                           (16-byte loads, shuffle sum)
 *       m_new = max(m, max_j s_j),  alpha = 2^(m - m_new),  p_j = 2^(s_j - m_new)
 *       l = alpha l + sum_j p_j,  O = alpha O + sum_j p_j V[j],  m = m_new
 *     the warp's lane groups merge their (m, l, O) by shuffles   (fd_merge())
 *     each warp's (m, l, O) -> shared memory;  __syncthreads()
 *     thread d: merge the 4 warps' (m, l, O[d])
 *     -> O[b, i, h, d] = O[d] / l,  lse = (m + log2 l) ln 2        (no key seen: 0 and -inf)
 */
/** One block per O row r = (b * seq_q + i) * heads + h: the block walks the row's visible keys
 * (fd_row()) and writes the row of O in bf16 and its log-sum-exp. */
static __global__ void __launch_bounds__(L06_THREADS)
    FD_KERNEL(const attn_bf16 *__restrict__ q,  // [batch, seq_q, heads, HEAD_DIM]
              const attn_bf16 *__restrict__ k,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              const attn_bf16 *__restrict__ v,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              attn_bf16 *__restrict__ o,        // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,          // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale) {
  const size_t r = blockIdx.x;
  const int h = (int)(r % heads);
  const int i = (int)((r / heads) % seq_q);
  const int b = (int)(r / ((size_t)heads * seq_q));
  const int g = h / (heads / kv_heads); /* the KV head this query head reads */
  const size_t kv_stride = (size_t)kv_heads * HEAD_DIM;
  const attn_bf16 *kg = k + (size_t)b * seq_kv * kv_stride + (size_t)g * HEAD_DIM;
  const attn_bf16 *vg = v + (size_t)b * seq_kv * kv_stride + (size_t)g * HEAD_DIM;

  float o_d, lse_r;
  fd_row(q + r * HEAD_DIM, kg, vg, kv_stride, 0, attn_keys_seen(i, seq_q, seq_kv, causal), scale,
         &o_d, &lse_r);
  if (threadIdx.x < HEAD_DIM) {
    o[r * HEAD_DIM + threadIdx.x] = __float2bfloat16(o_d);
    if (threadIdx.x == 0) lse[((size_t)b * heads + h) * seq_q + i] = lse_r;
  }
}

/** The launcher, l06_one_block_d64() or l06_one_block_d128(): batch * heads * seq_q blocks. */
extern "C" cudaError_t FD_LAUNCH(const void *q, const void *k, const void *v, void *o, float *lse,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                 int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  if (seq_q > L06_MAX_SEQ_Q) return cudaErrorInvalidValue;
  const long long rows = (long long)batch * heads * seq_q;
  if (rows > INT_MAX) return cudaErrorInvalidConfiguration;
  FD_KERNEL<<<(unsigned)rows, L06_THREADS, 0, stream>>>(
      (const attn_bf16 *)q, (const attn_bf16 *)k, (const attn_bf16 *)v, (attn_bf16 *)o, lse, heads,
      kv_heads, seq_q, seq_kv, causal, scale);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
