// clang-format off
/** @file
 * @brief Version 7: dQ through shared memory and a TMA reduction. Version 6 with each warpgroup's
 *        64 x 64 block of dQ written to shared memory and added into the fp32 dQ by one
 *        `cp.reduce.async.bulk.tensor ... .add` per 32 columns, in place of 2048 `red.global`
 *        instructions.
 *
 * What changed: after dQ = dS K, a warpgroup stores its block (fp32, 16 KB) into a staging tile in
 * the 128-byte-swizzled layout of an fp32 tensor map over the dQ accumulator, waits for its own
 * four warps (a named barrier), and one thread issues two bulk tensor reductions (boxes of 32
 * columns x 64 rows); the tensor memory accelerator reads the tile and adds it in L2. Rows past
 * seq_q are clipped by the tensor map. Before the next step's store, that thread waits until the
 * reduction has read the tile (`cp.async.bulk.wait_group.read`). The staging costs 32 KB of shared
 * memory, so at dim 64 the Q/dO ring keeps two stages instead of three (issued one step ahead).
 *
 * Why: removing version 6's atomics from a development build (its dQ then wrong) cut its time by
 * 31% at the default shape (3.31 to 2.29 ms, H200): the dQ traffic, 32 KB per Q tile per block,
 * costs a third of the kernel. Neither fewer, wider atomics (`red.global.add.v4.f32` after a lane
 * swap: 1-7% slower) nor a different walk order per block (so that blocks do not add into the same
 * rows at once: 1% faster) changed that, so the cost is in how the additions reach L2, not in their
 * count or their collisions. A bulk reduction hands L2 whole 128-byte lines.
 *
 * Prediction: most of the 31% back where the reduction overlaps the next Q tile: 500+ TFLOP/s at
 * the default shape.
 *
 * Measured: NVIDIA H200, 2026-11-25 (docs/results/h200-l09c-2026-11-25): 486.3 TFLOP/s at the
 * default shape against version 6's 414.5 in the same run (1.17x), 433.3 causal (1.16x), 422.0 at
 * dim 64 (1.10x); 1.12-1.69x FlashAttention-2's backward on the papers' grid, 0.88-1.25x cuDNN's.
 * Below the prediction: Nsight Compute finds the kernel at 0.72 ms against version 6's 0.83, the
 * tensor pipe busy 52% of the cycles (44%); the rest is the elementwise work, the barrier and the
 * staging, in series with the products. With the staging's stores free of bank conflicts
 * (add_dq(); NVIDIA H200, 2026-11-27, docs/results/h200-l09e-2026-11-27): 505.5 TFLOP/s at the
 * default shape against version 6's 418.1 (1.21x), 448.2 causal (1.19x), 439.1 at dim 64 (1.13x);
 * 1.20-1.74x FlashAttention-2's backward on the papers' grid, 0.85-1.22x cuDNN's. With the walk's
 * (head, Q tile) kept in two counters instead of divided out of the step each time (NVIDIA H200,
 * 2026-11-27, docs/results/h200-l09g-2026-11-27): 518.2 TFLOP/s at the default shape against
 * version 6's 415.1 (1.25x), 471.1 causal (1.25x), 440.8 at dim 64 (1.15x); 1.23-2.01x
 * FlashAttention-2's backward on the papers' grid, 0.88-1.09x cuDNN's. With warpgroup 1's dQ
 * product issued before warpgroup 0's (a named barrier), and at dim 128 dV and dK issued after
 * dQ (NVIDIA H200, 2026-11-27, docs/results/h200-l09h-2026-11-27): 539.8 TFLOP/s at the default
 * shape against version 6's 418.0 (1.29x), 477.6 causal (1.27x), 463.6 at dim 64 (1.20x);
 * 1.18-1.83x FlashAttention-2's backward on the papers' grid, 0.90-1.21x cuDNN's. With the next
 * step's L and D loaded by warpgroup 1 at dim 128 (NVIDIA H200, 2026-11-27,
 * docs/results/h200-l09i-2026-11-27): 547.9 TFLOP/s at the default shape against version 6's
 * 414.2 (1.32x), 473.6 causal (1.27x), 460.0 at dim 64 (1.20x); 1.23-1.91x FlashAttention-2's
 * backward on the papers' grid, 0.92-1.33x cuDNN's. With its causal blocks longest first in
 * groups of heads from 16 KV tiles a pair (NVIDIA H200, 2026-11-28,
 * docs/results/h200-l09q-2026-11-28): 1.03-1.04x the order before at seq 2k-12k with the mask,
 * 1.36x at 16 heads on 2 KV heads, seq 4k; 495.5 TFLOP/s causal at the default shape; 1.25-1.98x
 * FlashAttention-2's backward on the papers' grid, 0.92-1.22x cuDNN's. With the order from a
 * block's work instead (KV tiles times the head dimension at least 1280: 10 tiles at dim 128, 20 at
 * dim 64; NVIDIA H200, 2026-11-28, docs/results/h200-l09s-2026-11-28): 1.017-1.035x the 16-tile
 * threshold at seq 1280-1792 with the mask at dim 128, 1.003x at dim 64, seq 2k; 493.7 TFLOP/s
 * causal at the default shape; 1.28-1.95x FlashAttention-2's backward on the papers' grid,
 * 0.94-1.25x cuDNN's. With GQA the order also below that, from 8 KV tiles a pair or where the grid
 * is one to two waves of blocks (NVIDIA H200, 2026-11-28, docs/results/h200-l09t-2026-11-28):
 * 1.06-1.26x the rule before on eight shapes of 4-8 heads a group chosen after the rule was set;
 * the papers' grid (no GQA) untouched.
 *
 * Run: `./run 7`, `./run 7 --causal`, `make diff-9 A=6 B=7` (an sm_90 GPU).
 */
// clang-format on
/* Built twice by CMake (lessons/09_backward/CMakeLists.txt, for sm_90a only), with -DHEAD_DIM=64
 * and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <cuda.h>

#include "attn_causal.h"
#include "bwd.cuh"
#include "fa3_hopper.h" /* lesson 05: l05_tensor_map(), its TMA descriptors */
#include "hopper.cuh"   /* lesson 05: wgmma, mbarrier, TMA and stmatrix wrappers */

#define WG_BC 128                          /**< keys per block: 64 per consumer warpgroup */
#define WG_BR (HEAD_DIM == 128 ? 64 : 128) /**< query rows per Q tile */
#define WG_THREADS 256                     /**< two warpgroups */
/** Under the mask, blocks go out longest first in groups of pairs (attn_causal_groups()) only
 *  where a pair's KV tiles times the head dimension reach this: 10 tiles at dim 128 (seq_kv above
 *  1152), 20 at dim 64 (above 2432). A block's work, and so its time, grows with both. Measured
 *  (NOTES.md: The causal blocks longest first in groups of heads), the order loses 0.3-8% with 4-8
 *  tiles at dim 128 and 4-16 at dim 64, and gains from 10 tiles at dim 128 and 24 at dim 64,
 *  where the model of the tail predicts a gain at every length. A likely reason, not measured
 *  apart: short blocks spend more of their time loading K and V and storing dK and dV, and handed
 *  out by length they do that at the same moments. */
#define WG_ORDER_MIN_WORK 1280
/** With several query heads to a KV head a block loops over the group's heads with the same K
 *  and V, and the order is also taken where a pair has at least this many KV tiles, or where the
 *  grid is more than one wave of blocks and at most two: one group, longest first over the whole
 *  grid, the order that shortens a tail most where the tail is most of the step. Measured on 38
 *  shapes of 2-16 heads a group below WG_ORDER_MIN_WORK (NOTES.md, the same section): 1.01-1.26x
 *  on the 27 where either holds (8 of them chosen after the rule: 1.06-1.26x), 0.90-1.00x on the
 *  11 others but one (1.005x). */
#define WG_ORDER_GQA_TILES 8
/** The Q/dO ring: 3 stages, 2 at dim 64, where the dQ staging takes the third's room. */
#define WG_STAGES (HEAD_DIM == 128 ? 3 : 2)
#define WG_NS (WG_BR / 2)                  /**< S^T, dP^T floats per thread: 64 x Br / 128 */
#define WG_NKV (HEAD_DIM / 2)              /**< dK, dV floats per thread: 64 x dim / 128 */
#define WG_NQ 32                           /**< dQ floats per thread: 64 x 64 / 128 */
#define WG_KS (HEAD_DIM / 16)              /**< k-steps of S^T and dP^T (over the head dim) */
#define WG_QK (WG_BR / 16)                 /**< k-steps of dV and dK (over the queries) */
#define WG_KK (WG_BC / 16)                 /**< k-steps of dQ (over the keys): 8 */
#define WG_PANELS (HEAD_DIM / 64)          /**< 64-column panels of a row: one TMA box each */
#define WG_KV_BYTES (WG_BC * HEAD_DIM * 2) /**< one K or V tile */
#define WG_Q_BYTES (WG_BR * HEAD_DIM * 2)  /**< one Q or dO stage */
#define WG_DS_BYTES (WG_BR * WG_BC * 2)    /**< one dS buffer, bf16 [Br][Bc] */
#define WG_LD_BYTES (2 * WG_BR * 4)        /**< L and D of one Q tile, fp32 */
#define WG_DQ_BYTES (64 * 64 * 4) /**< a warpgroup's dQ block, fp32: two boxes of 32 columns */
/** The named barrier by which warpgroup 0 lets warpgroup 1 issue its dQ product first (1 and 2
 * are the warpgroups' own, add_dq()). */
#define WG_BAR_DQ_ORDER 3
/** 1 where dV and dK are issued after dQ (dim 128), so that they run while dQ is staged and
 * added; at dim 64 the P^T and dS^T fragments held past the block barrier leave ptxas too few
 * registers and it serialises the wgmma (C7511), so there they go first, as in version 6. */
#define WG_KV_AFTER_DQ (HEAD_DIM == 128)
/** Which thread loads and stores entry i of the next step's L/D buffer: thread WG_LD_TID(i). At dim
 * 128 the buffer has 128 entries, and warpgroup 1 takes them, since warpgroup 0's thread 0 already
 * issues the copies (2-5% at seq 2k, 4k and 16k without the mask); at dim 64 every thread has one,
 * and swapping the warpgroups' halves cost 4%. The map is its own inverse. */
#define WG_LD_TID(i) (HEAD_DIM == 128 ? ((i) + 128) & 255 : (i))
/** Dynamic shared memory: K, V, the Q and dO stages, two dS buffers, the dQ staging tiles, two L/D
 * buffers, the mbarriers (K/V, then one per stage), and 1024 bytes to align the start to a swizzle
 * atom. */
#define WG_SMEM_BYTES                                                                 \
  (2 * WG_KV_BYTES + 2 * WG_STAGES * WG_Q_BYTES + 2 * WG_DS_BYTES + 2 * WG_DQ_BYTES + \
   2 * WG_LD_BYTES + 64 + 1024)

/** This build's kernel: l09_bulkdq_kernel_d64 or l09_bulkdq_kernel_d128. */
#define WG_KERNEL BW_CAT(l09_bulkdq_kernel_d, HEAD_DIM)
/** This build's launcher: l09_bulkdq_d64() or l09_bulkdq_d128(). */
#define WG_LAUNCH BW_CAT(l09_bulkdq_d, HEAD_DIM)
/** dV += P^T dO and dK += dS^T Q for one k-step: A from registers, N = HEAD_DIM. */
#define WG_WGMMA_KV BW_CAT(wgmma_rs_n, HEAD_DIM)
#if HEAD_DIM == 128
/** S^T = K Q^T for one k-step: N = Br = 64 queries. */
#define WG_WGMMA_S wgmma_ss_n64
#else
/** S^T = K Q^T for one k-step: N = Br = 128 queries. */
#define WG_WGMMA_S wgmma_ss_n128
#endif

/** TMA: add a box of fp32 from shared memory at `src` (in the tensor map's swizzled layout) into
 * the global tensor of `map` at coordinates (column, head, row, sequence), in L2; elements past
 * the tensor's end are left out. Completes as a bulk group of this thread. */
static __device__ __forceinline__ void tma_reduce_add_4d(const void *map, uint32_t src, int c0,
                                                         int c1, int c2, int c3) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, "
      "%5}], [%1];\n" ::"l"((uint64_t)map),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

/* bulk_commit(), bulk_wait_read0() and bulk_wait0() are lesson 05's (hopper.cuh). */

/** Store two floats to shared memory at `addr` (8-byte aligned). */
static __device__ __forceinline__ void st_shared_v2f(uint32_t addr, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(x), "f"(y) : "memory");
}

/** Thread 0: announce the bytes of Q and dO of walk step @p t on the stage's mbarrier and copy
 * them, one TMA box per 64-column panel. */
static __device__ __forceinline__ void issue_q_step(const CUtensorMap *tm_q,
                                                    const CUtensorMap *tm_o, uint32_t sQ,
                                                    uint32_t sO, uint32_t bar, int h, int q0,
                                                    int b) {
  mbar_arrive_expect_tx(bar, 2 * WG_Q_BYTES);
#pragma unroll
  for (int p = 0; p < WG_PANELS; ++p) {
    tma_load_4d(sQ + p * WG_BR * 128, tm_q, bar, p * 64, h, q0, b);
    tma_load_4d(sO + p * WG_BR * 128, tm_o, bar, p * 64, h, q0, b);
  }
}

/** The value thread @p tid contributes to the L/D buffer of a Q tile: L (times log2 e) of row tid
 * for tid < WG_BR, D of row tid - WG_BR below 2 WG_BR; 0 for rows past seq_q. */
static __device__ __forceinline__ float ld_value(const float *lse, const float *dd, int tid,
                                                 size_t row0, int q0, int seq_q) {
  const int which = tid / WG_BR, r = tid % WG_BR;
  if (which > 1 || q0 + r >= seq_q) return 0.f;
  return which ? dd[row0 + q0 + r] : lse[row0 + q0 + r] * BW_LOG2E;
}

/** One transposed product of the walk, issued (not waited for): C^T = A_w B^T, N = Br. A is K or V
 * (my warpgroup's 64 keys, rows `a_off` on), B the Q or dO stage of the step; the sum runs over
 * the head dimension, WG_KS k-steps. S^T = K_w Q^T and dP^T = V_w dO^T. */
static __device__ __forceinline__ void product_t(float c[WG_NS], uint32_t sA, uint32_t sB,
                                                 uint32_t a_off) {
#pragma unroll
  for (int ks = 0; ks < WG_KS; ++ks) {
    const uint32_t col = (ks & 3) * 32, pan = ks >> 2;
    const uint64_t db = wgmma_desc(sB + pan * WG_BR * 128 + col, 16, 1024);
    WG_WGMMA_S(c, wgmma_desc(sA + pan * WG_BC * 128 + a_off + col, 16, 1024), db, ks > 0);
  }
}

/** P^T = exp2(S^T scale log2 e - L log2 e), dS^T = P^T o (dP^T - D), per element, in place in `s`
 * and `dp`; the mask when `masked` (the diagonal, rows past seq_q, keys past seq_kv). Element
 * 4 nt + e: key 16 warp + g + 8 (e / 2) of my 64, query 8 nt + 2 t4 + e % 2 of the tile. Then both
 * packed into `pa` and `da` as the A fragments of accumulate_t(). */
static __device__ __forceinline__ void p_ds_t(float s[WG_NS], float dp[WG_NS],
                                              uint32_t pa[WG_QK][4], uint32_t da[WG_QK][4],
                                              const float *sL, const float *sD, int masked, int k0,
                                              int q0, int wg, int warp, int g, int t4, int seq_q,
                                              int seq_kv, int causal, int diag, float scale_log2) {
#pragma unroll
  for (int nt = 0; nt < WG_BR / 8; ++nt) {
    const int qc = nt * 8 + 2 * t4;
    const float2 lv = *(const float2 *)(sL + qc), dv_ = *(const float2 *)(sD + qc);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float l2 = (e & 1) ? lv.y : lv.x, d_row = (e & 1) ? dv_.y : dv_.x;
      float p = fast_exp2(fmaf(s[4 * nt + e], scale_log2, -l2));
      if (masked) {
        const int j = k0 + 64 * wg + 16 * warp + g + 8 * (e >> 1), i = q0 + qc + (e & 1);
        p = (j < seq_kv && i < seq_q && (!causal || j <= i + diag)) ? p : 0.f;
      }
      s[4 * nt + e] = p;
      dp[4 * nt + e] = p * (dp[4 * nt + e] - d_row);
    }
  }
#pragma unroll
  for (int kk = 0; kk < WG_QK; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      pa[kk][r] = pack_bf16x2(s[8 * kk + 2 * r], s[8 * kk + 2 * r + 1]);
      da[kk][r] = pack_bf16x2(dp[8 * kk + 2 * r], dp[8 * kk + 2 * r + 1]);
    }
}

/** acc += X B, issued (not waited for), the sum over the tile's queries: X (P^T or dS^T) from
 * registers as A fragments, B the dO or Q stage at `sB` (MN-major: its rows are the k).
 * dV_w += P^T dO and dK_w += dS^T Q. */
static __device__ __forceinline__ void accumulate_t(float acc[WG_NKV], const uint32_t xa[WG_QK][4],
                                                    uint32_t sB) {
#pragma unroll
  for (int kk = 0; kk < WG_QK; ++kk)
    WG_WGMMA_KV(acc, xa[kk], wgmma_desc(sB + kk * 16 * 128, WG_BR * 128, 1024), 1);
}

/** dS^T -> the dS buffer at `sDS`, transposed: a query per row, as dQ = dS K takes its A operand.
 * My lane addresses query 16 kk + qr, key chunk kc. */
static __device__ __forceinline__ void store_ds(uint32_t sDS, uint32_t da[WG_QK][4], int qr,
                                                int kc) {
#pragma unroll
  for (int kk = 0; kk < WG_QK; ++kk)
    stmatrix_x4_trans(sDS + sw128_off(16 * kk + qr, kc, WG_BR), da[kk]);
}

/** dQ block = dS K over the 128 keys, issued (not waited for): A the rows of dS at `sA`, B the
 * 64-column panel of K at `sB` (MN-major). */
static __device__ __forceinline__ void dq_block(float dq[WG_NQ], uint32_t sA, uint32_t sB) {
#pragma unroll
  for (int ks = 0; ks < WG_KK; ++ks) {
    const uint64_t da_desc = wgmma_desc(sA + (ks >> 2) * WG_BR * 128 + (ks & 3) * 32, 16, 1024);
    const uint64_t db_desc = wgmma_desc(sB + ks * 16 * 128, WG_BC * 128, 1024);
    wgmma_ss_n64_bt(dq, da_desc, db_desc, ks > 0);
  }
}

/** The dQ block into my warpgroup's staging tile at `sDQ`, then into the fp32 dQ by TMA. Element
 * 4 nt + e is row 16 warp + g + 8 (e / 2) of the block, column 8 nt + 2 t4 + e % 2: box
 * column / 32, its 16-byte chunk (column % 32) / 4 swizzled with the row.
 *
 * The order of the stores avoids bank conflicts. An 8-byte store is served half a warp at a time,
 * and half a warp (rows g = 0-3 or 4-7, t4 = 0-3) storing the same nt would write chunks
 * (2 (nt % 4) + t4 / 2) ^ g: only four different chunks, each twice, so every bank twice (two
 * wavefronts where one would do; Nsight Compute counted half of the staging's wavefronts as
 * excess). Lanes with t4 >= 2 store column block nt ^ 2 in the same turn instead (the same box;
 * each lane still stores each of its blocks once), and the eight (g, t4 / 2) pairs of a half-warp
 * then write eight different chunks. dq_staging.h models these addresses and this order on the
 * host, for the checklist's bank model. */
static __device__ __forceinline__ void add_dq(const CUtensorMap *tm_dq, const float dq[WG_NQ],
                                              uint32_t sDQ, int issuer, int q0, int qa, int pd,
                                              int wg, int warp, int g, int t4, int h, int b) {
  if (issuer) bulk_wait_read0(); /* the previous block has left the staging tile */
  named_bar_sync(1 + wg, 128);
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int swap = t4 >> 1, nx = nt ^ 2; /* this turn: block nt, or nt ^ 2 for t4 >= 2 */
      const int r = 16 * warp + g + 8 * hf, c = 8 * (swap ? nx : nt) + 2 * t4, cc = c & 31;
      const float x0 = swap ? dq[4 * nx + 2 * hf] : dq[4 * nt + 2 * hf];
      const float x1 = swap ? dq[4 * nx + 2 * hf + 1] : dq[4 * nt + 2 * hf + 1];
      st_shared_v2f(sDQ + (c >> 5) * (WG_DQ_BYTES / 2) + r * 128 +
                        ((((cc >> 2) ^ (r & 7)) << 4) | ((cc & 3) << 2)),
                    x0, x1);
    }
  fence_proxy_async(); /* the st.shared, before TMA reads them */
  named_bar_sync(1 + wg, 128);
  if (issuer) {
    tma_reduce_add_4d(tm_dq, sDQ, 64 * pd, h, q0 + qa, b);
    tma_reduce_add_4d(tm_dq, sDQ + WG_DQ_BYTES / 2, 64 * pd + 32, h, q0 + qa, b);
    bulk_commit();
  }
}

/** After the walk: dK = scale * acc_dk and dV = acc_dv for my 64 keys, bf16. Element 4 dt + e is
 * key 16 warp + g + 8 (e / 2), column 8 dt + 2 t4 + e % 2. */
static __device__ __forceinline__ void store_dk_dv(attn_bf16 *__restrict__ dk,
                                                   attn_bf16 *__restrict__ dv,
                                                   const float acc_dk[WG_NKV],
                                                   const float acc_dv[WG_NKV], int k0, int wg,
                                                   int warp, int g, int t4, int seq_kv,
                                                   int kv_heads, int kvh, int b, float scale) {
  const size_t kv_row = (size_t)kv_heads * HEAD_DIM;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int j = k0 + 64 * wg + 16 * warp + g + 8 * hf;
    if (j >= seq_kv) continue;
    attn_bf16 *dkr = dk + ((size_t)b * seq_kv + j) * kv_row + (size_t)kvh * HEAD_DIM;
    attn_bf16 *dvr = dv + ((size_t)b * seq_kv + j) * kv_row + (size_t)kvh * HEAD_DIM;
#pragma unroll
    for (int dt = 0; dt < HEAD_DIM / 8; ++dt) {
      const int d = dt * 8 + 2 * t4;
      *(uint32_t *)(dkr + d) =
          pack_bf16x2(acc_dk[4 * dt + 2 * hf] * scale, acc_dk[4 * dt + 2 * hf + 1] * scale);
      *(uint32_t *)(dvr + d) = pack_bf16x2(acc_dv[4 * dt + 2 * hf], acc_dv[4 * dt + 2 * hf + 1]);
    }
  }
}

/* The algorithm on a whiteboard, version 7: version 6's walk with dQ added by TMA, its
 * operands in 128-byte-swizzled shared memory, filled by TMA and counted in by mbarriers. S = 3
 * stages of Q and dO at dim 128, 2 at dim 64 (the dQ staging takes the third's room).
 *
 *   D = rowsum(dO o O); dQ_acc = 0                         bw_dterm()
 *   for each K/V tile j (Bc = 128 keys from k0) of KV head g:    one block, 2 warpgroups
 *     first, unmasked: as version 4 (Br = 64 at dim 128, 128 at dim 64)
 *     thread 0: K_j, V_j -> shared memory (TMA, mbarrier bar_kv)
 *               steps 0 .. S - 2 -> stages (TMA, one mbarrier bar_q[s] per stage)
 *     lse, D of step 0 -> L/D buffer 0;  __syncthreads;  dK_w = dV_w = 0;  wait bar_kv
 *     for each step t of the walk (Q tile i, stage t % S, dS and L/D buffer t % 2):
 *       wait bar_q[t % S] (phase (t / S) & 1)              Q_i, dO_i are in
 *       product_t: S^T = K_w Q_i^T,  dP^T = V_w dO_i^T      wgmma from shared memory, one group
 *       (lse, D of step t + 1 from global, meanwhile);  wgmma wait 0 (dim 128: dV, dK of t - 1 too)
 *       p_ds_t: P^T = exp2(S^T scale log2e - lse_i log2e), dS^T = P^T o (dP^T - D_i),
 *               masked as version 4;  both packed as A fragments
 *       dim 64: accumulate_t: dV_w += P^T dO_i, dK_w += dS^T Q_i   wgmma, A from registers
 *       store_ds: dS^T -> dS[t % 2] (stmatrix.trans);  lse, D of step t + 1 -> buffer (t + 1) % 2
 *       fence.proxy.async;  __syncthreads                  dS is whole; step t - 1 read its stage
 *       thread 0: step t + S - 1 -> stage (t + S - 1) % S  (TMA)
 *       warpgroup 0: bar.sync 3                             warpgroup 1 has issued its dQ
 *       dq_block: dQ block = dS K_j over the 128 keys       wgmma
 *       warpgroup 1: bar.arrive 3
 *       dim 128: accumulate_t: dV_w += P^T dO_i, dK_w += dS^T Q_i;  wait 1 (dQ);  dim 64: wait 0
 *       add_dq:                                            dQ_acc[rows of the block] += dQ block
 *       issuer: cp.async.bulk.wait_group.read 0            the last reduction has read sDQ[w]
 *       bar.sync (warpgroup);  dQ block -> sDQ[w] (swizzled);  fence.proxy.async;  bar.sync
 *       issuer: cp.reduce.async.bulk.tensor.add x 2 -> dQ_acc;  commit_group
 *   issuer: cp.async.bulk.wait_group 0                      the reductions are done
 *   store_dk_dv: dK_w = scale dK_w, dV_w -> bf16
 *   dQ = scale dQ_acc -> bf16                              bw_dq_convert()
 */

/* clang-format off */
/**
 * One block per (K/V tile of 128 keys, KV head, batch); warpgroup w owns keys 64 w .. 64 w + 63.
 *
 *     shared memory (1024-aligned, 128-byte swizzle; tiles as [panel][rows][64 columns])
 *     K [128][dim], V [128][dim]            once, by TMA
 *     Q [3][Br][dim], dO [3][Br][dim]       the ring: step t in stage t % 3, issued at step t - 2
 *     dS [2][Br][128]                       step t's in buffer t % 2, written with stmatrix.trans
 *     L, D [2][Br]                          step t's in buffer t % 2, written during step t - 1
 *
 *     warpgroup w, step t (query head h, Q tile q0):        registers of a thread (dim 128 / 64)
 *       S^T, dP^T = K_w Q^T, V_w dO^T      (wgmma ss)      32 + 32 / 64 + 64
 *       P^T, dS^T, packed as A fragments                    16 + 16 / 32 + 32
 *       dV_w += P^T dO, dK_w += dS^T Q     (wgmma rs)      dV, dK: 64 + 64 / 32 + 32, the walk
 *       dS^T -> dS[t % 2]                  (stmatrix.trans)
 *       __syncthreads                      both halves of dS written
 *       dQ block = dS K                    (wgmma ss)      32: dim 128: rows 0-63, columns
 *       red.add into the fp32 dQ                                64 w..; dim 64: rows 64 w.., all
 */
/* clang-format on */
static __global__ void __launch_bounds__(WG_THREADS, 1)
    WG_KERNEL(const __grid_constant__ CUtensorMap tm_q,   // Q, boxes of 64 x WG_BR
              const __grid_constant__ CUtensorMap tm_o,   // dO, boxes of 64 x WG_BR
              const __grid_constant__ CUtensorMap tm_k,   // K, boxes of 64 x WG_BC
              const __grid_constant__ CUtensorMap tm_v,   // V, boxes of 64 x WG_BC
              const float *__restrict__ lse,              // [batch, heads, seq_q]
              const float *__restrict__ dd,               // D, [batch, heads, seq_q]
              const __grid_constant__ CUtensorMap tm_dq,  // the fp32 dQ, boxes of 32 x 64
              attn_bf16 *__restrict__ dk,                 // [batch, seq_kv, kv_heads, HEAD_DIM]
              attn_bf16 *__restrict__ dv,                 // [batch, seq_kv, kv_heads, HEAD_DIM]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale,
              int ord_grp,  // the groups of the causal order (attn_causal_groups), 0: none
              int ord_big) {
  extern __shared__ unsigned char smem[];
  const uint32_t sK = (smem_u32(smem) + 1023u) & ~1023u;
  const uint32_t sV = sK + WG_KV_BYTES;
  const uint32_t sQ0 = sV + WG_KV_BYTES;              /* [stage] */
  const uint32_t sO0 = sQ0 + WG_STAGES * WG_Q_BYTES;  /* [stage] */
  const uint32_t sDS0 = sO0 + WG_STAGES * WG_Q_BYTES; /* [2] */
  const uint32_t sDQ0 = sDS0 + 2 * WG_DS_BYTES;       /* [warpgroup]: dQ block, fp32 */
  const uint32_t sLD0 = sDQ0 + 2 * WG_DQ_BYTES;       /* [2][L, D][Br] fp32 */
  const uint32_t bar_kv = sLD0 + 2 * WG_LD_BYTES;     /* K and V landed */
  const uint32_t bar_q = bar_kv + 8;                  /* [stage]: Q and dO landed */
  const float *sLD_f = (const float *)(smem + (sLD0 - smem_u32(smem)));

  const int tid = threadIdx.x, wg = tid >> 7;
  const int warp = (tid >> 5) & 3, lane = tid & 31; /* warp in the warpgroup */
  const int g = lane >> 2, t4 = lane & 3;
  /* The block's KV tile, KV head and sequence. Under the mask a KV tile's work falls with its index
   * (tile 0 is seen by every Q tile), and the hardware hands out blocks in the order of their
   * linear index: with ord_grp set, that index is taken as an item of attn_causal_item()'s order,
   * longest first inside groups of (sequence, KV head) pairs, whose "last Q tile" is here KV
   * tile 0. */
  int kt = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
  if (ord_grp > 0) {
    const int item = (int)(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
    int heaviest_first = 0, pair = 0;
    attn_causal_item(item, (int)gridDim.x, ord_grp, ord_big, &heaviest_first, &pair);
    kt = (int)gridDim.x - 1 - heaviest_first, kvh = pair % kv_heads, b = pair / kv_heads;
  }
  const int k0 = kt * WG_BC;
  const int grp = heads / kv_heads, diag = seq_kv - seq_q;
  const float scale_log2 = scale * BW_LOG2E;

  const int n_q_tiles = attn_cdiv(seq_q, WG_BR);
  const int first = attn_first_q_tile(k0, WG_BR, seq_q, seq_kv, causal);
  const int unmasked = attn_first_unmasked_q_tile(k0, WG_BC, WG_BR, seq_q, seq_kv, causal);
  const int per_head = n_q_tiles - first, n_walk = grp * per_head;
  const int ragged_k = k0 + WG_BC > seq_kv;

  if (tid == 0) {
    mbar_init(bar_kv, 1);
    for (int s = 0; s < WG_STAGES; ++s) mbar_init(bar_q + 8 * s, 1);
    mbar_init_fence();
    if (n_walk > 0) {
      mbar_arrive_expect_tx(bar_kv, 2 * WG_KV_BYTES);
#pragma unroll
      for (int p = 0; p < WG_PANELS; ++p) {
        tma_load_4d(sK + p * WG_BC * 128, &tm_k, bar_kv, p * 64, kvh, k0, b);
        tma_load_4d(sV + p * WG_BC * 128, &tm_v, bar_kv, p * 64, kvh, k0, b);
      }
    }
    for (int t = 0; t < WG_STAGES - 1 && t < n_walk; ++t)
      issue_q_step(&tm_q, &tm_o, sQ0 + t * WG_Q_BYTES, sO0 + t * WG_Q_BYTES, bar_q + 8 * t,
                   kvh * grp + t / per_head, (first + t % per_head) * WG_BR, b);
  }
  if (n_walk > 0) { /* L and D of step 0 */
    const int h = kvh * grp;
    float *dst = (float *)sLD_f;
    if (tid < 2 * WG_BR)
      dst[tid] = ld_value(lse, dd, tid, ((size_t)b * heads + h) * seq_q, first * WG_BR, seq_q);
  }
  __syncthreads();

  float acc_dv[WG_NKV], acc_dk[WG_NKV];
#pragma unroll
  for (int i = 0; i < WG_NKV; ++i) acc_dv[i] = acc_dk[i] = 0.f;

  /* My warpgroup's 64 keys: rows 64 wg .. of the K and V tiles (A operands of S^T and dP^T). */
  const uint32_t kw_off = wg * 64 * 128;
  /* dQ block: rows qa.. of dS (A), d panel pd of K (B). */
  const int qa = HEAD_DIM == 128 ? 0 : 64 * wg, pd = HEAD_DIM == 128 ? wg : 0;
  /* stmatrix.trans: my lane's row of the matrices it addresses: query 16 kk + qr, key chunk kc. */
  const int qr = (lane & 7) + ((lane >> 4) << 3), kc = 8 * wg + 2 * warp + ((lane >> 3) & 1);
  const int issuer = (tid & 127) == 0; /* my warpgroup's thread that issues its reductions */

  if (n_walk > 0) mbar_wait(bar_kv, 0);
  int h = kvh * grp, qt = first; /* step t's head and Q tile, walked without a division */
  for (int t = 0; t < n_walk; ++t) {
    const int st = t % WG_STAGES, buf = t & 1, q0 = qt * WG_BR;
    int h1 = h, qt1 = qt + 1; /* step t + 1's */
    if (qt1 == n_q_tiles) qt1 = first, ++h1;
    const uint32_t sQ = sQ0 + st * WG_Q_BYTES, sO = sO0 + st * WG_Q_BYTES;
    const uint32_t sDS = sDS0 + buf * WG_DS_BYTES;
    const float *sL = sLD_f + buf * 2 * WG_BR, *sD = sL + WG_BR;
    mbar_wait(bar_q + 8 * st, (uint32_t)((t / WG_STAGES) & 1)); /* Q_t and dO_t have landed */

    /* S^T = K_w Q^T and dP^T = V_w dO^T: one group. */
    float s[WG_NS], dp[WG_NS];
    wgmma_fence();
    product_t(s, sK, sQ, kw_off);
    product_t(dp, sV, sO, kw_off);
    wgmma_commit();
    /* Meanwhile, L and D of the next step (stored after the wait, published by this step's block
     * barrier; its buffer was last read in step t - 1, before the barrier of step t - 1). */
    float ld_next = 0.f;
    if (t + 1 < n_walk) {
      ld_next =
          ld_value(lse, dd, WG_LD_TID(tid), ((size_t)b * heads + h1) * seq_q, qt1 * WG_BR, seq_q);
    }
    wgmma_wait0(); /* with WG_KV_AFTER_DQ, also the previous step's dV and dK */
    reg_fence(s, WG_NS);
    reg_fence(dp, WG_NS);
    reg_fence(acc_dv, WG_NKV);
    reg_fence(acc_dk, WG_NKV);

    /* P^T and dS^T, masked where the tile needs it (diagonal, rows past seq_q, keys past seq_kv).
     */
    const int masked = qt < unmasked || q0 + WG_BR > seq_q || ragged_k;
    uint32_t pa[WG_QK][4], da[WG_QK][4];
    p_ds_t(s, dp, pa, da, sL, sD, masked, k0, q0, wg, warp, g, t4, seq_q, seq_kv, causal, diag,
           scale_log2);

    /* dV_w += P^T dO and dK_w += dS^T Q: the queries are the k of both. */
    if (!WG_KV_AFTER_DQ) {
      wgmma_fence();
      accumulate_t(acc_dv, pa, sO);
      accumulate_t(acc_dk, da, sQ);
      wgmma_commit();
    }

    store_ds(sDS, da, qr, kc); /* dS^T -> dS[buf], a query per row */
    if (t + 1 < n_walk && WG_LD_TID(tid) < 2 * WG_BR)
      ((float *)sLD_f)[(buf ^ 1) * 2 * WG_BR + WG_LD_TID(tid)] = ld_next;
    fence_proxy_async(); /* the st.shared of dS, before the tensor cores read it */
    __syncthreads();     /* dS whole; every product of step t - 1 has finished */
    if (tid == 0 && t + WG_STAGES - 1 < n_walk) {
      const int t2 = t + WG_STAGES - 1, s2 = t2 % WG_STAGES; /* its stage was step t - 1's */
      int h2 = h1, qt2 = qt1; /* step t2's: t + 1's, or the one after it */
      if (WG_STAGES == 3 && ++qt2 == n_q_tiles) qt2 = first, ++h2;
      issue_q_step(&tm_q, &tm_o, sQ0 + s2 * WG_Q_BYTES, sO0 + s2 * WG_Q_BYTES, bar_q + 8 * s2, h2,
                   qt2 * WG_BR, b);
    }

    /* dQ block = dS K over the 128 keys: rows qa.., columns 64 pd.. Warpgroup 1 issues first:
     * warpgroup 0's thread 0 has just issued the copies above, and the warpgroup that waits for
     * it should be the one that goes second (forcing the other order cost up to 6%). */
    float dq[WG_NQ];
    if (wg == 0) named_bar_sync(WG_BAR_DQ_ORDER, 2 * 128);
    wgmma_fence();
    dq_block(dq, sDS + qa * 128, sK + pd * WG_BC * 128);
    wgmma_commit();
    if (wg == 1) named_bar_arrive(WG_BAR_DQ_ORDER, 2 * 128);
    if (WG_KV_AFTER_DQ) { /* dV and dK run while dQ is staged and added */
      accumulate_t(acc_dv, pa, sO);
      accumulate_t(acc_dk, da, sQ);
      wgmma_commit();
      wgmma_wait1(); /* dQ */
    } else {
      wgmma_wait0();
    }
    reg_fence(dq, WG_NQ);

    /* Into the fp32 dQ: through my staging tile and TMA. */
    add_dq(&tm_dq, dq, sDQ0 + wg * WG_DQ_BYTES, issuer, q0, qa, pd, wg, warp, g, t4, h, b);
    h = h1, qt = qt1;
  }
  wgmma_wait0(); /* with WG_KV_AFTER_DQ, the last step's dV and dK */
  reg_fence(acc_dv, WG_NKV);
  reg_fence(acc_dk, WG_NKV);
  if (issuer) bulk_wait0(); /* the last reductions done before the block ends */

  store_dk_dv(dk, dv, acc_dk, acc_dv, k0, wg, warp, g, t4, seq_kv, kv_heads, kvh, b, scale);
}

/** The launcher, l09_bulkdq_d64() or l09_bulkdq_d128(). Workspace: D, then the fp32 dQ. */
extern "C" cudaError_t WG_LAUNCH(const l09_grad_args *a, cudaStream_t stream) {
  ATTN_TRY(bw_check(
      a, l09_workspace_bytes(7, a->batch, a->heads, a->kv_heads, a->seq_q, a->seq_kv, HEAD_DIM)));
  const size_t rows = (size_t)a->batch * a->heads * a->seq_q;
  float *dd = (float *)a->workspace;
  float *acc = (float *)((char *)a->workspace + (rows * sizeof(float) + 255) / 256 * 256);
  const dim3 grid((unsigned)attn_cdiv(a->seq_kv, WG_BC), (unsigned)a->kv_heads, (unsigned)a->batch);
  if (grid.y > 65535u || grid.z > 65535u) return cudaErrorInvalidConfiguration;
  CUtensorMap tm_q, tm_o, tm_k, tm_v, tm_dq;
  const unsigned long long dq_size[4] = {HEAD_DIM, (unsigned long long)a->heads,
                                         (unsigned long long)a->seq_q,
                                         (unsigned long long)a->batch};
  const unsigned long long dq_stride[3] = {HEAD_DIM * 4ull,
                                           (unsigned long long)a->heads * HEAD_DIM * 4,
                                           (unsigned long long)a->seq_q * a->heads * HEAD_DIM * 4};
  const unsigned dq_box[4] = {32, 1, 64, 1};
  ATTN_TRY(l05_tensor_map_f32(&tm_dq, acc, dq_size, dq_stride, dq_box));
  ATTN_TRY(l05_tensor_map(&tm_q, a->q, a->batch, a->seq_q, a->heads, HEAD_DIM, WG_BR));
  ATTN_TRY(l05_tensor_map(&tm_o, a->d_o, a->batch, a->seq_q, a->heads, HEAD_DIM, WG_BR));
  ATTN_TRY(l05_tensor_map(&tm_k, a->k, a->batch, a->seq_kv, a->kv_heads, HEAD_DIM, WG_BC));
  ATTN_TRY(l05_tensor_map(&tm_v, a->v, a->batch, a->seq_kv, a->kv_heads, HEAD_DIM, WG_BC));
  ATTN_TRY(bw_dterm(a, dd, acc, stream));
  ATTN_TRY(
      cudaFuncSetAttribute(WG_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM_BYTES));
  /* The causal order, where a pair's blocks are long enough or, with GQA, where the tail is long
   * (WG_ORDER_MIN_WORK's and WG_ORDER_GQA_TILES's comments say why not elsewhere). One block per
   * SM: a wave is the SM count. */
  int ord_grp = 0, ord_big = 0;
  if (a->causal) {
    int dev = 0, sms = 0;
    ATTN_TRY(cudaGetDevice(&dev));
    ATTN_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const long long blocks = (long long)grid.x * grid.y * grid.z;
    const int long_pairs = (long long)grid.x * HEAD_DIM >= WG_ORDER_MIN_WORK;
    const int gqa_tail = a->heads > a->kv_heads &&
                         (grid.x >= WG_ORDER_GQA_TILES || (blocks > sms && blocks <= 2LL * sms));
    if (long_pairs || gqa_tail)
      attn_causal_groups(a->batch * a->kv_heads, (int)grid.x, blocks < sms ? (int)blocks : sms,
                         ATTN_CAUSAL_WAVES, &ord_grp, &ord_big);
  }
  WG_KERNEL<<<grid, WG_THREADS, WG_SMEM_BYTES, stream>>>(
      tm_q, tm_o, tm_k, tm_v, a->lse, dd, tm_dq, (attn_bf16 *)a->dk, (attn_bf16 *)a->dv, a->heads,
      a->kv_heads, a->seq_q, a->seq_kv, a->causal, a->scale, ord_grp, ord_big);
  ATTN_TRY_LAUNCH();
  return bw_dq_convert(a, acc, stream);
}
