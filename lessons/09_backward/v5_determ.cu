// clang-format off
/** @file
 * @brief Version 5: dQ without atomics. Version 4's KV-outer kernel keeps dK and dV only; a second,
 *        Q-outer kernel owns a Q tile, walks the K/V tiles and accumulates dQ in registers. Each
 *        dQ element is summed by one thread in one fixed order: bitwise the same, run to run.
 *
 * What changed: the KV-outer kernel loses its dS^T tile in shared memory, its second barrier and
 * its atomics. The new dQ kernel is lesson 04's forward walk with the backward's arithmetic: one
 * block per (Q tile of 64 rows, head, batch), warp w owns rows 16w..16w+15, the visible K/V tiles
 * of 64 keys are double-buffered with cp.async, and for each:
 *  - S = Q K^T and P = exp2(S scale log2(e) - L log2(e)), L per row (two registers a lane);
 *  - dP = dO V^T, dS = P o (dP - D), D per row;
 *  - dQ += dS K: dS repacked as A fragments (its rows are this warp's queries), K with .trans.
 * dQ is written once, as bf16, with no accumulator to clear or convert.
 *
 * Why: fp32 atomics add in whatever order the blocks reach them, and fp32 addition is not
 * associative: two runs of versions 2-4 may differ in the last bits of dQ. Training that must
 * reproduce bit for bit needs this.
 *
 * Prediction: slower than version 4. The dQ kernel recomputes S and dP (two of its three
 * products), so the backward does 7 products where version 4 did 5: up to 1.4x the tensor work,
 * partly paid back by the atomics and the shared-memory round trip it no longer has. About 20-30%
 * below version 4; the issue's 15% bar would need the recomputation to hide behind something.
 *
 * Measured: NVIDIA H200, 2026-11-25 (docs/results/h200-l09c-2026-11-25), batch 4, 16 heads, seq
 * 4096, dim 128: 6.089 ms, 225.7 TFLOP/s, 1.47x version 4 (8.976 ms), not slower as predicted;
 * causal 211.5 (1.43x), dim 64 201.2; 24-39% less time than version 4 on all 8 shapes of the run.
 * What the atomic versions pay is in their KV-outer kernel (the dS^T round trip, its barrier, the
 * atomics), not the two products recomputed here (README). 0.73-0.95x FlashAttention-2's backward,
 * 0.41-0.83x cuDNN's on the papers' grid (peers.csv).
 *
 * Run: `./run 5` and `./run 5 --causal`.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include "attn_causal.h"
#include "bwd.cuh"
#include "ptx.cuh" /* lesson 04's PTX wrappers: mma.sync, ldmatrix, cp.async */

#define MB_BR 64                          /**< query rows per Q tile */
#define MB_BC 64                          /**< keys per block: 16 per warp */
#define MB_THREADS 128                    /**< 4 warps */
#define MB_KS (HEAD_DIM / 16)             /**< k-steps over the head dimension */
#define MB_QT (MB_BR / 8)                 /**< n8 tiles of S^T and dP^T (queries): 8 */
#define MB_DT (HEAD_DIM / 8)              /**< n8 tiles of dK, dV, dQ (dims) */
#define MB_QK (MB_BR / 16)                /**< k-steps over the queries (dV, dK): 4 */
#define MB_KK (MB_BC / 16)                /**< k-steps over the keys (dQ): 4 */
#define MB_CHUNKS (HEAD_DIM / 8)          /**< 16-byte chunks per row of Q, K, V, dO */
#define MB_ROWB (HEAD_DIM * 2)            /**< bytes per row of Q, K, V, dO */
#define MB_RSTEP (MB_THREADS / MB_CHUNKS) /**< rows per pass of a tile copy: 16 or 8 */

/** This build's launcher: l09_determ_d64() or l09_determ_d128(). */
#define MB_LAUNCH BW_CAT(l09_determ_d, HEAD_DIM)
/** This build's KV-outer kernel (dK and dV): l09_determ_kernel_d64 or l09_determ_kernel_d128. */
#define MB_KERNEL BW_CAT(l09_determ_kernel_d, HEAD_DIM)

/** Bytes of one K or V tile: MB_BC rows of MB_ROWB bytes. */
#define MB_KV_BYTES (MB_BC * MB_ROWB)
/** Bytes of one Q or dO tile: MB_BR rows of MB_ROWB bytes. */
#define MB_Q_BYTES (MB_BR * MB_ROWB)
/** Dynamic shared memory of the KV-outer kernel: K, V [64][dim], two buffers of Q, dO [64][dim]
 * bf16, then two buffers of L and D [64] fp32 (no dS^T tile, unlike version 4). */
#define MB_SMEM_BYTES (2 * MB_KV_BYTES + 4 * MB_Q_BYTES + 4 * MB_BR * 4)

/** Byte offset of 16-byte chunk `chunk` of row `row` of a Q, K, V or dO tile (XOR-swizzled). */
static __device__ __forceinline__ uint32_t tile_off(int row, int chunk) {
  return (uint32_t)((row * MB_CHUNKS + (chunk ^ (row & 7))) * 16);
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

/* The algorithm on a whiteboard, version 5: version 4's KV-outer walk without dQ (no dS^T tile, no
 * second barrier, no atomics), and a second, Q-outer walk that owns dQ. Br = Bc = 64.
 *
 *   D = rowsum(dO o O)                                     bw_dterm(); no dQ_acc to clear
 *   MB_KERNEL, for each K/V tile j (from k0) of KV head g:     dK and dV, as version 4
 *     first, unmasked, the walk and its cp.async double buffer: as version 4
 *     for each step t (Q tile i): cp.async.wait_group 0; __syncthreads; step t + 1 -> other buffer
 *       S^T = K_w Q_i^T;  P^T = exp2(S^T scale log2e - lse_i log2e), masked as version 4
 *       dV_w += P^T dO_i;  dP^T = V_w dO_i^T;  dS^T = P^T o (dP^T - D_i);  dK_w += dS^T Q_i
 *     dK_w = scale dK_w, dV_w -> bf16
 *   DQ_KERNEL, for each Q tile i (Br rows from q0) of query head h:    one block, 4 warps
 *     Q_i, dO_i -> shared memory; lse, D of my rows -> registers; dQ_w = 0
 *     n     = attn_kv_tiles_visited(q0, Br, ..., Bc)       K/V tiles up to the last row's diagonal
 *     whole = attn_kv_tiles_unmasked(q0, ..., Bc)          K/V tiles every row sees whole
 *     K_0, V_0 -> buffer 0 (cp.async)
 *     for j in 0 .. n - 1 (buffer j % 2):
 *       cp.async.wait_group 0; __syncthreads               K_j, V_j are in; tile j - 1 is done
 *       K_j+1, V_j+1 -> buffer (j + 1) % 2
 *       S = Q_w K_j^T;  dP = dO_w V_j^T
 *       dS = exp2(S scale log2e - lse log2e) o (dP - D), 0 where masked: j >= whole, ragged rows
 *       dQ_w += dS K_j                                     registers: one owner, one order
 *     dQ_w = scale dQ_w -> bf16                            written once
 */

/** One block per (K/V tile of 64 keys, KV head, batch); warp w owns keys 16w..16w+15. */
static __global__ void __launch_bounds__(MB_THREADS, 2)
    MB_KERNEL(const attn_bf16 *__restrict__ q, const attn_bf16 *__restrict__ k,
              const attn_bf16 *__restrict__ v, const attn_bf16 *__restrict__ d_o,
              const float *__restrict__ lse, const float *__restrict__ dd,
              attn_bf16 *__restrict__ dk, attn_bf16 *__restrict__ dv, int heads, int kv_heads,
              int seq_q, int seq_kv, int causal, float scale) {
  extern __shared__ __align__(128) unsigned char smem[];
  /* sQ[buf] = sQ0 + buf * MB_Q_BYTES, likewise sO; sLD[buf] holds L then D of that buffer. */
  const uint32_t sK = smem_u32(smem), sV = sK + MB_KV_BYTES, sQ0 = sV + MB_KV_BYTES;
  const uint32_t sO0 = sQ0 + 2 * MB_Q_BYTES, sLD0 = sO0 + 2 * MB_Q_BYTES;
  const float *sLD_f = (const float *)(smem + (sLD0 - sK));

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int k0 = blockIdx.x * MB_BC, kvh = blockIdx.y, b = blockIdx.z;
  const int grp = heads / kv_heads, diag = seq_kv - seq_q;
  const size_t kv_row = (size_t)kv_heads * HEAD_DIM;
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
    const int buf = t & 1, qt = first + t % per_head;
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
    product_t(s, sK, sQ, a_off, b_off);
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
    /* dV += P^T dO. */
    accumulate_t(acc_v, s, sO, t_off);
    /* dP^T = V dO^T: 16 keys x 64 queries. */
    float dp_[MB_QT][4];
    product_t(dp_, sV, sO, a_off, b_off);
    /* dS^T = P^T o (dP^T - D), into s. */
#pragma unroll
    for (int nt = 0; nt < MB_QT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] *= dp_[nt][e] - sD[nt * 8 + 2 * t4 + (e & 1)];
    /* dK += dS^T Q. */
    accumulate_t(acc_k, s, sQ, t_off);
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

/* ---- The dQ kernel: Q-outer, no atomics ------------------------------------------------------ */

/** This build's dQ kernel. */
#define DQ_KERNEL BW_CAT(l09_determ_dq_kernel_d, HEAD_DIM)
/** Dynamic shared memory of the dQ kernel: Q and dO [64][dim], then two buffers of K and V. */
#define DQ_SMEM_BYTES (2 * MB_Q_BYTES + 4 * MB_KV_BYTES)

/** One block per (Q tile of 64 rows, head, batch), heaviest tiles first under the mask; warp w owns
 * rows 16w..16w+15 and accumulates their dQ over every visible key, in registers. */
static __global__ void __launch_bounds__(MB_THREADS, 2)
    DQ_KERNEL(const attn_bf16 *__restrict__ q, const attn_bf16 *__restrict__ k,
              const attn_bf16 *__restrict__ v, const attn_bf16 *__restrict__ d_o,
              const float *__restrict__ lse, const float *__restrict__ dd,
              attn_bf16 *__restrict__ dq, int heads, int kv_heads, int seq_q, int seq_kv,
              int causal, float scale, int n_q_tiles) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sQ = smem_u32(smem), sO = sQ + MB_Q_BYTES, sK0 = sO + MB_Q_BYTES;
  const uint32_t sV0 = sK0 + 2 * MB_KV_BYTES; /* K and V: two buffers each */

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int qt = causal ? n_q_tiles - 1 - (int)blockIdx.x : (int)blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z, kvh = h / (heads / kv_heads);
  const int q0 = qt * MB_BR, qw = 16 * warp, diag = seq_kv - seq_q;
  const size_t q_row = (size_t)heads * HEAD_DIM, kv_row = (size_t)kv_heads * HEAD_DIM;
  const float scale_log2 = scale * BW_LOG2E;

  /* a_off: A operand rows qw.. (Q, dO); b_off: B without .trans (K, V rows are the n = keys of S
   * and dP); t_off: B with .trans (K rows are the k = keys of dQ += dS K). */
  uint32_t a_off[4], b_off[4], t_off[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    a_off[i] = tile_off(qw + (lane & 15), 2 * i + (lane >> 4));
    b_off[i] = tile_off((lane & 7) + ((lane >> 4) << 3), 2 * i + ((lane >> 3) & 1));
    t_off[i] = tile_off((lane & 7) + (((lane >> 3) & 1) << 3), 2 * i + (lane >> 4));
  }
  const size_t head = (size_t)b * seq_q * q_row + (size_t)h * HEAD_DIM;
  const attn_bf16 *kg = k + (size_t)b * seq_kv * kv_row + (size_t)kvh * HEAD_DIM;
  const attn_bf16 *vg = v + (size_t)b * seq_kv * kv_row + (size_t)kvh * HEAD_DIM;
  const int n_tiles = attn_kv_tiles_visited(q0, MB_BR, seq_q, seq_kv, MB_BC, causal);
  const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, MB_BC, causal);
  load_tile(sQ, q + head, q_row, q0, MB_BR, seq_q);
  load_tile(sO, d_o + head, q_row, q0, MB_BR, seq_q);
  if (n_tiles > 0) {
    load_tile(sK0, kg, kv_row, 0, MB_BC, seq_kv);
    load_tile(sV0, vg, kv_row, 0, MB_BC, seq_kv);
  }
  cp_async_commit();

  /* L (log2 units) and D of my two rows, g and g + 8 of my 16. Past seq_q: 0 (masked anyway). */
  float row_l[2], row_d[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int i = q0 + qw + g + 8 * hf;
    const size_t at = ((size_t)b * heads + h) * seq_q + i;
    row_l[hf] = i < seq_q ? lse[at] * BW_LOG2E : 0.f;
    row_d[hf] = i < seq_q ? dd[at] : 0.f;
  }
  float acc_q[MB_DT][4];
#pragma unroll
  for (int dt = 0; dt < MB_DT; ++dt)
    acc_q[dt][0] = acc_q[dt][1] = acc_q[dt][2] = acc_q[dt][3] = 0.f;

  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * MB_BC, buf = j & 1;
    const uint32_t sK = sK0 + buf * MB_KV_BYTES, sV = sV0 + buf * MB_KV_BYTES;
    bw_cp_async_wait_all(); /* my copies of tile j have landed */
    __syncthreads();        /* everyone's; every warp is done with tile j - 1 */
    if (j + 1 < n_tiles) {
      load_tile(sK0 + (buf ^ 1) * MB_KV_BYTES, kg, kv_row, k0 + MB_BC, MB_BC, seq_kv);
      load_tile(sV0 + (buf ^ 1) * MB_KV_BYTES, vg, kv_row, k0 + MB_BC, MB_BC, seq_kv);
    }
    cp_async_commit();
    const int masked = j >= n_unmasked || q0 + MB_BR > seq_q;

    /* S = Q K^T and dP = dO V^T: 16 rows x 64 keys per warp each. */
    float s[MB_QT][4], dp_[MB_QT][4];
#pragma unroll
    for (int nt = 0; nt < MB_QT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = dp_[nt][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < MB_KS; ++ks) {
      uint32_t aq[4], ao[4];
      ldmatrix_x4(aq, sQ + a_off[ks & 3] + (ks >> 2) * 128);
      ldmatrix_x4(ao, sO + a_off[ks & 3] + (ks >> 2) * 128);
#pragma unroll
      for (int np = 0; np < MB_QT / 2; ++np) {
        uint32_t kb[4], vb[4];
        ldmatrix_x4(kb, sK + b_off[ks & 3] + (ks >> 2) * 128 + np * 16 * MB_ROWB);
        ldmatrix_x4(vb, sV + b_off[ks & 3] + (ks >> 2) * 128 + np * 16 * MB_ROWB);
        mma_bf16_16816(s[2 * np], aq, kb[0], kb[1]);
        mma_bf16_16816(s[2 * np + 1], aq, kb[2], kb[3]);
        mma_bf16_16816(dp_[2 * np], ao, vb[0], vb[1]);
        mma_bf16_16816(dp_[2 * np + 1], ao, vb[2], vb[3]);
      }
    }
    /* P = exp2(S scale log2 e - L), dS = P o (dP - D); masked entries 0. */
#pragma unroll
    for (int nt = 0; nt < MB_QT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = q0 + qw + g + (e >> 1) * 8, jj = k0 + nt * 8 + 2 * t4 + (e & 1);
        const float p = fast_exp2(fmaf(s[nt][e], scale_log2, -row_l[e >> 1]));
        const int keep = !masked || (jj < seq_kv && i < seq_q && (!causal || jj <= i + diag));
        s[nt][e] = keep ? p * (dp_[nt][e] - row_d[e >> 1]) : 0.f;
      }
      /* dQ += dS K: dS repacked as A fragments, K through ldmatrix.trans. */
#pragma unroll
    for (int kk = 0; kk < MB_KK; ++kk) {
      uint32_t da[4];
      da[0] = pack_bf16x2(s[2 * kk][0], s[2 * kk][1]);
      da[1] = pack_bf16x2(s[2 * kk][2], s[2 * kk][3]);
      da[2] = pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      da[3] = pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int dp = 0; dp < MB_DT / 2; ++dp) {
        uint32_t kb[4];
        ldmatrix_x4_trans(kb, sK + t_off[dp & 3] + (dp >> 2) * 128 + kk * 16 * MB_ROWB);
        mma_bf16_16816(acc_q[2 * dp], da, kb[0], kb[1]);
        mma_bf16_16816(acc_q[2 * dp + 1], da, kb[2], kb[3]);
      }
    }
  }

  /* dQ = scale * acc for my rows, bf16, written once. A row that sees no key writes 0. */
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int i = q0 + qw + g + hf * 8;
    if (i >= seq_q) continue;
    attn_bf16 *dqr = dq + head + (size_t)i * q_row;
#pragma unroll
    for (int dt = 0; dt < MB_DT; ++dt)
      *(uint32_t *)(dqr + dt * 8 + 2 * t4) =
          pack_bf16x2(acc_q[dt][2 * hf] * scale, acc_q[dt][2 * hf + 1] * scale);
  }
}

/** The launcher, l09_determ_d64() or l09_determ_d128(). Workspace: D alone. */
extern "C" cudaError_t MB_LAUNCH(const l09_grad_args *a, cudaStream_t stream) {
  ATTN_TRY(bw_check(
      a, l09_workspace_bytes(5, a->batch, a->heads, a->kv_heads, a->seq_q, a->seq_kv, HEAD_DIM)));
  float *dd = (float *)a->workspace;
  ATTN_TRY(bw_dterm(a, dd, NULL, stream));
  const dim3 grid((unsigned)attn_cdiv(a->seq_kv, MB_BC), (unsigned)a->kv_heads, (unsigned)a->batch);
  const int n_q_tiles = attn_cdiv(a->seq_q, MB_BR);
  const dim3 grid_q((unsigned)n_q_tiles, (unsigned)a->heads, (unsigned)a->batch);
  if (grid.y > 65535u || grid.z > 65535u || grid_q.y > 65535u) return cudaErrorInvalidConfiguration;
  ATTN_TRY(
      cudaFuncSetAttribute(MB_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, MB_SMEM_BYTES));
  ATTN_TRY(
      cudaFuncSetAttribute(DQ_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, DQ_SMEM_BYTES));
  MB_KERNEL<<<grid, MB_THREADS, MB_SMEM_BYTES, stream>>>(
      (const attn_bf16 *)a->q, (const attn_bf16 *)a->k, (const attn_bf16 *)a->v,
      (const attn_bf16 *)a->d_o, a->lse, dd, (attn_bf16 *)a->dk, (attn_bf16 *)a->dv, a->heads,
      a->kv_heads, a->seq_q, a->seq_kv, a->causal, a->scale);
  ATTN_TRY_LAUNCH();
  DQ_KERNEL<<<grid_q, MB_THREADS, DQ_SMEM_BYTES, stream>>>(
      (const attn_bf16 *)a->q, (const attn_bf16 *)a->k, (const attn_bf16 *)a->v,
      (const attn_bf16 *)a->d_o, a->lse, dd, (attn_bf16 *)a->dq, a->heads, a->kv_heads, a->seq_q,
      a->seq_kv, a->causal, a->scale, n_q_tiles);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
