// clang-format off
/** @file
 * @brief Version 1: paged decode, one block per (sequence, query head) walking its block table:
 * vLLM's paged_attention_v1 shape, with lesson 06's version 1 as its body.
 *
 * What changed: against lesson 06's version 1 (one block per query row, its 4 warps splitting the
 * keys, lane groups reading a key with 16-byte loads), only the address of key j: its slot in the
 * pool is table[b][j / block_size] * block_size + j % block_size, one 4-byte lookup per key and
 * lane group before the K and V loads.
 *
 *     block (b, i, h): keys 0 .. len_b - 1 of sequence b, 4 warps x lane groups
 *       key j -> page = table[b][j / bs] -> slot = page * bs + j % bs -> K[slot][g][...], V[slot][g][...]
 *
 * Why: the baseline of the lesson and the reference point for the cost of the indirection: the
 * same kernel reads a dense cache at lesson 06's version-1 rate. Like that version it starves the
 * GPU at small batch (one block per query row), which version 2 fixes.
 *
 * Prediction: within a few percent of lesson 06's version 1 on the same shape (about 150 GB/s at
 * batch 1, kv 32768); the lookups are L1 hits after the first key of each page.
 *
 * Measured: (H200, 2026-11-25, docs/results/h200-l07d-2026-11-25) 1301 us at the default shape,
 * 103 GB/s (2.1% of HBM): 32 blocks on 132 SMs, each walking 32768 keys; version 2 is 28.8x
 * faster.
 *
 * Run: `./run 1` (batch 1, 32 heads, 8 KV heads, kv-seq 32768, dim 128, block size 16) and
 * `./run 1 --batch 32 --kv-seq 8192`.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <limits.h>

#include "decode.cuh" /* lesson 06: the one-row walk fd_row() and its loads (USES 6) */
#include "paged_attention.h"

/** Token pasting, after expanding `b`. */
#define PR_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define PR_CAT(a, b) PR_CAT_(a, b)
/** This build's kernel: l07_paged_row_kernel_d64 or l07_paged_row_kernel_d128. */
#define PR_KERNEL PR_CAT(l07_paged_row_kernel_d, HEAD_DIM)
/** This build's launcher: l07_paged_row_d64() or l07_paged_row_d128(), in paged_attention.h. */
#define PR_LAUNCH PR_CAT(l07_paged_row_d, HEAD_DIM)

/** lesson 06's fd_row() with key j read from its slot in the pool: see there. @p table is the
 * sequence's row of the block table. */
static __device__ __forceinline__ void pr_row(const attn_bf16 *__restrict__ qr,
                                              const attn_bf16 *__restrict__ kg,
                                              const attn_bf16 *__restrict__ vg, size_t kv_stride,
                                              const int *__restrict__ table, int block_size, int j0,
                                              int j1, float scale, float *o_d, float *lse) {
  __shared__ float part_m[FD_WARPS], part_l[FD_WARPS];
  __shared__ float part_o[FD_WARPS][HEAD_DIM];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int group = lane / FD_LPK, sub = lane % FD_LPK; /* key slot, and 8-column slice */

  /* q's slice, scaled by scale * log2(e) once: scores come out in base 2. */
  float qf[FD_VEC];
  fd_unpack8(*(const uint4 *)(qr + sub * FD_VEC), qf);
#pragma unroll
  for (int t = 0; t < FD_VEC; ++t) qf[t] *= scale * FD_LOG2E;

  /* This warp's keys: a contiguous range, a whole number of steps long (the last one clipped). */
  const int n = j1 > j0 ? j1 - j0 : 0;
  const int per = attn_cdiv(attn_cdiv(n, FD_WARPS), FD_STEP) * FD_STEP;
  const int w0 = min(j1, j0 + warp * per), w1 = min(j1, w0 + per);

  float m = -INFINITY, l = 0.f, acc[FD_VEC];
#pragma unroll
  for (int t = 0; t < FD_VEC; ++t) acc[t] = 0.f;

  for (int base = w0; base < w1; base += FD_STEP) {
    /* Issue every load of the step first: FD_UNROLL keys and values per lane in flight. */
    uint4 kr[FD_UNROLL], vr[FD_UNROLL];
#pragma unroll
    for (int u = 0; u < FD_UNROLL; ++u) {
      const int j = base + u * FD_GROUPS + group;
      kr[u] = make_uint4(0u, 0u, 0u, 0u), vr[u] = kr[u];
      if (j < w1) { /* key j's slot through the page table */
        const size_t slot = (size_t)__ldg(table + j / block_size) * block_size + j % block_size;
        kr[u] = fd_ld_stream(kg + slot * kv_stride + sub * FD_VEC);
        vr[u] = fd_ld_stream(vg + slot * kv_stride + sub * FD_VEC);
      }
    }
    float s[FD_UNROLL], mx = -INFINITY;
#pragma unroll
    for (int u = 0; u < FD_UNROLL; ++u) {
      float kf[FD_VEC], dot = 0.f;
      fd_unpack8(kr[u], kf);
#pragma unroll
      for (int t = 0; t < FD_VEC; ++t) dot += qf[t] * kf[t];
      dot = fd_group_sum(dot); /* every lane of the warp shuffles, masked keys too */
      s[u] = base + u * FD_GROUPS + group < w1 ? dot : -INFINITY;
      mx = fmaxf(mx, s[u]);
    }
    /* The online update for FD_UNROLL scores at once: one rescale per step. */
    const float m_new = fmaxf(m, mx);
    const float m_use = m_new == -INFINITY ? 0.f : m_new; /* nothing seen yet by this group */
    const float alpha = exp2f(m - m_use);
    l *= alpha;
#pragma unroll
    for (int t = 0; t < FD_VEC; ++t) acc[t] *= alpha;
#pragma unroll
    for (int u = 0; u < FD_UNROLL; ++u) {
      const float p = exp2f(s[u] - m_use); /* 0 for a masked key */
      float vf[FD_VEC];
      fd_unpack8(vr[u], vf);
      l += p;
#pragma unroll
      for (int t = 0; t < FD_VEC; ++t) acc[t] += p * vf[t];
    }
    m = m_new;
  }

  /* The warp's FD_GROUPS states, merged by shuffles: lane and lane ^ off hold the same columns. */
#pragma unroll
  for (int off = FD_LPK; off < 32; off <<= 1) {
    float o2[FD_VEC];
#pragma unroll
    for (int t = 0; t < FD_VEC; ++t) o2[t] = __shfl_xor_sync(0xffffffffu, acc[t], off);
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float l2 = __shfl_xor_sync(0xffffffffu, l, off);
    fd_merge(&m, &l, acc, m2, l2, o2);
  }
  if (lane < FD_LPK) {
#pragma unroll
    for (int t = 0; t < FD_VEC; ++t) part_o[warp][sub * FD_VEC + t] = acc[t];
    if (lane == 0) part_m[warp] = m, part_l[warp] = l;
  }
  __syncthreads();

  /* The warps' states, column by column: thread d folds the FD_WARPS states of column d. */
  if (threadIdx.x < HEAD_DIM) {
    const int d = threadIdx.x;
    float mm = -INFINITY, ll = 0.f, oo = 0.f;
#pragma unroll
    for (int w = 0; w < FD_WARPS; ++w) {
      const float mn = fmaxf(mm, part_m[w]);
      const float mu = mn == -INFINITY ? 0.f : mn;
      const float a = exp2f(mm - mu), b = exp2f(part_m[w] - mu);
      ll = ll * a + part_l[w] * b;
      oo = oo * a + part_o[w][d] * b;
      mm = mn;
    }
    *o_d = ll > 0.f ? oo / ll : 0.f;
    *lse = ll > 0.f ? (mm + log2f(ll)) * FD_LN2 : -INFINITY;
  }
}

/* The loop on a whiteboard: lesson 06's version 1 (one query row a block) through the block table.
 *
 *   block (b, i, h):  q = Q[b, i, h] * scale * log2(e),  n = keys row i sees of seq_lens[b]
 *     keys [0, n), cut into 4 ranges, one per warp; a warp's lane groups take interleaved keys
 *     lane group:  m = -inf, l = 0, O = 0                        (8 of the d columns per lane)
 *     for each step of FD_STEP keys of the warp's range:        (every K and V load issued first)
 *       page = block_table[b][j / block_size],  slot = page * block_size + j % block_size
 *       s_j = q . K[slot]                                        (16-byte loads, shuffle sum)
 *       m_new = max(m, max_j s_j),  alpha = 2^(m - m_new),  p_j = 2^(s_j - m_new)
 *       l = alpha l + sum_j p_j,  O = alpha O + sum_j p_j V[slot],  m = m_new
 *     the warp's lane groups merge their (m, l, O) by shuffles   (fd_merge())
 *     each warp's (m, l, O) -> shared memory;  __syncthreads()
 *     thread d: merge the 4 warps' (m, l, O[d])
 *     -> O[b, i, h, d] = O[d] / l,  lse = (m + log2 l) ln 2        (no key seen: 0 and -inf)
 */
/** One block per O row r = (b * seq_q + i) * heads + h: the walk over the row's visible keys of
 * sequence b through its block table, then the row of O and its log-sum-exp. */
static __global__ void __launch_bounds__(L06_THREADS)
    PR_KERNEL(const attn_bf16 *__restrict__ q,  // [batch, seq_q, heads, HEAD_DIM]
              const attn_bf16 *__restrict__ k,  // pool [num_blocks, block_size, kv_heads, HEAD_DIM]
              const attn_bf16 *__restrict__ v,  // pool [num_blocks, block_size, kv_heads, HEAD_DIM]
              const int *__restrict__ block_table,  // [batch, max_blocks]
              const int *__restrict__ seq_lens,     // [batch]
              attn_bf16 *__restrict__ o,            // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,              // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int max_blocks, int block_size, int causal,
              float scale) {
  const size_t r = blockIdx.x;
  const int h = (int)(r % heads);
  const int i = (int)((r / heads) % seq_q);
  const int b = (int)(r / ((size_t)heads * seq_q));
  const int g = h / (heads / kv_heads); /* the KV head this query head reads */
  const size_t kv_stride = (size_t)kv_heads * HEAD_DIM;
  float o_d, lse_r;
  pr_row(q + r * HEAD_DIM, k + (size_t)g * HEAD_DIM, v + (size_t)g * HEAD_DIM, kv_stride,
         block_table + (size_t)b * max_blocks, block_size, 0,
         attn_keys_seen(i, seq_q, seq_lens[b], causal), scale, &o_d, &lse_r);
  if (threadIdx.x < HEAD_DIM) {
    o[r * HEAD_DIM + threadIdx.x] = __float2bfloat16(o_d);
    if (threadIdx.x == 0) lse[((size_t)b * heads + h) * seq_q + i] = lse_r;
  }
}

/** The launcher, l07_paged_row_d64() or l07_paged_row_d128(): batch * heads * seq_q blocks; see
 * l07_paged_fn in paged_attention.h (the workspace is not used). */
extern "C" cudaError_t PR_LAUNCH(const void *q, const void *k_cache, const void *v_cache,
                                 const int *block_table, const int *seq_lens,
                                 const int *seq_lens_host, void *o, float *lse, float *workspace,
                                 size_t workspace_bytes, int batch, int heads, int kv_heads,
                                 int seq_q, int seq_kv, int max_blocks, int block_size, int causal,
                                 float scale, cudaStream_t stream) {
  (void)seq_lens_host, (void)workspace, (void)workspace_bytes;
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  if (seq_q > L06_MAX_SEQ_Q || !block_table || !seq_lens || block_size < 1 ||
      (long long)max_blocks * block_size < seq_kv)
    return cudaErrorInvalidValue;
  const long long rows = (long long)batch * heads * seq_q;
  if (rows > INT_MAX) return cudaErrorInvalidConfiguration;
  PR_KERNEL<<<(unsigned)rows, L06_THREADS, 0, stream>>>(
      (const attn_bf16 *)q, (const attn_bf16 *)k_cache, (const attn_bf16 *)v_cache, block_table,
      seq_lens, (attn_bf16 *)o, lse, heads, kv_heads, seq_q, max_blocks, block_size, causal, scale);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
