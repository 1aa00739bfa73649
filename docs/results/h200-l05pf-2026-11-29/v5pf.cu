// clang-format off
/** @file
 * @brief Version 5: intra-warpgroup overlap. Inside a turn, the softmax of S_j runs while the
 * same warpgroup's P_{j-1} V_{j-1} is still on the tensor cores (FA3's two-stage pipeline).
 *
 * What changed: the turn of version 4 commits its two GEMMs as two groups, S_j first, and waits
 * with wait_group 1: it returns once S_j is done, with P_{j-1} V_{j-1} possibly still running.
 * The softmax is split in two: the exponentials, the running max and sum (softmax_p(), which leaves
 * O alone) go before wait_group 0; the rescale of O by alpha and the packing of P_j into the
 * registers the running GEMM reads (rescale_pack()) go after it.
 *
 * Why: in version 4 a warpgroup's turn is GEMMs then softmax, and the two only overlap across
 * warpgroups. Here the second GEMM of a turn, which is half its tensor-core work, also covers this
 * warpgroup's own softmax; the register cost is small, because P V reads P_{j-1} from registers
 * that stay untouched until it is done, and O is not touched at all.
 *
 * The loop runs in two parts, the tiles no row needs masked, then the masked ones, so that no
 * branch stands between the two waits: with the mask's branch inside the loop, ptxas put the
 * wait_group 0 where the branch's paths meet, ahead of every exponential, and the overlap did not
 * happen (the machine code, `cuobjdump --dump-sass`, is where to look: the lesson README's "Where
 * ptxas put the wait").
 *
 * Prediction: 5-10% over version 4 at dim 128; little at dim 64, where P V is the short GEMM.
 *
 * Measured: NVIDIA H200, 2026-11-25, batch 4, seq 4096 (docs/results/h200-l05c-2026-11-25): dim
 * 128: 682.7 TFLOP/s (causal 593.9), 1.07x version 4, inside the prediction; dim 64: 439.5 (causal
 * 387.6), 1.02x. The first run of the split loop, the same day (h200-l05b-2026-11-25): 690.2,
 * 1.08x. One loop with the mask's branch inside (h200-l05-2026-11-24): 660.9, 1.03x, and no
 * exponential under P V in the machine code. At the papers' shapes, level with cuDNN at dim 128
 * (not causal, seq 4k-16k): 0.99-1.08x and 0.97-0.99x in the two runs of the split loop,
 * 1.00-1.15x in eight more rounds; ahead of it with the mask (1.02-1.23x), in the same process on
 * the same tensors.
 *
 * At dim 128 the output leaves through shared memory: each consumer warpgroup writes its 64 rows of
 * O / l over its own rows of the Q tile (free once its last S is done), 128-byte swizzled, and its
 * first thread issues one TMA store per 64-column panel, where each thread issued 64 four-byte
 * stores to global memory before (version 11's store, the same idea). Measured: NVIDIA H200,
 * 2026-11-27, six rounds taking turns with the direct stores (o-through-q-tile-experiment.log in
 * docs/results/h200-l05e-2026-11-27): 1.007-1.022x at dim 128, seq 4k-16k, with and without the
 * mask, the output bit for bit the same; at dim 64 0.981-0.998x, so dim 64 keeps the direct
 * stores (FA_O_BY_TMA).
 *
 * A block's first loads leave at its entry: thread 0 issues Q and the first K and V tile as soon
 * as it has made the barriers, before the block-wide barrier and setmaxnreg, and the producer's
 * walk starts at tile 1. Stamped inside the blocks, version 5 spent 1.29 us from a block's entry to
 * Q landed at seq 2k (its fixed part, 2.86 us a block, is what trails cuDNN there: the lesson's
 * NOTES, "The block's fixed part"). Measured: NVIDIA H200, 2026-11-29, nine rounds taking turns
 * with the form before (ab-early.log in docs/results/h200-l05ea-2026-11-29): 1.009x at dim 128,
 * seq 2k, 1.012x with the mask, 1.006-1.009x at 4k, 1.002-1.003x at 8k-16k, 1.005x at dim 64, the
 * output bit for bit the same.
 *
 * Run: `./run 5` (dim 128, 16 heads, batch 4, seq 4096), `./run 5 --dim 64 --heads 32`.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <cuda.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "attn_causal.h"
#include "attn_cuda.cuh"
#include "fa3_hopper.h"
#include "hopper.cuh"

#define FA_BR L05_BR                         /**< 128 query rows per block */
#define FA_BC L05_BC                         /**< 128 keys per KV tile */
#define FA_THREADS 384                       /**< a producer warpgroup and two consumers */
#define FA_NS (FA_BC / 2)                    /**< S accumulator floats per thread: 64 x Bc / 128 */
#define FA_NO (HEAD_DIM / 2)                 /**< O accumulator floats per thread */
#define FA_KS (HEAD_DIM / 16)                /**< k-steps of S = Q K^T */
#define FA_PK (FA_BC / 16)                   /**< k-steps of O += P V */
#define FA_Q_BYTES (FA_BR * HEAD_DIM * 2)    /**< the Q tile */
#define FA_TILE_BYTES (FA_BC * HEAD_DIM * 2) /**< one K or V tile buffer */
/** 1 where O leaves through the Q tile and TMA stores (dim 128: measured faster), 0 where each
 * thread stores its own values (dim 64: measured faster there). */
#define FA_O_BY_TMA (HEAD_DIM == 128)
/** The named barriers of the O stores: FA_O_BAR + the consumer warpgroup's index. */
#define FA_O_BAR 3
/** Stages of the KV ring that overlap_turns() walks: 2 here; lesson 10's prefix pass, which streams
 * every tile from memory once, includes this file with 3. */
#ifndef FA_STAGES
#define FA_STAGES 2
#endif
#if FA_STAGES == 2
#define FA_STAGE(j) ((j)&1)             /**< tile j's stage: l05_stage(j, 2) */
#define FA_PHASE(j) (((j) >> 1) & 1)    /**< its full barrier's parity: l05_full_parity() */
#define FA_PREV_STAGE(st, j) ((st) ^ 1) /**< tile j - 1's stage, tile j's being st */
#else
#define FA_STAGE(j) ((int)((unsigned)(j) % FA_STAGES))
#define FA_PHASE(j) ((int)((unsigned)(j) / FA_STAGES) & 1)
#define FA_PREV_STAGE(st, j) FA_STAGE((j)-1)
#endif
/** Dynamic shared memory: Q, two K and two V stages, nine mbarriers (Q; full and empty for K and V
 * of each stage), and 1024 bytes to align the start to a swizzle atom. */
#define FA_SMEM_BYTES (FA_Q_BYTES + 4 * FA_TILE_BYTES + 128 + 1024)
/** Arrivals that release a stage: one per consumer warp. */
#define FA_CONSUMER_WARPS 8
/** 64-column panels of a row: one TMA box each. */
#define FA_PANELS (HEAD_DIM / 64)
/** log2(e): exp(x) = 2^(x log2 e), so the scale folds it in and ex2 does the rest. */
#define FA_LOG2E 1.4426950408889634f
/** ln(2): turns the base-2 log-sum-exp back into the natural one. */
#define FA_LN2 0.6931471805599453f

/** Token pasting, after expanding `b`. */
#define FA_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FA_CAT(a, b) FA_CAT_(a, b)
/** This build's kernel: l05_overlap_kernel_d64 or l05_overlap_kernel_d128. */
#define FA_KERNEL FA_CAT(l05_overlap_kernel_d, HEAD_DIM)
/** This build's launcher: l05_overlap_d64() or l05_overlap_d128(), declared in fa3_hopper.h. */
#define FA_LAUNCH FA_CAT(l05_overlap_d, HEAD_DIM)
/** S = Q K^T for one k-step: N = FA_BC keys. */
#define FA_WGMMA_S wgmma_ss_n128
/** O += P V for one k-step: N = HEAD_DIM. */
#define FA_WGMMA_O FA_CAT(wgmma_rs_n, HEAD_DIM)

/** The producer's thread: announce a tile's bytes on `bar`, then copy it, one TMA box per 64-column
 * panel, into the stage at `dst` (panel p at p * rows * 128). Coordinates: head `hh`, first token
 * `t0`, sequence `bb`. */
static __device__ __forceinline__ void tma_tile(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                                int rows, int hh, int t0, int bb) {
  mbar_arrive_expect_tx(bar, rows * HEAD_DIM * 2);
#pragma unroll
  for (int p = 0; p < FA_PANELS; ++p)
    tma_load_4d(dst + p * rows * 128, map, bar, p * 64, hh, t0, bb);
}

/** S = Q K^T for one KV tile, issued (not waited for): FA_KS wgmma reading my warpgroup's rows
 * of Q at `q_base` and the K tile at `k_tile`. */
static __device__ __forceinline__ void issue_s(float s[FA_NS], uint32_t q_base, uint32_t k_tile) {
#pragma unroll
  for (int ks = 0; ks < FA_KS; ++ks) {
    const uint32_t col = (ks & 3) * 32; /* bytes along the row, inside the panel */
    const uint64_t da = wgmma_desc(q_base + (ks >> 2) * FA_BR * 128 + col, 16, 1024);
    const uint64_t db = wgmma_desc(k_tile + (ks >> 2) * FA_BC * 128 + col, 16, 1024);
    FA_WGMMA_S(s, da, db, ks > 0);
  }
}

/** O += P V for one KV tile, issued (not waited for): P from registers, the V tile at `v_tile`
 * through an MN-major descriptor. */
static __device__ __forceinline__ void issue_pv(float acc[FA_NO], const uint32_t pa[FA_PK][4],
                                                uint32_t v_tile) {
#pragma unroll
  for (int kk = 0; kk < FA_PK; ++kk) {
    const uint64_t dv = wgmma_desc(v_tile + kk * 16 * 128, FA_BC * 128, 1024);
    FA_WGMMA_O(acc, pa[kk], dv, 1);
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

  /* Online softmax on my 2 rows: max over my scores, then over the quad (2 shuffles). */
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float mx = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < FA_BC / 8; ++nt)
      mx = fmaxf(mx, fmaxf(s[4 * nt + 2 * hf], s[4 * nt + 2 * hf + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(row_m[hf], mx * scale_log2);
    const float m_use = m_new == -INFINITY ? 0.f : m_new; /* nothing visible yet */
    const float alpha = fast_exp2(row_m[hf] - m_use);
    row_m[hf] = m_new;
    float sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < FA_BC / 8; ++nt)
#pragma unroll
      for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
        float p = fast_exp2(fmaf(s[4 * nt + e], scale_log2, -m_use));
        s[4 * nt + e] = p;
        sum += p;
      }
    row_l[hf] = row_l[hf] * alpha + sum;
    alpha_out[hf] = alpha;
  }
}

/** Once the previous P V has landed in O: O rescaled by this tile's `alpha`, and P packed into `pa`
 * as wgmma's register A fragment for the next turn. */
static __device__ __forceinline__ void rescale_pack(const float s[FA_NS], float acc[FA_NO],
                                                    const float alpha[2], uint32_t pa[FA_PK][4]) {
#pragma unroll
  for (int dt = 0; dt < HEAD_DIM / 8; ++dt) {
    acc[4 * dt] *= alpha[0];
    acc[4 * dt + 1] *= alpha[0];
    acc[4 * dt + 2] *= alpha[1];
    acc[4 * dt + 3] *= alpha[1];
  }
#pragma unroll
  for (int kk = 0; kk < FA_PK; ++kk) {
    pa[kk][0] = pack_bf16x2(s[8 * kk + 0], s[8 * kk + 1]);
    pa[kk][1] = pack_bf16x2(s[8 * kk + 2], s[8 * kk + 3]);
    pa[kk][2] = pack_bf16x2(s[8 * kk + 4], s[8 * kk + 5]);
    pa[kk][3] = pack_bf16x2(s[8 * kk + 6], s[8 * kk + 7]);
  }
}

#ifndef PF_ROUNDS
#define PF_ROUNDS 1
#endif
#ifndef PF_LSU
#define PF_LSU 0
#endif
#ifndef PF_KV
#define PF_KV 0
#endif
/** A tile of @p rows rows at (head hh, row t0, batch bb) fetched into L2 only: no shared memory,
 * no barrier (cp.async.bulk.prefetch.tensor). */
static __device__ __forceinline__ void tma_prefetch_tile(const CUtensorMap *map, int rows, int hh,
                                                         int t0, int bb) {
  (void)rows;
#pragma unroll
  for (int p = 0; p < FA_PANELS; ++p)
    asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n" ::"l"(
                     (uint64_t)map),
                 "r"(p * 64), "r"(hh), "r"(t0), "r"(bb)
                 : "memory");
}

/** The producer's warp: KV tile j from 1 on (thread 0 issued Q and tile 0 at the block's entry)
 * into stage j % 2 of the ring as soon as both consumers have released that stage (its empty
 * barrier), its bytes announced on the stage's full barrier. The whole warp waits on the barriers;
 * lane 0 issues the copies. The barriers of a ring are 8 bytes apart: [stage 0, stage 1]. */
static __device__ __forceinline__ void producer_load(const CUtensorMap *tm_k,
                                                     const CUtensorMap *tm_v, uint32_t sK_a,
                                                     uint32_t sV_a, uint32_t full_k,
                                                     uint32_t full_v, uint32_t empty_k,
                                                     uint32_t empty_v, int n_tiles, int kvh, int b,
                                                     unsigned long long *tl) {
  const int leader = threadIdx.x == 0;
  for (int j = 1; j < n_tiles; ++j) {           /* Q and tile 0 were issued at the block's entry */
    const int st = j & 1;                       /* l05_stage(j, 2) */
    const uint32_t parity = ((j >> 1) & 1) ^ 1; /* l05_empty_parity(j, 2) */
    const uint32_t off = st * FA_TILE_BYTES;
    mbar_wait(empty_k + 8 * st, parity);
    if (leader) tma_tile(sK_a + off, tm_k, full_k + 8 * st, FA_BC, kvh, j * FA_BC, b);
    TL_STAMP(tl, 0, j, L05_TL_ISSUE_K);
    mbar_wait(empty_v + 8 * st, parity);
    if (leader) tma_tile(sV_a + off, tm_v, full_v + 8 * st, FA_BC, kvh, j * FA_BC, b);
    TL_STAMP(tl, 0, j, L05_TL_ISSUE_V);
    __syncwarp();
  }
}

#if !FA_O_BY_TMA
/** After the last tile: the quad's 4 partial row sums, then O / l in bf16 and the log-sum-exp of my
 * 2 rows, q0 + wr0 + g and + 8 (rows past seq_q are not written). */
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
#else
/** After the last tile, at dim 128: O / l in bf16 over the warpgroup's own rows of the Q tile (its
 * last S is done, so no wgmma reads them any more), in Q's layout, which is the tensor map of O's
 * (two 64-column panels, 128-byte swizzled); then the first thread's TMA stores, one per panel, and
 * its wait until they have read the tile, before the block may exit. The log-sum-exp as at dim 64.
 */
static __device__ __forceinline__ void store_o_tma(const CUtensorMap *tm_o, uint32_t sQ_a,
                                                   float *__restrict__ lse, const float acc[FA_NO],
                                                   const float row_m[2], const float row_l[2],
                                                   int q0, int wg, int warp, int g, int t4,
                                                   int seq_q, int b, int h, int bh) {
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float l = row_l[hf];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int r = wg * L05_WG_ROWS + warp * 16 + g + hf * 8; /* my row in the tile */
    const float inv = l > 0.f ? 1.f / l : 0.f;               /* a row that sees no key: O = 0 */
#pragma unroll
    for (int dt = 0; dt < HEAD_DIM / 8; ++dt)
      st_shared_u32(sQ_a + sw128_off(r, dt, FA_BR) + t4 * 4,
                    pack_bf16x2(acc[4 * dt + 2 * hf] * inv, acc[4 * dt + 2 * hf + 1] * inv));
    const int row = q0 + r;
    if (t4 == 0 && row < seq_q)
      lse[(size_t)bh * seq_q + row] = l > 0.f ? (row_m[hf] + log2f(l)) * FA_LN2 : -INFINITY;
  }
  fence_proxy_async(); /* the stores above, before the async proxy reads them */
  named_bar_sync(FA_O_BAR + wg, 128);
  if ((threadIdx.x & 127) == 0) {
#pragma unroll
    for (int p = 0; p < HEAD_DIM / 64; ++p)
      tma_store_4d(tm_o, sQ_a + p * FA_BR * 128 + wg * L05_WG_ROWS * 128, 64 * p, h,
                   q0 + wg * L05_WG_ROWS, b);
    bulk_commit();
    bulk_wait_read0(); /* the tile stays until the stores have read it */
  }
}
#endif

/* The loop on a whiteboard, in the papers' names: Tr = ceil(seq_q / Br) Q tiles, one per block;
 * Q tile i sees KV tiles 0 .. Tc-1 and needs no mask on the first Tu (common/attn_causal.h).
 *
 *   block (i, head, batch), i from the last Q tile down when causal (the heaviest first):
 *     Tc = attn_kv_tiles_visited(i Br, Br, seq_q, seq_kv, Bc, causal)
 *     Tu = attn_kv_tiles_unmasked(i Br, seq_q, seq_kv, Bc, causal)
 *     warpgroup 0 produces; warpgroups 1, 2 consume 64 of the Br = 128 rows each; Bc = 128
 *     thread 0: mbarriers bar_q, full_k/v[2] (1 arrival), empty_k/v[2] (8 arrivals);
 *               TMA Q_i on bar_q, K_0 and V_0 -> stage 0; __syncthreads
 *   producer warp (producer_load), setmaxnreg 24:   for j in 1 .. Tc-1, stage st = j % 2:
 *     mbar_wait(empty_k[st]); TMA K_j -> stage st on full_k[st]     (no wait on the first pass)
 *     mbar_wait(empty_v[st]); TMA V_j -> stage st on full_v[st]
 *   consumer warpgroup c, setmaxnreg 240: mbar_wait(bar_q); m = -inf, l = 0, O = 0
 *     turns: bar.sync(mine) ... bar.arrive(other) on named barriers 1 + c and 2 - c; c = 0 first
 *     turn 0:  bar.sync(mine); S_0 = Q_i K_0^T; commit; bar.arrive(other); wait_group 0
 *              P_0, alpha = softmax_p(S_0); rescale_pack  m, l; then O = alpha O, P_0 packed
 *     for j in 1 .. Tc-1, the tiles j < Tu, then the rest: (full_k[j % 2], full_v[(j-1) % 2])
 *       bar.sync(mine)                                   my turn at the tensor cores
 *       S_j = Q_i K_j^T; commit;  O += P_{j-1} V_{j-1}; commit      two groups
 *       bar.arrive(other)                                your turn
 *       wait_group 1; arrive(empty_k)                    S_j is done, P V may still run
 *       P_j, alpha = softmax_p(S_j)                      the mask first if j >= Tu; O untouched
 *       wait_group 0; arrive(empty_v)                    P V is done
 *       rescale_pack: O = alpha O; P_j packed to bf16
 *     last turn: bar.sync(mine); O += P_{Tc-1} V_{Tc-1}; commit; wait_group 0
 *     store_o: l = sum over the quad;  O_i = O / l;  lse_i = (m + log2 l) ln 2
 *       (dim 128: O over my rows of the Q tile, then TMA stores, store_o_tma())
 */
/** A consumer warpgroup's tiles, from Q landed to its last P V done: version 5's turns (the
 * loop on the whiteboard above). O (unnormalised), the running max (log2 units) and sum of my two
 * rows come back in @p acc, @p row_m, @p row_l. Keys of tile j start at @p k_first + j FA_BC (0
 * here; lesson 10's prefix pass starts its chunks further on) and those at or past @p seq_kv are
 * masked, on the tiles from @p n_unmasked on. The producer fills the ring behind the barriers. */
static __device__ __forceinline__ void overlap_turns(
    float acc[FA_NO], float row_m[2], float row_l[2], uint32_t q_base, uint32_t sK_a, uint32_t sV_a,
    uint32_t full_k, uint32_t full_v, uint32_t empty_k, uint32_t empty_v, int n_tiles,
    int n_unmasked, int wg, int lane, int q0, int wr0, int k_first, int g, int t4, int seq_kv,
    int causal, int diag, float scale_log2, unsigned long long *tl) {
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
    float alpha[2];
    softmax_p(s, row_m, row_l, alpha, 0 >= n_unmasked, q0, wr0, k_first, g, t4, seq_kv, causal,
              diag, scale_log2);
    TL_STAMP(tl, 1 + wg, 0, L05_TL_SOFTMAX);
    rescale_pack(s, acc, alpha, pa);
  }
  /* Tiles 1 .. n_tiles - 1 in two runs, the tiles every row sees whole, then those that need the
   * mask (the diagonal ones, a last tile cut short). Unrolling `masked` makes two copies of the
   * loop with `masked` a constant in each, so no branch around the mask stands between the two
   * waits. With that branch there, ptxas put the wait for all of the turn's wgmma where its two
   * paths meet, ahead of every exponential (cuobjdump --dump-sass: WARPGROUP.DEPBAR.LE gsb0,
   * 0x0 before the first MUFU.EX2), and the softmax did not run under this warpgroup's own
   * P V at all. */
  const int j_mid = max(1, min(n_tiles, n_unmasked));
#pragma unroll
  for (int masked = 0; masked < 2; ++masked)
    for (int j = masked ? j_mid : 1; j < (masked ? n_tiles : j_mid); ++j) {
      const int st = FA_STAGE(j), pst = FA_PREV_STAGE(st, j); /* stages of tiles j and j - 1 */
      const uint32_t parity = FA_PHASE(j);                    /* l05_full_parity(j, 2) */
      const uint32_t pparity = FA_PHASE(j - 1);               /* l05_full_parity(j - 1, 2) */
      mbar_wait(full_k + 8 * st, parity);                     /* K_j has landed */
      mbar_wait(full_v + 8 * pst, pparity);                   /* V_{j-1} has landed */
      TL_STAMP(tl, 1 + wg, j, L05_TL_K_READY);
      named_bar_sync(my_bar, 256); /* my turn */
      TL_STAMP(tl, 1 + wg, j, L05_TL_TURN);
      reg_fence(acc, FA_NO);
      wgmma_fence();
      issue_s(s, q_base, sK_a + st * FA_TILE_BYTES);
      wgmma_commit(); /* group 1: S_j */
      issue_pv(acc, pa, sV_a + pst * FA_TILE_BYTES);
      wgmma_commit();                   /* group 2: P_{j-1} V_{j-1} */
      named_bar_arrive(other_bar, 256); /* your turn */
      wgmma_wait1();                    /* S_j is complete; P_{j-1} V_{j-1} may still be running */
      reg_fence(s, FA_NS);
      TL_STAMP(tl, 1 + wg, j, L05_TL_S_READY);
      if (lane == 0) mbar_arrive(empty_k + 8 * st); /* my warp is done with K_j */
      float alpha[2];
      softmax_p(s, row_m, row_l, alpha, masked, q0, wr0, k_first + j * FA_BC, g, t4, seq_kv, causal,
                diag, scale_log2); /* under my own P V on the tensor cores */
      TL_STAMP(tl, 1 + wg, j, L05_TL_SOFTMAX);
      wgmma_wait0();
      reg_fence(acc, FA_NO);
      TL_STAMP(tl, 1 + wg, j, L05_TL_PV_DONE);
      if (lane == 0) mbar_arrive(empty_v + 8 * pst); /* ... and with V_{j-1} */
      rescale_pack(s, acc, alpha, pa);
    }
  if (n_tiles > 0) {
    const int pst = FA_STAGE(n_tiles - 1);
    mbar_wait(full_v + 8 * pst, FA_PHASE(n_tiles - 1)); /* the last V has landed */
    named_bar_sync(my_bar, 256);
    TL_STAMP(tl, 1 + wg, n_tiles, L05_TL_TURN);
    reg_fence(acc, FA_NO);
    wgmma_fence();
    issue_pv(acc, pa, sV_a + pst * FA_TILE_BYTES);
    wgmma_commit();
    if (wg == 0) named_bar_arrive(other_bar, 256);
    wgmma_wait0();
    reg_fence(acc, FA_NO);
    TL_STAMP(tl, 1 + wg, n_tiles, L05_TL_PV_DONE);
    if (lane == 0) mbar_arrive(empty_v + 8 * pst);
  }
}

/* Lesson 10's prefix pass (prefill.cu) includes this file for overlap_turns() and the pieces above
 * it, with L05_OVERLAP_TURNS_ONLY defined: the kernel and its launcher are this lesson's alone. */
#ifndef L05_OVERLAP_TURNS_ONLY
/** One block per (Q tile of FA_BR = 128 rows, head, batch), bf16 in and out: warpgroup 0 loads,
 * warpgroups 1 and 2 compute 64 rows each and write them with their log-sum-exp. */
static __global__ void __launch_bounds__(FA_THREADS, 1)
    FA_KERNEL(const __grid_constant__ CUtensorMap tm_q,  // Q, boxes of 64 x FA_BR
              const __grid_constant__ CUtensorMap tm_k,  // K, boxes of 64 x FA_BC
              const __grid_constant__ CUtensorMap tm_v,  // V, boxes of 64 x FA_BC
              const __grid_constant__ CUtensorMap tm_o,  // O, boxes of 64 x 64 (FA_O_BY_TMA)
              attn_bf16 *__restrict__ o,                 // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,                   // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
              int n_q_tiles, int ahead, const attn_bf16 *__restrict__ qg,
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
    /* Q and the first K and V tile at once, before the block-wide barrier and setmaxnreg: their
     * trip from HBM starts as early as the block does */
    tma_tile(sQ_a, &tm_q, bar_q, FA_BR, h, q0, b);
    if (n_tiles > 0) {
      tma_tile(sK_a, &tm_k, full_k, FA_BC, kvh, 0, b);
      TL_STAMP(tl, 0, 0, L05_TL_ISSUE_K);
      tma_tile(sV_a, &tm_v, full_v, FA_BC, kvh, 0, b);
      TL_STAMP(tl, 0, 0, L05_TL_ISSUE_V);
    }
  }
  __syncthreads(); /* the barriers exist: the last block-wide barrier of the kernel */

  /* The roles are the two branches of one if/else, as setmaxnreg needs: ptxas then knows each
   * branch's register budget (24 in the producer, 240 in the consumers). */
  if (threadIdx.x < 128) {
    /* The producer warpgroup: registers back to the pool; its warp 0 walks the tiles (the whole
     * warp waits on the barriers, lane 0 issues the copies), warps 1-3 have nothing to do. */
    setmaxnreg_dec_24();
    if (threadIdx.x < 32)
      producer_load(&tm_k, &tm_v, sK_a, sV_a, full_k, full_v, empty_k, empty_v, n_tiles, kvh, b,
                    tl);
#if PF_LSU
    else {
      /* warps 1-3: the next round's Q rows into L2, a line per prefetch */
      const int nxt = (int)blockIdx.x + ahead;
      if (ahead > 0 && nxt < (int)gridDim.x) {
        const int nq = causal ? n_q_tiles - 1 - nxt % n_q_tiles : nxt % n_q_tiles;
        const int nbh = nxt / n_q_tiles, nh = nbh % heads, nb = nbh / heads;
        const int lines = HEAD_DIM * 2 / 128;
        for (int r = threadIdx.x - 32; r < FA_BR * lines; r += 96) {
          const int row = nq * FA_BR + r / lines;
          if (row < seq_q) {
            const attn_bf16 *p =
                qg + (((size_t)nb * seq_q + row) * heads + nh) * HEAD_DIM + (r % lines) * 64;
            asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
          }
        }
      }
    }
#else
    else if (threadIdx.x == 32) {
      /* The block that takes this SM's place a round later: its Q (and first K and V) into L2 */
      const int nxt = (int)blockIdx.x + ahead;
      if (ahead > 0 && nxt < (int)gridDim.x) {
        const int nq = causal ? n_q_tiles - 1 - nxt % n_q_tiles : nxt % n_q_tiles;
        const int nbh = nxt / n_q_tiles, nh = nbh % heads, nb = nbh / heads;
        tma_prefetch_tile(&tm_q, FA_BR, nh, nq * FA_BR, nb);
#if PF_KV
        const int nkvh = nh / (heads / kv_heads);
        tma_prefetch_tile(&tm_k, FA_BC, nkvh, 0, nb);
        tma_prefetch_tile(&tm_v, FA_BC, nkvh, 0, nb);
#endif
      }
    }
#endif
  } else {
    /* A consumer warpgroup. */
    setmaxnreg_inc_240();
    const int wg = (threadIdx.x >> 7) - 1; /* rows 64 wg .. 64 wg + 63 of the tile */
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31; /* warp in the warpgroup */
    const int g = lane >> 2, t4 = lane & 3;       /* quad (row) and lane in quad (column pair) */
    const int wr0 = wg * L05_WG_ROWS + warp * 16; /* my warp's first row in the tile */
    const int diag = seq_kv - seq_q;
    const uint32_t q_base = sQ_a + wg * L05_WG_ROWS * 128; /* my warpgroup's rows of Q */
    const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, FA_BC, causal);
    mbar_wait(bar_q, 0);

    float acc[FA_NO];
    float row_m[2], row_l[2]; /* [row g or g + 8]; m in log2 units */
    overlap_turns(acc, row_m, row_l, q_base, sK_a, sV_a, full_k, full_v, empty_k, empty_v, n_tiles,
                  n_unmasked, wg, lane, q0, wr0, 0, g, t4, seq_kv, causal, diag, scale_log2, tl);

#if FA_O_BY_TMA
    (void)o;
    store_o_tma(&tm_o, sQ_a, lse, acc, row_m, row_l, q0, wg, warp, g, t4, seq_q, b, h, bh);
#else
    store_o(o, lse, acc, row_m, row_l, q0, wr0, g, t4, seq_q, (size_t)heads * HEAD_DIM, b, h, bh);
#endif
  }
}

/** The launcher, l05_overlap_d64() or l05_overlap_d128(): the three tensor maps, then one block
 * per (Q tile, head, batch). */
extern "C" cudaError_t FA_LAUNCH(const void *q, const void *k, const void *v, void *o, float *lse,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                 int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  const int n_q_tiles = attn_cdiv(seq_q, FA_BR);
  const long long blocks = (long long)n_q_tiles * batch * heads;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  CUtensorMap tm_q, tm_k, tm_v, tm_o;
  ATTN_TRY(l05_tensor_map(&tm_q, q, batch, seq_q, heads, HEAD_DIM, FA_BR));
  ATTN_TRY(l05_tensor_map(&tm_k, k, batch, seq_kv, kv_heads, HEAD_DIM, FA_BC));
  ATTN_TRY(l05_tensor_map(&tm_v, v, batch, seq_kv, kv_heads, HEAD_DIM, FA_BC));
#if FA_O_BY_TMA
  ATTN_TRY(l05_tensor_map(&tm_o, o, batch, seq_q, heads, HEAD_DIM, L05_WG_ROWS));
#else
  memset(&tm_o, 0, sizeof tm_o);
#endif
  ATTN_TRY(
      cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, FA_SMEM_BYTES));
  int dev = 0, sms = 0;
  ATTN_TRY(cudaGetDevice(&dev));
  ATTN_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  FA_KERNEL<<<(unsigned)blocks, FA_THREADS, FA_SMEM_BYTES, stream>>>(
      tm_q, tm_k, tm_v, tm_o, (attn_bf16 *)o, lse, heads, kv_heads, seq_q, seq_kv, causal,
      scale * FA_LOG2E, n_q_tiles, PF_ROUNDS * sms, (const attn_bf16 *)q, l05_timeline_get());
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
#endif /* L05_OVERLAP_TURNS_ONLY */
