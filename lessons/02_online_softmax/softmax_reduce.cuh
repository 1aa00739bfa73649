/** @file
 * @brief Reductions for lesson 02's kernels: max, sum and the (m, l) merge, across a warp and a
 * block.
 *
 * A warp reduces with __shfl_xor_sync, the butterfly: at step `offset` lane i trades its value with
 * lane i ^ offset and both keep the combination. After offsets 16, 8, 4, 2, 1 every lane holds the
 * result over all 32 lanes (no broadcast needed afterwards):
 *
 *     offset 16: lanes 0-15 <-> 16-31      offset 8: 0-7 <-> 8-15, 16-23 <-> 24-31      ...
 *
 * There is no __shfl_max_sync or __shfl_add_sync: the shuffle only moves a register; the max or sum
 * is ours. Every lane of the warp must take part (mask 0xffffffff).
 *
 * Because a lane and its partner compute op(a, b) and op(b, a), op must be exactly symmetric or the
 * lanes drift apart by an ulp. fmaxf and + are; the (m, l) merge is too once products are kept out
 * of fused multiply-adds (__fmul_rn), which the compiler would otherwise apply to one side only.
 *
 * A block reduces in two levels: each warp reduces, lane 0 of each warp writes its result to shared
 * memory, one __syncthreads(), then every warp reduces those (at most 32) partial results again, so
 * every thread ends with the block's result. Each shared array serves one reduction: a kernel that
 * reduces twice passes two arrays (reusing one would need a second barrier).
 * Block reductions need blockDim.x to be a multiple of 32 and every thread of the block to call
 * them.
 */
#ifndef L02_SOFTMAX_REDUCE_CUH
#define L02_SOFTMAX_REDUCE_CUH

#include <math.h>

#include "attn_cuda.cuh"

/** All 32 lanes take part in every shuffle. */
#define L02_FULL_MASK 0xffffffffu
/** Lanes per warp. */
#define L02_WARP_SIZE 32

/** Max over the warp's 32 lanes, by the xor butterfly; every lane gets the result. */
static __device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = L02_WARP_SIZE / 2; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(L02_FULL_MASK, v, offset));
  return v;
}

/** Sum over the warp's 32 lanes, by the xor butterfly; every lane gets the result. */
static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = L02_WARP_SIZE / 2; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(L02_FULL_MASK, v, offset);
  return v;
}

/** The online update: push score x into the partial softmax (m, l). While every score seen is -inf
 * the state stays empty (m = -inf, l = 0); exp(m - m_new) would be exp(-inf + inf) = NaN there. */
static __device__ __forceinline__ void ml_push(float *m, float *l, float x) {
  float m_new = fmaxf(*m, x);
  if (m_new == -INFINITY) return;
  *l = *l * expf(*m - m_new) + expf(x - m_new);
  *m = m_new;
}

/** The merge: (m, l) := (m, l) combined with (m2, l2), two partial softmaxes over disjoint scores.
 */
static __device__ __forceinline__ void ml_merge(float *m, float *l, float m2, float l2) {
  float m_new = fmaxf(*m, m2);
  if (m_new == -INFINITY) return; /* both empty */
  *l = __fadd_rn(__fmul_rn(*l, expf(*m - m_new)), __fmul_rn(l2, expf(m2 - m_new)));
  *m = m_new;
}

/** Merge the (m, l) of all 32 lanes; every lane ends with the warp's state. */
static __device__ __forceinline__ void warp_ml(float *m, float *l) {
#pragma unroll
  for (int offset = L02_WARP_SIZE / 2; offset > 0; offset >>= 1) {
    float m2 = __shfl_xor_sync(L02_FULL_MASK, *m, offset);
    float l2 = __shfl_xor_sync(L02_FULL_MASK, *l, offset);
    ml_merge(m, l, m2, l2);
  }
}

/** Block max; smem holds 32 floats. */
static __device__ __forceinline__ float block_max(float v, float *smem) {
  const int lane = threadIdx.x % L02_WARP_SIZE, warp = threadIdx.x / L02_WARP_SIZE;
  const int n_warps = blockDim.x / L02_WARP_SIZE;
  v = warp_max(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  return warp_max(lane < n_warps ? smem[lane] : -INFINITY);
}

/** Block sum; smem holds 32 floats. */
static __device__ __forceinline__ float block_sum(float v, float *smem) {
  const int lane = threadIdx.x % L02_WARP_SIZE, warp = threadIdx.x / L02_WARP_SIZE;
  const int n_warps = blockDim.x / L02_WARP_SIZE;
  v = warp_sum(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  return warp_sum(lane < n_warps ? smem[lane] : 0.0f);
}

/** Block (m, l) merge; smem_m and smem_l hold 32 floats each. One barrier. */
static __device__ __forceinline__ void block_ml(float *m, float *l, float *smem_m, float *smem_l) {
  const int lane = threadIdx.x % L02_WARP_SIZE, warp = threadIdx.x / L02_WARP_SIZE;
  const int n_warps = blockDim.x / L02_WARP_SIZE;
  warp_ml(m, l);
  if (lane == 0) {
    smem_m[warp] = *m;
    smem_l[warp] = *l;
  }
  __syncthreads();
  *m = lane < n_warps ? smem_m[lane] : -INFINITY;
  *l = lane < n_warps ? smem_l[lane] : 0.0f;
  warp_ml(m, l);
}

/** The factor that turns exp(x - m) into softmax for a row with max M and sum L: exp(m - M) / L.
 * A fully masked row (L = 0) gets 0, so its output is all zeros. */
static __device__ __forceinline__ float ml_scale(float m, float M, float L) {
  return L > 0.0f ? expf(m - M) / L : 0.0f;
}

#endif /* L02_SOFTMAX_REDUCE_CUH */
