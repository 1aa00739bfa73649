// clang-format off
/** @file
 * @brief Version 9: persistent blocks at dim 64. Version 8 with one block per SM that takes its
 * work items (Q tile, head, sequence) from a counter, and loads the next item's Q and first K and
 * V tiles while the current item's last tiles are still on the tensor cores.
 *
 * What changed: the grid is min(items, SMs) blocks, not one block per item. A block starts with
 * the item of its own index and asks an atomic counter for the next one when it is done loading
 * the current one, so that a block that drew light items (causal tiles near the diagonal) takes
 * more of them; the items were numbered as version 8 numbers its blocks (a head's Q tiles heaviest
 * first under the mask), so the order of the work was the one the hardware scheduler gave version
 * 8 (under the mask it is now longest first inside groups of heads: see the end of this comment).
 * The producer warp hands each item number to the consumers through two slots in shared memory,
 * each with a full and an empty mbarrier like a stage of the KV ring; Q has two buffers, each with
 * a barrier that says the consumers are done with it; the KV ring and the consumers' ring of turns
 * run on from one item to the next.
 *
 * Why: with one block per item every block pays its start (barriers set up, registers
 * reallocated, Q loaded, the first K tile waited for with the tensor cores idle) and its end (the
 * last P V and the O store with no loads behind them), and at dim 64 a 192-row item of a 1k-2k
 * sequence is only 6-16 KV tiles long, so those edges are a large part of it. A persistent block
 * pays the start once per SM and hides each item's edges under its neighbour's. FlashAttention-3
 * schedules its blocks the same way.
 *
 * Prediction: 5-10% over version 8 at seq 1k-2k, a few % at 4k-16k, where the edges are a smaller
 * part of each item.
 *
 * Measured: NVIDIA H200, 2026-11-27 (docs/results/h200-l05b-2026-11-27), over version 8 in the
 * same process: in the bench, 1.12x and 1.19x at seq 1k (without and with the mask), 1.07x and
 * 1.10x at 2k, 1.02-1.06x at 4k-8k, 0.98x and 0.97x at 16k; 1.04x at the default dim-64 shape
 * (1.08x with the mask); in two A/B runs beside cuDNN, 1.08-1.16x at 1k and 1.01-1.05x at 4k-16k.
 * Inside the prediction at 1k-2k; level with version 8 at 16k.
 *
 * Under the mask the items now go out longest first inside groups of heads (attn_causal_groups(),
 * as version 11; the README's "The items under the mask"), not head after head. Measured: NVIDIA
 * H200, 2026-11-28 (docs/results/h200-l05i-2026-11-28, causal-order-ab.log), over the order before
 * in the same process, three rounds taking turns: 1.00-1.02x at seq 1k-16k, 1.036x and 1.039x at
 * 3000 and 6000, 1.028x with GQA (32/8 heads, 8k), level without the mask, the output bit for bit
 * the same. Below what the same model of the tail predicts with this version's tiles
 * (causal-order-sim.py: 2.5-4% at 1k-16k, 6% at 3000 and 6000); why was not measured apart.
 *
 * Run: `./run 9 --dim 64 --heads 32`.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <cuda.h>
#include <limits.h>
#include <math.h>

#include "attn_causal.h"
#include "attn_cuda.cuh"
#include "fa3_hopper.h"
#include "hopper.cuh"

/** Consumer warpgroups: three at dim 64 (version 8's), two at dim 128 (version 5's: at 160
 * registers a thread, three would not hold dim 128's O beside S and P). */
#define FA_WGS (HEAD_DIM == 64 ? 3 : 2)
#define FA_BR (FA_WGS * L05_WG_ROWS)         /**< 192 query rows per block at dim 64, 128 at 128 */
#define FA_BC L05_BC                         /**< 128 keys per KV tile */
#define FA_THREADS (128 * (1 + FA_WGS))      /**< a producer warpgroup and three consumers */
#define FA_NS (FA_BC / 2)                    /**< S accumulator floats per thread: 64 x Bc / 128 */
#define FA_NO (HEAD_DIM / 2)                 /**< O accumulator floats per thread */
#define FA_KS (HEAD_DIM / 16)                /**< k-steps of S = Q K^T */
#define FA_PK (FA_BC / 16)                   /**< k-steps of O += P V */
#define FA_Q_BYTES (FA_BR * HEAD_DIM * 2)    /**< the Q tile */
#define FA_TILE_BYTES (FA_BC * HEAD_DIM * 2) /**< one K or V tile buffer */
/** Bytes where each consumer thread stores its two row sums once per tile (pin_row_sums()). */
#define FA_PIN_BYTES (FA_WGS * 128 * 8)
/** Dynamic shared memory: two Q buffers, two K and two V stages, sixteen mbarriers (full and empty
 * for each Q buffer, each item slot, K and V of each stage), the two item slots, the row sums'
 * slots, and 1024 bytes to align the start to a swizzle atom. */
#define FA_SMEM_BYTES (2 * FA_Q_BYTES + 4 * FA_TILE_BYTES + 256 + FA_PIN_BYTES + 1024)
/** Arrivals that release a stage: one per consumer warp. */
#define FA_CONSUMER_WARPS (4 * FA_WGS)
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
/** The kernel. */
#define FA_KERNEL FA_CAT(l05_persistnp_kernel_d, HEAD_DIM)
/** The launcher, l05_persist_d64(), declared in fa3_hopper.h. */
#define FA_LAUNCH FA_CAT(l05_persistnp_d, HEAD_DIM)
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

/* The scheduler. Without the mask items are numbered as version 8 numbers its blocks: item i is Q
 * tile i % Tr of (head, sequence) i / Tr; under it, in attn_causal_item()'s order, longest first
 * inside groups of heads. A block's first item is its own index; after that it takes
 * gridDim.x + atomicAdd(&g_next_item, 1), until the number passes the last item. */

/** The scheduler's two counters, one per device: items handed out after the first wave, and
 * blocks that have stopped taking items. The block whose producer stops last sets both back to
 * 0, so that the next launch finds them at 0 with no memset in between. Two launches of this
 * kernel that overlap on one device (two streams) would share them: version 9 is launched one at a
 * time per device (the lesson, its tests and benches do). */
static __device__ int g_next_item; /**< items handed out after the first wave */
static __device__ int g_done;      /**< blocks that have stopped taking items */

/** Item @p item's first query row @p q0 (negative for the partial tile under the mask), head,
 * KV head, sequence and (sequence, head) index: without the mask in version 8's block order (a
 * head's Q tiles in order, head after head), under it longest first inside groups of @p grp or
 * grp + 1 heads (attn_causal_item()), where version 8 went head after head. */
static __device__ __forceinline__ void item_coords(int item, int n_q_tiles, int grp, int grp_big,
                                                   int heads, int kv_heads, int seq_q, int causal,
                                                   int *q0, int *h, int *kvh, int *b, int *bh) {
  int q_tile;
  if (causal) {
    attn_causal_item(item, n_q_tiles, grp, grp_big, &q_tile, bh);
  } else {
    q_tile = item % n_q_tiles;
    *bh = item / n_q_tiles;
  }
  *h = *bh % heads, *b = *bh / heads;
  *kvh = *h / (heads / kv_heads);
  *q0 = q_tile * FA_BR - (causal ? n_q_tiles * FA_BR - seq_q : 0);
}

/** The producer's warp, item after item: the item's number into slot k % 2 (-1 once there is no
 * item left) once the consumers have read the item two back, announced on the slot's full barrier
 * (an mbarrier arrival releases the store before it); its Q into buffer k % 2 once the consumers
 * are done with the item two back's Q; then its
 * KV tiles into the ring as stages free up. The ring's stage and parity follow `t`, the count of
 * tiles over all of the block's items, so that the ring does not drain between items: the next
 * item's Q and first tiles load while the consumers finish this one. */
static __device__ __forceinline__ void producer_items(
    const CUtensorMap *tm_q, const CUtensorMap *tm_k, const CUtensorMap *tm_v, uint32_t sQ_a,
    uint32_t sK_a, uint32_t sV_a, uint32_t bar_q, uint32_t full_k, uint32_t full_v,
    uint32_t empty_k, uint32_t empty_v, uint32_t q_empty, uint32_t slot, uint32_t slot_full,
    uint32_t slot_empty, int n_items, int n_q_tiles, int grp, int grp_big, int heads, int kv_heads,
    int seq_q, int seq_kv, int causal) {
  const int leader = threadIdx.x == 0;
  int t = 0; /* KV tiles loaded so far, over all items */
  int k = 0; /* the block's items so far */
  for (;; ++k) {
    const int s = k & 1; /* item slot and Q buffer */
    int item = (int)blockIdx.x;
    if (k > 0) {
      int x = 0;
      if (leader) x = atomicAdd(&g_next_item, 1);
      item = (int)gridDim.x + __shfl_sync(0xffffffffu, x, 0);
    }
    if (item >= n_items) item = -1;
    if (k >= 2) mbar_wait(slot_empty + 8 * s, ((k >> 1) - 1) & 1); /* item k - 2 was read */
    if (leader) {
      st_shared_u32(slot + 4 * s, (uint32_t)item);
      mbar_arrive(slot_full + 8 * s);
    }
    if (item < 0) break;
    int q0, h, kvh, b, bh;
    item_coords(item, n_q_tiles, grp, grp_big, heads, kv_heads, seq_q, causal, &q0, &h, &kvh, &b,
                &bh);
    const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
    if (k >= 2) mbar_wait(q_empty + 8 * s, ((k >> 1) - 1) & 1); /* item k - 2 is done with Q */
    if (leader) tma_tile(sQ_a + s * FA_Q_BYTES, tm_q, bar_q + 8 * s, FA_BR, h, q0, b);
    for (int j = 0; j < n_tiles; ++j, ++t) {
      const int st = t & 1;                       /* l05_stage(t, 2) */
      const uint32_t parity = ((t >> 1) & 1) ^ 1; /* l05_empty_parity(t, 2) */
      const uint32_t off = st * FA_TILE_BYTES;
      mbar_wait(empty_k + 8 * st, parity);
      if (leader) tma_tile(sK_a + off, tm_k, full_k + 8 * st, FA_BC, kvh, j * FA_BC, b);
      mbar_wait(empty_v + 8 * st, parity);
      if (leader) tma_tile(sV_a + off, tm_v, full_v + 8 * st, FA_BC, kvh, j * FA_BC, b);
      __syncwarp();
    }
  }
  if (leader) {
    __threadfence(); /* this block's last atomicAdd on g_next_item before its count in g_done */
    if (atomicAdd(&g_done, 1) == (int)gridDim.x - 1) { /* every block has stopped taking items */
      atomicExch(&g_next_item, 0);
      atomicExch(&g_done, 0);
    }
  }
}

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
    if (row < 0 || row >= seq_q) continue;     /* rows past the end, or before 0 (a partial tile) */
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

/** Store my two row sums to my own slot of shared memory, just before wait_group 0. Nothing reads
 * them: the store is there for ptxas. In this kernel ptxas moves wait_group 0 up to right after the
 * row maxima, ahead of every exponential, so the softmax no longer runs under this warpgroup's own
 * P V (the PTX has it in place; NOTES.md, "Version 9 and the wait that moved"). It keeps a shared
 * store on its side of the wait, and the row sums need every exponential of the tile, so all of
 * them stay between the two waits (scripts/check-wait-placement.sh counts them). */
static __device__ __forceinline__ void pin_row_sums(uint32_t slot, const float row_l[2]) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(slot), "f"(row_l[0]), "f"(row_l[1])
               : "memory");
}

/* The loop on a whiteboard, in the papers' names: Tr = ceil(seq_q / Br) Q tiles of Br = 192 rows
 * per (head, sequence); an item is one of them; Q tile i sees KV tiles 0 .. Tc-1 and needs no mask
 * on the first Tu (common/attn_causal.h). Version 8's loop, with the block's items around it:
 *
 *   grid: min(items, SMs) blocks of a producer warpgroup and three consumers (setmaxnreg 24 / 160)
 *   thread 0: mbarriers bar_q[2], slot_full[2], full_k/v[2] (1 arrival), q_empty[2],
 *             slot_empty[2], empty_k/v[2] (12 arrivals: one per consumer warp)
 *   producer warp, item k = 0, 1, ... (t counts KV tiles over all items):
 *     item = k ? gridDim + atomicAdd(next) : blockIdx      (-1 past the last item)
 *     wait slot_empty[k % 2] once k >= 2; slot[k % 2] = item; arrive(slot_full[k % 2]); stop at -1
 *     mbar_wait(q_empty[k % 2]) once k >= 2; TMA Q -> buffer k % 2 on bar_q[k % 2]
 *     for j in 0 .. Tc-1, ++t: stage t % 2: wait empty; TMA K_j, V_j, as version 8 (tile t of the
 * ring) consumer warpgroup c (the ring of turns of version 8, started once, run on across items):
 *     item k = 0, 1, ...: wait slot_full[k % 2]; item = slot[k % 2]; stop at -1; arrive(slot_empty)
 *       mbar_wait(bar_q[k % 2]); m = -inf, l = 0, O = 0
 *       turn 0, turns 1 .. Tc-1, as version 8, on ring tiles t .. t + Tc - 1
 *       arrive(q_empty[k % 2])                             every S of the item is done: Q is free
 *       last turn: O += P_{Tc-1} V_{Tc-1}, hand the turn on; store_o; t += Tc
 *     warpgroup 0 takes the last hand-over of warpgroup 2 (the named barriers end balanced)
 */
#if FA_WGS == 3
/** Registers up to 160 for a consumer warpgroup of three (two take 240, as version 5's). */
static __device__ __forceinline__ void setmaxnreg_inc_160(void) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 160;\n" ::: "memory");
}
#endif

/** One block per SM (fewer when there are fewer items), each taking items (a Q tile of FA_BR =
 * 192 rows of one head and sequence) until none is left, bf16 in and out: warpgroup 0 loads,
 * warpgroups 1-3 compute 64 rows each and write them with their log-sum-exp. */
static __global__ void __launch_bounds__(FA_THREADS, 1)
    FA_KERNEL(const __grid_constant__ CUtensorMap tm_q,  // Q, boxes of 64 x FA_BR
              const __grid_constant__ CUtensorMap tm_k,  // K, boxes of 64 x FA_BC
              const __grid_constant__ CUtensorMap tm_v,  // V, boxes of 64 x FA_BC
              attn_bf16 *__restrict__ o,                 // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,                   // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
              int n_q_tiles, int n_items, int grp, int grp_big) {
  extern __shared__ unsigned char smem[];
  /* The swizzle repeats every 1024 bytes, and both TMA and wgmma apply it from address bits:
   * tiles start on a 1024-byte boundary. */
  const uint32_t sQ_a = (smem_u32(smem) + 1023u) & ~1023u;   /* [2][panel][FA_BR][64] */
  const uint32_t sK_a = sQ_a + 2 * FA_Q_BYTES;               /* [2][panel][FA_BC][64] */
  const uint32_t sV_a = sK_a + 2 * FA_TILE_BYTES;            /* [2][panel][FA_BC][64] */
  const uint32_t bar_q = sV_a + 2 * FA_TILE_BYTES;           /* [2]: the Q buffer landed */
  const uint32_t full_k = bar_q + 16, full_v = bar_q + 32;   /* [2]: the stage's tile landed */
  const uint32_t empty_k = bar_q + 48, empty_v = bar_q + 64; /* [2]: every consumer is done */
  const uint32_t q_empty = bar_q + 80;     /* [2]: every consumer is done with the Q buffer */
  const uint32_t slot_full = bar_q + 96;   /* [2]: the item slot holds a number */
  const uint32_t slot_empty = bar_q + 112; /* [2]: every consumer warp has read it */
  const uint32_t slot = bar_q + 128; /* [2]: item numbers, from the producer to the consumers */
  const uint32_t pin = bar_q + 256;  /* [consumer thread]: its row sums (pin_row_sums()) */

  if (threadIdx.x == 0) {
    for (int i = 0; i < 2; ++i) {
      mbar_init(bar_q + 8 * i, 1);
      mbar_init(q_empty + 8 * i, FA_CONSUMER_WARPS);
      mbar_init(slot_full + 8 * i, 1);
      mbar_init(slot_empty + 8 * i, FA_CONSUMER_WARPS);
      mbar_init(full_k + 8 * i, 1);
      mbar_init(full_v + 8 * i, 1);
      mbar_init(empty_k + 8 * i, FA_CONSUMER_WARPS);
      mbar_init(empty_v + 8 * i, FA_CONSUMER_WARPS);
    }
    mbar_init_fence();
  }
  __syncthreads(); /* the barriers exist: the last block-wide barrier of the kernel */

  /* The roles are the two branches of one if/else, as setmaxnreg needs: ptxas then knows each
   * branch's register budget (24 in the producer, 160 in the consumers). */
  if (threadIdx.x < 128) {
    /* The producer warpgroup: registers back to the pool; its warp 0 takes the items and loads
     * their tiles, warps 1-3 have nothing to do. */
    setmaxnreg_dec_24();
    if (threadIdx.x < 32)
      producer_items(&tm_q, &tm_k, &tm_v, sQ_a, sK_a, sV_a, bar_q, full_k, full_v, empty_k, empty_v,
                     q_empty, slot, slot_full, slot_empty, n_items, n_q_tiles, grp, grp_big, heads,
                     kv_heads, seq_q, seq_kv, causal);
  } else {
    /* A consumer warpgroup. */
#if FA_WGS == 3
    setmaxnreg_inc_160();
#else
    setmaxnreg_inc_240();
#endif
    const int wg = (threadIdx.x >> 7) - 1; /* rows 64 wg .. 64 wg + 63 of the tile */
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31; /* warp in the warpgroup */
    const int g = lane >> 2, t4 = lane & 3;       /* quad (row) and lane in quad (column pair) */
    const int wr0 = wg * L05_WG_ROWS + warp * 16; /* my warp's first row in the tile */
    const uint32_t my_pin = pin + 8u * (threadIdx.x - 128u); /* my slot of the row sums */
    const size_t q_stride = (size_t)heads * HEAD_DIM;
    const int diag = seq_kv - seq_q;

    /* The ring of turns of version 8 (three named barriers, 1 + c: warpgroup c's turn), started
     * once for the block: warpgroup 0 goes first, the last warpgroup arrives on its barrier once
     * up front. Every turn hands over, the last of each item too, so the next item's first turn
     * follows on without a gap; warpgroup 0 takes the very last hand-over at the end. */
    const int my_bar = 1 + wg, other_bar = 1 + (wg + 1) % FA_WGS;
    if (wg == FA_WGS - 1) named_bar_arrive(1, 256);
    int t = 0; /* KV tiles consumed so far, over all items: the ring's tile number */
    for (int k = 0;; ++k) {
      const int qb = k & 1; /* item slot and Q buffer */
      mbar_wait(slot_full + 8 * qb, (k >> 1) & 1);
      /* Lane 0 reads the slot and hands the number to its warp: the thread that reads it is the
       * one that tells the producer it was read. */
      int item = 0;
      if (lane == 0) item = (int)ld_shared_u32(slot + 4 * qb);
      item = __shfl_sync(0xffffffffu, item, 0);
      if (item < 0) break;
      if (lane == 0) mbar_arrive(slot_empty + 8 * qb); /* read: the slot is the producer's again */
      int q0, h, kvh, b, bh;
      item_coords(item, n_q_tiles, grp, grp_big, heads, kv_heads, seq_q, causal, &q0, &h, &kvh, &b,
                  &bh);
      const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
      const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, FA_BC, causal);
      const uint32_t q_base = sQ_a + qb * FA_Q_BYTES + wg * L05_WG_ROWS * 128; /* my rows of Q */
      mbar_wait(bar_q + 8 * qb, (k >> 1) & 1);

      float acc[FA_NO];
      float row_m[2], row_l[2]; /* [row g or g + 8]; m in log2 units */
#pragma unroll
      for (int i = 0; i < FA_NO; ++i) acc[i] = 0.f;
      row_m[0] = row_m[1] = -INFINITY;
      row_l[0] = row_l[1] = 0.f;

      /* Version 8's turns, on ring tiles t + j: S_j and P_{j-1} V_{j-1} as two commit groups, the
       * softmax of S_j under this warpgroup's own P V, the first turn (no P V) and the last (no S)
       * peeled off the loop. */
      uint32_t pa[FA_PK][4]; /* P_{j-1}, packed, waiting for its turn */
      float s[FA_NS];
      if (n_tiles > 0) {
        const int st = t & 1;
        mbar_wait(full_k + 8 * st, (t >> 1) & 1); /* K_0 has landed */
        named_bar_sync(my_bar, 256);
        wgmma_fence();
        issue_s(s, q_base, sK_a + st * FA_TILE_BYTES);
        wgmma_commit();
        named_bar_arrive(other_bar, 256);
        wgmma_wait0();
        reg_fence(s, FA_NS);
        if (lane == 0) mbar_arrive(empty_k + 8 * st); /* my warp is done with K_0 */
        float alpha[2];
        softmax_p(s, row_m, row_l, alpha, 0 >= n_unmasked, q0, wr0, 0, g, t4, seq_kv, causal, diag,
                  scale_log2);
        rescale_pack(s, acc, alpha, pa);
      }
      /* Tiles 1 .. n_tiles - 1 in two runs, those every row sees whole, then those that need the
       * mask, as in version 8 (no branch around the mask between the two waits). */
      const int j_mid = max(1, min(n_tiles, n_unmasked));
#pragma unroll
      for (int masked = 0; masked < 2; ++masked)
        for (int j = masked ? j_mid : 1; j < (masked ? n_tiles : j_mid); ++j) {
          const int tj = t + j;                      /* ring tile of K_j; tj - 1 that of V_{j-1} */
          const int st = tj & 1, pst = st ^ 1;       /* their stages */
          mbar_wait(full_k + 8 * st, (tj >> 1) & 1); /* K_j has landed */
          mbar_wait(full_v + 8 * pst, ((tj - 1) >> 1) & 1); /* V_{j-1} has landed */
          named_bar_sync(my_bar, 256);                      /* my turn */
          reg_fence(acc, FA_NO);
          wgmma_fence();
          issue_s(s, q_base, sK_a + st * FA_TILE_BYTES);
          wgmma_commit(); /* group 1: S_j */
          issue_pv(acc, pa, sV_a + pst * FA_TILE_BYTES);
          wgmma_commit();                   /* group 2: P_{j-1} V_{j-1} */
          named_bar_arrive(other_bar, 256); /* the next one's turn */
          wgmma_wait1(); /* S_j is complete; P_{j-1} V_{j-1} may still be running */
          reg_fence(s, FA_NS);
          if (lane == 0) mbar_arrive(empty_k + 8 * st); /* my warp is done with K_j */
          float alpha[2];
          softmax_p(s, row_m, row_l, alpha, masked, q0, wr0, j * FA_BC, g, t4, seq_kv, causal, diag,
                    scale_log2); /* under my own P V on the tensor cores */

          wgmma_wait0();
          reg_fence(acc, FA_NO);
          if (lane == 0) mbar_arrive(empty_v + 8 * pst); /* ... and with V_{j-1} */
          rescale_pack(s, acc, alpha, pa);
        }
      /* Every S of the item has completed: my warp is done with this Q buffer, and the producer
       * may load item k + 2's Q into it. */
      if (lane == 0) mbar_arrive(q_empty + 8 * qb);
      if (n_tiles > 0) {
        const int tl = t + n_tiles - 1, pst = tl & 1;
        mbar_wait(full_v + 8 * pst, (tl >> 1) & 1); /* the last V has landed */
        named_bar_sync(my_bar, 256);
        reg_fence(acc, FA_NO);
        wgmma_fence();
        issue_pv(acc, pa, sV_a + pst * FA_TILE_BYTES);
        wgmma_commit();
        named_bar_arrive(other_bar, 256); /* the next warpgroup's turn, maybe on the next item */
        wgmma_wait0();
        reg_fence(acc, FA_NO);
        if (lane == 0) mbar_arrive(empty_v + 8 * pst);
      }
      store_o(o, lse, acc, row_m, row_l, q0, wr0, g, t4, seq_q, q_stride, b, h, bh);
      t += n_tiles;
    }
    if (wg == 0) named_bar_sync(1, 256); /* the last warpgroup's last hand-over */
  }
}

/** The launcher, l05_persist_d64(): the three tensor maps, then min(items, SMs) blocks. */
extern "C" cudaError_t FA_LAUNCH(const void *q, const void *k, const void *v, void *o, float *lse,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                 int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  const int n_q_tiles = attn_cdiv(seq_q, FA_BR);
  const long long items = (long long)n_q_tiles * batch * heads;
  if (items > INT_MAX) return cudaErrorInvalidConfiguration;
  int dev = 0, sms = 0;
  ATTN_TRY(cudaGetDevice(&dev));
  ATTN_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CUtensorMap tm_q, tm_k, tm_v;
  ATTN_TRY(l05_tensor_map(&tm_q, q, batch, seq_q, heads, HEAD_DIM, FA_BR));
  ATTN_TRY(l05_tensor_map(&tm_k, k, batch, seq_kv, kv_heads, HEAD_DIM, FA_BC));
  ATTN_TRY(l05_tensor_map(&tm_v, v, batch, seq_kv, kv_heads, HEAD_DIM, FA_BC));
  ATTN_TRY(
      cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, FA_SMEM_BYTES));
  /* One block per SM at most: 512 threads of 128 registers take the whole register file. */
  const int grid = items < sms ? (int)items : sms;
  int grp = 1, grp_big = 0; /* under the mask: the groups of heads, longest first in each */
  attn_causal_groups(batch * heads, n_q_tiles, grid, ATTN_CAUSAL_WAVES, &grp, &grp_big);
  FA_KERNEL<<<(unsigned)grid, FA_THREADS, FA_SMEM_BYTES, stream>>>(
      tm_q, tm_k, tm_v, (attn_bf16 *)o, lse, heads, kv_heads, seq_q, seq_kv, causal,
      scale * FA_LOG2E, n_q_tiles, (int)items, grp, grp_big);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
