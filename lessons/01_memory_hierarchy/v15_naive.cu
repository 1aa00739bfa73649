// clang-format off
/** @file
 * @brief Version 15: standard attention as a framework runs it, three kernels with S and P in HBM.
 *
 * What changed: after the probes, the first real workload, which the probes' numbers explain:
 *
 *     kernel 1  S = Q K^T * scale     [batch, heads, seq_q, seq_kv] written to HBM (masked: -inf)
 *     kernel 2  P = softmax(S)        S read back, P written over it, plus the log-sum-exp per row
 *     kernel 3  O = P V               P read back
 *
 * S is processed whole, one launch per kernel for every (batch, head), not one (batch, head) at a
 * time: whole, each launch has every row of every head to spread over the SMs, and the traffic is
 * the traffic the lesson is about. Per-head chunks would also let a short sequence's S (4 MiB at
 * seq 1024) stay in the L2 (tens of MB) between kernels: a different, better algorithm, which is
 * the next lessons' subject. The cost is memory: a shape whose S does not fit the free device
 * memory is skipped by l01_naive_supports(), with the size it would need.
 *
 * The matrix products are plain tiled SGEMMs on CUDA cores (fp32, as lessons 01-03 are):
 *
 *     256 threads, a 64 x 64 tile of the output, the reduction in chunks of 32:
 *
 *              columns (keys j, or dims d) -->
 *            +----+----+----+- .. -+----+      thread (ty, tx) owns the 4 x 4 block
 *     rows   |t0  |t1  |t2  |      |t15 |      rows ty*4 .. ty*4+3, columns tx*4 .. tx*4+3;
 *     (i)    +----+----+----+- .. -+----+      per reduction step it reads one float4 of A (column
 *      |     |t16 |t17 | ...                   of the chunk, transposed in shared memory) and one
 *      v     ...                               float4 of B, and does 16 FMAs.
 *
 * Shared tiles are stored k-major ([chunk][64 + 4]) so both operands are float4 loads; the 4 extra
 * words keep rows 16-byte aligned. The loaders read global memory along its contiguous dimension
 * (coalesced); their transposed shared-memory stores have a 4-way bank conflict, paid once per
 * chunk.
 *
 * The softmax kernel gives one block to a row. When the row fits in shared memory (seq_kv * 4 bytes
 * up to the device's opt-in limit, 227 KB on H100/H200: 58k keys) it reads S once into shared
 * memory, then finds the max, the sum of exponentials and writes P from there: S read once, P
 * written once. A longer row is read three times from global memory (max, sum, write), the extra
 * reads mostly from L2; the traffic model counts one.
 *
 * Why: to measure what the N x N matrix costs. S holds batch * heads * seq_q * seq_kv floats; the
 * default shape (1 x 16 heads x 4096 x 4096) makes it 1 GiB, which is written once, read once,
 * written again as P and read once more: 4 GiB of HBM traffic for 64 MiB of Q, K, V and O. The
 * flops (4 * seq_q * seq_kv * dim per head) do not depend on that traffic at all: a kernel that
 * never writes S (lessons 02-03) moves only the 64 MiB.
 *
 * Prediction: (the lesson's roofline) intensity is about dim / 4 flop per byte (16 at dim 64),
 * near the fp32 CUDA-core ridge point and far below the bf16 tensor-core one, so the softmax kernel
 * runs at HBM speed doing almost no arithmetic, and with tensor-core matrix products the S/P
 * traffic would be nearly all of the time. Causal costs the same time: the kernels compute and
 * store every masked entry.
 *
 * Measured: NVIDIA H200, 2026-11-23, batch 1, 16 heads, seq 4096, dim 64
 * (docs/results/h200-2026-11-23): 4.299 ms, 16.0 TFLOP/s; causal 4.300 ms, 8.0 TFLOP/s of useful
 * flops; dim 128: 7.548 ms, 18.2 TFLOP/s; seq 16384: 68.546 ms, 16.0 TFLOP/s; seq 65536: skipped,
 * S needs 256.00 GiB. The report after the table times the three kernels alone (the README's
 * roofline section): the softmax near the HBM read rate, the two products most of the time.
 * Nsight Compute (lesson 03's README, its DRAM table) finds the three kernels moving what the
 * traffic model says.
 *
 * Run: the lines below (the last is refused, with the size S would need), then Nsight Compute.
 *
 *     ./run 15
 *     ./run 15 --causal
 *     ./run 15 --dim 128
 *     ./run 15 --seq 65536 --check-only
 *
 * Nsight Compute runs in build/bin (the line of lesson 03's ncu-runs.txt):
 *
 *     ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum -k regex:'l01_(qk|softmax|pv)' -c 3 ./lesson-1 15 --seq 4096 --check-only
 */
// clang-format on
#include <math.h>

#include "memory_hierarchy.h"

#include "attn_cuda.cuh"

#define L01_BM 64 /**< output rows per block */
#define L01_BN 64 /**< output columns per block */
#define L01_BK 32 /**< reduction chunk */
#define L01_PAD 4 /**< extra words per shared row, keeps float4 alignment */
/** Threads per block of the two matrix-product kernels: 16 x 16, a 4 x 4 block each. */
#define L01_GEMM_THREADS 256
/** Threads per block of the softmax kernel (fewer for short rows). */
#define L01_SOFTMAX_THREADS 256
#if L01_BM != L01_BN || L01_BM * L01_BK != 8 * L01_GEMM_THREADS
#error "the tile loaders assume BM == BN and 8 elements of each tile per thread"
#endif

/** The shape as the kernels use it. */
typedef struct l01_geom {
  /** The shape: query heads, KV heads, query rows, key rows, head dimension, causal flag. */
  /** @{ */
  int heads, kv_heads, seq_q, seq_kv, dim, causal;
  /** @} */
  int group;   /**< heads / kv_heads: query heads per KV head */
  size_t ld_s; /**< pitch of S and P rows, floats */
  /** The softmax scale, 1/sqrt(dim). */
  float scale;
  int tiles_m; /**< row tiles of the output (queries) */
  int tiles_n; /**< column tiles of the output (keys for QK^T, dims for PV) */
} l01_geom;

/** The geometry of one matrix-product launch; `n_extent` is the output's column count. */
static l01_geom l01_geom_of(const attn_problem *p, int n_extent) {
  l01_geom g;
  g.heads = p->heads;
  g.kv_heads = p->kv_heads > 0 ? p->kv_heads : p->heads; /* 0 means "same as heads" */
  g.seq_q = p->seq_q;
  g.seq_kv = p->seq_kv;
  g.dim = p->dim;
  g.causal = p->causal;
  g.group = p->heads / g.kv_heads;
  g.ld_s = l01_s_pitch(p);
  g.scale = attn_scale(p);
  g.tiles_m = attn_cdiv(p->seq_q, L01_BM);
  g.tiles_n = attn_cdiv(n_extent, L01_BN);
  return g;
}

/** acc[r][c] += a[r] * b[c] for one reduction step. */
static __device__ __forceinline__ void l01_outer4x4(float acc[4][4], float4 a, float4 b) {
  const float av[4] = {a.x, a.y, a.z, a.w};
  const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
  }
}

/** Kernel 1. Block = (batch*head, query tile, key tile), key tile fastest, so blocks that run
 * together share a Q tile in L2. Each block writes one 64 x 64 tile of S = Q K^T * scale
 * (masked entries -inf), each thread a 4 x 4 block of it. */
__global__ void __launch_bounds__(L01_GEMM_THREADS)
    l01_qk_kernel(const float *q, const float *k, float *s, l01_geom g) {
  __shared__ __align__(16) float qs[L01_BK][L01_BM + L01_PAD]; /* qs[d][i] */
  __shared__ __align__(16) float ks[L01_BK][L01_BN + L01_PAD]; /* ks[d][j] */
  size_t blk = blockIdx.x;
  const int tn = (int)(blk % g.tiles_n);
  blk /= g.tiles_n;
  const int tm = (int)(blk % g.tiles_m);
  const size_t bh = blk / g.tiles_m; /* b * heads + h */
  const size_t b = bh / g.heads;
  const int h = (int)(bh % g.heads);
  const int kvh = h / g.group;
  const int i0 = tm * L01_BM, j0 = tn * L01_BN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;

  float acc[4][4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[r][c] = 0.0f;
  }

  for (int d0 = 0; d0 < g.dim; d0 += L01_BK) {
    for (int e = threadIdx.x; e < L01_BM * L01_BK; e += L01_GEMM_THREADS) {
      const int r = e / L01_BK, c = e % L01_BK; /* 32 lanes read 32 consecutive d: coalesced */
      const int d = d0 + c, i = i0 + r, j = j0 + r;
      qs[c][r] = (i < g.seq_q && d < g.dim)
                     ? q[((b * g.seq_q + i) * g.heads + h) * (size_t)g.dim + d]
                     : 0.0f;
      ks[c][r] = (j < g.seq_kv && d < g.dim)
                     ? k[((b * g.seq_kv + j) * g.kv_heads + kvh) * (size_t)g.dim + d]
                     : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int c = 0; c < L01_BK; ++c) {
      l01_outer4x4(acc, *(const float4 *)&qs[c][ty * 4], *(const float4 *)&ks[c][tx * 4]);
    }
    __syncthreads();
  }

  const int offset = g.seq_kv - g.seq_q; /* bottom-right causal: j visible when j <= i + offset */
  const int j = j0 + tx * 4;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + ty * 4 + r;
    if (i >= g.seq_q) continue;
    float v[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      v[c] = acc[r][c] * g.scale;
      if (g.causal && j + c > i + offset) v[c] = -INFINITY;
    }
    float *row = s + (bh * g.seq_q + i) * g.ld_s;
    if (j + 3 < g.seq_kv) {
      *(float4 *)(row + j) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        if (j + c < g.seq_kv) row[j + c] = v[c];
      }
    }
  }
}

/** Block-wide max and sum; scratch has 33 floats, a separate one for each reduction. */
static __device__ float l01_block_max(float v, float *scratch) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < (int)(blockDim.x >> 5) ? scratch[lane] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) w = fmaxf(w, __shfl_xor_sync(0xffffffffu, w, o));
    if (lane == 0) scratch[32] = w;
  }
  __syncthreads();
  return scratch[32];
}

/** Block-wide sum; same contract as l01_block_max(). */
static __device__ float l01_block_sum(float v, float *scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < (int)(blockDim.x >> 5) ? scratch[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
    if (lane == 0) scratch[32] = w;
  }
  __syncthreads();
  return scratch[32];
}

/** Vector t of a row with the elements past seq_kv (pitch padding, never written) set to -inf. */
static __device__ __forceinline__ float4 l01_masked(float4 x, int t, int seq_kv) {
  const int j = 4 * t;
  if (j + 0 >= seq_kv) x.x = -INFINITY;
  if (j + 1 >= seq_kv) x.y = -INFINITY;
  if (j + 2 >= seq_kv) x.z = -INFINITY;
  if (j + 3 >= seq_kv) x.w = -INFINITY;
  return x;
}

/** Kernel 2: one block per row of S. With cached = 1 the row is staged in dynamic shared memory.
 * The block writes P over the row of S and the row's log-sum-exp to lse (when not NULL). */
__global__ void __launch_bounds__(L01_SOFTMAX_THREADS)
    l01_softmax_kernel(float *s, float *lse, int seq_kv, size_t ld_s, int cached) {
  extern __shared__ __align__(16) float row_cache[];
  __shared__ float red_max[33], red_sum[33];
  const size_t row = blockIdx.x;
  float4 *v4 = (float4 *)(s + row * ld_s);
  float4 *c4 = (float4 *)row_cache;
  const int nvec = (int)(ld_s / 4);

  /* Pass 1: the row's max (from HBM; staged in shared memory when cached). */
  float m = -INFINITY;
#pragma unroll 4
  for (int t = threadIdx.x; t < nvec; t += blockDim.x) {
    const float4 x = l01_masked(v4[t], t, seq_kv);
    if (cached) c4[t] = x;
    m = fmaxf(m, fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w)));
  }
  m = l01_block_max(m, red_max); /* its barriers also order the shared-memory stores above */

  if (m == -INFINITY) { /* the row sees no key: P = 0, lse = -inf (uniform across the block) */
    for (int t = threadIdx.x; t < nvec; t += blockDim.x) v4[t] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (threadIdx.x == 0 && lse != NULL) lse[row] = -INFINITY;
    return;
  }

  /* Pass 2: exponentials and their sum (exp(-inf - m) = 0 for masked and padding entries). */
  float l = 0.0f;
  for (int t = threadIdx.x; t < nvec; t += blockDim.x) {
    float4 x = cached ? c4[t] : l01_masked(v4[t], t, seq_kv);
    x.x = expf(x.x - m);
    x.y = expf(x.y - m);
    x.z = expf(x.z - m);
    x.w = expf(x.w - m);
    if (cached) c4[t] = x; /* each thread reads back only the vectors it wrote */
    l += (x.x + x.y) + (x.z + x.w);
  }
  l = l01_block_sum(l, red_sum);
  const float inv_l = 1.0f / l;

  /* Pass 3: P written over S. */
  for (int t = threadIdx.x; t < nvec; t += blockDim.x) {
    float4 e;
    if (cached) {
      e = c4[t];
    } else {
      const float4 x = l01_masked(v4[t], t, seq_kv);
      e = make_float4(expf(x.x - m), expf(x.y - m), expf(x.z - m), expf(x.w - m));
    }
    v4[t] = make_float4(e.x * inv_l, e.y * inv_l, e.z * inv_l, e.w * inv_l);
  }
  if (threadIdx.x == 0 && lse != NULL) lse[row] = m + logf(l);
}

/** Kernel 3. Block = (batch*head, query tile, dim tile), dim tile fastest, so the second dim tile
 * of a row block (dim 128) reads its P tile from L2. Each block writes one 64-row x 64-dim tile
 * of O = P V, each thread a 4 x 4 block of it. */
__global__ void __launch_bounds__(L01_GEMM_THREADS)
    l01_pv_kernel(const float *pm, const float *v, float *o, l01_geom g) {
  __shared__ __align__(16) float ps[L01_BK][L01_BM + L01_PAD]; /* ps[j][i] */
  __shared__ __align__(16) float vs[L01_BK][L01_BN + L01_PAD]; /* vs[j][d] */
  size_t blk = blockIdx.x;
  const int tn = (int)(blk % g.tiles_n);
  blk /= g.tiles_n;
  const int tm = (int)(blk % g.tiles_m);
  const size_t bh = blk / g.tiles_m;
  const size_t b = bh / g.heads;
  const int h = (int)(bh % g.heads);
  const int kvh = h / g.group;
  const int i0 = tm * L01_BM, d0 = tn * L01_BN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;

  float acc[4][4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[r][c] = 0.0f;
  }

  for (int j0 = 0; j0 < g.seq_kv; j0 += L01_BK) {
    for (int e = threadIdx.x; e < L01_BM * L01_BK; e += L01_GEMM_THREADS) {
      const int pr = e / L01_BK, pc = e % L01_BK; /* P: 32 lanes read 32 consecutive keys */
      const int i = i0 + pr, jp = j0 + pc;
      ps[pc][pr] = (i < g.seq_q && jp < g.seq_kv) ? pm[(bh * g.seq_q + i) * g.ld_s + jp] : 0.0f;
      const int vr = e / L01_BN, vc = e % L01_BN; /* V: 64 consecutive dims */
      const int jv = j0 + vr, d = d0 + vc;
      vs[vr][vc] = (jv < g.seq_kv && d < g.dim)
                       ? v[((b * g.seq_kv + jv) * g.kv_heads + kvh) * (size_t)g.dim + d]
                       : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int c = 0; c < L01_BK; ++c) {
      l01_outer4x4(acc, *(const float4 *)&ps[c][ty * 4], *(const float4 *)&vs[c][tx * 4]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + ty * 4 + r;
    if (i >= g.seq_q) continue;
    float *orow = o + ((b * g.seq_q + i) * g.heads + h) * (size_t)g.dim;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int d = d0 + tx * 4 + c;
      if (d < g.dim) orow[d] = acc[r][c];
    }
  }
}

extern "C" size_t l01_s_pitch(const attn_problem *p) {
  return ((size_t)p->seq_kv + 3) / 4 * 4;
}

extern "C" size_t l01_naive_workspace(const attn_problem *p) {
  return (size_t)p->batch * p->heads * (size_t)p->seq_q * l01_s_pitch(p) * sizeof(float);
}

extern "C" const char *l01_naive_supports(const attn_problem *p) {
  static char why[192];
  const double need = (double)p->batch * p->heads * (double)p->seq_q * l01_s_pitch(p) * 4.0;
  size_t free_b = 0, total_b = 0;
  const cudaError_t err = cudaMemGetInfo(&free_b, &total_b);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, sizeof why, "cannot read free device memory: %s", cudaGetErrorName(err));
    return why;
  }
  /* The harness's own buffers (Q, K, V, O, inputs on the device) come out of the same memory. */
  const double others =
      2.0 * 4.0 * ((double)attn_q_elems(p) + (double)attn_kv_elems(p)) + 256.0 * (1 << 20);
  if (need + others > 0.95 * (double)free_b) {
    snprintf(why, sizeof why,
             "S needs %.2f GiB (fp32 [batch, heads, seq_q, seq_kv]) and %.2f GiB is free",
             need / (1 << 30), (double)free_b / (1 << 30));
    return why;
  }
  const double grid_limit = 2147483647.0;
  const double bh = (double)p->batch * p->heads;
  const double tiles_m = (double)attn_cdiv(p->seq_q, L01_BM);
  if (bh * tiles_m * attn_cdiv(p->seq_kv, L01_BN) > grid_limit ||
      bh * tiles_m * attn_cdiv(p->dim, L01_BN) > grid_limit || bh * p->seq_q > grid_limit) {
    return "more blocks than one launch can take (2^31 - 1)";
  }
  return NULL;
}

extern "C" cudaError_t l01_naive_qk(const attn_problem *p, const float *q, const float *k, float *s,
                                    cudaStream_t stream) {
  const l01_geom g = l01_geom_of(p, p->seq_kv);
  const size_t blocks = (size_t)p->batch * p->heads * g.tiles_m * g.tiles_n;
  if (blocks == 0) return cudaSuccess;
  l01_qk_kernel<<<(unsigned)blocks, L01_GEMM_THREADS, 0, stream>>>(q, k, s, g);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l01_naive_softmax(const attn_problem *p, float *s, float *lse,
                                         cudaStream_t stream) {
  const size_t ld_s = l01_s_pitch(p);
  const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
  if (rows == 0) return cudaSuccess;
  int device = 0, optin = 0;
  ATTN_TRY(cudaGetDevice(&device));
  ATTN_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  /* The static scratch (2 x 33 floats) shares the opt-in limit with the dynamic row. */
  const size_t row_bytes = ld_s * sizeof(float);
  const int cached = row_bytes + 1024 <= (size_t)optin;
  const size_t dyn = cached ? row_bytes : 0;
  if (dyn > 48 * 1024) {
    ATTN_TRY(cudaFuncSetAttribute(l01_softmax_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)dyn));
  }
  /* Short rows get a smaller block: one thread per float4, in whole warps. */
  int threads = L01_SOFTMAX_THREADS;
  const size_t nvec = ld_s / 4;
  if (nvec < (size_t)threads) threads = (int)((nvec + 31) / 32 * 32);
  l01_softmax_kernel<<<(unsigned)rows, threads, dyn, stream>>>(s, lse, p->seq_kv, ld_s, cached);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l01_naive_pv(const attn_problem *p, const float *pm, const float *v,
                                    float *o, cudaStream_t stream) {
  const l01_geom g = l01_geom_of(p, p->dim);
  const size_t blocks = (size_t)p->batch * p->heads * g.tiles_m * g.tiles_n;
  if (blocks == 0) return cudaSuccess;
  l01_pv_kernel<<<(unsigned)blocks, L01_GEMM_THREADS, 0, stream>>>(pm, v, o, g);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l01_naive_attention(const attn_problem *p, const attn_args *a,
                                           cudaStream_t stream) {
  if (a->workspace == NULL || a->workspace_bytes < l01_naive_workspace(p)) {
    attn_cuda_report(cudaErrorInvalidValue, "naive attention: workspace smaller than S", __FILE__,
                     __LINE__);
    return cudaErrorInvalidValue;
  }
  float *s = (float *)a->workspace;
  ATTN_TRY(l01_naive_qk(p, (const float *)a->q, (const float *)a->k, s, stream));
  ATTN_TRY(l01_naive_softmax(p, s, a->lse, stream));
  ATTN_TRY(l01_naive_pv(p, s, (const float *)a->v, (float *)a->o, stream));
  return cudaSuccess;
}
