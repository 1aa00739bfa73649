// clang-format off
/** @file
 * @brief Version 10: the exponentials take turns. Version 7's FP8 kernel, on version 7's workspace,
 * with the warpgroups taking turns at the special function unit instead of the tensor cores, and
 * with the registers that frees spent on tiles of 256 keys.
 *
 * What changed: no turns at the GEMMs and no overlap inside a warpgroup. Each consumer issues S_j
 * (one m64n256k32 wgmma per k-step) and waits for it at once, finds the row maxima, and then takes
 * its turn at the exponentials: a named barrier that warpgroup 1 waits at before its exponentials
 * and warpgroup 0 after its own, so that warpgroup 1's burst of exponentials starts when warpgroup
 * 0's has ended. After the exponentials each warpgroup packs P, issues P_j V_j into a fresh
 * accumulator, waits for it, and adds it to O in fp32. With S waited at once, no warpgroup holds
 * S_{j+1} beside P V, so S can be 256 keys wide (128 floats a thread) where version 7's was 128:
 * the fixed steps of a tile (the waits, the row maxima's shuffles, the factor alpha) are paid half
 * as often. The workspace is version 7's, scales per 128 keys, so a tile has two K and two V
 * descales: K's go into the softmax scale of each half of S; V's into P, through the exponent (a
 * half's P is weighed by its descale over the larger of the two, a power of two, so exact), and the
 * larger one into the fold.
 *
 * Why: in FP8 a tile's GEMMs take half as long as in bf16 and its exponentials as long; version 7's
 * turns at the tensor cores left the two warpgroups' bursts of exponentials on top of each other
 * (README: "A tile's budget"). Nsight Compute's source view of cuDNN's FP8 kernel on the H200 shows
 * this schedule in its machine code: 64 x 256 tiles, S and P V each waited right after its issue,
 * and one named barrier around the exponentials, waited at before them by one warpgroup and after
 * them by the other (README: "The exponentials take turns (version 10)").
 *
 * Prediction: about cuDNN's FP8 rate, which in the same call ran at 1.09-1.24x version 7's kernel:
 * 1.1-1.2x version 7's kernel alone, the error at version 7's.
 *
 * Measured: NVIDIA H200, 2026-11-27 (docs/results/h200-l05c-2026-11-27): the kernel alone at
 * 1.05-1.11x version 7's (seq 4k-16k, with and without the mask, two calls taking turns), cuDNN's
 * FP8 in the same calls 1.03-1.24x; Nsight Compute at the default shape 1,133,108 cycles against
 * version 7's 1,236,713 and cuDNN's 1,010,880. Without the data dependence that keeps every
 * exponential between the two barriers, ptxas left 3 of 130 there (22 above, 105 below) and the
 * kernel ran at 0.82-0.87x version 7's. Error: version 7's within 1% (relative L2 against float32).
 *
 * Run: `./run 10` (dim 128, 16 heads, batch 4, seq 4096; the time includes version 7's conversion).
 */
// clang-format on
/** Built once, for head dimension 128, as versions 6 and 7. */
#define HEAD_DIM 128

#include <cuda.h>
#include <limits.h>
#include <math.h>

#include "attn_causal.h"
#include "attn_cuda.cuh"
#include "fa3_hopper.h"
#include "fp8_workspace.cuh"
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
#define FA_HALF_BYTES (FA_HB * HEAD_DIM)  /**< half a K tile, or one V^T panel */
#define FA_TILE_BYTES (2 * FA_HALF_BYTES) /**< one K or V^T tile buffer */
/** Dynamic shared memory: Q, two K and two V^T stages, nine mbarriers, and 1024 bytes to align the
 * start to a swizzle atom; the launch adds the descale table, 8 bytes per 128 keys. */
#define FA_SMEM_BYTES (FA_Q_BYTES + 4 * FA_TILE_BYTES + 128 + 1024)
/** The most dynamic shared memory a block may have on sm_90 (227 KB): the table fits up to
 * (232448 - FA_SMEM_BYTES) / 8 = 10480 entries, 1.3 M keys. */
#define FA_SMEM_MAX 232448
/** Arrivals that release a stage: one per consumer warp. */
#define FA_CONSUMER_WARPS 8
/** The named barrier of the turns at the exponentials (3 is the descale table's). */
#define FA_TURN 4
/** log2(e): exp(x) = 2^(x log2 e). */
#define FA_LOG2E 1.4426950408889634f
/** ln(2): turns the base-2 log-sum-exp back into the natural one. */
#define FA_LN2 0.6931471805599453f
/** The kernel. */
#define FA_KERNEL l05_fp8w_kernel_d128

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
static __device__ __forceinline__ void pack_p(const float s[FA_NS], uint32_t pa[FA_PK][4]) {
#pragma unroll
  for (int kk = 0; kk < FA_PK; ++kk) {
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

/** The producer's warp: Q once, then for each KV tile j, into stage j % 2, K_j (one box of 256
 * keys) and V_j^T (two boxes of 128 keys, one per panel), each once both consumers have released
 * the stage. The whole warp waits; lane 0 issues the copies. */
static __device__ __forceinline__ void producer_load(
    const CUtensorMap *tm_q, const CUtensorMap *tm_k, const CUtensorMap *tm_v, uint32_t sQ_a,
    uint32_t sK_a, uint32_t sV_a, uint32_t bar_q, uint32_t full_k, uint32_t full_v,
    uint32_t empty_k, uint32_t empty_v, int n_tiles, int h, int kvh, int q0, int b) {
  const int leader = threadIdx.x == 0;
  if (leader) {
    mbar_arrive_expect_tx(bar_q, FA_Q_BYTES);
    tma_load_4d(sQ_a, tm_q, bar_q, 0, h, q0, b);
  }
  for (int j = 0; j < n_tiles; ++j) {
    const int st = j & 1;                       /* l05_stage(j, 2) */
    const uint32_t parity = ((j >> 1) & 1) ^ 1; /* l05_empty_parity(j, 2) */
    const uint32_t off = st * FA_TILE_BYTES;
    mbar_wait(empty_k + 8 * st, parity);
    if (leader) {
      mbar_arrive_expect_tx(full_k + 8 * st, FA_TILE_BYTES);
      tma_load_4d(sK_a + off, tm_k, full_k + 8 * st, 0, kvh, j * FA_BC, b);
    }
    mbar_wait(empty_v + 8 * st, parity);
    if (leader) {
      mbar_arrive_expect_tx(full_v + 8 * st, FA_TILE_BYTES); /* both panels on one barrier */
      tma_load_4d(sV_a + off, tm_v, full_v + 8 * st, j * FA_BC, 0, kvh, b);
      tma_load_4d(sV_a + off + FA_HALF_BYTES, tm_v, full_v + 8 * st, j * FA_BC + FA_HB, 0, kvh, b);
    }
    __syncwarp();
  }
}

/** After the last tile: as version 7's, O / l in bf16 and the log-sum-exp of my 2 rows. */
static __device__ __forceinline__ void store_o(attn_bf16 *__restrict__ o, float *__restrict__ lse,
                                               const float acc[FA_NO], const float row_m[2],
                                               const float row_l[2], int q0, int wr0, int g, int t4,
                                               int seq_q, size_t q_stride, int b, int h, int bh) {
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float l = row_l[hf];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int row = q0 + wr0 + g + hf * 8;
    if (row >= seq_q) continue;
    const float inv = l > 0.f ? 1.f / l : 0.f; /* a row that sees no key: O = 0 */
    attn_bf16 *orow = o + ((size_t)b * seq_q + row) * q_stride + (size_t)h * HEAD_DIM;
#pragma unroll
    for (int dt = 0; dt < HEAD_DIM / 8; ++dt)
      *(uint32_t *)(orow + dt * 8 + t4 * 2) =
          pack_bf16x2(acc[4 * dt + 2 * hf] * inv, acc[4 * dt + 2 * hf + 1] * inv);
    if (t4 == 0)
      lse[(size_t)bh * seq_q + row] = l > 0.f ? (row_m[hf] + log2f(l)) * FA_LN2 : -INFINITY;
  }
}

/* The loop on a whiteboard (Br = 128 rows, Bc = 256 keys, dim 128; version 7's workspace):
 *
 *   block (i, head, batch), heavy Q tiles first when causal; Tc, Tu as in version 7 with Bc = 256
 *   producer warp (setmaxnreg 24): Q_i; for j < Tc: K_j -> stage j % 2, V_j^T -> stage j % 2
 *   consumers (setmaxnreg 240): the descale table {dk_t, dv_t}, t < 2 Tc, into shared memory
 *   consumer warpgroup c, rows 64 c .. 64 c + 63: m = -inf, l = 0, O = 0; for j < Tc:
 *     wait full_k[j % 2]; S = Q_i K_j^T (m64n256k32 x 4); wait_group 0; arrive(empty_k)
 *     the mask if j >= Tu; each half h of S has its scale c_h = scale log2(e) dq_i dk_{2j+h}
 *     m_new = max(m, max_h c_h rowmax(S_h)); alpha = 2^(m - m_new)
 *     r_h = dv_{2j+h} / dv_max, dv_max the larger of the two          (powers of two)
 *     wait full_v[j % 2]
 *     c = 1: barrier.sync(TURN)          wait for warpgroup 0's exponentials
 *     P_h = 2^(c_h S_h - m_new + log2 r_h)                           (= r_h P: at most 1)
 *     l = alpha l + sum_h rowsum(P_h) / r_h;  O = alpha O;  P packed to e4m3
 *     c = 0: barrier.sync(TURN)          warpgroup 1 may start its exponentials
 *     PV = P V_j (m64n128k32 x 8, from zero); wait_group 0; arrive(empty_v)
 *     O += dv_max PV, in fp32
 *   store: O / l in bf16, lse = (m + log2 l) ln 2
 * Both warpgroups pass the barrier once per tile and have the same Tc: it ends balanced. */
/** One block per (Q tile of FA_BR = 128 rows, head, batch), bf16 in and out: warpgroup 0 loads,
 * warpgroups 1 and 2 compute 64 rows each and take turns at the exponentials. */
static __global__ void __launch_bounds__(FA_THREADS, 1)
    FA_KERNEL(const __grid_constant__ CUtensorMap tm_q,  // Q e4m3, boxes of 128 x FA_BR
              const __grid_constant__ CUtensorMap tm_k,  // K e4m3, boxes of 128 x FA_BC
              const __grid_constant__ CUtensorMap tm_v,  // V^T e4m3, boxes of 128 keys x dim
              attn_bf16 *__restrict__ o,                 // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,                   // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
              int n_q_tiles, int n_kv_tiles,
              const float *__restrict__ dq,      // Q's descale per (batch, head, Q tile)
              const float2 *__restrict__ dkv) {  // {K's, V's} per (batch, kv head, 128 keys)
  extern __shared__ unsigned char smem[];
  /* Tiles start on a 1024-byte boundary, the 128-byte swizzle's period. */
  const uint32_t sQ_a = (smem_u32(smem) + 1023u) & ~1023u;   /* [FA_BR][128] */
  const uint32_t sK_a = sQ_a + FA_Q_BYTES;                   /* [2][FA_BC][128] */
  const uint32_t sV_a = sK_a + 2 * FA_TILE_BYTES;            /* [2][panel][dim][128 keys] */
  const uint32_t bar_q = sV_a + 2 * FA_TILE_BYTES;           /* Q landed */
  const uint32_t full_k = bar_q + 8, full_v = bar_q + 24;    /* [2]: the stage's tile landed */
  const uint32_t empty_k = bar_q + 40, empty_v = bar_q + 56; /* [2]: both consumers are done */
  /* [128-key tile]: the descales {K's, V's} of the keys the block reads */
  float2 *const sc = (float2 *)(smem + (bar_q + 128 - smem_u32(smem)));

  const int q_tile =
      causal ? n_q_tiles - 1 - (int)(blockIdx.x % n_q_tiles) : blockIdx.x % n_q_tiles;
  const int bh = blockIdx.x / n_q_tiles;
  const int h = bh % heads, b = bh / heads;
  const int kvh = h / (heads / kv_heads);
  const int q0 = q_tile * FA_BR;
  const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);

  if (threadIdx.x == 0) {
    mbar_init(bar_q, 1);
    for (int st = 0; st < 2; ++st) {
      mbar_init(full_k + 8 * st, 1);
      mbar_init(full_v + 8 * st, 1);
      mbar_init(empty_k + 8 * st, FA_CONSUMER_WARPS);
      mbar_init(empty_v + 8 * st, FA_CONSUMER_WARPS);
    }
    mbar_init_fence();
  }
  __syncthreads(); /* the barriers exist */

  if (threadIdx.x < 128) {
    setmaxnreg_dec_24();
    if (threadIdx.x < 32)
      producer_load(&tm_q, &tm_k, &tm_v, sQ_a, sK_a, sV_a, bar_q, full_k, full_v, empty_k, empty_v,
                    n_tiles, h, kvh, q0, b);
  } else {
    setmaxnreg_inc_240();
    const int wg = (threadIdx.x >> 7) - 1; /* rows 64 wg .. 64 wg + 63 of the tile */
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int wr0 = wg * L05_WG_ROWS + warp * 16;
    const size_t q_stride = (size_t)heads * HEAD_DIM;
    const int diag = seq_kv - seq_q;
    const uint32_t q_base = sQ_a + wg * L05_WG_ROWS * 128;
    const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, FA_BC, causal);
    scale_log2 *= dq[(size_t)bh * n_q_tiles + q_tile];
    /* The descales of the 128-key tiles the block reads (the last KV tile's second half may be
     * past the keys: it has no entry and its scores are masked). */
    const int n_half = min(2 * n_tiles, n_kv_tiles);
    const float2 *dkv_row = dkv + ((size_t)b * kv_heads + kvh) * n_kv_tiles;
    for (int t = threadIdx.x - 128; t < n_half; t += 256) sc[t] = dkv_row[t];
    named_bar_sync(3, 256); /* the table is in, for both consumer warpgroups */
    mbar_wait(bar_q, 0);

    float acc[FA_NO];
    float row_m[2], row_l[2]; /* [row g or g + 8]; m in log2 units */
#pragma unroll
    for (int i = 0; i < FA_NO; ++i) acc[i] = 0.f;
    row_m[0] = row_m[1] = -INFINITY;
    row_l[0] = row_l[1] = 0.f;

    for (int j = 0; j < n_tiles; ++j) {
      const int st = j & 1;
      const uint32_t parity = (j >> 1) & 1; /* l05_full_parity(j, 2) */
      const int k0 = j * FA_BC;
      /* S, P and P V live inside one tile: declared here, none is carried around the loop, which
       * is what leaves room for 256 keys. */
      float s[FA_NS];
      mbar_wait(full_k + 8 * st, parity); /* K_j has landed */
      wgmma_fence();
      issue_s(s, q_base, sK_a + st * FA_TILE_BYTES);
      wgmma_commit();
      wgmma_wait0();
      reg_fence(s, FA_NS);
      if (lane == 0) mbar_arrive(empty_k + 8 * st); /* my warp is done with K_j */

      const float2 d0 = sc[2 * j];
      const float2 d1 = 2 * j + 1 < n_half ? sc[2 * j + 1] : d0;
      const float c0 = scale_log2 * d0.x, c1 = scale_log2 * d1.x; /* each half's scale */
      if (j >= n_unmasked) { /* the diagonal tiles and a last tile cut short by seq_kv */
#pragma unroll
        for (int i = 0; i < FA_NS; ++i) {
          const int row = q0 + wr0 + g + ((i >> 1) & 1) * 8;
          const int col = k0 + (i >> 2) * 8 + t4 * 2 + (i & 1);
          if (col >= seq_kv || (causal && col > row + diag)) s[i] = -INFINITY;
        }
      }
      /* Each half's row maxima as a tree (s[64 h + 4 nt + e]: row g + 8 (e / 2), column 128 h + 8
       * nt + 2 t4 + e % 2), scaled by the half's scale, then the quad's shuffles. */
      float mh[2][2];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
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
      /* V's two descales: r_h = dv_h / dv_max = 2^e_h, e_h <= 0 (at least -64: a half that much
       * smaller than the other rounds to 0 in e4m3 either way). */
      const float dv_max = fmaxf(d0.y, d1.y);
      const int e_max = exponent_of(dv_max);
      const int e0 = max(exponent_of(d0.y) - e_max, -64), e1 = max(exponent_of(d1.y) - e_max, -64);
      const float inv_r0 = __int_as_float((127 - e0) << 23); /* 1 / r_h, exact */
      const float inv_r1 = __int_as_float((127 - e1) << 23);
      float alpha[2], off0[2], off1[2];
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const float m_new = fmaxf(row_m[hf], mx[hf]);
        const float m_use = m_new == -INFINITY ? 0.f : m_new; /* nothing visible yet */
        alpha[hf] = fast_exp2(row_m[hf] - m_use);
        row_m[hf] = m_new;
        off0[hf] = (float)e0 - m_use; /* the exponent's offset for each half */
        off1[hf] = (float)e1 - m_use;
      }
      mbar_wait(full_v + 8 * st, parity); /* V_j has landed */

      /* My turn at the exponentials. */
      const float zero = wg == 1 ? turn_wait() : 0.f;
      const float cz0 = c0 + zero, cz1 = c1 + zero;
      float sum[4] = {0.f, 0.f, 0.f, 0.f}; /* [row][half] */
#pragma unroll
      for (int i = 0; i < FA_NS; ++i) {
        const int hh = i >> 6, r = (i >> 1) & 1;
        const float p = fast_exp2(fmaf(s[i], hh ? cz1 : cz0, hh ? off1[r] : off0[r]));
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
      pack_p(s, pa);
      if (wg == 0) turn_done(pa); /* warpgroup 1's turn */

      float pv[FA_NO];
      wgmma_fence();
      issue_pv(pv, pa, sV_a + st * FA_TILE_BYTES);
      wgmma_commit();
      wgmma_wait0();
      reg_fence(pv, FA_NO);
      if (lane == 0) mbar_arrive(empty_v + 8 * st); /* ... and with V_j */
#pragma unroll
      for (int i = 0; i < FA_NO; ++i) acc[i] = fmaf(pv[i], dv_max, acc[i]);
    }
    store_o(o, lse, acc, row_m, row_l, q0, wr0, g, t4, seq_q, q_stride, b, h, bh);
  }
}

/** The launcher, l05_fp8w_attention(): version 7's tensor maps with K's box 256 keys long, then
 * one block per (Q tile, head, batch). */
extern "C" cudaError_t l05_fp8w_attention(const void *workspace, size_t workspace_bytes, void *o,
                                          float *lse, int batch, int heads, int kv_heads, int seq_q,
                                          int seq_kv, int dim, int causal, float scale,
                                          cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  if (dim != HEAD_DIM) return cudaErrorInvalidValue;
  const l05_fp8_layout l = l05_fp8_layout_of(batch, heads, kv_heads, seq_q, seq_kv, dim);
  if (!workspace || workspace_bytes < l.bytes) return cudaErrorInvalidValue;
  const int n_q_tiles = attn_cdiv(seq_q, FA_BR);
  const long long blocks = (long long)n_q_tiles * batch * heads;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  const unsigned char *ws = (const unsigned char *)workspace;
  CUtensorMap tm_q, tm_k, tm_v;
  const unsigned long long d = HEAD_DIM;
  const unsigned long long q_size[4] = {d, (unsigned long long)heads, (unsigned long long)seq_q,
                                        (unsigned long long)batch};
  const unsigned long long q_stride[3] = {d, heads * d, seq_q * heads * d};
  const unsigned q_box[4] = {HEAD_DIM, 1, FA_BR, 1}; /* rows past the end arrive as zeros */
  const unsigned long long k_size[4] = {d, (unsigned long long)kv_heads, (unsigned long long)seq_kv,
                                        (unsigned long long)batch};
  const unsigned long long k_stride[3] = {d, kv_heads * d, seq_kv * kv_heads * d};
  const unsigned k_box[4] = {HEAD_DIM, 1, FA_BC, 1};
  const unsigned long long pad = (unsigned long long)l.seq_pad;
  const unsigned long long v_size[4] = {pad, d, (unsigned long long)kv_heads,
                                        (unsigned long long)batch};
  const unsigned long long v_stride[3] = {pad, d * pad, kv_heads * d * pad};
  const unsigned v_box[4] = {FA_HB, HEAD_DIM, 1, 1}; /* a panel past seq_pad arrives as zeros */
  ATTN_TRY(l05_tensor_map_u8(&tm_q, ws + l.q, q_size, q_stride, q_box));
  ATTN_TRY(l05_tensor_map_u8(&tm_k, ws + l.k, k_size, k_stride, k_box));
  ATTN_TRY(l05_tensor_map_u8(&tm_v, ws + l.vt, v_size, v_stride, v_box));
  const size_t smem_bytes = FA_SMEM_BYTES + 8 * (size_t)l.kv_tiles;
  if (smem_bytes > FA_SMEM_MAX) return cudaErrorInvalidValue; /* more than 1.3 M keys */
  ATTN_TRY(cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smem_bytes));
  FA_KERNEL<<<(unsigned)blocks, FA_THREADS, smem_bytes, stream>>>(
      tm_q, tm_k, tm_v, (attn_bf16 *)o, lse, heads, kv_heads, seq_q, seq_kv, causal,
      scale * FA_LOG2E, n_q_tiles, l.kv_tiles, (const float *)(ws + l.dq),
      (const float2 *)(ws + l.dkv));
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

/** Version 10's workspace: version 7's (the bench finds every FP8 version's four entry points by
 * its prefix). */
extern "C" size_t l05_fp8w_workspace_bytes(int batch, int heads, int kv_heads, int seq_q,
                                           int seq_kv, int dim) {
  return l05_fp8t_workspace_bytes(batch, heads, kv_heads, seq_q, seq_kv, dim);
}

/** Version 10's conversion: version 7's. */
extern "C" cudaError_t l05_fp8w_quantize(const void *q, const void *k, const void *v, int batch,
                                         int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                                         void *workspace, size_t workspace_bytes,
                                         cudaStream_t stream) {
  return l05_fp8t_quantize(q, k, v, batch, heads, kv_heads, seq_q, seq_kv, dim, workspace,
                           workspace_bytes, stream);
}

/** Version 7's conversion, then this kernel (what the harness times for version 10). */
extern "C" cudaError_t l05_fp8w_forward(const void *q, const void *k, const void *v, void *o,
                                        float *lse, int batch, int heads, int kv_heads, int seq_q,
                                        int seq_kv, int dim, int causal, float scale,
                                        void *workspace, size_t workspace_bytes,
                                        cudaStream_t stream) {
  ATTN_TRY(l05_fp8t_quantize(q, k, v, batch, heads, kv_heads, seq_q, seq_kv, dim, workspace,
                             workspace_bytes, stream));
  return l05_fp8w_attention(workspace, workspace_bytes, o, lse, batch, heads, kv_heads, seq_q,
                            seq_kv, dim, causal, scale, stream);
}
