// clang-format off
/** @file
 * @brief Version 2: recompute instead of store. The forward kept only the log-sum-exp L; a block
 *        owns a K/V tile, walks the Q tiles, rebuilds P from Q K^T and L, keeps dK and dV in
 *        registers and adds its share of dQ with fp32 atomics. fp32 CUDA cores.
 *
 * What changed: no N x N matrix anywhere. Three launches:
 *  1. D = rowsum(dO o O), one warp per row (bwd.cuh), which also clears an fp32 dQ accumulator.
 *     This D equals version 1's rowsum(P o dP): dP_j = dO . V_j and O = sum_j P_j V_j, so
 *     sum_j P_j dP_j = dO . sum_j P_j V_j = dO . O, two vectors of length dim.
 *  2. The main kernel, KV-outer: one block per (K/V tile of 32 keys, KV head, batch). For every
 *     query head of the KV head's group and every Q tile of 32 rows it loads Q, dO, L and D, and
 *     computes in shared memory P = exp(scale Q K^T - L), dP = dO V^T and dS = P o (dP - D); then
 *     dV += P^T dO and dK += dS^T Q stay in the block's registers, and dQ += dS K goes to the fp32
 *     accumulator with atomicAdd (other blocks own the other keys of the same query rows).
 *  3. dQ = scale * accumulator, rounded to bf16 (bwd.cuh).
 * No tile is skipped: with the causal mask every Q tile is visited and masked (version 4 skips).
 *
 * Why: memory. Version 1 needs 8 bytes per (query, key) pair; this one needs D (4 bytes per
 * query row) and the dQ accumulator (4 * dim bytes per query row): O(N), and the workspace no
 * longer limits the sequence length. The price is recomputing S = Q K^T: one product more than the
 * four of the gradient.
 *
 * Prediction: faster than version 1 (no N x N traffic, one launch for all five products), but
 * still far from the tensor cores: fp32 CUDA cores at a few TFLOP/s of counted work; the dQ
 * atomics add batch * heads * seq_q * dim * seq_kv / 32 fp32 additions in L2.
 *
 * Measured: NVIDIA H200, 2026-11-25 (docs/results/h200-l09c-2026-11-25), batch 4, 16 heads, seq
 * 4096, dim 128: 131.4 ms, 10.5 TFLOP/s, 1.49x version 1 (causal 5.2: no tile skipped); batch 1,
 * 8 heads, seq 65536, where version 1 is refused: 4161 ms, 10.6 TFLOP/s. 0.02-0.05x
 * FlashAttention-2's backward on the papers' grid (peers.csv).
 *
 * Run: `./run 2`; `./run 2 --seq 65536 --batch 1` runs where version 1 is refused.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include "bwd.cuh"

#define RC_BR 32              /**< query rows per Q tile */
#define RC_BC 32              /**< keys per block */
#define RC_THREADS 128        /**< 4 warps */
#define RC_PER (HEAD_DIM / 4) /**< dims per thread of a key's (or row's) gradient row */
#define RC_LD (HEAD_DIM + 1)  /**< padded row of a tile in shared memory (floats) */
#define RC_PLD (RC_BC + 1)    /**< padded row of P and dS */

/** This build's launcher: l09_recompute_d64() or l09_recompute_d128(). */
#define RC_LAUNCH BW_CAT(l09_recompute_d, HEAD_DIM)
/** This build's kernel: l09_recompute_kernel_d64 or l09_recompute_kernel_d128. */
#define RC_KERNEL BW_CAT(l09_recompute_kernel_d, HEAD_DIM)

/** Dynamic shared memory: K, V, Q, dO tiles, then P, dS, L and D. */
#define RC_SMEM_BYTES ((4 * RC_BC * RC_LD + 2 * RC_BR * RC_PLD + 2 * RC_BR) * (int)sizeof(float))

/** Rows [r0, r0 + 32) of a BSHD bf16 tensor into a padded fp32 tile; rows past @p n are zeros. */
static __device__ __forceinline__ void rc_load(float *dst, const attn_bf16 *src, size_t row_stride,
                                               int r0, int n) {
  for (int e = threadIdx.x; e < 32 * (HEAD_DIM / BW_VEC); e += RC_THREADS) {
    const int r = e / (HEAD_DIM / BW_VEC), c = e % (HEAD_DIM / BW_VEC);
    float f[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (r0 + r < n) bw_unpack8(*(const uint4 *)(src + (size_t)(r0 + r) * row_stride + c * 8), f);
#pragma unroll
    for (int x = 0; x < 8; ++x) dst[r * RC_LD + c * 8 + x] = f[x];
  }
}

/* The algorithm on a whiteboard, version 2: version 1's products fused into one KV-outer walk that
 * keeps no N x N matrix; P is recomputed from Q, K and lse. Br = Bc = 32, fp32 on CUDA cores.
 *
 *   D = rowsum(dO o O); dQ_acc = 0                         bw_dterm(), before this kernel
 *   for each K/V tile j (Bc keys) of KV head g:            one block
 *     K_j, V_j -> shared memory (fp32); dK_j = dV_j = 0    registers, for the whole walk
 *     for each query head h of g's group, each Q tile i (Br rows):    every tile, masked
 *       __syncthreads                                      everyone is done with tile i - 1
 *       Q_i, dO_i, lse_i, D_i -> shared memory
 *       __syncthreads
 *       S = Q_i K_j^T;  P = exp2(S scale log2e - lse_i log2e), 0 where masked
 *       dP = dO_i V_j^T;  dS = P o (dP - D_i)              P, dS -> shared memory
 *       __syncthreads
 *       dV_j += P^T dO_i;  dK_j += dS^T Q_i
 *       dQ_acc[i] += dS K_j                                atomicAdd: other blocks, other keys
 *   dK_j = scale dK_j, dV_j -> bf16
 *   dQ = scale dQ_acc -> bf16                              bw_dq_convert(), after
 */

/** One block per (K/V tile of RC_BC keys, KV head, batch). Thread t owns key t / 4 and dims
 * t % 4, t % 4 + 4, ... of dK and dV (registers), and the same dims of query row t / 4 for dQ. */
static __global__ void __launch_bounds__(RC_THREADS)
    RC_KERNEL(const attn_bf16 *__restrict__ q, const attn_bf16 *__restrict__ k,
              const attn_bf16 *__restrict__ v, const attn_bf16 *__restrict__ d_o,
              const float *__restrict__ lse, const float *__restrict__ dd,
              float *__restrict__ dq_acc, attn_bf16 *__restrict__ dk, attn_bf16 *__restrict__ dv,
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale) {
  extern __shared__ float sm[];
  float *sK = sm, *sV = sK + RC_BC * RC_LD, *sQ = sV + RC_BC * RC_LD, *sO = sQ + RC_BR * RC_LD;
  float *sP = sO + RC_BR * RC_LD, *sS = sP + RC_BR * RC_PLD, *sL = sS + RC_BR * RC_PLD;
  float *sD = sL + RC_BR;
  const int k0 = blockIdx.x * RC_BC, g = blockIdx.y, b = blockIdx.z;
  const int grp = heads / kv_heads, diag = seq_kv - seq_q;
  const size_t q_row = (size_t)heads * HEAD_DIM, kv_row = (size_t)kv_heads * HEAD_DIM;
  const float scale_log2 = scale * BW_LOG2E;
  const int me = threadIdx.x >> 2, d0 = threadIdx.x & 3; /* my key (and my row of dQ), my dims */

  rc_load(sK, k + (size_t)b * seq_kv * kv_row + (size_t)g * HEAD_DIM, kv_row, k0, seq_kv);
  rc_load(sV, v + (size_t)b * seq_kv * kv_row + (size_t)g * HEAD_DIM, kv_row, k0, seq_kv);
  float acc_k[RC_PER], acc_v[RC_PER];
#pragma unroll
  for (int x = 0; x < RC_PER; ++x) acc_k[x] = acc_v[x] = 0.f;

  for (int hh = 0; hh < grp; ++hh) {
    const int h = g * grp + hh;
    const attn_bf16 *qh = q + (size_t)b * seq_q * q_row + (size_t)h * HEAD_DIM;
    const attn_bf16 *oh = d_o + (size_t)b * seq_q * q_row + (size_t)h * HEAD_DIM;
    const float *lh = lse + ((size_t)b * heads + h) * seq_q,
                *dh = dd + ((size_t)b * heads + h) * seq_q;
    for (int q0 = 0; q0 < seq_q; q0 += RC_BR) {
      __syncthreads(); /* every thread is done with the previous tile */
      rc_load(sQ, qh, q_row, q0, seq_q);
      rc_load(sO, oh, q_row, q0, seq_q);
      if (threadIdx.x < RC_BR) {
        const int i = q0 + threadIdx.x;
        /* A row past seq_q gets L = +inf: P = 2^-inf = 0, whatever its (zero) scores. */
        sL[threadIdx.x] = i < seq_q ? lh[i] * BW_LOG2E : INFINITY;
        sD[threadIdx.x] = i < seq_q ? dh[i] : 0.f;
      }
      __syncthreads();
      /* P, dP and dS: thread t computes row t / 4, keys t % 4 + 4 m. */
#pragma unroll 2
      for (int m = 0; m < RC_BC / 4; ++m) {
        const int r = me, c = d0 + 4 * m, i = q0 + r, j = k0 + c;
        float s = 0.f, dp = 0.f;
#pragma unroll 8
        for (int x = 0; x < HEAD_DIM; ++x) {
          s = fmaf(sQ[r * RC_LD + x], sK[c * RC_LD + x], s);
          dp = fmaf(sO[r * RC_LD + x], sV[c * RC_LD + x], dp);
        }
        /* The mask: keys past seq_kv and, with --causal, keys after the diagonal. A row that sees
         * no key at all (L = -inf) is masked everywhere, so -inf never meets -inf. */
        const int visible = j < seq_kv && (!causal || j <= i + diag);
        const float p = visible ? exp2f(fmaf(s, scale_log2, -sL[r])) : 0.f;
        sP[r * RC_PLD + c] = p;
        sS[r * RC_PLD + c] = p * (dp - sD[r]);
      }
      __syncthreads();
      /* dV += P^T dO and dK += dS^T Q for my key; dQ += dS K for my row (the same index). */
      float acc_q[RC_PER];
#pragma unroll
      for (int x = 0; x < RC_PER; ++x) acc_q[x] = 0.f;
      for (int r = 0; r < RC_BR; ++r) {
        const float p = sP[r * RC_PLD + me], ds = sS[r * RC_PLD + me], dsq = sS[me * RC_PLD + r];
#pragma unroll
        for (int x = 0; x < RC_PER; ++x) {
          const int d = d0 + 4 * x;
          acc_v[x] = fmaf(p, sO[r * RC_LD + d], acc_v[x]);
          acc_k[x] = fmaf(ds, sQ[r * RC_LD + d], acc_k[x]);
          acc_q[x] = fmaf(dsq, sK[r * RC_LD + d], acc_q[x]); /* r is a key here */
        }
      }
      const int i = q0 + me;
      if (i < seq_q) {
        float *row = dq_acc + ((size_t)b * seq_q + i) * q_row + (size_t)h * HEAD_DIM;
#pragma unroll
        for (int x = 0; x < RC_PER; ++x) atomicAdd(row + d0 + 4 * x, acc_q[x]);
      }
    }
  }
  const int j = k0 + me;
  if (j >= seq_kv) return;
  attn_bf16 *dkr = dk + ((size_t)b * seq_kv + j) * kv_row + (size_t)g * HEAD_DIM;
  attn_bf16 *dvr = dv + ((size_t)b * seq_kv + j) * kv_row + (size_t)g * HEAD_DIM;
#pragma unroll
  for (int x = 0; x < RC_PER; ++x) {
    dkr[d0 + 4 * x] = __float2bfloat16_rn(acc_k[x] * scale);
    dvr[d0 + 4 * x] = __float2bfloat16_rn(acc_v[x]);
  }
}

/** The launcher, l09_recompute_d64() or l09_recompute_d128(). Workspace: D, then the fp32 dQ
 * accumulator. */
extern "C" cudaError_t RC_LAUNCH(const l09_grad_args *a, cudaStream_t stream) {
  ATTN_TRY(bw_check(
      a, l09_workspace_bytes(2, a->batch, a->heads, a->kv_heads, a->seq_q, a->seq_kv, HEAD_DIM)));
  const size_t rows = (size_t)a->batch * a->heads * a->seq_q;
  float *dd = (float *)a->workspace;
  float *acc = (float *)((char *)a->workspace + (rows * sizeof(float) + 255) / 256 * 256);
  ATTN_TRY(bw_dterm(a, dd, acc, stream));
  const dim3 grid((unsigned)attn_cdiv(a->seq_kv, RC_BC), (unsigned)a->kv_heads, (unsigned)a->batch);
  if (grid.y > 65535u || grid.z > 65535u) return cudaErrorInvalidConfiguration;
  ATTN_TRY(
      cudaFuncSetAttribute(RC_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, RC_SMEM_BYTES));
  RC_KERNEL<<<grid, RC_THREADS, RC_SMEM_BYTES, stream>>>(
      (const attn_bf16 *)a->q, (const attn_bf16 *)a->k, (const attn_bf16 *)a->v,
      (const attn_bf16 *)a->d_o, a->lse, dd, acc, (attn_bf16 *)a->dk, (attn_bf16 *)a->dv, a->heads,
      a->kv_heads, a->seq_q, a->seq_kv, a->causal, a->scale);
  ATTN_TRY_LAUNCH();
  return bw_dq_convert(a, acc, stream);
}
