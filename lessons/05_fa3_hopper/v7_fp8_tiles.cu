// clang-format off
/** @file
 * @brief Version 7: a scale per tile. Version 6's kernel with one power-of-two scale per tile of
 * 128 rows of Q, K and V instead of one per tensor, so that the conversion runs in one pass.
 *
 * What changed: the conversion (fp8_quant_tiles.cu) is one kernel in which each block owns one tile
 * (128 rows of one head of Q, or 128 keys of one KV head of K or of V): it loads the tile, takes its
 * largest |x|, and writes it in e4m3 with the power of two f that maps that maximum into (224, 448]
 * (V transposed and permuted as in version 6), and the tile's descale 1 / f beside it. Version 6
 * needed every tensor's maximum before it could write one value: two reads of Q, K and V and three
 * launches. The kernel reads three descales: its Q tile's once, and each KV tile's K and V descales
 * from a table in shared memory that the consumers fill once per block while Q and the first tiles
 * are on their way (a load from global memory in the loop put its latency on the turn). K's goes
 * into the tile's softmax scale (one multiply per tile), V's into the fold, O = (O + dv PV) alpha,
 * an fma where version 6 had an add: no instruction more per score.
 *
 * Why: at the default shape version 6 spends about a third of its time converting (0.30 of 0.96 ms
 * on an H100, h100-l05fp8-2026-11-26): a user pays the conversion on every call, and it reads and
 * writes 5 bytes per value where 3 would do. A scale per tile also fits each tile's own range: a
 * head or a stretch of tokens with small values keeps its significant bits instead of sliding into
 * e4m3's subnormals under another tile's maximum. Powers of two make the descales exact: a product
 * of them rounds nothing, unlike 448 / amax.
 *
 * Prediction: the conversion at 80-90% of the HBM bandwidth counting 3 bytes per value (at the
 * default shape 302 MB: 90-100 us on an H100, 65-75 us on an H200, against about 300 us), the
 * kernel within 2% of version 6's (three loads per KV tile), so end to end about 1.07x version 5 at
 * the default shape on an H100 where version 6 is 0.85x; the error at most version 6's.
 *
 * Measured: NVIDIA H100, 2026-11-26 (docs/results/h100-l05-2026-11-26): the conversion at
 * 2949-3054 GB/s counting 3 bytes a value, 88-91% of HBM (version 6's: 1557-1577 GB/s, 46-47%),
 * 0.10 ms at the default shape against 0.19; `./run` at the default shape: 707.5 TFLOP/s, 1.02x
 * version 5 (version 6: 0.94x), 1.00-1.04x in the three archived runs of the day. The kernel
 * alone 0.95-0.97x version 6's (v7-kernel-abab.log), below the prediction: 1.4% more instructions
 * and 2% more cycles per instruction (Nsight Compute, h100-l05c-2026-11-26/ncu-v6-v7.log; README:
 * "The conversion in one pass"). Error: version 6's, 5.2e-02 relative L2 against float64 on the
 * bench's rows without the mask; on a head 2^-14 smaller than the others, 2.7e-02 where version
 * 6's is 1.1e-01.
 *
 * Run: `./run 7` (dim 128, 16 heads, batch 4, seq 4096; the time includes the conversion).
 */
// clang-format on
/** Built once, for head dimension 128 (FP8 at dim 64 would need the 64-byte swizzle: not in this
 * lesson). */
#define HEAD_DIM 128

#include <cuda.h>
#include <limits.h>
#include <math.h>

#include "attn_causal.h"
#include "attn_cuda.cuh"
#include "fa3_hopper.h"
#include "fp8_workspace.cuh"
#include "hopper.cuh"

#define FA_BR L05_BR                     /**< 128 query rows per block */
#define FA_BC L05_BC                     /**< 128 keys per KV tile */
#define FA_THREADS 384                   /**< a producer warpgroup and two consumers */
#define FA_NS (FA_BC / 2)                /**< S accumulator floats per thread: 64 x Bc / 128 */
#define FA_NO (HEAD_DIM / 2)             /**< O accumulator floats per thread */
#define FA_KS (HEAD_DIM / 32)            /**< k-steps of S = Q K^T (32 deep in FP8) */
#define FA_PK (FA_BC / 32)               /**< k-steps of O += P V */
#define FA_Q_BYTES (FA_BR * HEAD_DIM)    /**< the Q tile, one byte per value */
#define FA_TILE_BYTES (FA_BC * HEAD_DIM) /**< one K or V^T tile buffer */
/** Dynamic shared memory: Q, two K and two V stages, nine mbarriers (Q; full and empty for K and V
 * of each stage), and 1024 bytes to align the start to a swizzle atom; the launch adds the descale
 * table, 8 bytes per KV tile. */
#define FA_SMEM_BYTES (FA_Q_BYTES + 4 * FA_TILE_BYTES + 128 + 1024)
/** The most dynamic shared memory a block may have on sm_90 (227 KB): the table of 8 bytes per KV
 * tile fits up to (232448 - FA_SMEM_BYTES) / 8 = 18800 tiles, 2.4 M keys. */
#define FA_SMEM_MAX 232448
/** Arrivals that release a stage: one per consumer warp. */
#define FA_CONSUMER_WARPS 8
/** log2(e): exp(x) = 2^(x log2 e), so the scale folds it in and ex2 does the rest. */
#define FA_LOG2E 1.4426950408889634f
/** ln(2): turns the base-2 log-sum-exp back into the natural one. */
#define FA_LN2 0.6931471805599453f

/** Token pasting, after expanding `b`. */
#define FA_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FA_CAT(a, b) FA_CAT_(a, b)
/** The kernel. */
#define FA_KERNEL l05_fp8t_kernel_d128
/** The kernel's launcher, l05_fp8t_attention(), declared in fa3_hopper.h. */
#define FA_LAUNCH l05_fp8t_attention
/** S = Q K^T for one k-step: N = FA_BC keys, 32 deep. */
#define FA_WGMMA_S wgmma_fp8_ss_n128
/** O += P V for one k-step: N = HEAD_DIM, 32 keys deep. */
#define FA_WGMMA_O wgmma_fp8_rs_n128

/** The producer's thread: announce a tile's bytes on `bar`, then copy it: one TMA box of 128
 * bytes x `rows`, at coordinates (c0, c1, c2, c3), innermost first. */
static __device__ __forceinline__ void tma_tile(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                                int rows, int c0, int c1, int c2, int c3) {
  mbar_arrive_expect_tx(bar, rows * 128);
  tma_load_4d(dst, map, bar, c0, c1, c2, c3);
}

/** S = Q K^T for one KV tile, issued (not waited for): FA_KS wgmma reading my warpgroup's rows
 * of Q at `q_base` and the K tile at `k_tile`. */
static __device__ __forceinline__ void issue_s(float s[FA_NS], uint32_t q_base, uint32_t k_tile) {
#pragma unroll
  for (int ks = 0; ks < FA_KS; ++ks) {
    const uint32_t col = ks * 32; /* bytes along the row: one panel holds all 128 values */
    const uint64_t da = wgmma_desc(q_base + col, 16, 1024);
    const uint64_t db = wgmma_desc(k_tile + col, 16, 1024);
    FA_WGMMA_S(s, da, db, ks > 0);
  }
}

/** PV = P V for one KV tile into a fresh accumulator, issued (not waited for): P from registers,
 * the V^T tile at `v_tile` (rows: the head dimension; 128 permuted keys each) through a K-major
 * descriptor. Not O += P V: the FP8 tensor cores add into their accumulator with fewer bits than
 * fp32 (the low bits of a small addend are lost against a large sum), so a tile's product is
 * formed alone and added to O in fp32 by fold_pv(). */
static __device__ __forceinline__ void issue_pv(float pv[FA_NO], const uint32_t pa[FA_PK][4],
                                                uint32_t v_tile) {
#pragma unroll
  for (int kk = 0; kk < FA_PK; ++kk) {
    const uint64_t dv = wgmma_desc(v_tile + kk * 32, 16, 1024);
    FA_WGMMA_O(pv, pa[kk], dv, kk > 0);
  }
}

/** The softmax of one S tile on my 2 rows (the mask first when `masked`): P in place of S, the
 * running max and sum updated, and the factor O must be rescaled by returned in `alpha`, without
 * touching O, which a wgmma may still be accumulating. Rows q0 + wr0 + g and + 8, keys from k0. */
static __device__ __forceinline__ void softmax_p(float s[FA_NS], float row_m[2], float row_l[2],
                                                 float alpha_out[2], int masked, int q0, int wr0,
                                                 int k0, int g, int t4, int seq_kv, int causal,
                                                 int diag, float scale_log2) {
  /* The mask, element by element, only on the tiles that need it (the same for the whole
   * block: no divergence): the diagonal tiles and a last tile cut short by seq_kv. The
   * accumulator's layout is mma.sync's, per n8 column block: s[4 nt + e] is row g + 8 (e / 2),
   * column 8 nt + 2 t4 + e % 2 of my warp's 16 rows. */
  if (masked) {
#pragma unroll
    for (int nt = 0; nt < FA_BC / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int row = q0 + wr0 + g + (e >> 1) * 8;
        int col = k0 + nt * 8 + t4 * 2 + (e & 1);
        if (col >= seq_kv || (causal && col > row + diag)) s[4 * nt + e] = -INFINITY;
      }
    }
  }

  /* Online softmax on my 2 rows, both at once, unlike version 5's: the max of each row as a tree
   * over my scores (4 levels, not a chain of 16), the two rows' quad shuffles side by side, then
   * one stream of exponentials into four partial sums, so that no long chain of dependent
   * instructions stands between S and P. With its GEMMs half as long, the softmax is most of an
   * FP8 tile, and this paid here (1-10% on the kernel alone) where it did not in version 5. */
  float m0[FA_BC / 8], m1[FA_BC / 8];
#pragma unroll
  for (int nt = 0; nt < FA_BC / 8; ++nt) {
    m0[nt] = fmaxf(s[4 * nt], s[4 * nt + 1]);
    m1[nt] = fmaxf(s[4 * nt + 2], s[4 * nt + 3]);
  }
#pragma unroll
  for (int w = FA_BC / 16; w >= 1; w /= 2) /* constant bounds, so that the arrays stay registers */
#pragma unroll
    for (int i = 0; i < FA_BC / 16; ++i)
      if (i < w) {
        m0[i] = fmaxf(m0[i], m0[i + w]);
        m1[i] = fmaxf(m1[i], m1[i + w]);
      }
  float mx[2] = {m0[0], m1[0]};
#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    const float a = __shfl_xor_sync(0xffffffffu, mx[0], off);
    const float b = __shfl_xor_sync(0xffffffffu, mx[1], off);
    mx[0] = fmaxf(mx[0], a);
    mx[1] = fmaxf(mx[1], b);
  }
  float neg_m[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const float m_new = fmaxf(row_m[hf], mx[hf] * scale_log2);
    const float m_use = m_new == -INFINITY ? 0.f : m_new; /* nothing visible yet */
    alpha_out[hf] = fast_exp2(row_m[hf] - m_use);
    row_m[hf] = m_new;
    neg_m[hf] = -m_use;
  }
  float sum[4] = {0.f, 0.f, 0.f, 0.f}; /* [row][even or odd column block] */
#pragma unroll
  for (int nt = 0; nt < FA_BC / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float p = fast_exp2(fmaf(s[4 * nt + e], scale_log2, neg_m[e >> 1]));
      s[4 * nt + e] = p;
      sum[(e >> 1) * 2 + (nt & 1)] += p;
    }
  row_l[0] = row_l[0] * alpha_out[0] + (sum[0] + sum[1]);
  row_l[1] = row_l[1] * alpha_out[1] + (sum[2] + sum[3]);
}

/** Once the previous tile's P V has landed: O = (O + dv PV) * alpha, in fp32 (dv: that tile's V
 * descale; the rescale of this tile's max and the previous tile's product in one step). */
static __device__ __forceinline__ void fold_pv(float acc[FA_NO], const float pv[FA_NO],
                                               const float alpha[2], float dv) {
#pragma unroll
  for (int dt = 0; dt < HEAD_DIM / 8; ++dt) {
    acc[4 * dt] = fmaf(pv[4 * dt], dv, acc[4 * dt]) * alpha[0];
    acc[4 * dt + 1] = fmaf(pv[4 * dt + 1], dv, acc[4 * dt + 1]) * alpha[0];
    acc[4 * dt + 2] = fmaf(pv[4 * dt + 2], dv, acc[4 * dt + 2]) * alpha[1];
    acc[4 * dt + 3] = fmaf(pv[4 * dt + 3], dv, acc[4 * dt + 3]) * alpha[1];
  }
}

/** P packed into `pa` as the FP8 wgmma's register A fragment for the next turn. */
static __device__ __forceinline__ void pack_p(const float s[FA_NS], uint32_t pa[FA_PK][4]) {
  /* 32 keys per k-step: S blocks 4 kk .. 4 kk + 3 (8 columns each). a[0] (row g) takes columns
   * 2 t4, 2 t4 + 1 of blocks 0 and 1, a[2] those of blocks 2 and 3; a[1], a[3] the same of row g
   * + 8. V^T's keys are stored in this order (l05_fp8_key()). */
#pragma unroll
  for (int kk = 0; kk < FA_PK; ++kk) {
    const float *b = s + 16 * kk;
    pa[kk][0] = pack_e4m3x4(b[0], b[1], b[4], b[5]);
    pa[kk][1] = pack_e4m3x4(b[2], b[3], b[6], b[7]);
    pa[kk][2] = pack_e4m3x4(b[8], b[9], b[12], b[13]);
    pa[kk][3] = pack_e4m3x4(b[10], b[11], b[14], b[15]);
  }
}

/** The producer's warp: Q once, then KV tile j into stage j % 2 of the ring as soon as both
 * consumers have released that stage (its empty barrier), its bytes announced on the stage's full
 * barrier. The whole warp waits on the barriers; lane 0 issues the copies. The barriers of a ring
 * are 8 bytes apart: [stage 0, stage 1]. */
static __device__ __forceinline__ void producer_load(
    const CUtensorMap *tm_q, const CUtensorMap *tm_k, const CUtensorMap *tm_v, uint32_t sQ_a,
    uint32_t sK_a, uint32_t sV_a, uint32_t bar_q, uint32_t full_k, uint32_t full_v,
    uint32_t empty_k, uint32_t empty_v, int n_tiles, int h, int kvh, int q0, int b,
    unsigned long long *tl) {
  const int leader = threadIdx.x == 0;
  if (leader) tma_tile(sQ_a, tm_q, bar_q, FA_BR, 0, h, q0, b);
  for (int j = 0; j < n_tiles; ++j) {
    const int st = j & 1;                       /* l05_stage(j, 2) */
    const uint32_t parity = ((j >> 1) & 1) ^ 1; /* l05_empty_parity(j, 2) */
    const uint32_t off = st * FA_TILE_BYTES;
    mbar_wait(empty_k + 8 * st, parity);
    if (leader) tma_tile(sK_a + off, tm_k, full_k + 8 * st, FA_BC, 0, kvh, j * FA_BC, b);
    TL_STAMP(tl, 0, j, L05_TL_ISSUE_K);
    mbar_wait(empty_v + 8 * st, parity);
    if (leader) tma_tile(sV_a + off, tm_v, full_v + 8 * st, HEAD_DIM, j * FA_BC, 0, kvh, b);
    TL_STAMP(tl, 0, j, L05_TL_ISSUE_V);
    __syncwarp();
  }
}

/** After the last tile: the quad's 4 partial row sums, then O / l in bf16 (V's descales are in O
 * already) and the log-sum-exp of my 2 rows, q0 + wr0 + g and + 8 (rows past seq_q are not
 * written). */
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

/* The loop on a whiteboard, in the papers' names: Tr = ceil(seq_q / Br) Q tiles, one per block;
 * Q tile i sees KV tiles 0 .. Tc-1 and needs no mask on the first Tu (common/attn_causal.h).
 *
 *   block (i, head, batch), i from the last Q tile down when causal (the heaviest first):
 *     Tc = attn_kv_tiles_visited(i Br, Br, seq_q, seq_kv, Bc, causal)
 *     Tu = attn_kv_tiles_unmasked(i Br, seq_q, seq_kv, Bc, causal)
 *     warpgroup 0 produces; warpgroups 1, 2 consume 64 of the Br = 128 rows each; Bc = 128, dim 128
 *     thread 0: mbarriers bar_q, full_k/v[2] (1 arrival), empty_k/v[2] (8 arrivals); __syncthreads
 *   producer warp (producer_load), setmaxnreg 24:   for j in 0 .. Tc-1, stage st = j % 2:
 *     mbar_wait(empty_k[st]); TMA K_j -> stage st on full_k[st]     (no wait on the first pass)
 *     mbar_wait(empty_v[st]); TMA V_j -> stage st on full_v[st]     (Q_i first, on bar_q)
 *   consumers, setmaxnreg 240: table[t] = {dk_t, dv_t} for t < Tc into shared memory; bar.sync(3)
 *   consumer warpgroup c: mbar_wait(bar_q); m = -inf, l = 0, O = 0
 *     the scale of tile j's softmax: scale log2(e) dq_i dk_j (the descales of Q_i's and K_j's
 * tiles) turns: bar.sync(mine) ... bar.arrive(other) on named barriers 1 + c and 2 - c; c = 0 first
 *     turn 0:  bar.sync(mine); S_0 = Q_i K_0^T; commit; bar.arrive(other); wait_group 0
 *              P_0, alpha = softmax_p(S_0); pack_p       m, l; then P_0 packed to e4m3
 *     for j in 1 .. Tc-1, the tiles j < Tu, then the rest: (full_k[j % 2], full_v[(j-1) % 2])
 *       bar.sync(mine)                                   my turn at the tensor cores
 *       S_j = Q_i K_j^T; commit;  PV = P_{j-1} V_{j-1}; commit      e4m3; PV from zero
 *       bar.arrive(other)                                your turn
 *       wait_group 1; arrive(empty_k)                    S_j is done, P V may still run
 *       P_j, alpha = softmax_p(S_j)                      the mask first if j >= Tu; O untouched
 *       wait_group 0; arrive(empty_v)                    P V is done
 *       fold_pv: O = (O + dv_{j-1} PV) alpha, in fp32;  pack_p: P_j packed to e4m3
 *     last turn: bar.sync(mine); PV = P_{Tc-1} V_{Tc-1}; commit; wait_group 0; O += dv_{Tc-1} PV
 *     store_o: l = sum over the quad;  O_i = O / l;  lse_i = (m + log2 l) ln 2
 */
/** One block per (Q tile of FA_BR = 128 rows, head, batch), bf16 in and out: warpgroup 0 loads,
 * warpgroups 1 and 2 compute 64 rows each and write them with their log-sum-exp. */
static __global__ void __launch_bounds__(FA_THREADS, 1)
    FA_KERNEL(const __grid_constant__ CUtensorMap tm_q,  // Q e4m3, boxes of 128 x FA_BR
              const __grid_constant__ CUtensorMap tm_k,  // K e4m3, boxes of 128 x FA_BC
              const __grid_constant__ CUtensorMap tm_v,  // V^T e4m3, boxes of 128 keys x dim
              attn_bf16 *__restrict__ o,                 // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,                   // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
              int n_q_tiles, int n_kv_tiles,
              const float *__restrict__ dq,           // Q's descale per (batch, head, Q tile)
              const float2 *__restrict__ dkv,         // {K's, V's} per (batch, kv head, KV tile)
              unsigned long long *__restrict__ tl) {  // timeline stamps (L05_TIMELINE) or NULL
  extern __shared__ unsigned char smem[];
  /* The swizzle repeats every 1024 bytes, and both TMA and wgmma apply it from address bits:
   * tiles start on a 1024-byte boundary. */
  const uint32_t sQ_a = (smem_u32(smem) + 1023u) & ~1023u;   /* [panel][FA_BR][64] */
  const uint32_t sK_a = sQ_a + FA_Q_BYTES;                   /* [2][panel][FA_BC][64] */
  const uint32_t sV_a = sK_a + 2 * FA_TILE_BYTES;            /* [2][panel][FA_BC][64] */
  const uint32_t bar_q = sV_a + 2 * FA_TILE_BYTES;           /* Q landed */
  const uint32_t full_k = bar_q + 8, full_v = bar_q + 24;    /* [2]: the stage's tile landed */
  const uint32_t empty_k = bar_q + 40, empty_v = bar_q + 56; /* [2]: both consumers are done */
  /* [KV tile]: the descales {K's, V's} of the block's tiles, after the barriers */
  float2 *const sc = (float2 *)(smem + (bar_q + 128 - smem_u32(smem)));

  /* Heavy first: a head's Q tiles from the last (sees the most keys) to the first. */
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
  __syncthreads(); /* the barriers exist: the last block-wide barrier of the kernel */

  /* The roles are the two branches of one if/else, as setmaxnreg needs: ptxas then knows each
   * branch's register budget (24 in the producer, 240 in the consumers). */
  if (threadIdx.x < 128) {
    /* The producer warpgroup: registers back to the pool; its warp 0 walks the tiles (the whole
     * warp waits on the barriers, lane 0 issues the copies), warps 1-3 have nothing to do. */
    setmaxnreg_dec_24();
    if (threadIdx.x < 32)
      producer_load(&tm_q, &tm_k, &tm_v, sQ_a, sK_a, sV_a, bar_q, full_k, full_v, empty_k, empty_v,
                    n_tiles, h, kvh, q0, b, tl);
  } else {
    /* A consumer warpgroup. */
    setmaxnreg_inc_240();
    const int wg = (threadIdx.x >> 7) - 1; /* rows 64 wg .. 64 wg + 63 of the tile */
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31; /* warp in the warpgroup */
    const int g = lane >> 2, t4 = lane & 3;       /* quad (row) and lane in quad (column pair) */
    const int wr0 = wg * L05_WG_ROWS + warp * 16; /* my warp's first row in the tile */
    const size_t q_stride = (size_t)heads * HEAD_DIM;
    const int diag = seq_kv - seq_q;
    const uint32_t q_base = sQ_a + wg * L05_WG_ROWS * 128; /* my warpgroup's rows of Q */
    const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, FA_BC, causal);
    /* The scales back, tile by tile: S_j is (Q/dq)(K_j/dk_j)^T, so tile j's softmax scale takes
     * dq dk_j; P_j V_j takes dv_j in the fold. */
    scale_log2 *= dq[(size_t)bh * n_q_tiles + q_tile];
    /* The descales {K's, V's} of the block's KV tiles into a table in shared memory, by the 256
     * consumer threads together, while Q and K_0 are on their way: one load per tile for the
     * block, none in the loop below, where its latency would sit on the turn. */
    const float2 *dkv_row = dkv + ((size_t)b * kv_heads + kvh) * n_kv_tiles;
    for (int t = threadIdx.x - 128; t < n_tiles; t += 256) sc[t] = dkv_row[t];
    named_bar_sync(3, 256); /* the table is in, for both consumer warpgroups */
    mbar_wait(bar_q, 0);

    float acc[FA_NO];
    float pv[FA_NO];          /* one tile's P V, added to O in fp32 */
    float row_m[2], row_l[2]; /* [row g or g + 8]; m in log2 units */
#pragma unroll
    for (int i = 0; i < FA_NO; ++i) acc[i] = 0.f;
    row_m[0] = row_m[1] = -INFINITY;
    row_l[0] = row_l[1] = 0.f;

    /* Ping-pong, as in version 4, and inside a turn the softmax of S_j runs while this
     * warpgroup's own P_{j-1} V_{j-1} is still on the tensor cores: S_j and P V are two commit
     * groups, wait_group 1 returns when the first is done. O is rescaled, and P_j packed over the
     * registers P V reads, only after wait_group 0.
     * Ping-pong: the warpgroups take turns at the tensor cores through two named barriers (1:
     * warpgroup 0's turn, 2: warpgroup 1's). A turn issues S_j = Q K_j^T together with the
     * previous tile's P_{j-1} V_{j-1}, hands the turn over, and only then waits: the softmax of S_j
     * runs while the other warpgroup's GEMMs use the tensor cores. The first turn has no P V and
     * the last no S; they are peeled off the loop, so that no wgmma sits behind a branch (ptxas
     * would serialise them, C7520). Warpgroup 0 goes first (warpgroup 1 arrives once up front);
     * warpgroup 1 skips its last hand-over, which nobody waits for, so both barriers end
     * balanced. */
    const int my_bar = 1 + wg, other_bar = 2 - wg;
    uint32_t pa[FA_PK][4]; /* P_{j-1}, packed, waiting for its turn */
    float s[FA_NS];
    if (n_tiles > 0) {
      if (wg == 1) named_bar_arrive(1, 256);
      mbar_wait(full_k, 0); /* K_0 has landed */
      TL_STAMP(tl, 1 + wg, 0, L05_TL_K_READY);
      named_bar_sync(my_bar, 256);
      TL_STAMP(tl, 1 + wg, 0, L05_TL_TURN);
      wgmma_fence();
      issue_s(s, q_base, sK_a);
      wgmma_commit();
      named_bar_arrive(other_bar, 256);
      wgmma_wait0();
      reg_fence(s, FA_NS);
      TL_STAMP(tl, 1 + wg, 0, L05_TL_S_READY);
      if (lane == 0) mbar_arrive(empty_k); /* my warp is done with K_0 */
      const float dk_0 = sc[0].x;
      float alpha[2];
      softmax_p(s, row_m, row_l, alpha, 0 >= n_unmasked, q0, wr0, 0, g, t4, seq_kv, causal, diag,
                scale_log2 * dk_0);
      TL_STAMP(tl, 1 + wg, 0, L05_TL_SOFTMAX);
      pack_p(s, pa); /* O is still zero: nothing to rescale */
    }
    /* Tiles 1 .. n_tiles - 1 in two runs, unmasked then masked, as in version 5: no branch around
     * the mask between the two waits. */
    const int j_mid = max(1, min(n_tiles, n_unmasked));
#pragma unroll
    for (int masked = 0; masked < 2; ++masked)
      for (int j = masked ? j_mid : 1; j < (masked ? n_tiles : j_mid); ++j) {
        const int st = j & 1, pst = st ^ 1;          /* stages of tiles j and j - 1 */
        const uint32_t parity = (j >> 1) & 1;        /* l05_full_parity(j, 2) */
        const uint32_t pparity = ((j - 1) >> 1) & 1; /* l05_full_parity(j - 1, 2) */
        mbar_wait(full_k + 8 * st, parity);          /* K_j has landed */
        mbar_wait(full_v + 8 * pst, pparity);        /* V_{j-1} has landed */
        const float dk_j = sc[j].x, dv_prev = sc[j - 1].y;
        TL_STAMP(tl, 1 + wg, j, L05_TL_K_READY);
        named_bar_sync(my_bar, 256); /* my turn */
        TL_STAMP(tl, 1 + wg, j, L05_TL_TURN);
        reg_fence(acc, FA_NO);
        wgmma_fence();
        issue_s(s, q_base, sK_a + st * FA_TILE_BYTES);
        wgmma_commit(); /* group 1: S_j */
        issue_pv(pv, pa, sV_a + pst * FA_TILE_BYTES);
        wgmma_commit();                   /* group 2: P_{j-1} V_{j-1} */
        named_bar_arrive(other_bar, 256); /* your turn */
        wgmma_wait1(); /* S_j is complete; P_{j-1} V_{j-1} may still be running */
        reg_fence(s, FA_NS);
        TL_STAMP(tl, 1 + wg, j, L05_TL_S_READY);
        if (lane == 0) mbar_arrive(empty_k + 8 * st); /* my warp is done with K_j */
        float alpha[2];
        softmax_p(s, row_m, row_l, alpha, masked, q0, wr0, j * FA_BC, g, t4, seq_kv, causal, diag,
                  scale_log2 * dk_j); /* under my own P V on the tensor cores */
        TL_STAMP(tl, 1 + wg, j, L05_TL_SOFTMAX);
        wgmma_wait0();
        reg_fence(pv, FA_NO);
        TL_STAMP(tl, 1 + wg, j, L05_TL_PV_DONE);
        if (lane == 0) mbar_arrive(empty_v + 8 * pst); /* ... and with V_{j-1} */
        fold_pv(acc, pv, alpha, dv_prev);
        pack_p(s, pa);
      }
    if (n_tiles > 0) {
      const int pst = (n_tiles - 1) & 1;
      mbar_wait(full_v + 8 * pst, ((n_tiles - 1) >> 1) & 1); /* the last V has landed */
      named_bar_sync(my_bar, 256);
      TL_STAMP(tl, 1 + wg, n_tiles, L05_TL_TURN);
      wgmma_fence();
      issue_pv(pv, pa, sV_a + pst * FA_TILE_BYTES);
      wgmma_commit();
      if (wg == 0) named_bar_arrive(other_bar, 256);
      wgmma_wait0();
      reg_fence(pv, FA_NO);
      const float one[2] = {1.f, 1.f};
      fold_pv(acc, pv, one, sc[n_tiles - 1].y);
      TL_STAMP(tl, 1 + wg, n_tiles, L05_TL_PV_DONE);
      if (lane == 0) mbar_arrive(empty_v + 8 * pst);
    }

    store_o(o, lse, acc, row_m, row_l, q0, wr0, g, t4, seq_q, q_stride, b, h, bh);
  }
}

/** The launcher, l05_fp8t_attention(): the three byte tensor maps over the workspace that
 * l05_fp8t_quantize() filled, then one block per (Q tile, head, batch). */
extern "C" cudaError_t FA_LAUNCH(const void *workspace, size_t workspace_bytes, void *o, float *lse,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                                 int causal, float scale, cudaStream_t stream) {
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
  const unsigned v_box[4] = {FA_BC, HEAD_DIM, 1, 1};
  ATTN_TRY(l05_tensor_map_u8(&tm_q, ws + l.q, q_size, q_stride, q_box));
  ATTN_TRY(l05_tensor_map_u8(&tm_k, ws + l.k, k_size, k_stride, k_box));
  ATTN_TRY(l05_tensor_map_u8(&tm_v, ws + l.vt, v_size, v_stride, v_box));
  const size_t smem_bytes = FA_SMEM_BYTES + 8 * (size_t)l.kv_tiles;
  if (smem_bytes > FA_SMEM_MAX) return cudaErrorInvalidValue; /* more than 2.4 M keys */
  ATTN_TRY(cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smem_bytes));
  FA_KERNEL<<<(unsigned)blocks, FA_THREADS, smem_bytes, stream>>>(
      tm_q, tm_k, tm_v, (attn_bf16 *)o, lse, heads, kv_heads, seq_q, seq_kv, causal,
      scale * FA_LOG2E, n_q_tiles, l.kv_tiles, (const float *)(ws + l.dq),
      (const float2 *)(ws + l.dkv), l05_timeline_get());
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
