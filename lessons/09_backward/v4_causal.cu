// clang-format off
/** @file
 * @brief Version 4: version 3 with causal tile skipping and a cp.async pipeline. A K/V tile starts
 *        at the first Q tile that sees it, masks only the tiles the diagonal crosses, and loads
 *        the next Q tile while it computes this one.
 *
 * What changed: three things.
 *  - Tile skip. With the bottom-right causal mask, the keys [k0, k0 + 64) are seen only by rows
 *    i >= k0 - (seq_kv - seq_q): the walk starts at attn_first_q_tile() (the checklist's
 *    l09_first_q_tile()) instead of tile 0. For seq_q = seq_kv = N a block visits N - k0 rows
 *    instead of N, half the work over the grid.
 *  - Mask only where needed. From attn_first_unmasked_q_tile() on, every row sees every key of the
 *    block: no per-element compare. Only the one or two tiles the diagonal crosses, a last Q tile
 *    cut short by seq_q and a K/V tile cut short by seq_kv are masked; without `--causal` only
 *    the ragged ones are.
 *  - Pipeline. Q, dO, L and D of the next Q tile (of the same head, or the next query head of the
 *    group: the walk is one sequence of tiles) are copied with cp.async into a second buffer while
 *    the warps compute the current one; one barrier at the top of each tile both publishes the
 *    landed copies and frees the buffer the next copies overwrite.
 * The blocks are launched key tile first (blockIdx.x), so under the mask the heaviest blocks (the
 * first keys, seen by every row) start first.
 *
 * Why: version 3 waits for every Q tile's copies with nothing to overlap them, and under the mask
 * computes exponentials and products for about half the (query, key) pairs only to zero them.
 *
 * Prediction: causal about 1.8x version 3 (half the tiles, fewer masks); not causal 10-20% over
 * version 3 from the overlap of copies and math.
 *
 * Measured: NVIDIA H200, 2026-11-25 (docs/results/h200-l09c-2026-11-25), batch 4, 16 heads, seq
 * 4096, dim 128: causal 4.650 ms, 147.8 TFLOP/s, 1.99x version 3's 9.267 ms (above the 1.8x
 * predicted); not causal 8.976 ms, 153.1 TFLOP/s, 1.03x version 3 (below the 10-20% predicted:
 * the overlap bought little); dim 64, 32 heads: 146.6 (1.05x), causal 144.7. 0.50-0.70x
 * FlashAttention-2's backward on the papers' grid (peers.csv).
 *
 * Run: `./run 4 --causal` and `./run 4`; `--dim 64 --heads 32` for dim 64. The share of the time
 * spent recomputing P: configure a second build with `-DATTN_L09_ABLATE=ON` (this file then skips
 * Q K^T and the exponential, and its results are wrong) and compare `./run 4 --no-check` there and
 * here.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include "attn_causal.h"
#include "bwd.cuh"
#include "ptx.cuh" /* lesson 04's PTX wrappers: mma.sync, ldmatrix, cp.async */

#ifndef L09_ABLATE_RECOMPUTE
/** 1 only in the experiment build that measures the share of time spent recomputing P. */
#define L09_ABLATE_RECOMPUTE 0
#endif

#define MB_BR 64                          /**< query rows per Q tile */
#define MB_BC 64                          /**< keys per block: 16 per warp */
#define MB_THREADS 128                    /**< 4 warps */
#define MB_KS (HEAD_DIM / 16)             /**< k-steps over the head dimension */
#define MB_QT (MB_BR / 8)                 /**< n8 tiles of S^T and dP^T (queries): 8 */
#define MB_DT (HEAD_DIM / 8)              /**< n8 tiles of dK, dV, dQ (dims) */
#define MB_QK (MB_BR / 16)                /**< k-steps over the queries (dV, dK): 4 */
#define MB_KK (MB_BC / 16)                /**< k-steps over the keys (dQ): 4 */
#define MB_DQ_DT (MB_DT < 8 ? MB_DT : 8)  /**< dim tiles of dQ per pass (32 fp32 registers) */
#define MB_CHUNKS (HEAD_DIM / 8)          /**< 16-byte chunks per row of Q, K, V, dO */
#define MB_ROWB (HEAD_DIM * 2)            /**< bytes per row of Q, K, V, dO */
#define MB_RSTEP (MB_THREADS / MB_CHUNKS) /**< rows per pass of a tile copy: 16 or 8 */
#define MB_SROWB (MB_BR * 2)              /**< bytes per row of the dS^T tile [key][query] */

/** This build's launcher: l09_causal_d64() or l09_causal_d128(). */
#define MB_LAUNCH BW_CAT(l09_causal_d, HEAD_DIM)
/** This build's kernel: l09_causal_kernel_d64 or l09_causal_kernel_d128. */
#define MB_KERNEL BW_CAT(l09_causal_kernel_d, HEAD_DIM)

/** Bytes of one K or V tile: MB_BC rows of MB_ROWB bytes. */
#define MB_KV_BYTES (MB_BC * MB_ROWB)
/** Bytes of one Q or dO tile: MB_BR rows of MB_ROWB bytes. */
#define MB_Q_BYTES (MB_BR * MB_ROWB)
/** Dynamic shared memory: K, V [64][dim], two buffers of Q, dO [64][dim], dS^T [64][64] bf16,
 * then two buffers of L and D [64] fp32. */
#define MB_SMEM_BYTES (2 * MB_KV_BYTES + 4 * MB_Q_BYTES + MB_BC * MB_SROWB + 4 * MB_BR * 4)

/** Byte offset of 16-byte chunk `chunk` of row `row` of a Q, K, V or dO tile (XOR-swizzled). */
static __device__ __forceinline__ uint32_t tile_off(int row, int chunk) {
  return (uint32_t)((row * MB_CHUNKS + (chunk ^ (row & 7))) * 16);
}

/** Byte offset of chunk `chunk` (8 queries) of key row `row` of the dS^T tile (8 chunks a row). */
static __device__ __forceinline__ uint32_t ds_off(int row, int chunk) {
  return (uint32_t)(row * MB_SROWB + ((chunk ^ (row & 7)) * 16));
}

/** This thread's copies of rows [r0, r0 + rows) of a BSHD tensor into a tile; rows at or past
 * @p n are zero-filled (nothing read). */
static __device__ __forceinline__ void load_tile(uint32_t tile, const attn_bf16 *base,
                                                 size_t row_stride, int r0, int rows, int n) {
  const int r_t = threadIdx.x / MB_CHUNKS, c_t = threadIdx.x % MB_CHUNKS;
#pragma unroll
  for (int it = 0; it < rows / MB_RSTEP; ++it) {
    const int r = r_t + it * MB_RSTEP, ok = r0 + r < n;
    const attn_bf16 *src = base + (size_t)(ok ? r0 + r : 0) * row_stride + c_t * 8;
    cp_async_16(tile + tile_off(r, c_t), src, ok ? 16 : 0);
  }
}

/** Issue the copies of Q tile @p t of the block's walk (query head hh = t / per_head of the group,
 * tile first + t % per_head) into buffer @p buf, and commit them as one group. */
static __device__ __forceinline__ void load_q_tile(uint32_t sQ, uint32_t sO, uint32_t sLD,
                                                   const attn_bf16 *q, const attn_bf16 *d_o,
                                                   const float *lse, const float *dd, int b,
                                                   int kvh, int grp, int heads, int seq_q,
                                                   int first, int per_head, int t) {
  const int h = kvh * grp + t / per_head, q0 = (first + t % per_head) * MB_BR;
  const size_t q_row = (size_t)heads * HEAD_DIM;
  const size_t head = (size_t)b * seq_q * q_row + (size_t)h * HEAD_DIM;
  load_tile(sQ, q + head, q_row, q0, MB_BR, seq_q);
  load_tile(sO, d_o + head, q_row, q0, MB_BR, seq_q);
  if (threadIdx.x < 2 * MB_BR) { /* L (threads 0-63) and D (64-127), one row each */
    const int r = threadIdx.x % MB_BR, ok = q0 + r < seq_q;
    const float *src = (threadIdx.x < MB_BR ? lse : dd) + ((size_t)b * heads + h) * seq_q;
    bw_cp_async_4(sLD + threadIdx.x * 4, src + (ok ? q0 + r : 0), ok ? 4 : 0);
  }
  cp_async_commit();
}

/* ---- The steps of a Q tile, for one warp's 16 keys ----------------------------------------------
 */

/** C^T = A_w B^T, 16 keys x MB_BR queries over the head dimension: A = rows kw.. of tile @p sA
 * (K or V, ldmatrix at @p a_off), B = the Q tile @p sB (Q or dO, ldmatrix at @p b_off). S^T = K Q^T
 * and dP^T = V dO^T. */
static __device__ __forceinline__ void product_t(float c[MB_QT][4], uint32_t sA, uint32_t sB,
                                                 const uint32_t a_off[4], const uint32_t b_off[4]) {
#pragma unroll
  for (int nt = 0; nt < MB_QT; ++nt) c[nt][0] = c[nt][1] = c[nt][2] = c[nt][3] = 0.f;
#pragma unroll
  for (int ks = 0; ks < MB_KS; ++ks) {
    uint32_t a[4];
    ldmatrix_x4(a, sA + a_off[ks & 3] + (ks >> 2) * 128);
#pragma unroll
    for (int np = 0; np < MB_QT / 2; ++np) {
      uint32_t bq[4];
      ldmatrix_x4(bq, sB + b_off[ks & 3] + (ks >> 2) * 128 + np * 16 * MB_ROWB);
      mma_bf16_16816(c[2 * np], a, bq[0], bq[1]);
      mma_bf16_16816(c[2 * np + 1], a, bq[2], bq[3]);
    }
  }
}

/** acc += X B, the sum over the tile's queries: X (16 keys x MB_BR queries, fp32, P^T or dS^T)
 * repacked as A fragments, B = the Q tile @p sB (dO or Q) through ldmatrix.trans at @p t_off.
 * dV += P^T dO and dK += dS^T Q. */
static __device__ __forceinline__ void accumulate_t(float acc[MB_DT][4], float x[MB_QT][4],
                                                    uint32_t sB, const uint32_t t_off[4]) {
#pragma unroll
  for (int kq = 0; kq < MB_QK; ++kq) {
    uint32_t pa[4];
    pa[0] = pack_bf16x2(x[2 * kq][0], x[2 * kq][1]);
    pa[1] = pack_bf16x2(x[2 * kq][2], x[2 * kq][3]);
    pa[2] = pack_bf16x2(x[2 * kq + 1][0], x[2 * kq + 1][1]);
    pa[3] = pack_bf16x2(x[2 * kq + 1][2], x[2 * kq + 1][3]);
#pragma unroll
    for (int dp = 0; dp < MB_DT / 2; ++dp) {
      uint32_t vb[4];
      ldmatrix_x4_trans(vb, sB + t_off[dp & 3] + (dp >> 2) * 128 + kq * 16 * MB_ROWB);
      mma_bf16_16816(acc[2 * dp], pa, vb[0], vb[1]);
      mma_bf16_16816(acc[2 * dp + 1], pa, vb[2], vb[3]);
    }
  }
}

/* The algorithm on a whiteboard, version 4: version 3's walk, started where the causal mask lets
 * the first row see the tile, masked only where the diagonal (or a ragged edge) crosses it, and
 * double-buffered: step t + 1's copies fly while step t computes. Br = Bc = 64.
 *
 *   D = rowsum(dO o O); dQ_acc = 0                         bw_dterm()
 *   for each K/V tile j (Bc keys from k0) of KV head g:    one block, 4 warps
 *     K_j, V_j -> shared memory (cp.async group); dK_w = dV_w = 0
 *     first    = attn_first_q_tile(k0, Br, ...)            Q tiles before it see no key of j
 *     unmasked = attn_first_unmasked_q_tile(k0, Bc, Br, ...)    from it on, no mask
 *     walk: each query head h of g's group x Q tiles first .. Tr - 1;  step 0 -> buffer 0
 *     for each step t of the walk (Q tile i, buffer t % 2):
 *       cp.async.wait_group 0; __syncthreads               step t is in; tile t - 1 is done
 *       Q, dO, lse, D of step t + 1 -> buffer (t + 1) % 2  one cp.async group
 *       S^T = K_w Q_i^T;  P^T = exp2(S^T scale log2e - lse_i log2e)
 *                                        0 where masked, if i < unmasked or the tile is ragged
 *       dV_w += P^T dO_i
 *       dP^T = V_w dO_i^T;  dS^T = P^T o (dP^T - D_i)      dS^T -> shared memory (bf16)
 *       dK_w += dS^T Q_i
 *       __syncthreads                                      the whole dS^T tile is written
 *       dQ_acc[rows 16w..16w+15 of i] += dS K_j            atomicAdd
 *   dK_w = scale dK_w, dV_w -> bf16
 *   dQ = scale dQ_acc -> bf16                              bw_dq_convert()
 */

/** One block per (K/V tile of 64 keys, KV head, batch); warp w owns keys 16w..16w+15. */
static __global__ void __launch_bounds__(MB_THREADS, 2)
    MB_KERNEL(const attn_bf16 *__restrict__ q, const attn_bf16 *__restrict__ k,
              const attn_bf16 *__restrict__ v, const attn_bf16 *__restrict__ d_o,
              const float *__restrict__ lse, const float *__restrict__ dd,
              float *__restrict__ dq_acc, attn_bf16 *__restrict__ dk, attn_bf16 *__restrict__ dv,
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale) {
  extern __shared__ __align__(128) unsigned char smem[];
  /* sQ[buf] = sQ0 + buf * MB_Q_BYTES, likewise sO; sLD[buf] holds L then D of that buffer. */
  const uint32_t sK = smem_u32(smem), sV = sK + MB_KV_BYTES, sQ0 = sV + MB_KV_BYTES;
  const uint32_t sO0 = sQ0 + 2 * MB_Q_BYTES, sS = sO0 + 2 * MB_Q_BYTES;
  const uint32_t sLD0 = sS + MB_BC * MB_SROWB;
  const float *sLD_f = (const float *)(smem + (sLD0 - sK));

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int k0 = blockIdx.x * MB_BC, kvh = blockIdx.y, b = blockIdx.z;
  const int grp = heads / kv_heads, diag = seq_kv - seq_q;
  const size_t q_row = (size_t)heads * HEAD_DIM, kv_row = (size_t)kv_heads * HEAD_DIM;
  const float scale_log2 = scale * BW_LOG2E;
  const int kw = 16 * warp; /* my keys in the tile */

  /* ldmatrix row addresses of this lane (see lesson 04's version 4 for the three patterns):
   *  a_off: A operand, 16 rows from `kw`, no .trans (K and V rows are my keys);
   *  b_off: B operand without .trans, rows are the n index (Q, dO for S^T and dP^T);
   *  t_off: B operand with .trans, rows are the k index (dO for dV, Q for dK, K for dQ). */
  uint32_t a_off[4], b_off[4], t_off[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    a_off[i] = tile_off(kw + (lane & 15), 2 * i + (lane >> 4));
    b_off[i] = tile_off((lane & 7) + ((lane >> 4) << 3), 2 * i + ((lane >> 3) & 1));
    t_off[i] = tile_off((lane & 7) + (((lane >> 3) & 1) << 3), 2 * i + (lane >> 4));
  }
  /* dS read back as the A operand of dQ (queries 16w.., over keys): ldmatrix.trans of the
   * [key][query] tile, rows are keys, chunk 2w or 2w + 1 (queries). */
  const uint32_t dsa_off = ds_off((lane & 7) + ((lane >> 4) << 3), 2 * warp + ((lane >> 3) & 1));

  const attn_bf16 *kg = k + (size_t)b * seq_kv * kv_row + (size_t)kvh * HEAD_DIM;
  const attn_bf16 *vg = v + (size_t)b * seq_kv * kv_row + (size_t)kvh * HEAD_DIM;
  load_tile(sK, kg, kv_row, k0, MB_BC, seq_kv);
  load_tile(sV, vg, kv_row, k0, MB_BC, seq_kv);
  cp_async_commit();

  float acc_k[MB_DT][4], acc_v[MB_DT][4];
#pragma unroll
  for (int dt = 0; dt < MB_DT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_k[dt][e] = acc_v[dt][e] = 0.f;

  /* The walk: per query head of the group, the Q tiles from the first that sees these keys. */
  const int n_q_tiles = attn_cdiv(seq_q, MB_BR);
  const int first = attn_first_q_tile(k0, MB_BR, seq_q, seq_kv, causal);
  const int unmasked = attn_first_unmasked_q_tile(k0, MB_BC, MB_BR, seq_q, seq_kv, causal);
  const int per_head = n_q_tiles - first, n_walk = grp * per_head;
  const int ragged_k = k0 + MB_BC > seq_kv;
  if (n_walk > 0)
    load_q_tile(sQ0, sO0, sLD0, q, d_o, lse, dd, b, kvh, grp, heads, seq_q, first, per_head, 0);
  for (int t = 0; t < n_walk; ++t) {
    const int buf = t & 1, h = kvh * grp + t / per_head, qt = first + t % per_head;
    const int q0 = qt * MB_BR;
    const uint32_t sQ = sQ0 + buf * MB_Q_BYTES, sO = sO0 + buf * MB_Q_BYTES;
    const float *sL = sLD_f + buf * 2 * MB_BR, *sD = sL + MB_BR;
    bw_cp_async_wait_all(); /* my copies of tile t (and of K, V) have landed */
    __syncthreads();        /* everyone's have; every warp is done with tile t - 1 */
    if (t + 1 < n_walk)
      load_q_tile(sQ0 + (buf ^ 1) * MB_Q_BYTES, sO0 + (buf ^ 1) * MB_Q_BYTES,
                  sLD0 + (buf ^ 1) * 2 * MB_BR * 4, q, d_o, lse, dd, b, kvh, grp, heads, seq_q,
                  first, per_head, t + 1);
    /* The mask is needed on the tiles the diagonal crosses and on ragged ones (rows past seq_q,
     * keys past seq_kv): the same answer for the whole block, no divergence. */
    const int masked = qt < unmasked || q0 + MB_BR > seq_q || ragged_k;

    /* S^T = K Q^T: 16 keys x 64 queries per warp. */
    float s[MB_QT][4];
#if L09_ABLATE_RECOMPUTE
    /* The experiment (CMake -DATTN_L09_ABLATE=ON, never the default build): no Q K^T and no
     * exponential; P^T is L itself, a value the compiler cannot fold. The results are wrong;
     * the time left is the backward without its recomputation of P. */
#pragma unroll
    for (int nt = 0; nt < MB_QT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = sL[nt * 8 + 2 * t4 + (e & 1)];
#else
    product_t(s, sK, sQ, a_off, b_off);
#endif
#if !L09_ABLATE_RECOMPUTE
        /* P^T = exp2(S^T scale log2 e - L log2 e), masked only where `masked` says. A masked
         * entry may compute exp2 of garbage (L of a row past seq_q is 0, of a row that sees no key
         * -inf): the select drops it. */
#pragma unroll
    for (int nt = 0; nt < MB_QT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int qc = nt * 8 + 2 * t4 + (e & 1), j = k0 + kw + g + (e >> 1) * 8;
        const int i = q0 + qc;
        const float p = fast_exp2(fmaf(s[nt][e], scale_log2, -sL[qc] * BW_LOG2E));
        s[nt][e] = !masked || (j < seq_kv && i < seq_q && (!causal || j <= i + diag)) ? p : 0.f;
      }
#endif
    /* dV += P^T dO. */
    accumulate_t(acc_v, s, sO, t_off);
    /* dP^T = V dO^T: 16 keys x 64 queries. */
    float dp_[MB_QT][4];
    product_t(dp_, sV, sO, a_off, b_off);
    /* dS^T = P^T o (dP^T - D), into s; and to shared memory (bf16) for dQ. */
#pragma unroll
    for (int nt = 0; nt < MB_QT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] *= dp_[nt][e] - sD[nt * 8 + 2 * t4 + (e & 1)];
      const int r = kw + g;
      *(uint32_t *)(smem + (sS - sK) + ds_off(r, nt) + t4 * 4) = pack_bf16x2(s[nt][0], s[nt][1]);
      *(uint32_t *)(smem + (sS - sK) + ds_off(r + 8, nt) + t4 * 4) =
          pack_bf16x2(s[nt][2], s[nt][3]);
    }
    /* dK += dS^T Q. */
    accumulate_t(acc_k, s, sQ, t_off);
    __syncthreads(); /* the whole dS^T tile is in shared memory */

    /* dQ (queries 16w..16w+15) += dS K over the block's 64 keys, MB_DQ_DT dim tiles a pass,
     * added to the fp32 accumulator. */
#pragma unroll
    for (int d0 = 0; d0 < MB_DT; d0 += MB_DQ_DT) {
      float acc_q[MB_DQ_DT][4];
#pragma unroll
      for (int dt = 0; dt < MB_DQ_DT; ++dt)
        acc_q[dt][0] = acc_q[dt][1] = acc_q[dt][2] = acc_q[dt][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < MB_KK; ++kk) {
        uint32_t da[4];
        ldmatrix_x4_trans(da, sS + dsa_off + kk * 16 * MB_SROWB);
#pragma unroll
        for (int dp = 0; dp < MB_DQ_DT / 2; ++dp) {
          const int dpp = d0 / 2 + dp;
          uint32_t kb[4];
          ldmatrix_x4_trans(kb, sK + t_off[dpp & 3] + (dpp >> 2) * 128 + kk * 16 * MB_ROWB);
          mma_bf16_16816(acc_q[2 * dp], da, kb[0], kb[1]);
          mma_bf16_16816(acc_q[2 * dp + 1], da, kb[2], kb[3]);
        }
      }
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int i = q0 + kw + g + hf * 8;
        if (i >= seq_q) continue;
        float *row = dq_acc + ((size_t)b * seq_q + i) * q_row + (size_t)h * HEAD_DIM;
#pragma unroll
        for (int dt = 0; dt < MB_DQ_DT; ++dt) {
          const int d = (d0 + dt) * 8 + 2 * t4;
          atomicAdd(row + d, acc_q[dt][2 * hf]);
          atomicAdd(row + d + 1, acc_q[dt][2 * hf + 1]);
        }
      }
    }
  }

  /* dK = scale * acc_k and dV = acc_v for my 16 keys, bf16. */
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int j = k0 + kw + g + hf * 8;
    if (j >= seq_kv) continue;
    attn_bf16 *dkr = dk + ((size_t)b * seq_kv + j) * kv_row + (size_t)kvh * HEAD_DIM;
    attn_bf16 *dvr = dv + ((size_t)b * seq_kv + j) * kv_row + (size_t)kvh * HEAD_DIM;
#pragma unroll
    for (int dt = 0; dt < MB_DT; ++dt) {
      const int d = dt * 8 + 2 * t4;
      *(uint32_t *)(dkr + d) =
          pack_bf16x2(acc_k[dt][2 * hf] * scale, acc_k[dt][2 * hf + 1] * scale);
      *(uint32_t *)(dvr + d) = pack_bf16x2(acc_v[dt][2 * hf], acc_v[dt][2 * hf + 1]);
    }
  }
}

/** The launcher, l09_mma_d64() or l09_mma_d128(). Workspace: D, then the fp32 dQ accumulator. */
extern "C" cudaError_t MB_LAUNCH(const l09_grad_args *a, cudaStream_t stream) {
  ATTN_TRY(bw_check(
      a, l09_workspace_bytes(4, a->batch, a->heads, a->kv_heads, a->seq_q, a->seq_kv, HEAD_DIM)));
  const size_t rows = (size_t)a->batch * a->heads * a->seq_q;
  float *dd = (float *)a->workspace;
  float *acc = (float *)((char *)a->workspace + (rows * sizeof(float) + 255) / 256 * 256);
  ATTN_TRY(bw_dterm(a, dd, acc, stream));
  const dim3 grid((unsigned)attn_cdiv(a->seq_kv, MB_BC), (unsigned)a->kv_heads, (unsigned)a->batch);
  if (grid.y > 65535u || grid.z > 65535u) return cudaErrorInvalidConfiguration;
  ATTN_TRY(
      cudaFuncSetAttribute(MB_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, MB_SMEM_BYTES));
  MB_KERNEL<<<grid, MB_THREADS, MB_SMEM_BYTES, stream>>>(
      (const attn_bf16 *)a->q, (const attn_bf16 *)a->k, (const attn_bf16 *)a->v,
      (const attn_bf16 *)a->d_o, a->lse, dd, acc, (attn_bf16 *)a->dk, (attn_bf16 *)a->dv, a->heads,
      a->kv_heads, a->seq_q, a->seq_kv, a->causal, a->scale);
  ATTN_TRY_LAUNCH();
  return bw_dq_convert(a, acc, stream);
}
