// clang-format off
/** @file
 * @brief Version 1: wgmma. Lesson 04's version 7 with every mma.sync replaced by the Hopper
 * warpgroup's asynchronous matrix multiply, wgmma.mma_async; loads unchanged (cp.async, two
 * buffers).
 *
 * What changed: the block is two warpgroups (256 threads), each owning 64 query rows, wgmma's M.
 * S = Q K^T is one m64n128k16 wgmma per 16 columns of the head dimension, its A (Q) and B (K)
 * read by the tensor cores straight from shared memory through 64-bit descriptors: no ldmatrix,
 * no operand registers. O += P V takes P from registers (the S accumulator packed to bf16, the same
 * fragment lesson 04 built for mma.sync) and V from shared memory, "transposed" (MN-major: keys
 * are rows, the head dimension contiguous). Shared memory switches from lesson 04's swizzle (16-byte
 * chunks XOR row mod 8 across the whole row) to the 128-byte swizzle wgmma reads: rows cut into
 * panels of 64 columns. KV tiles of 128 keys at both head dimensions.
 *
 * Why: a warp's mma.sync m16n8k16 does 4096 multiply-adds and needs its operands in registers,
 * loaded by ldmatrix: lesson 04 measured 366.9 TFLOP/s, 37% of the H200's dense bf16 peak. One
 * wgmma m64n128k16 does 131072 multiply-adds for four warps and reads its operands from shared
 * memory itself; Hopper's tensor cores reach their peak only through it.
 *
 * Prediction: the loop still waits on each GEMM before the softmax (no overlap) and still loads
 * with cp.async behind block barriers, so the tensor cores idle during the softmax: about 1.3x
 * lesson 04 at dim 128 (450-500 TFLOP/s), less at dim 64, where the softmax weighs twice as much
 * per flop.
 *
 * Measured: NVIDIA H200, 2026-11-25, batch 4, seq 4096 (docs/results/h200-l05c-2026-11-25): dim
 * 128, 16 heads: 414.1 TFLOP/s (causal 371.5), 1.12x lesson 04's version 7 in the same run, short
 * of the 1.3x predicted; dim 64, 32 heads: 310.8 (causal 284.3), 0.97x: as feared, the softmax and
 * the barriers, not the multiply, set the pace once mma.sync is gone.
 *
 * Run: `./run 1` (dim 128, 16 heads, batch 4, seq 4096), `./run 1 --dim 64 --heads 32`.
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
#include "fa3_hopper.h"
#include "hopper.cuh"

#define FA_BR L05_BR                         /**< 128 query rows per block */
#define FA_BC L05_BC                         /**< 128 keys per KV tile */
#define FA_THREADS 256                       /**< two warpgroups */
#define FA_NS (FA_BC / 2)                    /**< S accumulator floats per thread: 64 x Bc / 128 */
#define FA_NO (HEAD_DIM / 2)                 /**< O accumulator floats per thread */
#define FA_KS (HEAD_DIM / 16)                /**< k-steps of S = Q K^T */
#define FA_PK (FA_BC / 16)                   /**< k-steps of O += P V */
#define FA_CHUNKS (HEAD_DIM / 8)             /**< 16-byte chunks per tile row */
#define FA_RSTEP (FA_THREADS / FA_CHUNKS)    /**< rows per pass of the block's loads: 32 or 16 */
#define FA_Q_BYTES (FA_BR * HEAD_DIM * 2)    /**< the Q tile */
#define FA_TILE_BYTES (FA_BC * HEAD_DIM * 2) /**< one K or V tile buffer */
/** Dynamic shared memory: Q, two K and two V buffers, and 1024 bytes to align the start to a
 * swizzle atom. */
#define FA_SMEM_BYTES (FA_Q_BYTES + 4 * FA_TILE_BYTES + 1024)
/** log2(e): exp(x) = 2^(x log2 e), so the scale folds it in and ex2 does the rest. */
#define FA_LOG2E 1.4426950408889634f
/** ln(2): turns the base-2 log-sum-exp back into the natural one. */
#define FA_LN2 0.6931471805599453f

/** Token pasting, after expanding `b`. */
#define FA_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FA_CAT(a, b) FA_CAT_(a, b)
/** This build's kernel: l05_wgmma_kernel_d64 or l05_wgmma_kernel_d128. */
#define FA_KERNEL FA_CAT(l05_wgmma_kernel_d, HEAD_DIM)
/** This build's launcher: l05_wgmma_d64() or l05_wgmma_d128(), declared in fa3_hopper.h. */
#define FA_LAUNCH FA_CAT(l05_wgmma_d, HEAD_DIM)
/** S = Q K^T for one k-step: N = FA_BC keys. */
#define FA_WGMMA_S wgmma_ss_n128
/** O += P V for one k-step: N = HEAD_DIM. */
#define FA_WGMMA_O FA_CAT(wgmma_rs_n, HEAD_DIM)

/** Issue this thread's share of the copies of a tile of `rows` rows: chunk c_t of rows r_t,
 * r_t + FA_RSTEP, ... `dst` is the shared address of the first (tile base + sw128_off(r_t, c_t)),
 * `src` its global address, `step` FA_RSTEP rows of global memory, `left` the rows that exist from
 * r_t on. Rows that do not exist are zero-filled (src-size 0, nothing read, from `safe`, a row that
 * exists): a key past seq_kv must give 0 in P.V, never a stale NaN. FA_RSTEP is a multiple of 8,
 * so every pass lands at the same swizzle position, FA_RSTEP rows (x 128 bytes) further. */
static __device__ __forceinline__ void load_rows(uint32_t dst, const attn_bf16 *src,
                                                 const attn_bf16 *safe, size_t step, int left,
                                                 int rows) {
#pragma unroll
  for (int it = 0; it < rows / FA_RSTEP; ++it) {
    const int ok = it * FA_RSTEP < left;
    cp_async_16(dst + it * FA_RSTEP * 128, ok ? src + it * step : safe, ok ? 16 : 0);
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
 *     Q_i, K_0, V_0 -> smem by cp.async; wait_group 2; fence.proxy.async; __syncthreads
 *     m = -inf, l = 0, O = 0
 *     for j in 0 .. Tc-1:                                         K_j and V_j in buffer j % 2
 *       cp.async.wait_group 1; fence.proxy.async; __syncthreads   K_j is in, tile j-1 consumed
 *       K_{j+1} -> the other buffer; commit
 *       S = Q_i K_j^T; wgmma commit; wgmma wait_group 0          Q_i, K_j by smem descriptors
 *       if j >= Tu: S = -inf where key >= seq_kv, or causal and key > row + seq_kv - seq_q
 *       m_new = max(m, scale rowmax(S));  P = 2^(scale S - m_new);  alpha = 2^(m - m_new)
 *       l = alpha l + rowsum(P);  O = alpha O;  m = m_new
 *       cp.async.wait_group 1; fence.proxy.async; __syncthreads   V_j is in
 *       V_{j+1} -> the other buffer; commit
 *       O += P V_j; wgmma commit; wgmma wait_group 0             P from registers (bf16)
 *     store_o: l = sum over the quad;  O_i = O / l;  lse_i = (m + log2 l) ln 2
 */
/** One block per (Q tile of FA_BR = 128 rows, head, batch), bf16 in and out, two warpgroups of 64
 * rows. Each warpgroup writes its 64 rows of O and their log-sum-exp. */
static __global__ void __launch_bounds__(FA_THREADS, 1)
    FA_KERNEL(const attn_bf16 *__restrict__ q,  // [batch, seq_q, heads, HEAD_DIM]
              const attn_bf16 *__restrict__ k,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              const attn_bf16 *__restrict__ v,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              attn_bf16 *__restrict__ o,        // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,          // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
              int n_q_tiles) {
  extern __shared__ unsigned char smem[];
  /* The swizzle repeats every 1024 bytes, and wgmma reads it from address bits: tiles start on a
   * 1024-byte boundary. */
  const uint32_t sQ_a = (smem_u32(smem) + 1023u) & ~1023u; /* [panel][FA_BR][64] */
  const uint32_t sK_a = sQ_a + FA_Q_BYTES;                 /* [2][panel][FA_BC][64] */
  const uint32_t sV_a = sK_a + 2 * FA_TILE_BYTES;          /* [2][panel][FA_BC][64] */

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
  const size_t q_stride = (size_t)heads * HEAD_DIM, kv_stride = (size_t)kv_heads * HEAD_DIM;
  const attn_bf16 *qg = q + ((size_t)b * seq_q + q0) * q_stride + (size_t)h * HEAD_DIM;
  const attn_bf16 *kg = k + (size_t)b * seq_kv * kv_stride + (size_t)kvh * HEAD_DIM;
  const attn_bf16 *vg = v + (size_t)b * seq_kv * kv_stride + (size_t)kvh * HEAD_DIM;
  const int diag = seq_kv - seq_q;

  /* Where this thread loads: chunk c_t of rows r_t + FA_RSTEP * i of every tile. */
  const int r_t = threadIdx.x / FA_CHUNKS, c_t = threadIdx.x % FA_CHUNKS;
  const uint32_t ldq_off = sw128_off(r_t, c_t, FA_BR), ldkv_off = sw128_off(r_t, c_t, FA_BC);
  const size_t q_ld = (size_t)r_t * q_stride + c_t * 8, kv_ld = (size_t)r_t * kv_stride + c_t * 8;

  /* The descriptors' fixed parts. Q (A, K-major): my warpgroup's 64 rows, 8-row groups 1024 bytes
   * apart. K (B, K-major): all FA_BC keys. V (B, MN-major): 8-key groups 1024 bytes apart, the
   * head dimension's 64-column panels FA_BC * 128 bytes apart. A k-step of 16 columns moves 32
   * bytes along a row inside the swizzle atom (the hardware applies the XOR on the address), and
   * every fourth step to the next panel. */
  const uint32_t q_base = sQ_a + wg * L05_WG_ROWS * 128;

  const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
  const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, FA_BC, causal);
  const size_t kv_step = FA_RSTEP * kv_stride;
  load_rows(sQ_a + ldq_off, qg + q_ld, qg + c_t * 8, FA_RSTEP * q_stride, seq_q - q0 - r_t, FA_BR);
  cp_async_commit();
  if (n_tiles > 0)
    load_rows(sK_a + ldkv_off, kg + kv_ld, kg + c_t * 8, kv_step, seq_kv - r_t, FA_BC);
  cp_async_commit();
  if (n_tiles > 0)
    load_rows(sV_a + ldkv_off, vg + kv_ld, vg + c_t * 8, kv_step, seq_kv - r_t, FA_BC);
  cp_async_commit();
  cp_async_wait_2();   /* Q has landed (K0 and V0 may still be in flight) */
  fence_proxy_async(); /* ... and the tensor cores, which read it next, will see it */
  __syncthreads();

  float acc[FA_NO];
  float row_m[2], row_l[2]; /* [row g or g + 8]; m in log2 units */
#pragma unroll
  for (int i = 0; i < FA_NO; ++i) acc[i] = 0.f;
  row_m[0] = row_m[1] = -INFINITY;
  row_l[0] = row_l[1] = 0.f;

  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * FA_BC;
    const uint32_t cur = (j & 1) * FA_TILE_BYTES, nxt = FA_TILE_BYTES - cur;
    const size_t next_tile = (size_t)(k0 + FA_BC) * kv_stride, next_row = next_tile + kv_ld;
    cp_async_wait_1(); /* my copies of K_j have landed */
    fence_proxy_async();
    __syncthreads(); /* everyone's have, and both warpgroups are done with tile j - 1 */
    if (j + 1 < n_tiles)
      load_rows(sK_a + nxt + ldkv_off, kg + next_row, kg + next_tile + c_t * 8, kv_step,
                seq_kv - k0 - FA_BC - r_t, FA_BC);
    cp_async_commit(); /* possibly empty: keeps the count of groups uniform */

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

    cp_async_wait_1(); /* my copies of V_j have landed (K_{j+1} may be in flight) */
    fence_proxy_async();
    __syncthreads();
    if (j + 1 < n_tiles)
      load_rows(sV_a + nxt + ldkv_off, vg + next_row, vg + next_tile + c_t * 8, kv_step,
                seq_kv - k0 - FA_BC - r_t, FA_BC);
    cp_async_commit();

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
  }

  store_o(o, lse, acc, row_m, row_l, q0, wr0, g, t4, seq_q, q_stride, b, h, bh);
}

/** The launcher, l05_wgmma_d64() or l05_wgmma_d128(): one block per (Q tile, head, batch). */
extern "C" cudaError_t FA_LAUNCH(const void *q, const void *k, const void *v, void *o, float *lse,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                 int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  const int n_q_tiles = attn_cdiv(seq_q, FA_BR);
  const long long blocks = (long long)n_q_tiles * batch * heads;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  ATTN_TRY(
      cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, FA_SMEM_BYTES));
  FA_KERNEL<<<(unsigned)blocks, FA_THREADS, FA_SMEM_BYTES, stream>>>(
      (const attn_bf16 *)q, (const attn_bf16 *)k, (const attn_bf16 *)v, (attn_bf16 *)o, lse, heads,
      kv_heads, seq_q, seq_kv, causal, scale * FA_LOG2E, n_q_tiles);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
