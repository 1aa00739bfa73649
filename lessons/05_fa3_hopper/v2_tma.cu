// clang-format off
/** @file
 * @brief Version 2: TMA. Every tile of Q, K and V is copied by the tensor memory accelerator: one
 * thread issues a copy of a whole box, an mbarrier counts its bytes as they land, and the copies
 * of tile j + 2 run while tiles j and j + 1 are in use (a ring of two stages).
 *
 * What changed: the cp.async loads and their address arithmetic are gone. The launcher encodes
 * three tensor maps (Q, K, V: 4-D, 64 columns x 128 tokens per box, the 128-byte swizzle) and
 * passes them by value as `__grid_constant__` parameters. In the kernel, thread 0 announces each
 * tile's bytes on the stage's mbarrier (arrive.expect_tx) and issues one cp.async.bulk.tensor per
 * 64-column panel; every thread waits on the barrier's phase parity (l05_full_parity() in the
 * drill), not on a block barrier. Rows past the end of a sequence arrive as zeros from TMA itself.
 * One block barrier per tile remains: the stage is refilled only after both warpgroups have
 * finished with it.
 *
 * Why: with cp.async each of the 256 threads computes addresses and issues 16 16-byte copies per
 * K and V tile (8 at dim 64), and two block barriers per tile stall both warpgroups until the
 * slowest thread's copies land. TMA moves the same bytes with one instruction per panel, in
 * swizzled form, and lets each warpgroup start as soon as its data is there.
 *
 * Prediction: the instruction count of the loop drops (no load issue), but the time is dominated
 * by the serialised GEMM -> softmax -> GEMM chain of each warpgroup, which TMA does not touch:
 * 5-10% over version 1.
 *
 * Measured: NVIDIA H200, 2026-11-25, batch 4, seq 4096 (docs/results/h200-l05c-2026-11-25): dim
 * 128: 519.6 TFLOP/s (causal 452.4), 1.25x version 1, far above the 5-10% predicted: the copy issue
 * of 256 threads and the second block barrier per tile cost more than the instruction count
 * suggested; dim 64: 339.4 (causal 307.4), 1.09x.
 *
 * Run: `./run 2` (dim 128, 16 heads, batch 4, seq 4096), `./run 2 --dim 64 --heads 32`.
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

#define FA_BR L05_BR                         /**< 128 query rows per block */
#define FA_BC L05_BC                         /**< 128 keys per KV tile */
#define FA_THREADS 256                       /**< two warpgroups */
#define FA_NS (FA_BC / 2)                    /**< S accumulator floats per thread: 64 x Bc / 128 */
#define FA_NO (HEAD_DIM / 2)                 /**< O accumulator floats per thread */
#define FA_KS (HEAD_DIM / 16)                /**< k-steps of S = Q K^T */
#define FA_PK (FA_BC / 16)                   /**< k-steps of O += P V */
#define FA_Q_BYTES (FA_BR * HEAD_DIM * 2)    /**< the Q tile */
#define FA_TILE_BYTES (FA_BC * HEAD_DIM * 2) /**< one K or V tile buffer */
/** Dynamic shared memory: Q, two K and two V stages, five mbarriers (Q, K and V of each stage),
 * and 1024 bytes to align the start to a swizzle atom. */
#define FA_SMEM_BYTES (FA_Q_BYTES + 4 * FA_TILE_BYTES + 64 + 1024)
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
/** This build's kernel: l05_tma_kernel_d64 or l05_tma_kernel_d128. */
#define FA_KERNEL FA_CAT(l05_tma_kernel_d, HEAD_DIM)
/** This build's launcher: l05_tma_d64() or l05_tma_d128(), declared in fa3_hopper.h. */
#define FA_LAUNCH FA_CAT(l05_tma_d, HEAD_DIM)
/** S = Q K^T for one k-step: N = FA_BC keys. */
#define FA_WGMMA_S wgmma_ss_n128
/** O += P V for one k-step: N = HEAD_DIM. */
#define FA_WGMMA_O FA_CAT(wgmma_rs_n, HEAD_DIM)

/** Thread 0: announce a tile's bytes on `bar`, then copy it, one TMA box per 64-column panel,
 * into the stage at `dst` (panel p at p * rows * 128). Coordinates: head `hh`, first token `t0`,
 * sequence `bb`. */
static __device__ __forceinline__ void tma_tile(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                                int rows, int hh, int t0, int bb) {
  mbar_arrive_expect_tx(bar, rows * HEAD_DIM * 2);
#pragma unroll
  for (int p = 0; p < FA_PANELS; ++p)
    tma_load_4d(dst + p * rows * 128, map, bar, p * 64, hh, t0, bb);
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
 *     Br = 128 rows (warpgroup w: rows 64w .. 64w+63), Bc = 128, smem in the 128-byte swizzle
 *     thread 0: TMA Q_i on bar_q; TMA K_s, V_s -> stage s on bar_k[s], bar_v[s], s = 0, 1
 *     __syncthreads; mbar_wait(bar_q)
 *     m = -inf, l = 0, O = 0
 *     for j in 0 .. Tc-1:                               stage st = j % 2, phase (j / 2) % 2
 *       mbar_wait(bar_k[st])                            K_j is in
 *       S = Q_i K_j^T; wgmma commit; wgmma wait_group 0          Q_i, K_j by smem descriptors
 *       if j >= Tu: S = -inf where key >= seq_kv, or causal and key > row + seq_kv - seq_q
 *       m_new = max(m, scale rowmax(S));  P = 2^(scale S - m_new);  alpha = 2^(m - m_new)
 *       l = alpha l + rowsum(P);  O = alpha O;  m = m_new
 *       mbar_wait(bar_v[st])                            V_j is in
 *       O += P V_j; wgmma commit; wgmma wait_group 0             P from registers (bf16)
 *       __syncthreads                                   both warpgroups are done with stage st
 *       thread 0: TMA K_{j+2}, V_{j+2} -> stage st
 *     store_o: l = sum over the quad;  O_i = O / l;  lse_i = (m + log2 l) ln 2
 */
/** One block per (Q tile of FA_BR = 128 rows, head, batch), bf16 in and out, two warpgroups of 64
 * rows. Each warpgroup writes its 64 rows of O and their log-sum-exp. */
static __global__ void __launch_bounds__(FA_THREADS, 1)
    FA_KERNEL(const __grid_constant__ CUtensorMap tm_q,  // Q, boxes of 64 x FA_BR
              const __grid_constant__ CUtensorMap tm_k,  // K, boxes of 64 x FA_BC
              const __grid_constant__ CUtensorMap tm_v,  // V, boxes of 64 x FA_BC
              attn_bf16 *__restrict__ o,                 // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,                   // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
              int n_q_tiles) {
  extern __shared__ unsigned char smem[];
  /* The swizzle repeats every 1024 bytes, and both TMA and wgmma apply it from address bits:
   * tiles start on a 1024-byte boundary. */
  const uint32_t sQ_a = (smem_u32(smem) + 1023u) & ~1023u; /* [panel][FA_BR][64] */
  const uint32_t sK_a = sQ_a + FA_Q_BYTES;                 /* [2][panel][FA_BC][64] */
  const uint32_t sV_a = sK_a + 2 * FA_TILE_BYTES;          /* [2][panel][FA_BC][64] */
  const uint32_t bar_q = sV_a + 2 * FA_TILE_BYTES;         /* mbarrier: Q landed */
  const uint32_t bar_k = bar_q + 8;                        /* [2]: K of stage s landed */
  const uint32_t bar_v = bar_q + 24;                       /* [2]: V of stage s landed */

  const int wg = threadIdx.x >> 7; /* my warpgroup: rows 64 wg .. 64 wg + 63 */
  const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31; /* warp in the warpgroup */
  const int g = lane >> 2, t4 = lane & 3; /* quad (row) and lane in quad (column pair) */
  /* Heavy first: a head's Q tiles from the last (sees the most keys) to the first. */
  const int q_tile =
      causal ? n_q_tiles - 1 - (int)(blockIdx.x % n_q_tiles) : blockIdx.x % n_q_tiles;
  const int bh = blockIdx.x / n_q_tiles;
  const int h = bh % heads, b = bh / heads;
  const int kvh = h / (heads / kv_heads);
  const int q0 = q_tile * FA_BR;
  const int wr0 = wg * L05_WG_ROWS + warp * 16; /* my warp's first row in the tile */
  const size_t q_stride = (size_t)heads * HEAD_DIM;
  const int diag = seq_kv - seq_q;
  const uint32_t q_base = sQ_a + wg * L05_WG_ROWS * 128; /* my warpgroup's rows of Q */

  const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
  const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, FA_BC, causal);
  /* Thread 0 sets up the barriers (one arrival each: its own arrive.expect_tx) and issues Q and
   * the first two KV tiles; nobody touches a barrier before the block barrier says it exists. */
  if (threadIdx.x == 0) {
    mbar_init(bar_q, 1);
    for (int st = 0; st < 2; ++st) {
      mbar_init(bar_k + 8 * st, 1);
      mbar_init(bar_v + 8 * st, 1);
    }
    mbar_init_fence();
    tma_tile(sQ_a, &tm_q, bar_q, FA_BR, h, q0, b);
    for (int st = 0; st < 2 && st < n_tiles; ++st) {
      tma_tile(sK_a + st * FA_TILE_BYTES, &tm_k, bar_k + 8 * st, FA_BC, kvh, st * FA_BC, b);
      tma_tile(sV_a + st * FA_TILE_BYTES, &tm_v, bar_v + 8 * st, FA_BC, kvh, st * FA_BC, b);
    }
  }
  __syncthreads();
  mbar_wait(bar_q, 0);

  float acc[FA_NO];
  float row_m[2], row_l[2]; /* [row g or g + 8]; m in log2 units */
#pragma unroll
  for (int i = 0; i < FA_NO; ++i) acc[i] = 0.f;
  row_m[0] = row_m[1] = -INFINITY;
  row_l[0] = row_l[1] = 0.f;

  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * FA_BC;
    const int st = j & 1;                 /* l05_stage(j, 2) */
    const uint32_t parity = (j >> 1) & 1; /* l05_full_parity(j, 2) */
    const uint32_t cur = st * FA_TILE_BYTES;
    mbar_wait(bar_k + 8 * st, parity); /* K_j has landed */

    /* S = Q K^T: FA_KS wgmma, one group, then wait for it. */
    float s[FA_NS];
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < FA_KS; ++ks) {
      const uint32_t col = (ks & 3) * 32; /* bytes along the row, inside the panel */
      const uint64_t da = wgmma_desc(q_base + (ks >> 2) * FA_BR * 128 + col, 16, 1024);
      const uint64_t db = wgmma_desc(sK_a + cur + (ks >> 2) * FA_BC * 128 + col, 16, 1024);
      FA_WGMMA_S(s, da, db, ks > 0);
    }
    wgmma_commit();
    wgmma_wait0();
    reg_fence(s, FA_NS);

    /* The mask, element by element, only on the tiles that need it (the same for the whole
     * block: no divergence): the diagonal tiles and a last tile cut short by seq_kv. The
     * accumulator's layout is mma.sync's, per n8 column block: s[4 nt + e] is row g + 8 (e / 2),
     * column 8 nt + 2 t4 + e % 2 of my warp's 16 rows. */
    if (j >= n_unmasked) {
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
#pragma unroll
      for (int dt = 0; dt < HEAD_DIM / 8; ++dt) {
        acc[4 * dt + 2 * hf] *= alpha;
        acc[4 * dt + 2 * hf + 1] *= alpha;
      }
    }

    mbar_wait(bar_v + 8 * st, parity); /* V_j has landed */

    /* O += P V: P packed from the S accumulator into wgmma's register A fragment (for 16 keys,
     * two n8 blocks of S: the layout of mma.sync's A), V through an MN-major descriptor. */
    uint32_t pa[FA_PK][4];
#pragma unroll
    for (int kk = 0; kk < FA_PK; ++kk) {
      pa[kk][0] = pack_bf16x2(s[8 * kk + 0], s[8 * kk + 1]);
      pa[kk][1] = pack_bf16x2(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = pack_bf16x2(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = pack_bf16x2(s[8 * kk + 6], s[8 * kk + 7]);
    }
    reg_fence(acc, FA_NO);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < FA_PK; ++kk) {
      const uint64_t dv = wgmma_desc(sV_a + cur + kk * 16 * 128, FA_BC * 128, 1024);
      FA_WGMMA_O(acc, pa[kk], dv, 1);
    }
    wgmma_commit();
    wgmma_wait0();
    reg_fence(acc, FA_NO);
    /* Both warpgroups are done with stage st: refill it with tile j + 2. */
    __syncthreads();
    if (threadIdx.x == 0 && j + 2 < n_tiles) {
      tma_tile(sK_a + cur, &tm_k, bar_k + 8 * st, FA_BC, kvh, k0 + 2 * FA_BC, b);
      tma_tile(sV_a + cur, &tm_v, bar_v + 8 * st, FA_BC, kvh, k0 + 2 * FA_BC, b);
    }
  }

  store_o(o, lse, acc, row_m, row_l, q0, wr0, g, t4, seq_q, q_stride, b, h, bh);
}

/** The launcher, l05_tma_d64() or l05_tma_d128(): the three tensor maps, then one block per
 * (Q tile, head, batch). */
extern "C" cudaError_t FA_LAUNCH(const void *q, const void *k, const void *v, void *o, float *lse,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                 int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  const int n_q_tiles = attn_cdiv(seq_q, FA_BR);
  const long long blocks = (long long)n_q_tiles * batch * heads;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  CUtensorMap tm_q, tm_k, tm_v;
  ATTN_TRY(l05_tensor_map(&tm_q, q, batch, seq_q, heads, HEAD_DIM, FA_BR));
  ATTN_TRY(l05_tensor_map(&tm_k, k, batch, seq_kv, kv_heads, HEAD_DIM, FA_BC));
  ATTN_TRY(l05_tensor_map(&tm_v, v, batch, seq_kv, kv_heads, HEAD_DIM, FA_BC));
  ATTN_TRY(
      cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, FA_SMEM_BYTES));
  FA_KERNEL<<<(unsigned)blocks, FA_THREADS, FA_SMEM_BYTES, stream>>>(
      tm_q, tm_k, tm_v, (attn_bf16 *)o, lse, heads, kv_heads, seq_q, seq_kv, causal,
      scale * FA_LOG2E, n_q_tiles);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
