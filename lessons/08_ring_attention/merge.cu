/* Lesson 08's merge kernels: a rank keeps one running (O, log-sum-exp) state per query row and
 * folds in the partial state of every (query chunk, key chunk) pair it computes, one pair per
 * step of the ring. The rule is lesson 06's l06_merge() (and lesson 02's version 8): with
 * m = max(lse_a, lse_b),
 *
 *     w_a = e^(lse_a - m)   w_b = e^(lse_b - m)   O = (w_a O_a + w_b O_b) / (w_a + w_b)
 *     lse = m + log(w_a + w_b)
 *
 * O_a and O_b are already normalised by their own sums, so the weights are the two sums, rescaled
 * by the same e^-m. The running state lives in fp32 (a bf16 state would round once per step); the
 * partial O is the forward kernel's bf16 output. An empty state is (-inf, 0): it has weight 0, and
 * two empty states stay empty (m = -inf would give -inf - -inf = NaN, so that case is skipped). */
#include <math.h>

#include "attn_cuda.cuh"
#include "ring_attention.h"

/** Threads per block of the merge kernels: 8 warps, a row per warp. */
#define L08_MERGE_THREADS 256

/** O = 0, lse = -inf: the empty state. */
__global__ void l08_state_init_kernel(float *o_acc, float *lse_acc, size_t rows, int dim) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t n = rows * (size_t)dim;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    o_acc[i] = 0.0f;
    if (i < rows) lse_acc[i] = -INFINITY;
  }
}

/** One warp merges one row (b, t, h): its lanes stride over the dim elements. */
__global__ void l08_state_merge_kernel(float *o_acc, float *lse_acc, const attn_bf16 *o_part,
                                       const float *lse_part, int batch, int len, int heads,
                                       int dim) {
  const int lane = threadIdx.x % 32;
  const long long rows = (long long)batch * len * heads;
  const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (row >= rows) return;
  /* Row `row` of O is (b, t, h) in [batch, len, heads]; its log-sum-exp is at [b, h, t]. */
  const int h = (int)(row % heads);
  const long long bt = row / heads;
  const int t = (int)(bt % len), b = (int)(bt / len);
  const size_t li = ((size_t)b * heads + h) * len + t;
  const float la = lse_acc[li], lb = lse_part[li];
  const float m = fmaxf(la, lb);
  if (m == -INFINITY) return; /* both empty: stays (-inf, 0) */
  const float wa = expf(la - m), wb = expf(lb - m), sum = wa + wb;
  const float ca = wa / sum, cb = wb / sum;
  float *oa = o_acc + (size_t)row * dim;
  const attn_bf16 *ob = o_part + (size_t)row * dim;
  for (int d = lane; d < dim; d += 32) oa[d] = ca * oa[d] + cb * __bfloat162float(ob[d]);
  if (lane == 0) lse_acc[li] = m + logf(sum);
}

/** The fp32 running O rounded to bf16: the rank's output. */
__global__ void l08_state_finish_kernel(const float *o_acc, attn_bf16 *o, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    o[i] = __float2bfloat16(o_acc[i]);
}

/* A grid-stride loop needs no more blocks than fill the GPU a few times over. */
static unsigned grid_for(size_t n) {
  const size_t blocks = (n + L08_MERGE_THREADS - 1) / L08_MERGE_THREADS;
  return (unsigned)(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

extern "C" cudaError_t l08_state_init(float *o_acc, float *lse_acc, size_t rows, int dim,
                                      cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  l08_state_init_kernel<<<grid_for(rows * (size_t)dim), L08_MERGE_THREADS, 0, stream>>>(
      o_acc, lse_acc, rows, dim);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l08_state_merge(float *o_acc, float *lse_acc, const void *o_part,
                                       const float *lse_part, int batch, int len, int heads,
                                       int dim, cudaStream_t stream) {
  const long long threads = (long long)batch * len * heads * 32;
  if (threads == 0) return cudaSuccess;
  const long long blocks = (threads + L08_MERGE_THREADS - 1) / L08_MERGE_THREADS;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  l08_state_merge_kernel<<<(unsigned)blocks, L08_MERGE_THREADS, 0, stream>>>(
      o_acc, lse_acc, (const attn_bf16 *)o_part, lse_part, batch, len, heads, dim);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l08_state_finish(const float *o_acc, void *o, size_t elems,
                                        cudaStream_t stream) {
  if (elems == 0) return cudaSuccess;
  l08_state_finish_kernel<<<grid_for(elems), L08_MERGE_THREADS, 0, stream>>>(o_acc, (attn_bf16 *)o,
                                                                             elems);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
