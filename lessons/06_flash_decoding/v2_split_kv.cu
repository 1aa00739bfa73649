/** @file
 * @brief Version 2: Flash-Decoding. The keys of every row cut into chunks over blocks, each block
 * leaving a partial state in a workspace, and a second kernel combining them by log-sum-exp.
 *
 * What changed: the grid gains a second axis, the chunk. l06_num_splits() picks num_splits from the
 * blocks the GPU runs at once, the rows and the keys (split_plan.c); every row's keys are cut into
 * chunks of l06_chunk_len() keys, and block (row, s) runs version 1's walk (fd_row()) over chunk s
 * only:
 *
 *     row r, keys:  | chunk 0  | chunk 1  | ... | chunk S-1 |     S = num_splits
 *     block (r, s): fd_row over chunk s -> workspace: O_s[dim] = O/l (fp32), lse_s = m + log l
 *     combine, block r, thread d:  lse = log sum_s e^lse_s,  O[d] = sum_s e^(lse_s - lse) O_s[d]
 *
 * The partial state is (O normalised by its own sum, lse) rather than (O unnormalised, m, l):
 * one statistic per row instead of two, and the combine's weights e^(lse_s - lse) lie in [0, 1]
 * and add up to 1, so no partial sum can overflow and the combine divides by nothing. A chunk
 * that sees no key (the last chunks when the chunk grid overshoots the keys, or a causal row whose
 * window ends before the chunk) leaves (O = 0, lse = -inf): its weight is e^-inf = 0, and a row
 * whose every chunk is empty gets O = 0 and lse = -inf, never a NaN.
 *
 * Why: at batch 1 the row count alone gives 32 blocks; S chunks give 32 S. The rule fills the GPU
 * with one wave of blocks: S = floor(SMs x blocks per SM / rows), the blocks per SM being what the
 * occupancy calculator says this kernel fits (8 on the H200: 1056 slots, S = 33, trimmed to 32
 * chunks of 1024 keys so that no chunk is empty), and never a chunk under 256 keys, where a
 * block's fixed costs (q, the merge, the partial write) stop being small against its keys.
 *
 * Prediction: the floor is the same as version 1's, 134 MB of K + V, 28 us at 4.8 TB/s; the
 * workspace adds 32 chunks x 32 rows x 129 floats x 2 (write, read) = 1 MB, under 1%. With 1024
 * blocks of 16 KiB of loads in flight (16 MiB, more than the roughly 5 MB HBM needs), expect 60-80%
 * of the HBM rate: 35-50 us, 5-10x version 1. At batch 32 and kv 8192 (1024 rows, S = 1) it
 * should equal version 1 plus the combine's launch, a few us.
 *
 * Measured: NVIDIA H200, 2026-11-24 (docs/results/h200-l06c-2026-11-24), batch 1, 32 heads, 8 KV
 * heads, kv 32768, dim 128: 69.8 us, 1.92 TB/s, 40% of HBM, 12.4x version 1: the speed-up came,
 * the rate did not. With 32 KV heads (every query head its own K and V) the same code reaches
 * 4.13 TB/s, 86%, at kv 32768: what holds it back at 8 KV heads is that the 4 query heads of a
 * group each read their KV head, 537 MB of requests for 134 MB of data, and L2 serves the
 * repeats only as fast as it can. Version 3 removes the repeats. At batch 32 and kv 8192 (one
 * chunk per row) the prediction was wrong in sign: version 2 took 494 us against version 1's 550,
 * 1.11x faster although it splits nothing and adds the combine; the walk is the same code, and
 * this run does not say why the split kernel's build of it is faster.
 *
 * Run: `./run 2` (batch 1, 32 heads, 8 KV heads, kv-seq 32768, dim 128) and
 * `./run 2 --batch 64 --kv-seq 4096`.
 */
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <limits.h>

#include "decode.cuh"

/** Token pasting, after expanding `b`. */
#define FD_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FD_CAT(a, b) FD_CAT_(a, b)
/** This build's kernel: l06_split_kv_kernel_d64 or l06_split_kv_kernel_d128. */
#define FD_KERNEL FD_CAT(l06_split_kv_kernel_d, HEAD_DIM)
/** This build's launcher: l06_split_kv_d64() or l06_split_kv_d128(), in flash_decoding.h. */
#define FD_LAUNCH FD_CAT(l06_split_kv_d, HEAD_DIM)
/** This build's combine kernel: l06_combine_kernel_d64 or l06_combine_kernel_d128. */
#define FD_COMBINE_KERNEL FD_CAT(l06_combine_kernel_d, HEAD_DIM)
/** This build's combine launcher: l06_combine_d64() or l06_combine_d128(). */
#define FD_COMBINE FD_CAT(l06_combine_d, HEAD_DIM)
/** This build's occupancy query: l06_split_kv_per_sm_d64() or l06_split_kv_per_sm_d128(). */
#define FD_PER_SM FD_CAT(l06_split_kv_per_sm_d, HEAD_DIM)

/* The loop on a whiteboard (version 2: version 1's walk over one chunk, then a combine).
 *
 *   block (r = (b, i, h), chunk s):  q = Q[b, i, h] * scale * log2(e),  n = keys row i sees
 *     keys [s chunk, (s + 1) chunk) clipped to [0, n), cut into 4 ranges, one per warp
 *     lane group:  m = -inf, l = 0, O = 0                        (8 of the d columns per lane)
 *     for each step of FD_STEP keys of the warp's range:        (every K and V load issued first)
 *       s_j = q . K[j]                                           (16-byte loads, shuffle sum)
 *       m_new = max(m, max_j s_j),  alpha = 2^(m - m_new),  p_j = 2^(s_j - m_new)
 *       l = alpha l + sum_j p_j,  O = alpha O + sum_j p_j V[j],  m = m_new
 *     the warp's lane groups merge their (m, l, O) by shuffles   (fd_merge())
 *     each warp's (m, l, O) -> shared memory;  __syncthreads()
 *     thread d: merge the 4 warps' (m, l, O[d])
 *     -> part_O[s, r, d] = O[d] / l,  part_lse[s, r] = (m + log2 l) ln 2   (empty: 0 and -inf)
 *
 *   combine, block r:  lse_s -> shared;  __syncthreads();  warp 0: w_s = e^(lse_s - max_s lse_s)
 *     __syncthreads();  thread d:  O[r, d] = sum_s w_s part_O[s, r, d] / sum_s w_s,
 *     lse[r] = max_s lse_s + log sum_s w_s                          (every chunk empty: 0, -inf)
 */
/** One block per (O row r = (b * seq_q + i) * heads + h, chunk s): the walk over the row's visible
 * keys in [s * chunk, (s + 1) * chunk), its partial state written to the workspace. */
static __global__ void __launch_bounds__(L06_THREADS)
    FD_KERNEL(const attn_bf16 *__restrict__ q,  // [batch, seq_q, heads, HEAD_DIM]
              const attn_bf16 *__restrict__ k,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              const attn_bf16 *__restrict__ v,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              float *__restrict__ part_o,       // [num_splits, rows, HEAD_DIM]
              float *__restrict__ part_lse,     // [num_splits, rows]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale, int chunk) {
  const size_t r = blockIdx.x, rows = gridDim.x;
  const int s = blockIdx.y;
  const int h = (int)(r % heads);
  const int i = (int)((r / heads) % seq_q);
  const int b = (int)(r / ((size_t)heads * seq_q));
  const int g = h / (heads / kv_heads); /* the KV head this query head reads */
  const size_t kv_stride = (size_t)kv_heads * HEAD_DIM;
  const attn_bf16 *kg = k + (size_t)b * seq_kv * kv_stride + (size_t)g * HEAD_DIM;
  const attn_bf16 *vg = v + (size_t)b * seq_kv * kv_stride + (size_t)g * HEAD_DIM;

  /* This chunk's keys, clipped to the row's window: possibly none. */
  const int n = attn_keys_seen(i, seq_q, seq_kv, causal);
  const long long c0 = (long long)s * chunk, c1 = c0 + chunk;
  const int j0 = (int)(c0 < n ? c0 : n), j1 = (int)(c1 < n ? c1 : n);

  float o_d, lse_r;
  fd_row(q + r * HEAD_DIM, kg, vg, kv_stride, j0, j1, scale, &o_d, &lse_r);
  if (threadIdx.x < HEAD_DIM) {
    part_o[((size_t)s * rows + r) * HEAD_DIM + threadIdx.x] = o_d;
    if (threadIdx.x == 0) part_lse[(size_t)s * rows + r] = lse_r;
  }
}

/** The combine: one block of HEAD_DIM threads per O row; thread d merges column d of the row's
 * num_splits partial states. The log-sum-exps are read once, all at the same time, into shared
 * memory; warp 0 turns them into weights; then every thread sums its column, 8 chunks' loads in
 * flight. */
static __global__ void __launch_bounds__(HEAD_DIM)
    FD_COMBINE_KERNEL(const float *__restrict__ part_o,    // [num_splits, rows, HEAD_DIM]
                      const float *__restrict__ part_lse,  // [num_splits, rows]
                      attn_bf16 *__restrict__ o,           // [batch, seq_q, heads, HEAD_DIM]
                      float *__restrict__ lse,             // [batch, heads, seq_q]
                      int heads, int seq_q, int num_splits) {
  __shared__ float s_w[L06_MAX_SPLITS]; /* the chunks' log-sum-exps, then their weights */
  __shared__ float s_mx, s_sum;
  const size_t r = blockIdx.x, rows = gridDim.x;
  const int d = threadIdx.x;
  for (int s = d; s < num_splits; s += HEAD_DIM) s_w[s] = part_lse[(size_t)s * rows + r];
  __syncthreads();
  if (d < 32) { /* warp 0: the largest, the weights e^(lse_s - max) (0 for an empty chunk), sum */
    float mx = -INFINITY;
    for (int s = d; s < num_splits; s += 32) mx = fmaxf(mx, s_w[s]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    const float mu = mx == -INFINITY ? 0.f : mx; /* no chunk saw a key: every weight is 0 */
    float sum = 0.f;
    for (int s = d; s < num_splits; s += 32) {
      const float w = expf(s_w[s] - mu);
      s_w[s] = w;
      sum += w;
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (d == 0) s_mx = mx, s_sum = sum;
  }
  __syncthreads();
  float acc = 0.f;
#pragma unroll 8
  for (int s = 0; s < num_splits; ++s)
    acc += s_w[s] * part_o[((size_t)s * rows + r) * HEAD_DIM + d];
  const float sum = s_sum;
  o[r * HEAD_DIM + d] = __float2bfloat16(sum > 0.f ? acc / sum : 0.f);
  if (d == 0) {
    const int h = (int)(r % heads);
    const int i = (int)((r / heads) % seq_q);
    const int b = (int)(r / ((size_t)heads * seq_q));
    lse[((size_t)b * heads + h) * seq_q + i] = sum > 0.f ? s_mx + logf(sum) : -INFINITY;
  }
}

/** The combine's launcher, l06_combine_d64() or l06_combine_d128(): one block per row. */
extern "C" cudaError_t FD_COMBINE(const float *workspace, int num_splits, void *o, float *lse,
                                  int batch, int heads, int seq_q, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, 1, seq_q, 1));
  if (num_splits < 1 || num_splits > L06_MAX_SPLITS) return cudaErrorInvalidValue;
  const long long rows = (long long)batch * heads * seq_q;
  if (rows > INT_MAX) return cudaErrorInvalidConfiguration;
  const float *part_o = workspace, *part_lse = workspace + (size_t)num_splits * rows * HEAD_DIM;
  FD_COMBINE_KERNEL<<<(unsigned)rows, HEAD_DIM, 0, stream>>>(part_o, part_lse, (attn_bf16 *)o, lse,
                                                             heads, seq_q, num_splits);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

/** Blocks of the split kernel one SM holds, queried once (l06_split_kv_per_sm_d64() or _d128()). */
extern "C" int FD_PER_SM(void) {
  static int per_sm = 0;
  if (per_sm > 0) return per_sm;
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, FD_KERNEL, L06_THREADS, 0) != cudaSuccess) {
    (void)cudaGetLastError(); /* no device: leave no error behind */
    return 0;
  }
  per_sm = n;
  return per_sm;
}

/** The launcher, l06_split_kv_d64() or l06_split_kv_d128(): rows x num_splits blocks, then the
 * combine. */
extern "C" cudaError_t FD_LAUNCH(const void *q, const void *k, const void *v, void *o, float *lse,
                                 float *workspace, size_t workspace_bytes, int num_splits,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                 int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  if (seq_q > L06_MAX_SEQ_Q || num_splits < 0 || num_splits > L06_MAX_SPLITS)
    return cudaErrorInvalidValue;
  const long long rows = (long long)batch * heads * seq_q;
  if (rows > INT_MAX) return cudaErrorInvalidConfiguration;
  if (num_splits == 0)
    num_splits = l06_splits_for(2, batch, heads, kv_heads, seq_q, seq_kv, HEAD_DIM);
  if (!workspace || workspace_bytes < l06_split_workspace_bytes(num_splits, (size_t)rows, HEAD_DIM))
    return cudaErrorInvalidValue;
  float *part_o = workspace, *part_lse = workspace + (size_t)num_splits * rows * HEAD_DIM;
  const dim3 grid((unsigned)rows, (unsigned)num_splits);
  FD_KERNEL<<<grid, L06_THREADS, 0, stream>>>(
      (const attn_bf16 *)q, (const attn_bf16 *)k, (const attn_bf16 *)v, part_o, part_lse, heads,
      kv_heads, seq_q, seq_kv, causal, scale, l06_chunk_len(seq_kv, num_splits));
  ATTN_TRY_LAUNCH();
  return FD_COMBINE(workspace, num_splits, o, lse, batch, heads, seq_q, stream);
}
