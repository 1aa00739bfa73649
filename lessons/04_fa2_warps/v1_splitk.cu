/** @file
 * @brief Version 1: split-K warps, fp32 on CUDA cores (FlashAttention-1's partition inside a
 * block).
 *
 * What changed: against lesson 03's fa1-qgroups, the grid is FlashAttention-2's. One block per
 * (Q tile, head, batch), the Q tile being the outer loop of a block and the KV tiles its inner
 * loop, so batch * heads * seq_q / 32 blocks fill the GPU even at batch 1, and O, m and l stay on
 * chip. What this version keeps from FlashAttention-1 is how the 4 warps of a block share the work
 * of one tile: every warp sees all 32 query rows (lane = row) and takes a quarter of the KV tile's
 * keys.
 *
 *                 keys of the KV tile (Bc = 32)
 *               0 .. 7    8 .. 15   16 .. 23  24 .. 31
 *     row 0    | warp 0 | warp 1  | warp 2  | warp 3  |      each lane: one row, 8 keys,
 *     ...      |        |         |         |         |      its own O row partial (dim floats)
 *     row 31   |        |         |         |         |
 *
 * Softmax needs the row maximum over all 32 keys, which is spread over 4 warps: each warp writes
 * its partial maximum to shared memory and the block waits at a barrier before reading the
 * others'. The row sum and the O partials stay per warp (they share the maximum, so they rescale
 * alike) and are added through shared memory at the end, five barriers more.
 * Per KV tile: 3 block barriers (load, loaded, maxima exchanged); at the end 5 more (one before
 * the warps take turns, one after each of the 4 turns).
 *
 * Why: the baseline of version 2, which changes only the partition inside the block, so the next
 * diff is FlashAttention-2's second change alone.
 *
 * Prediction: fp32 FMA-bound work with the same arithmetic and shared-memory loads per FMA as
 * version 2; the extra barrier per tile stalls all 4 warps once per 32 keys, a few percent at most
 * at 1 block of 4 warps per scheduler. Version 2 should be 0-10% faster.
 *
 * Measured: NVIDIA H200, 2026-11-23, batch 4, seq 4096 (docs/results/h200-2026-11-23): dim 128,
 * 16 heads: 12.1 TFLOP/s (causal 6.0); dim 64, 32 heads: 20.9 TFLOP/s (causal 10.4). Causal is
 * half the rate: every tile is visited and masked.
 *
 * Run: `./run 1` (dim 128, 16 heads) and `./run 1 --dim 64 --heads 32`; `--causal` for the causal
 * figures.
 */
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <limits.h>
#include <math.h>

#include "attn_cuda.cuh"
#include "fa2_warps.h"

#define FA_BR L04_BR_F32            /**< query rows per block, one per lane */
#define FA_BC L04_BC_F32            /**< keys per KV tile */
#define FA_WARPS (L04_THREADS / 32) /**< 4 */
#define FA_KPW (FA_BC / FA_WARPS)   /**< keys of each tile per warp: 8 */
#define FA_QLD (HEAD_DIM + 1)       /**< padded Q row: lane r reads row r, conflict-free */
#define FA_VEC (HEAD_DIM / 4)       /**< float4 per row */

/** Token pasting, after expanding `b`. */
#define FA_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FA_CAT(a, b) FA_CAT_(a, b)
/** This build's kernel: l04_splitk_kernel_d64 or l04_splitk_kernel_d128. */
#define FA_KERNEL FA_CAT(l04_splitk_kernel_d, HEAD_DIM)
/** This build's launcher: l04_splitk_d64() or l04_splitk_d128(), declared in fa2_warps.h. */
#define FA_LAUNCH FA_CAT(l04_splitk_d, HEAD_DIM)

/** Shared memory, in floats: Q [32][dim + 1], K and V [32][dim], the maxima [4 warps][32 rows]. */
#define FA_SMEM_FLOATS (FA_BR * FA_QLD + 2 * FA_BC * HEAD_DIM + FA_WARPS * FA_BR)

/* The loop on a whiteboard, in the papers' names: Tr = ceil(seq_q / Br) Q tiles, one per block,
 * Tc = ceil(seq_kv / Bc) KV tiles, each block walks them in order.
 *
 *   block (i, head, batch):                    Br = 32 rows (lane r: row r in every warp), Bc = 32
 *     Q_i -> smem
 *     m = -inf, l = 0, O = 0                     m the same in every warp; l, O: this warp's share
 *     for j in 0 .. Tc-1:
 *       __syncthreads                            K_{j-1}, V_{j-1} and the maxima are consumed
 *       K_j, V_j -> smem
 *       __syncthreads                            the tile is in
 *       S = scale Q_i K_j^T                      on my warp's 8 keys of the tile
 *       S = -inf where key >= seq_kv, or causal and key > row + seq_kv - seq_q
 *       red[warp] = rowmax(S); __syncthreads     the partial maxima meet in smem
 *       m_new = max(m, max over the warps of red)
 *       P = exp(S - m_new);  alpha = exp(m - m_new)
 *       l = alpha l + rowsum(P);  O = alpha O;  m = m_new
 *       O += P V_j
 *     l, O = sums over the 4 warps               through smem, 5 more __syncthreads
 *     O_i = O / l;  lse_i = m + log(l)
 */
/** One block per (Q tile of 32 rows, head, batch), fp32: lane r of every warp owns query row r,
 * and each of the 4 warps takes 8 keys of every 32-key KV tile. The warps' partial row maxima
 * meet in shared memory on every tile and their partial O rows and sums at the end; the block
 * writes its 32 rows of O and their log-sum-exp. */
static __global__ void __launch_bounds__(L04_THREADS)
    FA_KERNEL(const float *__restrict__ q,  // [batch, seq_q, heads, HEAD_DIM]
              const float *__restrict__ k,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              const float *__restrict__ v,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              float *__restrict__ o,        // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,      // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale,
              int n_q_tiles) {
  extern __shared__ float smem_f[];
  float *sQ = smem_f;                 /* [FA_BR][FA_QLD] */
  float *sK = sQ + FA_BR * FA_QLD;    /* [FA_BC][HEAD_DIM] */
  float *sV = sK + FA_BC * HEAD_DIM;  /* [FA_BC][HEAD_DIM] */
  float *red = sV + FA_BC * HEAD_DIM; /* [FA_WARPS][FA_BR] */

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int q_tile = blockIdx.x % n_q_tiles; /* Q tiles of one head are neighbours in the grid */
  const int bh = blockIdx.x / n_q_tiles;
  const int h = bh % heads, b = bh / heads;
  const int kvh = h / (heads / kv_heads);
  const int q0 = q_tile * FA_BR;
  const size_t q_stride = (size_t)heads * HEAD_DIM, kv_stride = (size_t)kv_heads * HEAD_DIM;
  const float *qg = q + ((size_t)b * seq_q + q0) * q_stride + (size_t)h * HEAD_DIM;
  const float *kg = k + (size_t)b * seq_kv * kv_stride + (size_t)kvh * HEAD_DIM;
  const float *vg = v + (size_t)b * seq_kv * kv_stride + (size_t)kvh * HEAD_DIM;

  /* The Q tile, rows past seq_q as zeros. Padded rows break float4 alignment: scalar stores. */
  for (int i = threadIdx.x; i < FA_BR * FA_VEC; i += L04_THREADS) {
    int r = i / FA_VEC, c = (i % FA_VEC) * 4;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (q0 + r < seq_q) x = *(const float4 *)(qg + r * q_stride + c);
    float *d = sQ + r * FA_QLD + c;
    d[0] = x.x, d[1] = x.y, d[2] = x.z, d[3] = x.w;
  }

  const int row = q0 + lane; /* this thread's query row */
  const int diag = seq_kv - seq_q;
  float m = -INFINITY, l = 0.f; /* m is the same in every warp; l is this warp's share */
  float acc[HEAD_DIM];          /* this warp's share of O's row */
#pragma unroll
  for (int d = 0; d < HEAD_DIM; ++d) acc[d] = 0.f;

  const int n_tiles = attn_cdiv(seq_kv, FA_BC);
  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * FA_BC;
    __syncthreads(); /* barrier 1: everyone is done with the previous K, V and maxima */
    for (int i = threadIdx.x; i < FA_BC * FA_VEC; i += L04_THREADS) {
      int r = i / FA_VEC, c = (i % FA_VEC) * 4;
      float4 kx = make_float4(0.f, 0.f, 0.f, 0.f), vx = kx;
      if (k0 + r < seq_kv) {
        kx = *(const float4 *)(kg + (size_t)(k0 + r) * kv_stride + c);
        vx = *(const float4 *)(vg + (size_t)(k0 + r) * kv_stride + c);
      }
      *(float4 *)(sK + r * HEAD_DIM + c) = kx;
      *(float4 *)(sV + r * HEAD_DIM + c) = vx;
    }
    __syncthreads(); /* barrier 2: the tile is in shared memory */

    /* S for my row and my warp's 8 keys. K reads are broadcasts (one key for the whole warp). */
    float s[FA_KPW];
#pragma unroll
    for (int c = 0; c < FA_KPW; ++c) s[c] = 0.f;
#pragma unroll 4
    for (int d = 0; d < HEAD_DIM; d += 4) {
      const float *qr = sQ + lane * FA_QLD + d;
      float q_0 = qr[0], q_1 = qr[1], q_2 = qr[2], q_3 = qr[3];
#pragma unroll
      for (int c = 0; c < FA_KPW; ++c) {
        float4 kk = *(const float4 *)(sK + (warp * FA_KPW + c) * HEAD_DIM + d);
        s[c] += q_0 * kk.x + q_1 * kk.y + q_2 * kk.z + q_3 * kk.w;
      }
    }
    float mx = -INFINITY;
#pragma unroll
    for (int c = 0; c < FA_KPW; ++c) {
      int key = k0 + warp * FA_KPW + c;
      int visible = key < seq_kv && (!causal || key <= row + diag);
      s[c] = visible ? s[c] * scale : -INFINITY;
      mx = fmaxf(mx, s[c]);
    }
    /* The row maximum lives in 4 warps: exchange through shared memory. */
    red[warp * FA_BR + lane] = mx;
    __syncthreads(); /* barrier 3: every warp's partial maximum is written */
#pragma unroll
    for (int w = 0; w < FA_WARPS; ++w) mx = fmaxf(mx, red[w * FA_BR + lane]);

    const float m_new = fmaxf(m, mx);
    const float m_use = m_new == -INFINITY ? 0.f : m_new; /* a row with nothing visible yet */
    const float alpha = expf(m - m_use);
    m = m_new;
    float ls = 0.f;
#pragma unroll
    for (int c = 0; c < FA_KPW; ++c) {
      s[c] = expf(s[c] - m_use);
      ls += s[c];
    }
    l = l * alpha + ls;
#pragma unroll
    for (int d = 0; d < HEAD_DIM; ++d) acc[d] *= alpha;
#pragma unroll
    for (int c = 0; c < FA_KPW; ++c) {
      const float *vr = sV + (warp * FA_KPW + c) * HEAD_DIM;
#pragma unroll
      for (int d = 0; d < HEAD_DIM; d += 4) {
        float4 vv = *(const float4 *)(vr + d);
        acc[d] += s[c] * vv.x;
        acc[d + 1] += s[c] * vv.y;
        acc[d + 2] += s[c] * vv.z;
        acc[d + 3] += s[c] * vv.w;
      }
    }
  }

  /* Add the 4 warps' partial rows and sums, one warp at a time, in the space K and V used. */
  float *sum_o = sK;  /* [FA_BR][HEAD_DIM + 1] fits in K and V's 2 * FA_BC * HEAD_DIM floats */
  float *sum_l = red; /* [FA_BR] */
  __syncthreads();
#pragma unroll 1
  for (int w = 0; w < FA_WARPS; ++w) {
    if (warp == w) {
#pragma unroll
      for (int d = 0; d < HEAD_DIM; ++d)
        sum_o[lane * (HEAD_DIM + 1) + d] = (w ? sum_o[lane * (HEAD_DIM + 1) + d] : 0.f) + acc[d];
      sum_l[lane] = (w ? sum_l[lane] : 0.f) + l;
    }
    __syncthreads();
  }
  /* Write O coalesced: consecutive threads, consecutive dimensions. */
  for (int i = threadIdx.x; i < FA_BR * HEAD_DIM; i += L04_THREADS) {
    int r = i / HEAD_DIM, d = i % HEAD_DIM;
    if (q0 + r >= seq_q) break;
    float lr = sum_l[r];
    o[((size_t)b * seq_q + q0 + r) * q_stride + (size_t)h * HEAD_DIM + d] =
        lr > 0.f ? sum_o[r * (HEAD_DIM + 1) + d] / lr : 0.f;
  }
  if (warp == 0 && row < seq_q) {
    float lr = sum_l[lane];
    lse[(size_t)bh * seq_q + row] = lr > 0.f ? m + logf(lr) : -INFINITY;
  }
}

/** The launcher, l04_splitk_d64() or l04_splitk_d128(): one block per (Q tile, head, batch). */
extern "C" cudaError_t FA_LAUNCH(const void *q, const void *k, const void *v, void *o, float *lse,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                 int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  const int n_q_tiles = attn_cdiv(seq_q, FA_BR);
  const long long blocks = (long long)n_q_tiles * batch * heads;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  const int smem = FA_SMEM_FLOATS * (int)sizeof(float);
  ATTN_TRY(cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  FA_KERNEL<<<(unsigned)blocks, L04_THREADS, smem, stream>>>(
      (const float *)q, (const float *)k, (const float *)v, (float *)o, lse, heads, kv_heads, seq_q,
      seq_kv, causal, scale, n_q_tiles);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
