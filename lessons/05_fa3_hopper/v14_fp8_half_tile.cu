// clang-format off
/** @file
 * @brief Version 14: the diagonal's half tile. Version 13's kernel, with an item's last KV tile run
 * over its first 128 keys only wherever the other 128 are masked for every row of the item.
 *
 * What changed: version 10 widened the KV tile to 256 keys while a block keeps 128 query rows. Under
 * the causal mask with seq_q = seq_kv, the Q tiles of even index see their last keys in the first
 * half of their last KV tile, so its second half is masked for all 128 rows; version 13 still
 * multiplies it, raises its -inf scores to 0 and multiplies the zeros by V. The same holds wherever
 * the keys end in the first half of the last tile (seq_kv % 256 in 1..128), mask or not. Such a
 * tile becomes a half tile: S by four m64n128k32 instead of m64n256k32, the mask, maxima,
 * exponentials, sums and pack over 64 values a thread instead of 128, and P V by four k-steps over
 * the first V^T panel instead of eight. The tile's code is one function, kv_tile(), called with its
 * `half` argument a constant, so the half tile is a second copy and the whole tile's code is
 * version 13's. The ring, its barriers and the turn are unchanged (the producer still loads the whole
 * tile, from L2), and the output is version 13's bit for bit: the products left out only added
 * zeros.
 *
 * Why: at seq 4k under the mask a head's 32 items visit 272 tiles and 16 of them are half masked:
 * 3% of the tile work, 6% at 2k, 17% at 512, 0.8% at 16k.
 *
 * Prediction: a half tile takes about half a tile's time, so under the mask the kernel about 3%
 * faster at seq 4k, 5% at 2k, 1% or less from 8k; without the mask level (at a multiple of 256 keys
 * no tile is halved).
 *
 * Measured: NVIDIA H200, 2026-11-29 (docs/results/h200-l05r-2026-11-29). The kernel alone over
 * version 13's, in the bench: under the mask 1.073x at seq 512, 1.056x at 1k, 1.034x at 2k, 1.023x
 * at 4k, 1.014x at 8k, 1.008x at 16k; without it 0.996-1.004x. In rounds taking turns (ab-half*.log,
 * ab14.log) 1.075x at 512, 1.056x at 1k, 1.03-1.07x at 2k, 0.98-1.03x at 4k. End to end under the
 * mask at 4k 1.21x version 5 (version 13 1.19x). Less than predicted: fitted over seq 512-2k, a
 * half tile takes about 0.63 of a whole tile's time, since the parts of the tile that run under
 * the other warpgroup's turn do not all halve (README, version 14).
 *
 * Run: `./run 14` (dim 128, 16 heads, batch 4, seq 4096; the time includes the K and V pass).
 */
// clang-format on
/** Built once, for head dimension 128, as versions 6, 7 and 10. */
#define HEAD_DIM 128

#include <cuda.h>
#include <limits.h>
#include <math.h>

#include "attn_causal.h"
#include "attn_cuda.cuh"
#include "fa3_hopper.h"
#include "fp8_convert.cuh"
#include "hopper.cuh"

#define FA_BR L05_BR                      /**< 128 query rows per block */
#define FA_HB L05_FP8_KEY_PAD             /**< 128 keys: half a KV tile, one scale tile */
#define FA_BC (2 * FA_HB)                 /**< 256 keys per KV tile */
#define FA_THREADS 384                    /**< a producer warpgroup and two consumers */
#define FA_NS (FA_BC / 2)                 /**< S accumulator floats per thread: 64 x Bc / 128 */
#define FA_NO (HEAD_DIM / 2)              /**< O accumulator floats per thread */
#define FA_KS (HEAD_DIM / 32)             /**< k-steps of S = Q K^T (32 deep in FP8) */
#define FA_PK (FA_BC / 32)                /**< k-steps of P V */
#define FA_Q_BYTES (FA_BR * HEAD_DIM)     /**< the Q tile, one byte per value */
#define FA_QS_BYTES (2 * FA_Q_BYTES)      /**< Q's bf16 staging tile, two 64-column panels */
#define FA_HALF_BYTES (FA_HB * HEAD_DIM)  /**< half a K tile, or one V^T panel */
#define FA_TILE_BYTES (2 * FA_HALF_BYTES) /**< one K or V^T tile buffer */
#define FA_O_BYTES (FA_BR * HEAD_DIM * 2) /**< O's staging tile: 128 rows of bf16 */
/** Dynamic shared memory: the e4m3 Q tile, Q's bf16 staging tile, two K and two V^T stages, O's
 * staging tile, the mbarriers (full and empty for the Q staging, each item slot, K and V of each
 * stage), the two item slots, and 1024 bytes to align the start to a swizzle atom. */
#define FA_SMEM_BYTES (FA_Q_BYTES + FA_QS_BYTES + 4 * FA_TILE_BYTES + FA_O_BYTES + 256 + 1024)
/** Arrivals that release a stage: one per consumer warp. */
#define FA_CONSUMER_WARPS 8
/** The named barrier of the turns at the exponentials. */
#define FA_TURN 4
/** The named barriers of the O stores: FA_O_BAR + the consumer warpgroup's index. */
#define FA_O_BAR 6
/** The named barriers after Q's conversion: FA_Q_BAR + the consumer warpgroup's index. */
#define FA_Q_BAR 8
/** log2(e): exp(x) = 2^(x log2 e). */
#define FA_LOG2E 1.4426950408889634f
/** ln(2): turns the base-2 log-sum-exp back into the natural one. */
#define FA_LN2 0.6931471805599453f
/** The kernel. */
#define FA_KERNEL l05_fp8h_kernel_d128

/** S = Q K^T for one KV tile of 256 keys, issued (not waited for): FA_KS wgmma m64n256k32. */
static __device__ __forceinline__ void issue_s(float s[FA_NS], uint32_t q_base, uint32_t k_tile) {
#pragma unroll
  for (int ks = 0; ks < FA_KS; ++ks) {
    const uint64_t da = wgmma_desc(q_base + ks * 32, 16, 1024);
    const uint64_t db = wgmma_desc(k_tile + ks * 32, 16, 1024);
    wgmma_fp8_ss_n256(s, da, db, ks > 0);
  }
}

/** PV = P V over 256 keys into a fresh accumulator, issued: k-step kk reads keys 32 kk .. 32 kk +
 * 31, in V^T panel kk / 4 (each panel is one of version 7's 128-key tiles). */
static __device__ __forceinline__ void issue_pv(float pv[FA_NO], const uint32_t pa[FA_PK][4],
                                                uint32_t v_tile) {
#pragma unroll
  for (int kk = 0; kk < FA_PK; ++kk) {
    const uint64_t dv = wgmma_desc(v_tile + (kk >> 2) * FA_HALF_BYTES + (kk & 3) * 32, 16, 1024);
    wgmma_fp8_rs_n128(pv, pa[kk], dv, kk > 0);
  }
}

/** P packed into the FP8 wgmma's register A fragments, 32 keys per k-step, as in version 7. */
static __device__ __forceinline__ void pack_p(const float s[FA_NS], uint32_t pa[FA_PK][4],
                                              const int half) {
#pragma unroll
  for (int kk = 0; kk < (half ? FA_PK / 2 : FA_PK); ++kk) {
    const float *b = s + 16 * kk;
    pa[kk][0] = pack_e4m3x4(b[0], b[1], b[4], b[5]);
    pa[kk][1] = pack_e4m3x4(b[2], b[3], b[6], b[7]);
    pa[kk][2] = pack_e4m3x4(b[8], b[9], b[12], b[13]);
    pa[kk][3] = pack_e4m3x4(b[10], b[11], b[14], b[15]);
  }
}

/** Warpgroup 1's half of a turn: wait at the turn's barrier until warpgroup 0's exponentials are
 * done, and return 0. The caller adds the 0 to the scales the exponentials use: a register
 * computed after the barrier, so that ptxas cannot move an exponential above it (without it, it
 * left 3 of 130 between the two barriers). barrier.sync rather than bar.sync: the warp may come out
 * of the mbarrier wait before it diverged, which bar.sync's .aligned form does not allow (synccheck
 * says so). */
static __device__ __forceinline__ float turn_wait(void) {
  float zero;
  asm volatile("barrier.sync %1, 256;\nmov.f32 %0, 0f00000000;\n"
               : "=f"(zero)
               : "n"(FA_TURN)
               : "memory");
  return zero;
}

/** Warpgroup 0's half: the same barrier, once every value of P is packed (the 32 registers are its
 * inputs, so that ptxas keeps the exponentials and the packing above it). */
static __device__ __forceinline__ void turn_done(const uint32_t pa[FA_PK][4]) {
  asm volatile("barrier.sync %0, 256;\n" ::"n"(FA_TURN), "r"(pa[0][0]), "r"(pa[0][1]),
               "r"(pa[0][2]), "r"(pa[0][3]), "r"(pa[1][0]), "r"(pa[1][1]), "r"(pa[1][2]),
               "r"(pa[1][3]), "r"(pa[2][0]), "r"(pa[2][1]), "r"(pa[2][2]), "r"(pa[2][3]),
               "r"(pa[3][0]), "r"(pa[3][1]), "r"(pa[3][2]), "r"(pa[3][3]), "r"(pa[4][0]),
               "r"(pa[4][1]), "r"(pa[4][2]), "r"(pa[4][3]), "r"(pa[5][0]), "r"(pa[5][1]),
               "r"(pa[5][2]), "r"(pa[5][3]), "r"(pa[6][0]), "r"(pa[6][1]), "r"(pa[6][2]),
               "r"(pa[6][3]), "r"(pa[7][0]), "r"(pa[7][1]), "r"(pa[7][2]), "r"(pa[7][3])
               : "memory");
}

/** The exponent of a descale (a power of two), from its bits. */
static __device__ __forceinline__ int exponent_of(float x) {
  return ((__float_as_int(x) >> 23) & 0xff) - 127;
}

/** The warp's 16 rows of the Q tile, from the bf16 staging tile @p sQs (two 64-column panels of
 * FA_BR rows) into the e4m3 Q tile @p sQ (one panel of 128-byte rows), both 128-byte swizzled, with
 * one power-of-two scale f for the 16 rows (version 7's rule over a tile: the largest that keeps
 * their largest |x| within 448). Lane l takes row @p row0 + l % 16, columns 64 (l / 16) .. + 63, so
 * that the 8 lanes of each quarter of the warp touch 8 different rows of one panel: 8 different
 * 16-byte bank groups under the swizzle. Returns the exponent of f: the descale is 2^-e. */
static __device__ __forceinline__ int convert_q_rows(uint32_t sQs, uint32_t sQ, int row0,
                                                     int lane) {
  const int row = row0 + (lane & 15), hf = lane >> 4;
  uint4 c[8];
  float m = 0.f;
#pragma unroll
  for (int u = 0; u < 8; ++u) { /* all 8 loads first */
    c[u] = ld_shared_v4(sQs + sw128_off(row, 8 * hf + u, FA_BR));
    m = fmaxf(m, l05_absmax8(c[u]));
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const int e = l05_tile_exponent(m);
  const float f = l05_pow2f(e);
#pragma unroll
  for (int u = 0; u < 4; ++u) { /* e4m3 chunk 4 hf + u holds bf16 chunks 2 u and 2 u + 1 */
    const uint2 lo = l05_e4m3x8(c[2 * u], f), hi = l05_e4m3x8(c[2 * u + 1], f);
    st_shared_v4(sQ + row * 128 + (((4 * hf + u) ^ (row & 7)) << 4),
                 make_uint4(lo.x, lo.y, hi.x, hi.y));
  }
  return e;
}

/* The scheduler, version 9's: item i is Q tile i % Tr of (head, sequence) i / Tr without the mask
 * (version 10's block order), and under it the i-th item of attn_causal_item()'s order, longest
 * first inside groups of heads. A block's first item is its own index; after that it takes
 * gridDim.x + atomicAdd(&g_next_item, 1) until the number passes the last item. */

/** The scheduler's two counters, one per device (this file's own, apart from version 9's): items
 * handed out after the first wave, and blocks that have stopped taking items. The block whose
 * producer stops last sets both back to 0, so that the next launch finds them at 0. Launches of
 * version 14 must not overlap on one device (two streams): they would share them. */
static __device__ int g_next_item; /**< items handed out after the first wave */
static __device__ int g_done;      /**< blocks that have stopped taking items */

/** Item @p item's Q tile, head, KV head, sequence and (sequence, head) index. Without the mask in
 * version 10's block order (a head's Q tiles in order, head after head); under it longest first
 * inside groups of @p grp or grp + 1 heads (attn_causal_item()), where version 10 went head after
 * head. */
static __device__ __forceinline__ void item_coords(int item, int n_q_tiles, int grp, int grp_big,
                                                   int heads, int kv_heads, int causal, int *q_tile,
                                                   int *h, int *kvh, int *b, int *bh) {
  if (causal) {
    attn_causal_item(item, n_q_tiles, grp, grp_big, q_tile, bh);
  } else {
    *q_tile = item % n_q_tiles;
    *bh = item / n_q_tiles;
  }
  *h = *bh % heads, *b = *bh / heads;
  *kvh = *h / (heads / kv_heads);
}

/** The producer's warp, item after item, as version 9's: the item's number into slot k % 2 (-1 once
 * none is left) once the consumers have read the item two back; its Q, bf16, into the staging tile
 * once every consumer warp has converted the item before's; then its KV tiles into the ring, whose
 * stage and parity follow `t`, the count of tiles over all of the block's items. */
static __device__ __forceinline__ void producer_items(
    const CUtensorMap *tm_q, const CUtensorMap *tm_k, const CUtensorMap *tm_v, uint32_t sQs_a,
    uint32_t sK_a, uint32_t sV_a, uint32_t bar_q, uint32_t full_k, uint32_t full_v,
    uint32_t empty_k, uint32_t empty_v, uint32_t q_empty, uint32_t slot, uint32_t slot_full,
    uint32_t slot_empty, int n_items, int n_q_tiles, int grp, int grp_big, int heads, int kv_heads,
    int seq_q, int seq_kv, int causal) {
  const int leader = threadIdx.x == 0;
  int t = 0;
  for (int k = 0;; ++k) {
    const int s = k & 1;
    int item = (int)blockIdx.x;
    if (k > 0) {
      int x = 0;
      if (leader) x = atomicAdd(&g_next_item, 1);
      item = (int)gridDim.x + __shfl_sync(0xffffffffu, x, 0);
    }
    if (item >= n_items) item = -1;
    if (k >= 2) mbar_wait(slot_empty + 8 * s, ((k >> 1) - 1) & 1);
    if (leader) {
      st_shared_u32(slot + 4 * s, (uint32_t)item);
      mbar_arrive(slot_full + 8 * s);
    }
    if (item < 0) break;
    int q_tile, h, kvh, b, bh;
    item_coords(item, n_q_tiles, grp, grp_big, heads, kv_heads, causal, &q_tile, &h, &kvh, &b, &bh);
    const int q0 = q_tile * FA_BR;
    const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
    if (k >= 1) mbar_wait(q_empty, (k - 1) & 1);
    if (leader) {
      mbar_arrive_expect_tx(bar_q, FA_QS_BYTES);
      tma_load_4d(sQs_a, tm_q, bar_q, 0, h, q0, b);
      tma_load_4d(sQs_a + FA_Q_BYTES, tm_q, bar_q, 64, h, q0, b);
    }
    for (int j = 0; j < n_tiles; ++j, ++t) {
      const int st = t & 1;
      const uint32_t parity = ((t >> 1) & 1) ^ 1;
      const uint32_t off = st * FA_TILE_BYTES;
      mbar_wait(empty_k + 8 * st, parity);
      if (leader) {
        mbar_arrive_expect_tx(full_k + 8 * st, FA_TILE_BYTES);
        tma_load_4d(sK_a + off, tm_k, full_k + 8 * st, 0, kvh, j * FA_BC, b);
      }
      mbar_wait(empty_v + 8 * st, parity);
      if (leader) {
        mbar_arrive_expect_tx(full_v + 8 * st, FA_TILE_BYTES);
        tma_load_4d(sV_a + off, tm_v, full_v + 8 * st, j * FA_BC, 0, kvh, b);
        tma_load_4d(sV_a + off + FA_HALF_BYTES, tm_v, full_v + 8 * st, j * FA_BC + FA_HB, 0, kvh,
                    b);
      }
      __syncwarp();
    }
  }
  if (leader) {
    __threadfence();
    if (atomicAdd(&g_done, 1) == (int)gridDim.x - 1) {
      atomicExch(&g_next_item, 0);
      atomicExch(&g_done, 0);
    }
  }
}

/** After the last tile: O / l in bf16 into the warpgroup's half of the staging tile (64 rows, two
 * 64-column panels, 128-byte swizzled as the tensor map of O reads it), then two TMA stores by the
 * warpgroup's first thread, which the warpgroup does not wait for; the log-sum-exp of my 2 rows as
 * version 7 writes it. Before writing, the first thread waits until the item before's stores have
 * read the tile, and a named barrier holds the others until it has. */
static __device__ __forceinline__ void store_o(const CUtensorMap *tm_o, uint32_t sO_wg,
                                               float *__restrict__ lse, const float acc[FA_NO],
                                               const float row_m[2], const float row_l[2], int q0,
                                               int wg, int warp, int g, int t4, int seq_q, int b,
                                               int h, int bh) {
  const int first = (threadIdx.x & 127) == 0;
  if (first) bulk_wait_read0();
  named_bar_sync(FA_O_BAR + wg, 128);
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float l = row_l[hf];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int r = warp * 16 + g + hf * 8;      /* my row in the warpgroup's 64 */
    const float inv = l > 0.f ? 1.f / l : 0.f; /* a row that sees no key: O = 0 */
#pragma unroll
    for (int dt = 0; dt < HEAD_DIM / 8; ++dt)
      st_shared_u32(sO_wg + sw128_off(r, dt, L05_WG_ROWS) + t4 * 4,
                    pack_bf16x2(acc[4 * dt + 2 * hf] * inv, acc[4 * dt + 2 * hf + 1] * inv));
    const int row = q0 + wg * L05_WG_ROWS + r;
    if (t4 == 0 && row < seq_q)
      lse[(size_t)bh * seq_q + row] = l > 0.f ? (row_m[hf] + log2f(l)) * FA_LN2 : -INFINITY;
  }
  fence_proxy_async(); /* the stores above, before the async proxy reads them */
  named_bar_sync(FA_O_BAR + wg, 128);
  if (first) {
    const int row0 = q0 + wg * L05_WG_ROWS;
    tma_store_4d(tm_o, sO_wg, 0, h, row0, b);
    tma_store_4d(tm_o, sO_wg + L05_WG_ROWS * 128, 64, h, row0, b);
    bulk_commit();
  }
}

/** A half tile's S: the first 128 keys of the tile, FA_KS wgmma m64n128k32 into an accumulator of
 * 64 floats a thread (the first 64 of a whole tile's, in the same layout). */
static __device__ __forceinline__ void issue_s_half(float s[FA_NS / 2], uint32_t q_base,
                                                    uint32_t k_tile) {
#pragma unroll
  for (int ks = 0; ks < FA_KS; ++ks) {
    const uint64_t da = wgmma_desc(q_base + ks * 32, 16, 1024);
    const uint64_t db = wgmma_desc(k_tile + ks * 32, 16, 1024);
    wgmma_fp8_ss_n128(s, da, db, ks > 0);
  }
}

/** A half tile's P V: the first 128 keys, V^T panel 0, FA_PK / 2 k-steps. */
static __device__ __forceinline__ void issue_pv_half(float pv[FA_NO], const uint32_t pa[FA_PK][4],
                                                     uint32_t v_tile) {
#pragma unroll
  for (int kk = 0; kk < FA_PK / 2; ++kk) {
    const uint64_t dv = wgmma_desc(v_tile + kk * 32, 16, 1024);
    wgmma_fp8_rs_n128(pv, pa[kk], dv, kk > 0);
  }
}

/** Warpgroup 0's half of a turn on a half tile: the 16 registers of the half's P. */
static __device__ __forceinline__ void turn_done_half(const uint32_t pa[FA_PK][4]) {
  asm volatile("barrier.sync %0, 256;\n" ::"n"(FA_TURN), "r"(pa[0][0]), "r"(pa[0][1]),
               "r"(pa[0][2]), "r"(pa[0][3]), "r"(pa[1][0]), "r"(pa[1][1]), "r"(pa[1][2]),
               "r"(pa[1][3]), "r"(pa[2][0]), "r"(pa[2][1]), "r"(pa[2][2]), "r"(pa[2][3]),
               "r"(pa[3][0]), "r"(pa[3][1]), "r"(pa[3][2]), "r"(pa[3][3])
               : "memory");
}

/** One KV tile of the item (tile @p j, the ring's tile @p tj), whole (@p half 0) or its first 128
 * keys only (@p half 1, a constant at each call, so each call is its own code). */
static __device__ __forceinline__ void kv_tile(const int half, int j, int tj, float acc[FA_NO],
                                               float row_m[2], float row_l[2],
                                               const float2 *__restrict__ dkv_row, int n_half,
                                               int n_unmasked, float scale_i, uint32_t q_base,
                                               uint32_t sK_a, uint32_t sV_a, uint32_t full_k,
                                               uint32_t full_v, uint32_t empty_k, uint32_t empty_v,
                                               int lane, int wg, int q0, int wr0, int g, int t4,
                                               int seq_kv, int causal, int diag) {
  const int NS = half ? FA_NS / 2 : FA_NS;
  const int st = tj & 1;
  const uint32_t parity = (tj >> 1) & 1;
  const int k0 = j * FA_BC;
  /* the tile's descales, loaded before S is issued: S's wait covers the load */
  const float2 d0 = dkv_row[2 * j];
  const float2 d1 = 2 * j + 1 < n_half ? dkv_row[2 * j + 1] : d0;
  float s[FA_NS];
  mbar_wait(full_k + 8 * st, parity);
  wgmma_fence();
  if (half) {
    /* an accumulator of its own: the half's S written into s[] itself made ptxas serialise every
     * wgmma of the kernel (C7511); copied into s[] once waited for, which costs no instruction */
    float sh[FA_NS / 2];
    issue_s_half(sh, q_base, sK_a + st * FA_TILE_BYTES);
    wgmma_commit();
    wgmma_wait0();
    reg_fence(sh, FA_NS / 2);
#pragma unroll
    for (int i = 0; i < FA_NS / 2; ++i) s[i] = sh[i];
  } else {
    issue_s(s, q_base, sK_a + st * FA_TILE_BYTES);
    wgmma_commit();
    wgmma_wait0();
    reg_fence(s, FA_NS);
  }
  if (lane == 0) mbar_arrive(empty_k + 8 * st);
  const float c0 = scale_i * d0.x, c1 = scale_i * d1.x;
  if (j >= n_unmasked) {
#pragma unroll
    for (int i = 0; i < NS; ++i) {
      const int row = q0 + wr0 + g + ((i >> 1) & 1) * 8;
      const int col = k0 + (i >> 2) * 8 + t4 * 2 + (i & 1);
      if (col >= seq_kv || (causal && col > row + diag)) s[i] = -INFINITY;
    }
  }
  float mh[2][2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    if (half && hh == 1) {
      mh[1][0] = mh[1][1] = -INFINITY;
      continue;
    }
    float m0[8], m1[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float *p = s + 64 * hh + 8 * i;
      m0[i] = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[4], p[5]));
      m1[i] = fmaxf(fmaxf(p[2], p[3]), fmaxf(p[6], p[7]));
    }
#pragma unroll
    for (int w = 4; w >= 1; w /= 2)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (i < w) {
          m0[i] = fmaxf(m0[i], m0[i + w]);
          m1[i] = fmaxf(m1[i], m1[i + w]);
        }
    mh[hh][0] = m0[0];
    mh[hh][1] = m1[0];
  }
  float mx[2] = {fmaxf(mh[0][0] * c0, mh[1][0] * c1), fmaxf(mh[0][1] * c0, mh[1][1] * c1)};
#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    const float x0 = __shfl_xor_sync(0xffffffffu, mx[0], off);
    const float x1 = __shfl_xor_sync(0xffffffffu, mx[1], off);
    mx[0] = fmaxf(mx[0], x0);
    mx[1] = fmaxf(mx[1], x1);
  }
  const float dv_max = fmaxf(d0.y, d1.y);
  const int e_max = exponent_of(dv_max);
  const int e0 = max(exponent_of(d0.y) - e_max, -64), e1 = max(exponent_of(d1.y) - e_max, -64);
  const float inv_r0 = __int_as_float((127 - e0) << 23);
  const float inv_r1 = __int_as_float((127 - e1) << 23);
  float alpha[2], off0[2], off1[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const float m_new = fmaxf(row_m[hf], mx[hf]);
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    alpha[hf] = fast_exp2(row_m[hf] - m_use);
    row_m[hf] = m_new;
    off0[hf] = (float)e0 - m_use;
    off1[hf] = (float)e1 - m_use;
  }
  mbar_wait(full_v + 8 * st, parity);
  const float zero = wg == 1 ? turn_wait() : 0.f;
  const float cz0 = c0 + zero, cz1 = c1 + zero;
  float sum[4] = {0.f, 0.f, 0.f, 0.f};
  const float lm0[2] = {off0[0] + L05_EXP2_MAGIC, off0[1] + L05_EXP2_MAGIC};
  const float lm1[2] = {off1[0] + L05_EXP2_MAGIC, off1[1] + L05_EXP2_MAGIC};
#pragma unroll
  for (int i = 0; i < NS; ++i) {
    const int hh = i >> 6, r = (i >> 1) & 1;
    /* even keys on the FMA pipes, odd keys on the special function unit */
    const float p = (i & 1) ? fast_exp2(fmaf(s[i], hh ? cz1 : cz0, hh ? off1[r] : off0[r]))
                            : l05_exp2_line(fmaf(s[i], hh ? cz1 : cz0, hh ? lm1[r] : lm0[r]));
    s[i] = p;
    sum[2 * r + hh] += p;
  }
#pragma unroll
  for (int dt = 0; dt < HEAD_DIM / 8; ++dt) {
    acc[4 * dt] *= alpha[0];
    acc[4 * dt + 1] *= alpha[0];
    acc[4 * dt + 2] *= alpha[1];
    acc[4 * dt + 3] *= alpha[1];
  }
  row_l[0] = row_l[0] * alpha[0] + (sum[0] * inv_r0 + sum[1] * inv_r1);
  row_l[1] = row_l[1] * alpha[1] + (sum[2] * inv_r0 + sum[3] * inv_r1);
  uint32_t pa[FA_PK][4];
  pack_p(s, pa, half);
  if (wg == 0) {
    if (half)
      turn_done_half(pa);
    else
      turn_done(pa);
  }
  float pv[FA_NO];
  wgmma_fence();
  if (half)
    issue_pv_half(pv, pa, sV_a + st * FA_TILE_BYTES);
  else
    issue_pv(pv, pa, sV_a + st * FA_TILE_BYTES);
  wgmma_commit();
  wgmma_wait0();
  reg_fence(pv, FA_NO);
  if (lane == 0) mbar_arrive(empty_v + 8 * st);
#pragma unroll
  for (int i = 0; i < FA_NO; ++i) acc[i] = fmaf(pv[i], dv_max, acc[i]);
}

/* The loop on a whiteboard: version 10's tile loop, inside version 9's loop over items.
 *
 *   grid: min(items, SMs) blocks of a producer warpgroup and two consumers (setmaxnreg 24 / 240)
 *   producer warp, item k = 0, 1, ... (t counts KV tiles over all items):
 *     item = k ? gridDim + atomicAdd(next) : blockIdx      (-1 past the last item)
 *     wait slot_empty[k % 2] once k >= 2; slot[k % 2] = item; arrive(slot_full[k % 2]); stop at -1
 *     wait q_empty once k >= 1 (phase k - 1); TMA Q, bf16 -> the staging tile on bar_q
 *     for j < Tc, ++t: stage t % 2: wait empty; K_j (256 keys), V_j^T (two panels), as version 10
 *   consumer warpgroup c, item k = 0, 1, ...:
 *     wait slot_full[k % 2]; lane 0 reads the slot, hands it to its warp, arrives on slot_empty
 *     wait bar_q (phase k); each warp: its 16 rows to e4m3 in the Q tile, one scale f_w;
 *       arrive(q_empty); fence.proxy.async; named barrier of the warpgroup; m = -inf, l = 0, O = 0
 *     half = the keys the item's rows see end in the first 128 of tile Tc - 1
 *     for j < Tc - half (ring tile t + j): version 10's tile, its descales loaded before S
 *     if half: tile Tc - 1 over its first 128 keys (S n128, 64 values a thread, P V 4 k-steps)
 *     O into the staging tile, TMA stores (not waited for); t += Tc
 * Both warpgroups pass the turn's barrier once per tile of the same items: it ends balanced. */
/** One block per SM (fewer when there are fewer items), each taking items (a Q tile of FA_BR = 128
 * rows of one head and sequence) until none is left: warpgroup 0 loads, warpgroups 1 and 2
 * compute 64 rows each and take turns at the exponentials. */
static __global__ void __launch_bounds__(FA_THREADS, 1)
    FA_KERNEL(const __grid_constant__ CUtensorMap tm_q,  // Q bf16, boxes of 64 x FA_BR
              const __grid_constant__ CUtensorMap tm_k,  // K e4m3, boxes of 128 x FA_BC
              const __grid_constant__ CUtensorMap tm_v,  // V^T e4m3, boxes of 128 keys x dim
              const __grid_constant__ CUtensorMap tm_o,  // O bf16, boxes of 64 x 64 rows
              float *__restrict__ lse,                   // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
              int n_q_tiles, int n_kv_tiles, int n_items, int grp, int grp_big,
              const float2 *__restrict__ dkv) {  // {K's, V's} per (batch, kv head, 128 keys)
  extern __shared__ unsigned char smem[];
  /* Tiles start on a 1024-byte boundary, the 128-byte swizzle's period. */
  const uint32_t sQ_a = (smem_u32(smem) + 1023u) & ~1023u;   /* [FA_BR][128] e4m3 */
  const uint32_t sQs_a = sQ_a + FA_Q_BYTES;                  /* [2 panels][FA_BR][64] bf16 */
  const uint32_t sK_a = sQs_a + FA_QS_BYTES;                 /* [2][FA_BC][128] */
  const uint32_t sV_a = sK_a + 2 * FA_TILE_BYTES;            /* [2][panel][dim][128 keys] */
  const uint32_t sO_a = sV_a + 2 * FA_TILE_BYTES;            /* [2 wg][2 panels][64][64] bf16 */
  const uint32_t bar_q = sO_a + FA_O_BYTES;                  /* the Q staging tile landed */
  const uint32_t full_k = bar_q + 16, full_v = bar_q + 32;   /* [2]: the stage's tile landed */
  const uint32_t empty_k = bar_q + 48, empty_v = bar_q + 64; /* [2]: both consumers are done */
  const uint32_t q_empty = bar_q + 80;     /* every consumer warp has converted its Q rows */
  const uint32_t slot_full = bar_q + 96;   /* [2]: the item slot holds a number */
  const uint32_t slot_empty = bar_q + 112; /* [2]: every consumer warp has read it */
  const uint32_t slot = bar_q + 128; /* [2]: item numbers, from the producer to the consumers */

  if (threadIdx.x == 0) {
    mbar_init(bar_q, 1);
    mbar_init(q_empty, FA_CONSUMER_WARPS);
    for (int i = 0; i < 2; ++i) {
      mbar_init(slot_full + 8 * i, 1);
      mbar_init(slot_empty + 8 * i, FA_CONSUMER_WARPS);
      mbar_init(full_k + 8 * i, 1);
      mbar_init(full_v + 8 * i, 1);
      mbar_init(empty_k + 8 * i, FA_CONSUMER_WARPS);
      mbar_init(empty_v + 8 * i, FA_CONSUMER_WARPS);
    }
    mbar_init_fence();
  }
  __syncthreads(); /* the barriers exist */

  if (threadIdx.x < 128) {
    setmaxnreg_dec_24();
    if (threadIdx.x < 32)
      producer_items(&tm_q, &tm_k, &tm_v, sQs_a, sK_a, sV_a, bar_q, full_k, full_v, empty_k,
                     empty_v, q_empty, slot, slot_full, slot_empty, n_items, n_q_tiles, grp,
                     grp_big, heads, kv_heads, seq_q, seq_kv, causal);
  } else {
    setmaxnreg_inc_240();
    const int wg = (threadIdx.x >> 7) - 1;
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int wr0 = wg * L05_WG_ROWS + warp * 16;
    const int diag = seq_kv - seq_q;
    int t = 0;
    for (int k = 0;; ++k) {
      const int qb = k & 1;
      mbar_wait(slot_full + 8 * qb, (k >> 1) & 1);
      int item = 0;
      /* Lane 0 reads the slot and releases it, handing the number to its warp (version 9). */
      if (lane == 0) item = (int)ld_shared_u32(slot + 4 * qb);
      item = __shfl_sync(0xffffffffu, item, 0);
      if (item < 0) break;
      if (lane == 0) mbar_arrive(slot_empty + 8 * qb);
      int q_tile, h, kvh, b, bh;
      item_coords(item, n_q_tiles, grp, grp_big, heads, kv_heads, causal, &q_tile, &h, &kvh, &b,
                  &bh);
      const int q0 = q_tile * FA_BR;
      const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
      const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, FA_BC, causal);
      const uint32_t q_base = sQ_a + wg * L05_WG_ROWS * 128;
      const int n_half = min(2 * n_tiles, n_kv_tiles);
      const float2 *dkv_row = dkv + ((size_t)b * kv_heads + kvh) * n_kv_tiles;
      mbar_wait(bar_q, k & 1);
      /* The warp's Q rows into e4m3, then the staging tile is free for the next item's Q; the
       * warpgroup's S reads all 64 of its rows, so its four warps meet after the fence. */
      const int qe = convert_q_rows(sQs_a, sQ_a, wr0, lane);
      __syncwarp();
      if (lane == 0) mbar_arrive(q_empty);
      fence_proxy_async();
      named_bar_sync(FA_Q_BAR + wg, 128);
      const float scale_i = scale_log2 * l05_pow2f(-qe);

      float acc[FA_NO];
      float row_m[2], row_l[2];
#pragma unroll
      for (int i = 0; i < FA_NO; ++i) acc[i] = 0.f;
      row_m[0] = row_m[1] = -INFINITY;
      row_l[0] = row_l[1] = 0.f;

      /* The last tile's second half of keys is masked for every row of the item (the diagonal
       * ends in its first half, or the keys end there): that tile runs as a half tile. */
      const int half_last = attn_last_tile_half(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
      for (int j = 0; j < n_tiles - half_last; ++j)
        kv_tile(0, j, t + j, acc, row_m, row_l, dkv_row, n_half, n_unmasked, scale_i, q_base, sK_a,
                sV_a, full_k, full_v, empty_k, empty_v, lane, wg, q0, wr0, g, t4, seq_kv, causal,
                diag);
      if (half_last)
        kv_tile(1, n_tiles - 1, t + n_tiles - 1, acc, row_m, row_l, dkv_row, n_half, n_unmasked,
                scale_i, q_base, sK_a, sV_a, full_k, full_v, empty_k, empty_v, lane, wg, q0, wr0, g,
                t4, seq_kv, causal, diag);
      store_o(&tm_o, sO_a + wg * (FA_O_BYTES / 2), lse, acc, row_m, row_l, q0, wg, warp, g, t4,
              seq_q, b, h, bh);
      t += n_tiles;
    }
    if ((threadIdx.x & 127) == 0) bulk_wait0(); /* the last O stores, before the block exits */
  }
}

/** The launcher, l05_fp8h_attention(), version 12's: Q's tensor map is version 5's (bf16, two
 * 64-column boxes of FA_BR rows), K's and V^T's version 11's over version 12's workspace (no Q in
 * it); then min(items, SMs) blocks. */
extern "C" cudaError_t l05_fp8h_attention(const void *q, const void *workspace,
                                          size_t workspace_bytes, void *o, float *lse, int batch,
                                          int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                                          int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  if (dim != HEAD_DIM || !q) return cudaErrorInvalidValue;
  const l05_fp8_layout l = l05_fp8_layout_of(batch, heads, kv_heads, 0, seq_kv, dim);
  if (!workspace || workspace_bytes < l.bytes) return cudaErrorInvalidValue;
  const int n_q_tiles = attn_cdiv(seq_q, FA_BR);
  const long long blocks = (long long)n_q_tiles * batch * heads; /* the items */
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  const unsigned char *ws = (const unsigned char *)workspace;
  CUtensorMap tm_q, tm_k, tm_v, tm_o;
  const unsigned long long d = HEAD_DIM;
  const unsigned long long k_size[4] = {d, (unsigned long long)kv_heads, (unsigned long long)seq_kv,
                                        (unsigned long long)batch};
  const unsigned long long k_stride[3] = {d, kv_heads * d, seq_kv * kv_heads * d};
  const unsigned k_box[4] = {HEAD_DIM, 1, FA_BC, 1};
  const unsigned long long pad = (unsigned long long)l.seq_pad;
  const unsigned long long v_size[4] = {pad, d, (unsigned long long)kv_heads,
                                        (unsigned long long)batch};
  const unsigned long long v_stride[3] = {pad, d * pad, kv_heads * d * pad};
  const unsigned v_box[4] = {FA_HB, HEAD_DIM, 1, 1}; /* a panel past seq_pad arrives as zeros */
  ATTN_TRY(l05_tensor_map(&tm_q, q, batch, seq_q, heads, HEAD_DIM, FA_BR)); /* rows past: zeros */
  ATTN_TRY(l05_tensor_map_u8(&tm_k, ws + l.k, k_size, k_stride, k_box));
  ATTN_TRY(l05_tensor_map_u8(&tm_v, ws + l.vt, v_size, v_stride, v_box));
  ATTN_TRY(l05_tensor_map(&tm_o, o, batch, seq_q, heads, HEAD_DIM, L05_WG_ROWS));
  int dev = 0, sms = 0;
  ATTN_TRY(cudaGetDevice(&dev));
  ATTN_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const size_t smem_bytes = FA_SMEM_BYTES;
  ATTN_TRY(cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smem_bytes));
  const int grid = blocks < sms ? (int)blocks : sms; /* one block per SM at most */
  int grp = 1, grp_big = 0; /* under the mask: the groups of heads, longest first in each */
  attn_causal_groups(batch * heads, n_q_tiles, grid, ATTN_CAUSAL_WAVES, &grp, &grp_big);
  FA_KERNEL<<<(unsigned)grid, FA_THREADS, smem_bytes, stream>>>(
      tm_q, tm_k, tm_v, tm_o, lse, heads, kv_heads, seq_q, seq_kv, causal, scale * FA_LOG2E,
      n_q_tiles, l.kv_tiles, (int)blocks, grp, grp_big, (const float2 *)(ws + l.dkv));
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

/** Version 14's workspace is version 12's. */
extern "C" size_t l05_fp8h_workspace_bytes(int batch, int heads, int kv_heads, int seq_q,
                                           int seq_kv, int dim) {
  return l05_fp8q_workspace_bytes(batch, heads, kv_heads, seq_q, seq_kv, dim);
}

/** Version 14's conversion is version 12's: K and V. */
extern "C" cudaError_t l05_fp8h_quantize(const void *q, const void *k, const void *v, int batch,
                                         int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                                         void *workspace, size_t workspace_bytes,
                                         cudaStream_t stream) {
  return l05_fp8q_quantize(q, k, v, batch, heads, kv_heads, seq_q, seq_kv, dim, workspace,
                           workspace_bytes, stream);
}

/** Version 12's pass over K and V, then this kernel on the bf16 Q (what the harness times for
 * version 14). */
extern "C" cudaError_t l05_fp8h_forward(const void *q, const void *k, const void *v, void *o,
                                        float *lse, int batch, int heads, int kv_heads, int seq_q,
                                        int seq_kv, int dim, int causal, float scale,
                                        void *workspace, size_t workspace_bytes,
                                        cudaStream_t stream) {
  ATTN_TRY(l05_fp8q_quantize(q, k, v, batch, heads, kv_heads, seq_q, seq_kv, dim, workspace,
                             workspace_bytes, stream));
  return l05_fp8h_attention(q, workspace, workspace_bytes, o, lse, batch, heads, kv_heads, seq_q,
                            seq_kv, dim, causal, scale, stream);
}
