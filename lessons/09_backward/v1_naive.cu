// clang-format off
/** @file
 * @brief Version 1: the backward pass as the textbook writes it. P and dS are whole
 *        [batch, heads, seq_q, seq_kv] fp32 matrices in HBM, and each of the five products is its
 *        own kernel.
 *
 * What changed: this is the first version. Six launches, in order:
 *  1. P = exp(scale Q K^T - L), masked entries 0: a tiled fp32 GEMM whose epilogue applies the
 *     exponential with the forward's log-sum-exp L, written to P.
 *  2. dP = dO V^T: the same GEMM, written to the dS buffer.
 *  3. D = rowsum(P o dP) and dS = P o (dP - D), one block per row, in place. (The textbook's D:
 *     version 2 computes the same number as rowsum(dO o O) without any N x N matrix.)
 *  4. dV = P^T dO, 5. dQ = scale dS K, 6. dK = scale dS^T Q: the same GEMM with other strides;
 *     for GQA the contraction of dV and dK also runs over the query heads of the KV head.
 * Every product is a 32 x 32 output tile per block of 256 threads, operands staged through shared
 * memory, fp32 on CUDA cores.
 *
 * Why: every quantity of the derivation exists somewhere you can look at it, which is the point,
 * and the cost is the lesson: 8 * batch * heads * seq_q * seq_kv bytes of workspace (the program
 * prints it; 34 GB at batch 1, 16 heads, seq 16384), and every product streams an N x N matrix
 * through HBM.
 *
 * Prediction: far from any peak. Each GEMM runs at a few TFLOP/s of fp32 at best, and the P and dS
 * traffic (written once, read twice or three times: about 40 bytes per (query, key) pair) is on
 * the order of the FLOPs' time at 4.8 TB/s. A few TFLOP/s of counted backward work.
 *
 * Measured: NVIDIA H200, 2026-11-25 (docs/results/h200-l09c-2026-11-25), batch 4, 16 heads, seq
 * 4096, dim 128: 196.1 ms, 7.0 TFLOP/s of counted backward work (causal 3.5: every pair computed,
 * half of them counted; dim 64, 32 heads: 6.7). Batch 1, 8 heads, seq 65536 is refused: 276.0 GB.
 * 0.01-0.03x FlashAttention-2's backward on the papers' grid (peers.csv). As predicted.
 *
 * Run: `./run 1` (batch 4, 16 heads, seq 4096, dim 128); `./run 1 --seq 65536 --batch 1` is
 * refused with the bytes it would need.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include "bwd.cuh"

#define NV_TILE 32     /**< output tile: 32 x 32 */
#define NV_KT 32       /**< contraction step */
#define NV_THREADS 256 /**< each thread computes 4 outputs of the tile */

/** This build's launcher: l09_naive_d64() or l09_naive_d128(). */
#define NV_LAUNCH BW_CAT(l09_naive_d, HEAD_DIM)
/** This build's GEMM kernel. */
#define NV_GEMM BW_CAT(l09_naive_gemm_kernel_d, HEAD_DIM)
/** This build's row kernel (D and dS). */
#define NV_ROWS BW_CAT(l09_naive_ds_kernel_d, HEAD_DIM)

/** One operand of a product, as strides: element (b, head, r, c) is at
 * ptr + b * sb + head * sh + r * sr + c * sc, fp32 or bf16. */
typedef struct nv_mat {
  const void *ptr; /**< element (0, 0, 0, 0) */
  int bf16;        /**< 1: bf16, 0: fp32 */
  /** Strides of batch, head, row, column (elements). */
  /** @{ */
  long long sb, sh, sr, sc;
  /** @} */
  /** Head mapping: head = (z_head * hmul + hh) / hdiv (see nv_at()). */
  /** @{ */
  int hmul, hdiv;
  /** @} */
} nv_mat;

/** What a product's epilogue does with its fp32 sum. */
enum { NV_STORE_BF16 = 0, NV_STORE_F32 = 1, NV_EXP_F32 = 2 };

/** Element @p off of operand @p m as fp32, read as bf16 or fp32 as m->bf16 says. */
static __device__ __forceinline__ float nv_load(const nv_mat *m, long long off) {
  return m->bf16 ? __bfloat162float(((const attn_bf16 *)m->ptr)[off])
                 : ((const float *)m->ptr)[off];
}

/** Offset of (b, head z_head and inner head hh, r, c) in operand @p m. */
static __device__ __forceinline__ long long nv_at(const nv_mat *m, int b, int zh, int hh, int r,
                                                  int c) {
  const int head = (zh * m->hmul + hh) / m->hdiv;
  return b * m->sb + head * m->sh + r * m->sr + c * m->sc;
}

/* The algorithm on a whiteboard, version 1: every quantity of the derivation is a whole matrix in
 * HBM, and each line below is a launch of its own but dS, which shares D's (NV_LAUNCH, at the end).
 *
 *   for each (batch b, query head h), every (b, h) in the same launch (its grid z):
 *     P  = exp(scale Q K^T - lse)        [Sq x Skv] fp32   masked entries 0 (NV_EXP_F32)
 *     dP = dO V^T                        [Sq x Skv] fp32
 *     D  = rowsum(P o dP)                [Sq]              NV_ROWS: one block per row
 *     dS = P o (dP - D)                  [Sq x Skv]        the same launch, in place of dP
 *     dV = P^T dO                        [Skv x d]         summed over the KV head's query heads
 *     dQ = scale dS K                    [Sq x d]
 *     dK = scale dS^T Q                  [Skv x d]         summed over the KV head's query heads
 *
 *   each product C = A B (NV_GEMM), one block per 32 x 32 tile of C:
 *     acc = 0
 *     for each inner head hh (GQA: dV, dK), each k0 in 0, 32, ..., kdim - 1:
 *       A[rows of the tile][k0, k0 + 32), B[k0, k0 + 32)[columns of the tile] -> shared memory
 *       __syncthreads                                      the tiles are in
 *       acc += A_s B_s                                     fp32 FMAs, 4 outputs a thread
 *       __syncthreads                                      everyone is done reading them
 *     C = epilogue(alpha acc)                              bf16, fp32, or P's exponential
 */

/**
 * C[b, z][r][c] = alpha * sum over hh < n_inner and k < kdim of A[b, z, hh][r][k] * B[b, z,
 * hh][k][c], then the epilogue: store as bf16 or fp32, or (NV_EXP_F32) P = exp(C - lse[b, z, r]),
 * with 0 where the mask hides key c from query r. Grid: (cols / 32, rows / 32, batch * heads_z).
 */
static __global__ void __launch_bounds__(NV_THREADS)
    NV_GEMM(nv_mat A, nv_mat B, nv_mat C, int rows, int cols, int kdim, int n_inner, int heads_z,
            float alpha, int mode, const float *__restrict__ lse, int seq_q, int seq_kv,
            int causal) {
  __shared__ float sa[NV_TILE][NV_KT + 1], sb[NV_KT][NV_TILE + 1];
  const int z = blockIdx.z, b = z / heads_z, zh = z % heads_z;
  const int r0 = blockIdx.y * NV_TILE, c0 = blockIdx.x * NV_TILE;
  const int tx = threadIdx.x % NV_TILE, ty = threadIdx.x / NV_TILE; /* ty: 0..7 */
  float acc[4] = {0.f, 0.f, 0.f, 0.f};                              /* rows ty + 8 i, column tx */
  for (int hh = 0; hh < n_inner; ++hh)
    for (int k0 = 0; k0 < kdim; k0 += NV_KT) {
      /* Neighbouring threads take neighbouring addresses: along the tile's columns when they
       * are contiguous in memory (stride 1), else along its rows (P^T, dS^T, K^T, V^T). */
      for (int e = threadIdx.x; e < NV_TILE * NV_KT; e += NV_THREADS) {
        const int i = A.sc == 1 ? e / NV_KT : e % NV_TILE, kk = A.sc == 1 ? e % NV_KT : e / NV_TILE;
        const int r = r0 + i, k = k0 + kk;
        sa[i][kk] = r < rows && k < kdim ? nv_load(&A, nv_at(&A, b, zh, hh, r, k)) : 0.f;
        const int kr = B.sc == 1 ? e / NV_TILE : e % NV_KT,
                  cc = B.sc == 1 ? e % NV_TILE : e / NV_KT;
        const int kb = k0 + kr, c = c0 + cc;
        sb[kr][cc] = kb < kdim && c < cols ? nv_load(&B, nv_at(&B, b, zh, hh, kb, c)) : 0.f;
      }
      __syncthreads();
#pragma unroll 8
      for (int kk = 0; kk < NV_KT; ++kk) {
        const float bv = sb[kk][tx];
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[i] = fmaf(sa[ty + 8 * i][kk], bv, acc[i]);
      }
      __syncthreads();
    }
  const int c = c0 + tx;
  if (c >= cols) return;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = r0 + ty + 8 * i;
    if (r >= rows) continue;
    const long long off = nv_at(&C, b, zh, 0, r, c);
    float x = alpha * acc[i];
    if (mode == NV_EXP_F32) {
      /* r is a query, c a key: P = exp(s - L), 0 where the mask hides the key. */
      const int visible = !causal || c <= r + (seq_kv - seq_q);
      x = visible ? expf(x - lse[((long long)b * heads_z + zh) * seq_q + r]) : 0.f;
    }
    if (mode == NV_STORE_BF16)
      ((attn_bf16 *)C.ptr)[off] = __float2bfloat16_rn(x);
    else
      ((float *)C.ptr)[off] = x;
  }
}

/**
 * One block per query row of one head: D = sum_j P_j dP_j (a block reduction), then
 * dS_j = P_j (dP_j - D) in place of dP. Rows are (b, h, i) in the order of P.
 */
static __global__ void __launch_bounds__(256)
    NV_ROWS(const float *__restrict__ p, float *__restrict__ ds, float *__restrict__ dd,
            int seq_kv) {
  __shared__ float part[8];
  const long long row = blockIdx.x;
  const float *pr = p + row * seq_kv;
  float *dr = ds + row * seq_kv;
  float sum = 0.f;
  for (int j = threadIdx.x; j < seq_kv; j += 256) sum = fmaf(pr[j], dr[j], sum);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = sum;
  __syncthreads();
  float d = 0.f;
#pragma unroll
  for (int w = 0; w < 8; ++w) d += part[w];
  for (int j = threadIdx.x; j < seq_kv; j += 256) dr[j] = pr[j] * (dr[j] - d);
  if (threadIdx.x == 0) dd[row] = d;
}

/** Enqueue one product (NV_GEMM) on @p stream: grid (cols / 32, rows / 32, batch * heads_z),
 * rounded up; the log-sum-exp, seq_q, seq_kv and causal flag that NV_EXP_F32 needs come from @p a.
 * cudaErrorInvalidConfiguration when the grid's y or z passes 65535. */
static cudaError_t nv_gemm(nv_mat A, nv_mat B, nv_mat C, int rows, int cols, int kdim, int n_inner,
                           int batch, int heads_z, float alpha, int mode, const l09_grad_args *a,
                           cudaStream_t stream) {
  const dim3 grid((unsigned)attn_cdiv(cols, NV_TILE), (unsigned)attn_cdiv(rows, NV_TILE),
                  (unsigned)(batch * heads_z));
  if (grid.y > 65535u || grid.z > 65535u) return cudaErrorInvalidConfiguration;
  NV_GEMM<<<grid, NV_THREADS, 0, stream>>>(A, B, C, rows, cols, kdim, n_inner, heads_z, alpha, mode,
                                           a->lse, a->seq_q, a->seq_kv, a->causal);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

/** The launcher, l09_naive_d64() or l09_naive_d128(). Workspace: D, then P, then dS. */
extern "C" cudaError_t NV_LAUNCH(const l09_grad_args *a, cudaStream_t stream) {
  const long long B = a->batch, H = a->heads, G = a->kv_heads, SQ = a->seq_q, SK = a->seq_kv;
  const int grp = a->heads / (a->kv_heads > 0 ? a->kv_heads : 1);
  ATTN_TRY(bw_check(
      a, l09_workspace_bytes(1, a->batch, a->heads, a->kv_heads, a->seq_q, a->seq_kv, HEAD_DIM)));
  const size_t d_bytes = ((size_t)(B * H * SQ) * sizeof(float) + 255) / 256 * 256;
  const size_t nn_bytes = ((size_t)(B * H * SQ * SK) * sizeof(float) + 255) / 256 * 256;
  float *dd = (float *)a->workspace;
  float *p = (float *)((char *)a->workspace + d_bytes);
  float *ds = (float *)((char *)a->workspace + d_bytes + nn_bytes);
  const long long q_row = H * HEAD_DIM, kv_row = G * HEAD_DIM; /* BSHD row strides */
  /* Q, dO [b, i, h, d]; K, V [b, j, g, d]; P, dS [b, h, i, j]; dQ like Q; dK, dV like K. */
  const nv_mat q = {a->q, 1, SQ * q_row, HEAD_DIM, q_row, 1, 1, 1};
  const nv_mat d_o = {a->d_o, 1, SQ * q_row, HEAD_DIM, q_row, 1, 1, 1};
  const nv_mat kT = {a->k, 1, SK * kv_row, HEAD_DIM, 1, kv_row, 1, grp}; /* [d][j] of head h/grp */
  const nv_mat vT = {a->v, 1, SK * kv_row, HEAD_DIM, 1, kv_row, 1, grp};
  const nv_mat k_rows = {a->k, 1, SK * kv_row, HEAD_DIM, kv_row, 1, 1, grp}; /* [j][d] */
  const nv_mat pm = {p, 0, H * SQ * SK, SQ * SK, SK, 1, 1, 1};
  const nv_mat dsm = {ds, 0, H * SQ * SK, SQ * SK, SK, 1, 1, 1};
  /* For dV and dK the output head is a KV head g and the inner loop runs over its query heads:
   * head = g * grp + hh. P^T and dS^T swap the row and column strides. */
  const nv_mat pT = {p, 0, H * SQ * SK, SQ * SK, 1, SK, grp, 1};
  const nv_mat dsT = {ds, 0, H * SQ * SK, SQ * SK, 1, SK, grp, 1};
  const nv_mat d_o_g = {a->d_o, 1, SQ * q_row, HEAD_DIM, q_row, 1, grp, 1};
  const nv_mat q_g = {a->q, 1, SQ * q_row, HEAD_DIM, q_row, 1, grp, 1};
  const nv_mat out_q = {a->dq, 1, SQ * q_row, HEAD_DIM, q_row, 1, 1, 1};
  const nv_mat out_k = {a->dk, 1, SK * kv_row, HEAD_DIM, kv_row, 1, 1, 1};
  const nv_mat out_v = {a->dv, 1, SK * kv_row, HEAD_DIM, kv_row, 1, 1, 1};

  /* 1. P = exp(scale Q K^T - L) */
  ATTN_TRY(nv_gemm(q, kT, pm, a->seq_q, a->seq_kv, HEAD_DIM, 1, a->batch, a->heads, a->scale,
                   NV_EXP_F32, a, stream));
  /* 2. dP = dO V^T, into the dS buffer */
  ATTN_TRY(nv_gemm(d_o, vT, dsm, a->seq_q, a->seq_kv, HEAD_DIM, 1, a->batch, a->heads, 1.f,
                   NV_STORE_F32, a, stream));
  /* 3. D = rowsum(P o dP), dS = P o (dP - D) */
  const long long rows = B * H * SQ;
  if (rows > INT_MAX) return cudaErrorInvalidConfiguration;
  NV_ROWS<<<(unsigned)rows, 256, 0, stream>>>(p, ds, dd, a->seq_kv);
  ATTN_TRY_LAUNCH();
  /* 4. dV = P^T dO, summed over the query heads of each KV head */
  ATTN_TRY(nv_gemm(pT, d_o_g, out_v, a->seq_kv, HEAD_DIM, a->seq_q, grp, a->batch, a->kv_heads, 1.f,
                   NV_STORE_BF16, a, stream));
  /* 5. dQ = scale dS K */
  ATTN_TRY(nv_gemm(dsm, k_rows, out_q, a->seq_q, HEAD_DIM, a->seq_kv, 1, a->batch, a->heads,
                   a->scale, NV_STORE_BF16, a, stream));
  /* 6. dK = scale dS^T Q, summed over the query heads of each KV head */
  ATTN_TRY(nv_gemm(dsT, q_g, out_k, a->seq_kv, HEAD_DIM, a->seq_q, grp, a->batch, a->kv_heads,
                   a->scale, NV_STORE_BF16, a, stream));
  return cudaSuccess;
}
