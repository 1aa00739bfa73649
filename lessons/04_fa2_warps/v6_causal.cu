// clang-format off
/** @file
 * @brief Version 6: the causal mask done right. Fully masked KV tiles are skipped, the mask is
 * applied only on the tiles that need it, and the heaviest Q tiles start first.
 *
 * What changed: four things; without `--causal` only the second point's mask applies.
 *  - Tile skip. With the bottom-right causal mask, Q tile [q0, q0 + 128) sees keys up to
 *    q0 + 127 + (seq_kv - seq_q) only: the loop stops after l04_kv_tiles_visited() tiles instead
 *    of visiting all seq_kv / 64 and masking the rest to -inf.
 *  - Mask only where needed. The first l04_kv_tiles_unmasked() tiles are entirely visible to every
 *    row of the Q tile: no per-element compare. Only the last one or two (the diagonal, and a tile
 *    cut short by seq_kv) are masked. Without `--causal` only a ragged last tile is.
 *  - Heavy first. Version 6 runs each head's Q tiles from the last (heaviest) to the first; the
 *    blocks of a head stay together, so K and V are still shared in L2 by the blocks that run at
 *    the same time (l04_schedule()).
 *  - A Q tile with no visible key at all (seq_q > seq_kv) loads nothing and writes O = 0,
 *    lse = -inf.
 *
 * Why: for seq_q = seq_kv = N the skip leaves about half the tiles: the work halves, and the flop
 * count (which counts visible pairs) does not, so TFLOP/s should double. Q tile t of a head costs
 * t + 1 diagonal-length units: in version 5's order (tile 0 first) the last blocks of the grid are
 * the most expensive, and the GPU ends with a few SMs finishing long blocks while the rest idle.
 *
 * Prediction: causal TFLOP/s about 1.8-2x version 5's (half the tiles, no mask on most of them, a
 * shorter tail); not causal within a few percent of version 5 (one compare saved per score).
 *
 * Measured: NVIDIA H200, 2026-11-23, batch 4, seq 4096 (docs/results/h200-2026-11-23): causal,
 * dim 128, 16 heads: 317.7 TFLOP/s, dim 64, 32 heads: 278.6, against version 5's 163.2 / 138.1,
 * as predicted. Not causal 365.8 / 306.9 against 328.0 / 276.2, more than predicted: version 5
 * compares every score against the mask even when nothing is masked. Batch 1, dim 128, seq 16384:
 * at 1 head (128 blocks, fewer than the SMs) 0.478 ms not causal and 0.477 ms causal; at 16 heads
 * (2048 blocks) 5.871 ms and 3.205 ms: the skip pays only when blocks queue.
 *
 * Run: `./run 6 --causal` (dim 128, 16 heads) and `./run 6 --dim 64 --heads 32 --causal`; without
 * `--causal` for the rest; `./run 6 --batch 1 --heads 16 --seq 16384 --causal` for the queue.
 * Nsight Compute, in build/bin (ncu-runs.txt):
 *
 *     ncu --clock-control none -k regex:'l04_(mma|swizzle|cpasync|causal|tiles)_kernel' --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_ldsm.sum ./lesson-4 --batch 1 --heads 16 --seq 2048 --dim 128 --check-only
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <limits.h>
#include <math.h>

#include "attn_causal.h"
#include "attn_cuda.cuh"
#include "fa2_warps.h"
#include "ptx.cuh"

#define FA_BR L04_BR                       /**< 128 query rows per block */
#define FA_BC L04_BC                       /**< 64 keys per KV tile */
#define FA_WROWS (FA_BR / 4)               /**< 32 rows per warp */
#define FA_MT (FA_WROWS / 16)              /**< 2 m16 tiles per warp */
#define FA_KS (HEAD_DIM / 16)              /**< k-steps of S = Q K^T */
#define FA_NT (FA_BC / 8)                  /**< n8 tiles of S: 8 */
#define FA_DT (HEAD_DIM / 8)               /**< n8 tiles of O */
#define FA_PK (FA_BC / 16)                 /**< k-steps of O += P V: 4 */
#define FA_CHUNKS (HEAD_DIM / 8)           /**< 16-byte chunks per tile row */
#define FA_ROWB (HEAD_DIM * 2)             /**< bytes per tile row */
#define FA_RSTEP (L04_THREADS / FA_CHUNKS) /**< rows per pass of the block: 16 or 8 */
/** 1 when the warp keeps its Q fragments in registers for the whole KV loop (dim 64). */
#define FA_Q_IN_REGS (HEAD_DIM <= 64)
/** log2(e): exp(x) = 2^(x log2 e), so the scale folds it in and ex2 does the rest. */
#define FA_LOG2E 1.4426950408889634f
/** ln(2): turns the base-2 log-sum-exp back into the natural one. */
#define FA_LN2 0.6931471805599453f

/** Token pasting, after expanding `b`. */
#define FA_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FA_CAT(a, b) FA_CAT_(a, b)
/** This build's kernel: l04_causal_kernel_d64 or l04_causal_kernel_d128. */
#define FA_KERNEL FA_CAT(l04_causal_kernel_d, HEAD_DIM)
/** This build's launcher: l04_causal_d64() or l04_causal_d128(), declared in fa2_warps.h. */
#define FA_LAUNCH FA_CAT(l04_causal_d, HEAD_DIM)

/* Shared memory: Q [128][dim], K [2][64][dim], V [2][64][dim], bf16. */
/** Bytes of one K or V tile buffer: FA_BC rows of FA_ROWB bytes. */
#define FA_TILE_BYTES (FA_BC * FA_ROWB)
/** Dynamic shared memory per block: the Q tile, then K and V, two buffers each. */
#define FA_SMEM_BYTES (FA_BR * FA_ROWB + 4 * FA_TILE_BYTES)

/** Byte offset of 16-byte chunk `chunk` of tile row `row`: row-major, chunks XOR-swizzled. */
static __device__ __forceinline__ uint32_t tile_off(int row, int chunk) {
  return (uint32_t)((row * FA_CHUNKS + (chunk ^ (row & 7))) * 16);
}

/** Issue this thread's share of the copies of a tile of `rows` rows: chunk c_t of rows r_t,
 * r_t + FA_RSTEP, ... `dst` is the shared address of the first (tile base + tile_off(r_t, c_t)),
 * `src` its global address, `step` FA_RSTEP rows of global memory, `left` the rows that exist from
 * r_t on. Rows that do not exist are zero-filled (src-size 0, nothing read; the address given is
 * then `safe`, the same chunk of the tile's first row, which always exists): a key past seq_kv
 * must give 0 in P.V, never a stale NaN. */
static __device__ __forceinline__ void load_rows(uint32_t dst, const attn_bf16 *src,
                                                 const attn_bf16 *safe, size_t step, int left,
                                                 int rows) {
#pragma unroll
  for (int it = 0; it < rows / FA_RSTEP; ++it) {
    const int ok = it * FA_RSTEP < left;
    cp_async_16(dst + it * FA_RSTEP * FA_ROWB, ok ? src + it * step : safe, ok ? 16 : 0);
  }
}

#if FA_Q_IN_REGS
/** Dim 64: my warp's 32 x dim slice of Q as A fragments, read once for the whole KV loop. */
static __device__ __forceinline__ void q_fragments(uint32_t qf[FA_MT][FA_KS][4], uint32_t sQ_a,
                                                   const uint32_t q_off[4]) {
#pragma unroll
  for (int mt = 0; mt < FA_MT; ++mt)
#pragma unroll
    for (int ks = 0; ks < FA_KS; ++ks)
      ldmatrix_x4(qf[mt][ks], sQ_a + q_off[ks & 3] + (ks >> 2) * 128 + mt * 16 * FA_ROWB);
}
#endif

/** Before the first tile: O = 0, m = -inf, l = 0 for my 4 rows. */
static __device__ __forceinline__ void init_state(float acc[FA_MT][FA_DT][4], float row_m[FA_MT][2],
                                                  float row_l[FA_MT][2]) {
#pragma unroll
  for (int mt = 0; mt < FA_MT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < FA_DT; ++dt)
      acc[mt][dt][0] = acc[mt][dt][1] = acc[mt][dt][2] = acc[mt][dt][3] = 0.f;
    row_m[mt][0] = row_m[mt][1] = -INFINITY;
    row_l[mt][0] = row_l[mt][1] = 0.f;
  }
}

/** S = Q K^T for my warp's 32 rows and the K tile at `sK`, one k-step of 16 dims at a time, its
 * fragments in the caller's `a` and `kb`. Q's A fragments come from `qf` (dim 64, FA_Q_IN_REGS) or
 * from my rows of the Q tile at `sQ_a`, every k-step. K rows are keys, so ldmatrix without .trans
 * gives the col-major B operand. One ldmatrix.x4 covers 16 keys x 16 dims: B fragments of two n8
 * tiles, used by both m16 tiles. */
static __device__ __forceinline__ void qk_scores(float s[FA_MT][FA_NT][4], uint32_t a[FA_MT][4],
                                                 uint32_t kb[4], const uint32_t (*qf)[FA_KS][4],
                                                 uint32_t sQ_a, uint32_t sK,
                                                 const uint32_t q_off[4], const uint32_t k_off[4]) {
#pragma unroll
  for (int mt = 0; mt < FA_MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < FA_NT; ++nt)
      s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
  for (int ks = 0; ks < FA_KS; ++ks) {
#pragma unroll
    for (int mt = 0; mt < FA_MT; ++mt) {
#if FA_Q_IN_REGS
      a[mt][0] = qf[mt][ks][0], a[mt][1] = qf[mt][ks][1];
      a[mt][2] = qf[mt][ks][2], a[mt][3] = qf[mt][ks][3];
#else
      ldmatrix_x4(a[mt], sQ_a + q_off[ks & 3] + (ks >> 2) * 128 + mt * 16 * FA_ROWB);
#endif
    }
#pragma unroll
    for (int np = 0; np < FA_NT / 2; ++np) {
      ldmatrix_x4(kb, sK + k_off[ks & 3] + (ks >> 2) * 128 + np * 16 * FA_ROWB);
#pragma unroll
      for (int mt = 0; mt < FA_MT; ++mt) {
        mma_bf16_16816(s[mt][2 * np], a[mt], kb[0], kb[1]);
        mma_bf16_16816(s[mt][2 * np + 1], a[mt], kb[2], kb[3]);
      }
    }
  }
}

/** The mask, element by element: keys past the end, and the causal triangle. My scores are rows
 * q0 + wr0 + 16 mt + g (+ 8), keys k0 + 8 nt + 2 t4 (+ 1). */
static __device__ __forceinline__ void mask_scores(float s[FA_MT][FA_NT][4], int q0, int wr0,
                                                   int k0, int g, int t4, int seq_kv, int causal,
                                                   int diag) {
#pragma unroll
  for (int mt = 0; mt < FA_MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < FA_NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int row = q0 + wr0 + mt * 16 + g + (e >> 1) * 8;
        int col = k0 + nt * 8 + t4 * 2 + (e & 1);
        if (col >= seq_kv || (causal && col > row + diag)) s[mt][nt][e] = -INFINITY;
      }
    }
  }
}

/** Online softmax on my 4 rows: max over my 16 scores, then over the quad (2 shuffles); S turns
 * into P in place, l and m are updated and O is rescaled by alpha. */
static __device__ __forceinline__ void softmax_update(float s[FA_MT][FA_NT][4],
                                                      float acc[FA_MT][FA_DT][4],
                                                      float row_m[FA_MT][2], float row_l[FA_MT][2],
                                                      float scale_log2) {
#pragma unroll
  for (int mt = 0; mt < FA_MT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float mx = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < FA_NT; ++nt)
        mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hf], s[mt][nt][2 * hf + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(row_m[mt][hf], mx * scale_log2);
      const float m_use = m_new == -INFINITY ? 0.f : m_new; /* nothing visible yet */
      const float alpha = fast_exp2(row_m[mt][hf] - m_use);
      row_m[mt][hf] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < FA_NT; ++nt)
#pragma unroll
        for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
          float p = fast_exp2(fmaf(s[mt][nt][e], scale_log2, -m_use));
          s[mt][nt][e] = p;
          sum += p;
        }
      row_l[mt][hf] = row_l[mt][hf] * alpha + sum;
#pragma unroll
      for (int dt = 0; dt < FA_DT; ++dt) {
        acc[mt][dt][2 * hf] *= alpha;
        acc[mt][dt][2 * hf + 1] *= alpha;
      }
    }
}

/** O += P V for the V tile at `sV`, one k-step of 16 keys at a time, its fragments in the caller's
 * `pa` and `vb`. P: two n8 accumulator tiles of S packed into one A fragment. V: ldmatrix.trans
 * turns key-major rows into the B operand (two consecutive keys of one dim per register). */
static __device__ __forceinline__ void pv_accumulate(float acc[FA_MT][FA_DT][4],
                                                     uint32_t pa[FA_MT][4], uint32_t vb[4],
                                                     const float s[FA_MT][FA_NT][4], uint32_t sV,
                                                     const uint32_t v_off[4]) {
#pragma unroll
  for (int kk = 0; kk < FA_PK; ++kk) {
#pragma unroll
    for (int mt = 0; mt < FA_MT; ++mt) {
      pa[mt][0] = pack_bf16x2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[mt][1] = pack_bf16x2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[mt][2] = pack_bf16x2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[mt][3] = pack_bf16x2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dp = 0; dp < FA_DT / 2; ++dp) {
      ldmatrix_x4_trans(vb, sV + v_off[dp & 3] + (dp >> 2) * 128 + kk * 16 * FA_ROWB);
#pragma unroll
      for (int mt = 0; mt < FA_MT; ++mt) {
        mma_bf16_16816(acc[mt][2 * dp], pa[mt], vb[0], vb[1]);
        mma_bf16_16816(acc[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
      }
    }
  }
}

/** After the last tile: the quad's 4 partial row sums, then O / l in bf16 and the log-sum-exp of my
 * 4 rows, q0 + wr0 + 16 mt + g (+ 8) (rows past seq_q are not written). */
static __device__ __forceinline__ void store_o(attn_bf16 *__restrict__ o, float *__restrict__ lse,
                                               const float acc[FA_MT][FA_DT][4],
                                               const float row_m[FA_MT][2],
                                               const float row_l[FA_MT][2], int q0, int wr0, int g,
                                               int t4, int seq_q, size_t q_stride, int b, int h,
                                               int bh) {
#pragma unroll
  for (int mt = 0; mt < FA_MT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float l = row_l[mt][hf];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const int row = q0 + wr0 + mt * 16 + g + hf * 8;
      if (row >= seq_q) continue;
      const float inv = l > 0.f ? 1.f / l : 0.f; /* a row that sees no key: O = 0 */
      attn_bf16 *orow = o + ((size_t)b * seq_q + row) * q_stride + (size_t)h * HEAD_DIM;
#pragma unroll
      for (int dt = 0; dt < FA_DT; ++dt)
        *(uint32_t *)(orow + dt * 8 + t4 * 2) =
            pack_bf16x2(acc[mt][dt][2 * hf] * inv, acc[mt][dt][2 * hf + 1] * inv);
      if (t4 == 0)
        lse[(size_t)bh * seq_q + row] = l > 0.f ? (row_m[mt][hf] + log2f(l)) * FA_LN2 : -INFINITY;
    }
}

/* The loop on a whiteboard, in the papers' names: Tr = ceil(seq_q / Br) Q tiles, one per block,
 * Tc = ceil(seq_kv / Bc) KV tiles, each block walks them in order.
 *
 *   block (i, head, batch):                    Br = 128 rows (warp w: rows 32w .. 32w+31), Bc = 64
 *     causal: i runs from the last Q tile down   the heaviest first
 *     Tc = attn_kv_tiles_visited(i Br, Br, seq_q, seq_kv, Bc, causal)   the tiles Q_i can see
 *     Tu = attn_kv_tiles_unmasked(i Br, seq_q, seq_kv, Bc, causal)      those all its rows see
 *     Q_i, K_0, V_0 -> smem by cp.async          three commit groups (K_0, V_0 only if Tc > 0)
 *     cp.async.wait_group 2; __syncthreads       Q_i is in
 *     dim 64, q_fragments: Q_i's fragments -> registers, once
 *     init_state: m = -inf, l = 0, O = 0         registers, in the mma accumulator layout
 *     for j in 0 .. Tc-1:                        K_j and V_j in buffer j % 2
 *       cp.async.wait_group 1; __syncthreads     K_j is in; tile j-1 is consumed
 *       K_{j+1} -> the other buffer; commit      (an empty group after the last tile)
 *       qk_scores: S = Q_i K_j^T                 mma.sync m16n8k16, ldmatrix of K_j (and Q_i)
 *       if j >= Tu: mask_scores                  S = -inf where key >= seq_kv,
 *                                                  or causal and key > row + seq_kv - seq_q
 *       softmax_update:                          S -> P in place, my 4 rows
 *         m_new = max(m, scale rowmax(S))        2 shuffles in the quad; log2 units from here
 *         P = 2^(scale S - m_new);  alpha = 2^(m - m_new)
 *         l = alpha l + rowsum(P);  O = alpha O;  m = m_new   l: this lane's part of the row
 *       cp.async.wait_group 1; __syncthreads     V_j is in
 *       V_{j+1} -> the other buffer; commit
 *       pv_accumulate: O += P V_j                P packed to bf16 in registers, ldmatrix.trans V_j
 *     store_o: l = sum over the quad;  O_i = O / l;  lse_i = (m + log2 l) ln 2
 */
/** One block per (Q tile of FA_BR = 128 rows, head, batch), bf16 in and out, 4 warps of 32 rows.
 * The same work as version 5's kernel, but only the KV tiles the Q tile can see are visited, the
 * mask is applied only on partly visible tiles, and with a causal mask a head's Q tiles run
 * heaviest first. Each warp writes its 32 rows of O and their log-sum-exp. */
static __global__ void __launch_bounds__(L04_THREADS, 2)
    FA_KERNEL(const attn_bf16 *__restrict__ q,  // [batch, seq_q, heads, HEAD_DIM]
              const attn_bf16 *__restrict__ k,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              const attn_bf16 *__restrict__ v,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              attn_bf16 *__restrict__ o,        // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,          // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
              int n_q_tiles) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sQ_a = smem_u32(smem);           /* [FA_BR][HEAD_DIM] */
  const uint32_t sK_a = sQ_a + FA_BR * FA_ROWB;   /* [2][FA_BC][HEAD_DIM] */
  const uint32_t sV_a = sK_a + 2 * FA_TILE_BYTES; /* [2][FA_BC][HEAD_DIM] */

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3; /* quad (row) and lane in quad (column pair) */
  /* Heavy first: a head's Q tiles from the last (sees the most keys) to the first. */
  const int q_tile =
      causal ? n_q_tiles - 1 - (int)(blockIdx.x % n_q_tiles) : blockIdx.x % n_q_tiles;
  const int bh = blockIdx.x / n_q_tiles;
  const int h = bh % heads, b = bh / heads;
  const int kvh = h / (heads / kv_heads);
  const int q0 = q_tile * FA_BR;
  const int wr0 = warp * FA_WROWS; /* split-Q: my warp's first row in the tile */
  const size_t q_stride = (size_t)heads * HEAD_DIM, kv_stride = (size_t)kv_heads * HEAD_DIM;
  const attn_bf16 *qg = q + ((size_t)b * seq_q + q0) * q_stride + (size_t)h * HEAD_DIM;
  const attn_bf16 *kg = k + (size_t)b * seq_kv * kv_stride + (size_t)kvh * HEAD_DIM;
  const attn_bf16 *vg = v + (size_t)b * seq_kv * kv_stride + (size_t)kvh * HEAD_DIM;
  const int diag = seq_kv - seq_q;

  /* Where this thread loads: chunk c_t of rows r_t + FA_RSTEP * i of every tile. */
  const int r_t = threadIdx.x / FA_CHUNKS, c_t = threadIdx.x % FA_CHUNKS;
  const uint32_t ld_off = tile_off(r_t, c_t);
  const size_t q_ld = (size_t)r_t * q_stride + c_t * 8, kv_ld = (size_t)r_t * kv_stride + c_t * 8;
  /* Where this lane's ldmatrix rows start. Rows of one lane differ by multiples of 8, so the
   * column part of the address depends only on the chunk pair: 4 offsets per operand, the rest
   * are immediates (chunk 8 on is 128 bytes further, rows 16 on 16 rows further). */
  uint32_t q_off[4], k_off[4], v_off[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    q_off[i] = tile_off(wr0 + (lane & 15), 2 * i + (lane >> 4));
    k_off[i] = tile_off((lane & 7) + ((lane >> 4) << 3), 2 * i + ((lane >> 3) & 1));
    v_off[i] = tile_off((lane & 7) + (((lane >> 3) & 1) << 3), 2 * i + (lane >> 4));
  }

  const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
  const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, FA_BC, causal);
  const size_t kv_step = FA_RSTEP * kv_stride;
  load_rows(sQ_a + ld_off, qg + q_ld, qg + c_t * 8, FA_RSTEP * q_stride, seq_q - q0 - r_t, FA_BR);
  cp_async_commit();
  if (n_tiles > 0) load_rows(sK_a + ld_off, kg + kv_ld, kg + c_t * 8, kv_step, seq_kv - r_t, FA_BC);
  cp_async_commit();
  if (n_tiles > 0) load_rows(sV_a + ld_off, vg + kv_ld, vg + c_t * 8, kv_step, seq_kv - r_t, FA_BC);
  cp_async_commit();
  cp_async_wait_2(); /* Q has landed (K0 and V0 may still be in flight) */
  __syncthreads();
#if FA_Q_IN_REGS
  uint32_t qf[FA_MT][FA_KS][4]; /* my 32 x dim slice of Q as A fragments, for the whole loop */
  q_fragments(qf, sQ_a, q_off);
#else
  const uint32_t(*qf)[FA_KS][4] = NULL; /* Q is read from shared memory on every tile */
#endif

  float acc[FA_MT][FA_DT][4];
  float row_m[FA_MT][2], row_l[FA_MT][2]; /* [m16 tile][row g or g + 8]; m in log2 units */
  init_state(acc, row_m, row_l);

  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * FA_BC;
    const uint32_t cur = (j & 1) * FA_TILE_BYTES, nxt = FA_TILE_BYTES - cur;
    const size_t next_tile = (size_t)(k0 + FA_BC) * kv_stride, next_row = next_tile + kv_ld;
    cp_async_wait_1(); /* my copies of K_j have landed */
    __syncthreads();   /* everyone's have, and every warp is done with tile j - 1 */
    if (j + 1 < n_tiles)
      load_rows(sK_a + nxt + ld_off, kg + next_row, kg + next_tile + c_t * 8, kv_step,
                seq_kv - k0 - FA_BC - r_t, FA_BC);
    cp_async_commit(); /* possibly empty: keeps the count of groups uniform */

    float s[FA_MT][FA_NT][4];
    uint32_t a[FA_MT][4], kb[4]; /* one k-step's fragments */
    qk_scores(s, a, kb, qf, sQ_a, sK_a + cur, q_off, k_off);
    /* The mask, element by element, only on the tiles that need it (the same for the whole
     * block: no divergence): the diagonal tiles and a last tile cut short by seq_kv. */
    if (j >= n_unmasked) mask_scores(s, q0, wr0, k0, g, t4, seq_kv, causal, diag);
    softmax_update(s, acc, row_m, row_l, scale_log2);

    cp_async_wait_1(); /* my copies of V_j have landed (K_{j+1} may be in flight) */
    __syncthreads();
    if (j + 1 < n_tiles)
      load_rows(sV_a + nxt + ld_off, vg + next_row, vg + next_tile + c_t * 8, kv_step,
                seq_kv - k0 - FA_BC - r_t, FA_BC);
    cp_async_commit();

    uint32_t pa[FA_MT][4], vb[4]; /* one k-step's fragments */
    pv_accumulate(acc, pa, vb, s, sV_a + cur, v_off);
  }

  store_o(o, lse, acc, row_m, row_l, q0, wr0, g, t4, seq_q, q_stride, b, h, bh);
}

/** The launcher, l04_causal_d64() or l04_causal_d128(): one block per (Q tile, head, batch). */
extern "C" cudaError_t FA_LAUNCH(const void *q, const void *k, const void *v, void *o, float *lse,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                 int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  const int n_q_tiles = attn_cdiv(seq_q, FA_BR);
  const long long blocks = (long long)n_q_tiles * batch * heads;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  ATTN_TRY(
      cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, FA_SMEM_BYTES));
  FA_KERNEL<<<(unsigned)blocks, L04_THREADS, FA_SMEM_BYTES, stream>>>(
      (const attn_bf16 *)q, (const attn_bf16 *)k, (const attn_bf16 *)v, (attn_bf16 *)o, lse, heads,
      kv_heads, seq_q, seq_kv, causal, scale * FA_LOG2E, n_q_tiles);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
