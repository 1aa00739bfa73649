// clang-format off
/** @file
 * @brief Version 3: version 2's KV-outer walk on the tensor cores. mma.sync m16n8k16 with
 *        ldmatrix for all five products; P and dS stay in registers for dV and dK, and dS goes
 *        through shared memory for dQ.
 *
 * What changed: a block owns 64 keys and 4 warps; warp w owns keys 16w..16w+15 and computes, for
 * each Q tile of 64 rows, the transposed products, so that its keys are the rows of every
 * accumulator:
 *  - S^T = K Q^T (16 keys x 64 queries): A = K from shared memory, B = Q (ldmatrix, no .trans:
 *    Q rows are queries, the n of this product);
 *  - P^T = exp2(S^T scale log2(e) - L log2(e)), L per column (query), masked;
 *  - dV += P^T dO: P^T's accumulator tiles repacked as A fragments, exactly as the forward's P.V
 *    (lesson 04); B = dO with ldmatrix.trans (dO rows are queries, the k of this product);
 *  - dP^T = V dO^T: A = V, B = dO without .trans;
 *  - dS^T = P^T o (dP^T - D), D per column; dK += dS^T Q, A repacked from dS^T, B = Q with .trans.
 * Where the fragment layouts do not allow it: dQ = dS K contracts over the keys, which are spread
 * over the four warps (each holds 16 rows of dS^T). So every warp writes its dS^T to shared memory
 * (bf16, XOR-swizzled), the block synchronises, and warp w computes dQ for queries 16w..16w+15
 * over all 64 keys: A = dS read with ldmatrix.trans from the [key][query] tile, B = K with .trans.
 * That costs a 8 KB round trip through shared memory and a barrier per Q tile, and dQ is still
 * added to the fp32 accumulator with atomics (16 rows x dim per warp per Q tile). dK and dV of a
 * warp's 16 keys stay in registers for the whole walk (64 fp32 each at dim 128). Q, dO, K, V come
 * in with cp.async into XOR-swizzled tiles (lesson 04, version 4); no copy overlaps the math yet.
 * Every Q tile is visited and masked, causal or not.
 *
 * Why: the five products are 2.5x the forward's flops and they all map onto the tensor cores;
 * version 2 runs them on CUDA cores at a fraction of that rate.
 *
 * Prediction: an order of magnitude over version 2. Without overlap of loads and math, and with
 * the dQ atomics and two barriers per Q tile, about half of lesson 04's forward rate: 150-200
 * TFLOP/s of counted backward work at dim 128, seq 4096.
 *
 * Measured: NVIDIA H200, 2026-11-25 (docs/results/h200-l09c-2026-11-25), batch 4, 16 heads, seq
 * 4096, dim 128: 9.227 ms, 148.95 TFLOP/s, 14.2x version 2, at the bottom of the prediction
 * (causal 74.2: every tile masked, half counted; dim 64, 32 heads: 139.9). 0.50-0.58x
 * FlashAttention-2's backward without the mask on the papers' grid (peers.csv).
 *
 * Run: `./run 3` and `./run 3 --dim 64 --heads 32`.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

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
#define MB_DQ_DT (MB_DT < 8 ? MB_DT : 8)  /**< dim tiles of dQ per pass (32 fp32 registers) */
#define MB_CHUNKS (HEAD_DIM / 8)          /**< 16-byte chunks per row of Q, K, V, dO */
#define MB_ROWB (HEAD_DIM * 2)            /**< bytes per row of Q, K, V, dO */
#define MB_RSTEP (MB_THREADS / MB_CHUNKS) /**< rows per pass of a tile copy: 16 or 8 */
#define MB_SROWB (MB_BR * 2)              /**< bytes per row of the dS^T tile [key][query] */

/** This build's launcher: l09_mma_d64() or l09_mma_d128(). */
#define MB_LAUNCH BW_CAT(l09_mma_d, HEAD_DIM)
/** This build's kernel: l09_mma_kernel_d64 or l09_mma_kernel_d128. */
#define MB_KERNEL BW_CAT(l09_mma_kernel_d, HEAD_DIM)

/** Bytes of one K or V tile: MB_BC rows of MB_ROWB bytes. */
#define MB_KV_BYTES (MB_BC * MB_ROWB)
/** Bytes of one Q or dO tile: MB_BR rows of MB_ROWB bytes. */
#define MB_Q_BYTES (MB_BR * MB_ROWB)
/** Dynamic shared memory: K, V [64][dim], Q, dO [64][dim], dS^T [64][64] bf16, then L and D
 * [64] fp32. */
#define MB_SMEM_BYTES (2 * MB_KV_BYTES + 2 * MB_Q_BYTES + MB_BC * MB_SROWB + 2 * MB_BR * 4)

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

/* The algorithm on a whiteboard, version 3: version 2's walk on the tensor cores (mma.sync).
 * Br = Bc = 64; warp w owns keys 16w..16w+15 of the tile, so every product is transposed (keys
 * are the rows), and dS^T goes through shared memory for dQ, whose sum runs over all four warps.
 *
 *   D = rowsum(dO o O); dQ_acc = 0                         bw_dterm()
 *   for each K/V tile j (Bc keys) of KV head g:            one block, 4 warps
 *     K_j, V_j -> shared memory (cp.async); dK_w = dV_w = 0    registers, for the whole walk
 *     for each query head h of g's group, each Q tile i (Br rows):    every tile, masked
 *       __syncthreads                                      everyone is done with tile i - 1
 *       Q_i, dO_i -> shared memory (cp.async), lse_i, D_i (ld/st)
 *       cp.async.wait_group 0; __syncthreads               the tiles are in
 *       S^T = K_w Q_i^T;  P^T = exp2(S^T scale log2e - lse_i log2e), 0 where masked
 *       dV_w += P^T dO_i                                   P^T repacked as A fragments
 *       dP^T = V_w dO_i^T;  dS^T = P^T o (dP^T - D_i)      dS^T -> shared memory (bf16)
 *       dK_w += dS^T Q_i
 *       __syncthreads                                      the whole dS^T tile is written
 *       dQ_acc[rows 16w..16w+15 of i] += dS K_j            over the block's 64 keys; atomicAdd
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
  const uint32_t sK = smem_u32(smem), sV = sK + MB_KV_BYTES, sQ = sV + MB_KV_BYTES;
  const uint32_t sO = sQ + MB_Q_BYTES, sS = sO + MB_Q_BYTES;
  float *sL = (float *)(smem + 2 * MB_KV_BYTES + 2 * MB_Q_BYTES + MB_BC * MB_SROWB);
  float *sD = sL + MB_BR;

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

  const int n_q_tiles = attn_cdiv(seq_q, MB_BR);
  for (int hh = 0; hh < grp; ++hh) {
    const int h = kvh * grp + hh;
    const attn_bf16 *qh = q + (size_t)b * seq_q * q_row + (size_t)h * HEAD_DIM;
    const attn_bf16 *oh = d_o + (size_t)b * seq_q * q_row + (size_t)h * HEAD_DIM;
    const float *lh = lse + ((size_t)b * heads + h) * seq_q,
                *dh = dd + ((size_t)b * heads + h) * seq_q;
    for (int qt = 0; qt < n_q_tiles; ++qt) {
      const int q0 = qt * MB_BR;
      __syncthreads(); /* every warp is done with the previous tile's Q, dO, dS, L and D */
      load_tile(sQ, qh, q_row, q0, MB_BR, seq_q);
      load_tile(sO, oh, q_row, q0, MB_BR, seq_q);
      cp_async_commit();
      if (threadIdx.x < MB_BR) {
        const int i = q0 + threadIdx.x;
        /* Past seq_q: L = +inf makes P = 0 (the row's Q and dO are zeros anyway). */
        sL[threadIdx.x] = i < seq_q ? lh[i] * BW_LOG2E : INFINITY;
        sD[threadIdx.x] = i < seq_q ? dh[i] : 0.f;
      }
      bw_cp_async_wait_all();
      __syncthreads();

      /* S^T = K Q^T: 16 keys x 64 queries per warp. */
      float s[MB_QT][4];
      product_t(s, sK, sQ, a_off, b_off);
      /* P^T = exp2(S^T scale log2 e - L log2 e), the mask on every tile (version 4 skips). */
#pragma unroll
      for (int nt = 0; nt < MB_QT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qc = nt * 8 + 2 * t4 + (e & 1), j = k0 + kw + g + (e >> 1) * 8;
          const int visible = j < seq_kv && (!causal || j <= q0 + qc + diag);
          s[nt][e] = visible ? fast_exp2(fmaf(s[nt][e], scale_log2, -sL[qc])) : 0.f;
        }
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
      a, l09_workspace_bytes(3, a->batch, a->heads, a->kv_heads, a->seq_q, a->seq_kv, HEAD_DIM)));
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
