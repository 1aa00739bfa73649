// clang-format off
/** @file
 * @brief Version 1: fused, not tiled. One thread per query row streams K and V from global memory.
 *
 * What changed: against lesson 1, the three kernels (S = QK^T, softmax, O = PV) become one, and the
 * N x N matrices S and P are never stored. Each thread keeps its query row, its output row and the
 * online-softmax state (m, l) of lesson 2 in registers and walks every visible key once:
 *
 *     s     = q . k_j                       (q pre-scaled by 1/sqrt(d))
 *     m_new = max(m, s)
 *     l     = l * e^(m - m_new) + e^(s - m_new)
 *     o     = o * e^(m - m_new) + e^(s - m_new) v_j
 *     m     = m_new                         and at the end O = o / l, lse = m + log l
 *
 * Layout, HEAD_DIM 64: block = 128 threads = 128 consecutive query rows of one (batch, head).
 *         HEAD_DIM 128: two adjacent lanes share a row, 64 dimensions each, and add their halves
 *         of q . k with one shuffle (128 registers of q and o per thread would not fit otherwise).
 *
 *     grid.x = (batch * heads) * row-blocks      lane:  0    1    2   ...  31
 *     thread t -> row  blk * 128 + t (D 64)             row0 row1 row2 ... row31   (D 64)
 *                 row  blk * 64 + t / 2 (D 128)         row0 row0 row1 ... row15   (D 128)
 *                                                       lo   hi   lo        hi
 *
 * Why: O(N) memory, nothing but Q, K, V, O and the log-sum-exp. What it does not fix: every query
 * row reads all of K and V, so the loads the kernel issues are Theta(N^2 d) per head, as many as
 * lesson 1's S traffic times d. Nothing is shared on purpose: that is what version 2's tiles add.
 *
 * Prediction: it runs where lesson 1 cannot allocate S. Its loads are cheap only because the
 * threads of a warp read the same key at the same time (one broadcast load per warp) and K, V of a
 * head stay in L1/L2 while its rows stream past: HBM serves a small part of them.
 *
 * Measured: NVIDIA H200, 2026-11-23, batch 1, 16 heads, seq 4096, dim 64
 * (docs/results/h200-2026-11-23): 17.700 ms, 3.9 TFLOP/s; at seq 16384, 196.913 ms, 5.6 TFLOP/s.
 * Nsight Compute (the line below; the README's DRAM table): DRAM serves a small part of its loads.
 *
 * Run: `./run 1` (the lesson's default shape) and `./run 1 --seq 16384`. Nsight Compute, in
 * build/bin (ncu-runs.txt):
 *
 *     ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum -k regex:'l03_(fused_row|fa1)_kernel' -c 1 ./lesson-3 1 --seq 4096 --check-only
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif
#if HEAD_DIM != 64 && HEAD_DIM != 128
#error "HEAD_DIM must be 64 or 128"
#endif

#include <math.h>

#include "attn_cuda.cuh"
#include "fa1_tiling.h"

#define FA_SPLIT (HEAD_DIM / 64)        /**< threads per query row */
#define FA_DPT (HEAD_DIM / FA_SPLIT)    /**< dimensions per thread: 64 */
#define FA_THREADS 128                  /**< threads per block */
#define FA_ROWS (FA_THREADS / FA_SPLIT) /**< query rows per block */

/** Token pasting, after expanding `b`. */
#define FA_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FA_CAT(a, b) FA_CAT_(a, b)
/** This build's kernel: l03_fused_row_kernel_d64 or l03_fused_row_kernel_d128. */
#define FA_KERNEL FA_CAT(l03_fused_row_kernel_d, HEAD_DIM)
/** This build's launcher: l03_fused_row_d64() or l03_fused_row_d128(), declared in fa1_tiling.h. */
#define FA_LAUNCH FA_CAT(l03_fused_row_d, HEAD_DIM)

/** One thread per query row (two adjacent lanes per row at HEAD_DIM 128), FA_ROWS rows of one
 * (batch, head) per block: the thread walks every visible key once with the online (m, l, o)
 * update, then writes its row of O (its 64 dimensions) and the row's log-sum-exp. */
static __global__ void __launch_bounds__(FA_THREADS)
    FA_KERNEL(const float *__restrict__ q,  // [batch, seq_q, heads, HEAD_DIM]
              const float *__restrict__ k,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              const float *__restrict__ v,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              float *__restrict__ o,        // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,      // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale,
              int row_blocks) {
  const int rb = blockIdx.x % row_blocks;
  const int bh = blockIdx.x / row_blocks;
  const int h = bh % heads, b = bh / heads;
  const int g = h / (heads / kv_heads); /* the KV head of query head h (GQA) */
  const int i = rb * FA_ROWS + (int)threadIdx.x / FA_SPLIT;
  const int part = (int)threadIdx.x % FA_SPLIT; /* which 64 dimensions of the row */
  const int row_ok = i < seq_q;

  /* Keys 0 .. n_keys-1 are visible to row i (bottom-right causal: j <= i + seq_kv - seq_q). */
  int n_keys = 0;
  if (row_ok) n_keys = causal ? min(max(i + seq_kv - seq_q + 1, 0), seq_kv) : seq_kv;
  /* The warp walks the keys together (its loads are broadcasts, and the D 128 shuffle needs both
   * lanes of a pair): up to the largest count in the warp, with the extra keys masked. */
  const int n_keys_warp = __reduce_max_sync(0xffffffffu, n_keys);

  const size_t q_off =
      (((size_t)b * seq_q + (row_ok ? i : 0)) * heads + h) * HEAD_DIM + part * FA_DPT;
  float qr[FA_DPT], acc[FA_DPT];
#pragma unroll
  for (int d = 0; d < FA_DPT; d += 4) {
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row_ok) x = *(const float4 *)(q + q_off + d);
    qr[d] = x.x * scale;
    qr[d + 1] = x.y * scale;
    qr[d + 2] = x.z * scale;
    qr[d + 3] = x.w * scale;
    acc[d] = acc[d + 1] = acc[d + 2] = acc[d + 3] = 0.f;
  }
  float m = -INFINITY, l = 0.f;

  const size_t kv_tok = (size_t)kv_heads * HEAD_DIM; /* elements between consecutive tokens */
  const float *kp = k + ((size_t)b * seq_kv * kv_heads + g) * HEAD_DIM + part * FA_DPT;
  const float *vp = v + ((size_t)b * seq_kv * kv_heads + g) * HEAD_DIM + part * FA_DPT;
  for (int j = 0; j < n_keys_warp; ++j, kp += kv_tok, vp += kv_tok) {
    /* s = q . k_j, four partial sums so the FMAs do not wait on each other */
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
#pragma unroll
    for (int d = 0; d < FA_DPT; d += 4) {
      const float4 kk = *(const float4 *)(kp + d);
      s0 = fmaf(qr[d], kk.x, s0);
      s1 = fmaf(qr[d + 1], kk.y, s1);
      s2 = fmaf(qr[d + 2], kk.z, s2);
      s3 = fmaf(qr[d + 3], kk.w, s3);
    }
    float s = (s0 + s1) + (s2 + s3);
#if FA_SPLIT == 2
    s += __shfl_xor_sync(0xffffffffu, s, 1); /* the other half of the row's dot product */
#endif
    if (j >= n_keys) s = -INFINITY; /* past this row's causal window, or a row past seq_q */

    /* Lesson 2's online update. While nothing is visible (m_new = -inf) the state stays (-inf, 0).
     */
    const float m_new = fmaxf(m, s);
    const float alpha = m_new == -INFINITY ? 1.f : __expf(m - m_new);
    const float pj = m_new == -INFINITY ? 0.f : __expf(s - m_new);
    l = fmaf(l, alpha, pj);
#pragma unroll
    for (int d = 0; d < FA_DPT; d += 4) {
      const float4 vv = *(const float4 *)(vp + d);
      acc[d] = fmaf(pj, vv.x, acc[d] * alpha);
      acc[d + 1] = fmaf(pj, vv.y, acc[d + 1] * alpha);
      acc[d + 2] = fmaf(pj, vv.z, acc[d + 2] * alpha);
      acc[d + 3] = fmaf(pj, vv.w, acc[d + 3] * alpha);
    }
    m = m_new;
  }

  if (!row_ok) return;
  const float inv_l = l > 0.f ? 1.f / l : 0.f; /* a row that saw no key: O = 0 */
  float *orow = o + q_off;
#pragma unroll
  for (int d = 0; d < FA_DPT; d += 4)
    *(float4 *)(orow + d) =
        make_float4(acc[d] * inv_l, acc[d + 1] * inv_l, acc[d + 2] * inv_l, acc[d + 3] * inv_l);
  if (part == 0) lse[((size_t)b * heads + h) * seq_q + i] = l > 0.f ? m + logf(l) : -INFINITY;
}

/** The launcher, l03_fused_row_d64() or l03_fused_row_d128(): one block per FA_ROWS query rows of
 * each (batch, head). */
extern "C" cudaError_t FA_LAUNCH(const attn_problem *p, const float *q, const float *k,
                                 const float *v, float *o, float *lse, cudaStream_t stream) {
  if (p->dim != HEAD_DIM) return cudaErrorInvalidValue;
  const int row_blocks = attn_cdiv(p->seq_q, FA_ROWS);
  const long blocks = (long)row_blocks * p->batch * p->heads;
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffL) return cudaErrorInvalidConfiguration;
  FA_KERNEL<<<(unsigned)blocks, FA_THREADS, 0, stream>>>(q, k, v, o, lse, p->heads, p->kv_heads,
                                                         p->seq_q, p->seq_kv, p->causal,
                                                         attn_scale(p), row_blocks);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
