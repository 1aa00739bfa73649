/** @file
 * @brief Version 2: split-Q warps, fp32 on CUDA cores (FlashAttention-2's partition inside a
 * block).
 *
 * What changed: the same grid, the same Q tile (32 rows) and KV tile (32 keys) as version 1, but
 * the warps split the Q tile instead of the KV tile. Each warp owns 8 query rows and sees every
 * key of the tile, so everything a row's softmax needs is inside one warp:
 *
 *                 keys of the KV tile (Bc = 32), lane j computes s[row][j]
 *               0 ........................... 31
 *     rows  0-7  |          warp 0           |    row max, row sum: 5 __shfl_xor_sync each
 *     rows  8-15 |          warp 1           |    P.V: lane = output dimension (dim / 32 each),
 *     rows 16-23 |          warp 2           |         P read back from the warp's own slice
 *     rows 24-31 |          warp 3           |         of shared memory (__syncwarp only)
 *
 * Per KV tile: 2 block barriers (both around the shared K/V load), none in the softmax, and no
 * combine at the end: each warp finishes its own rows.
 *
 * Why: the FlashAttention-2 paper's argument. In version 1 every warp holds a part of every row,
 * so the partial maxima and the partial O rows must meet in shared memory behind barriers; here no
 * warp waits for another outside the tile loads.
 *
 * Prediction: the same FMAs and shared-memory loads per FMA as version 1; one barrier fewer per
 * tile and no final combine: 0-10% faster than version 1.
 *
 * Measured: NVIDIA H200, 2026-11-23, batch 4, seq 4096 (docs/results/h200-2026-11-23): dim 128,
 * 16 heads: 24.5 TFLOP/s (causal 12.2); dim 64, 32 heads: 22.5 TFLOP/s (causal 11.3). Against
 * version 1's 20.9 at dim 64, within the prediction; against its 12.1 at dim 128, twice as fast.
 * The prediction missed what split-K costs in registers: there every warp holds a partial O row
 * for all 32 rows (dim floats per lane), which at dim 128 nearly doubles the registers per thread
 * (ptxas) and halves the blocks resident per SM.
 *
 * Run: `./run 2` (dim 128, 16 heads) and `./run 2 --dim 64 --heads 32`; `--causal` for the causal
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

#define FA_BR L04_BR_F32            /**< query rows per block */
#define FA_BC L04_BC_F32            /**< keys per KV tile: one per lane */
#define FA_WARPS (L04_THREADS / 32) /**< 4 */
#define FA_RPW (FA_BR / FA_WARPS)   /**< rows per warp: 8 */
#define FA_DPL (HEAD_DIM / 32)      /**< output dimensions per lane */
#define FA_KLD (HEAD_DIM + 1)       /**< padded K row: lane j reads key j, conflict-free */
#define FA_VEC (HEAD_DIM / 4)       /**< float4 per row */

/** Token pasting, after expanding `b`. */
#define FA_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FA_CAT(a, b) FA_CAT_(a, b)
/** This build's kernel: l04_splitq_kernel_d64 or l04_splitq_kernel_d128. */
#define FA_KERNEL FA_CAT(l04_splitq_kernel_d, HEAD_DIM)
/** This build's launcher: l04_splitq_d64() or l04_splitq_d128(), declared in fa2_warps.h. */
#define FA_LAUNCH FA_CAT(l04_splitq_d, HEAD_DIM)

/** Shared memory, in floats: Q [32][dim], K [32][dim + 1], V [32][dim], P [4 warps][8 rows][32]. */
#define FA_SMEM_FLOATS (FA_BR * HEAD_DIM + FA_BC * FA_KLD + FA_BC * HEAD_DIM + FA_BR * FA_BC)

/** Max over the warp's 32 lanes (xor butterfly); every lane gets it. */
static __device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, s));
  return x; /* every lane holds the maximum */
}

/** Sum over the warp's 32 lanes (xor butterfly); every lane gets it. */
static __device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) x += __shfl_xor_sync(0xffffffffu, x, s);
  return x;
}

/* The loop on a whiteboard, in the papers' names: Tr = ceil(seq_q / Br) Q tiles, one per block,
 * Tc = ceil(seq_kv / Bc) KV tiles, each block walks them in order.
 *
 *   block (i, head, batch):                    Br = 32 rows (warp w: rows 8w .. 8w+7), Bc = 32
 *     Q_i -> smem
 *     m = -inf, l = 0, O = 0                     per row, all of it in one warp
 *     for j in 0 .. Tc-1:
 *       __syncthreads                            K_{j-1}, V_{j-1} are consumed
 *       K_j, V_j -> smem
 *       __syncthreads                            the tile is in
 *       S = scale Q_i K_j^T                      lane = key
 *       S = -inf where key >= seq_kv, or causal and key > row + seq_kv - seq_q
 *       m_new = max(m, rowmax(S))                5 shuffles, no barrier
 *       P = exp(S - m_new);  alpha = exp(m - m_new)
 *       l = alpha l + rowsum(P);  O = alpha O;  m = m_new
 *       P -> my warp's smem; __syncwarp
 *       O += P V_j                               lane = output dimension
 *     O_i = O / l;  lse_i = m + log(l)
 */
/** One block per (Q tile of 32 rows, head, batch), fp32: each of the 4 warps owns 8 query rows
 * and sees every key of each 32-key KV tile (lane j computes the score of key j), keeps its rows'
 * softmax state in the warp, accumulates P V with lane = output dimension, and writes its 8 rows of
 * O and their log-sum-exp. */
static __global__ void __launch_bounds__(L04_THREADS)
    FA_KERNEL(const float *__restrict__ q,  // [batch, seq_q, heads, HEAD_DIM]
              const float *__restrict__ k,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              const float *__restrict__ v,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              float *__restrict__ o,        // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,      // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale,
              int n_q_tiles) {
  extern __shared__ float smem_f[];
  float *sQ = smem_f;                /* [FA_BR][HEAD_DIM] */
  float *sK = sQ + FA_BR * HEAD_DIM; /* [FA_BC][FA_KLD] */
  float *sV = sK + FA_BC * FA_KLD;   /* [FA_BC][HEAD_DIM] */
  float *sP = sV + FA_BC * HEAD_DIM; /* [FA_BR][FA_BC]: row r's probabilities, warp-private */

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int q_tile = blockIdx.x % n_q_tiles;
  const int bh = blockIdx.x / n_q_tiles;
  const int h = bh % heads, b = bh / heads;
  const int kvh = h / (heads / kv_heads);
  const int q0 = q_tile * FA_BR;
  const size_t q_stride = (size_t)heads * HEAD_DIM, kv_stride = (size_t)kv_heads * HEAD_DIM;
  const float *qg = q + ((size_t)b * seq_q + q0) * q_stride + (size_t)h * HEAD_DIM;
  const float *kg = k + (size_t)b * seq_kv * kv_stride + (size_t)kvh * HEAD_DIM;
  const float *vg = v + (size_t)b * seq_kv * kv_stride + (size_t)kvh * HEAD_DIM;
  const int r0 = warp * FA_RPW; /* my warp's first row in the tile */

  for (int i = threadIdx.x; i < FA_BR * FA_VEC; i += L04_THREADS) {
    int r = i / FA_VEC, c = (i % FA_VEC) * 4;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (q0 + r < seq_q) x = *(const float4 *)(qg + r * q_stride + c);
    *(float4 *)(sQ + r * HEAD_DIM + c) = x;
  }

  const int diag = seq_kv - seq_q;
  float m[FA_RPW], l[FA_RPW], acc[FA_RPW][FA_DPL]; /* m, l: the same in every lane */
#pragma unroll
  for (int r = 0; r < FA_RPW; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int t = 0; t < FA_DPL; ++t) acc[r][t] = 0.f;
  }

  const int n_tiles = attn_cdiv(seq_kv, FA_BC);
  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * FA_BC;
    __syncthreads(); /* everyone is done with the previous K and V */
    for (int i = threadIdx.x; i < FA_BC * FA_VEC; i += L04_THREADS) {
      int r = i / FA_VEC, c = (i % FA_VEC) * 4;
      float4 kx = make_float4(0.f, 0.f, 0.f, 0.f), vx = kx;
      if (k0 + r < seq_kv) {
        kx = *(const float4 *)(kg + (size_t)(k0 + r) * kv_stride + c);
        vx = *(const float4 *)(vg + (size_t)(k0 + r) * kv_stride + c);
      }
      float *kd = sK + r * FA_KLD + c;
      kd[0] = kx.x, kd[1] = kx.y, kd[2] = kx.z, kd[3] = kx.w;
      *(float4 *)(sV + r * HEAD_DIM + c) = vx;
    }
    __syncthreads(); /* the tile is in shared memory; no other block barrier until the next one */

    /* S: lane j takes key k0 + j for my warp's 8 rows. Q reads are broadcasts. */
    float s[FA_RPW];
#pragma unroll
    for (int r = 0; r < FA_RPW; ++r) s[r] = 0.f;
#pragma unroll 4
    for (int d = 0; d < HEAD_DIM; d += 4) {
      const float *kr = sK + lane * FA_KLD + d;
      float k_0 = kr[0], k_1 = kr[1], k_2 = kr[2], k_3 = kr[3];
#pragma unroll
      for (int r = 0; r < FA_RPW; ++r) {
        float4 qq = *(const float4 *)(sQ + (r0 + r) * HEAD_DIM + d);
        s[r] += qq.x * k_0 + qq.y * k_1 + qq.z * k_2 + qq.w * k_3;
      }
    }

    /* Online softmax, one row at a time, inside the warp. */
    const int key = k0 + lane;
#pragma unroll
    for (int r = 0; r < FA_RPW; ++r) {
      const int row = q0 + r0 + r;
      const int visible = key < seq_kv && (!causal || key <= row + diag);
      const float x = visible ? s[r] * scale : -INFINITY;
      const float m_new = fmaxf(m[r], warp_max(x));
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      const float alpha = expf(m[r] - m_use);
      const float p = expf(x - m_use);
      l[r] = l[r] * alpha + warp_sum(p);
      m[r] = m_new;
      sP[(r0 + r) * FA_BC + lane] = p;
#pragma unroll
      for (int t = 0; t < FA_DPL; ++t) acc[r][t] *= alpha;
    }
    __syncwarp(); /* my warp's P is written; only my warp reads it */

    /* O += P V: lane owns dimensions lane, lane + 32, ...; P read as float4 broadcasts. */
#pragma unroll 2
    for (int jj = 0; jj < FA_BC; jj += 4) {
      float4 p4[FA_RPW];
#pragma unroll
      for (int r = 0; r < FA_RPW; ++r) p4[r] = *(const float4 *)(sP + (r0 + r) * FA_BC + jj);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        float vv[FA_DPL];
#pragma unroll
        for (int t = 0; t < FA_DPL; ++t) vv[t] = sV[(jj + u) * HEAD_DIM + lane + 32 * t];
#pragma unroll
        for (int r = 0; r < FA_RPW; ++r) {
          float pr = u == 0 ? p4[r].x : u == 1 ? p4[r].y : u == 2 ? p4[r].z : p4[r].w;
#pragma unroll
          for (int t = 0; t < FA_DPL; ++t) acc[r][t] += pr * vv[t];
        }
      }
    }
    __syncwarp(); /* P is read before the next tile overwrites it */
  }

#pragma unroll
  for (int r = 0; r < FA_RPW; ++r) {
    const int row = q0 + r0 + r;
    if (row >= seq_q) break;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
    float *orow = o + ((size_t)b * seq_q + row) * q_stride + (size_t)h * HEAD_DIM;
#pragma unroll
    for (int t = 0; t < FA_DPL; ++t) orow[lane + 32 * t] = acc[r][t] * inv;
    if (lane == 0) lse[(size_t)bh * seq_q + row] = l[r] > 0.f ? m[r] + logf(l[r]) : -INFINITY;
  }
}

/** The launcher, l04_splitq_d64() or l04_splitq_d128(): one block per (Q tile, head, batch). */
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
