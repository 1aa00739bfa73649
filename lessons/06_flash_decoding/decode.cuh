/**
 * @file decode.cuh
 * @brief Lesson 06's device helpers, shared by both versions: the 16-byte streaming load, the
 *        bf16 unpack, and one row's online softmax over a range of keys with the block's merge.
 *
 * Included by a version file after HEAD_DIM is defined (CMake builds each version once per head
 * dimension). A key's row of HEAD_DIM bf16 is read by a group of FD_LPK lanes, 8 values (16 bytes)
 * each: 8 lanes at dim 64, 16 at dim 128, so a warp reads FD_GROUPS keys side by side and
 * FD_UNROLL times that many per step, all loads issued before any score is used.
 */
#ifndef L06_DECODE_CUH
#define L06_DECODE_CUH

#include <math.h>
#include <stdint.h>

#include "attn_causal.h"
#include "attn_cuda.cuh"
#include "flash_decoding.h"

#define FD_WARPS (L06_THREADS / 32)     /**< 4 warps per block */
#define FD_VEC 8                        /**< bf16 per lane per key: one 16-byte load */
#define FD_LPK (HEAD_DIM / FD_VEC)      /**< lanes per key: 8 (dim 64) or 16 (dim 128) */
#define FD_GROUPS (32 / FD_LPK)         /**< keys a warp reads side by side: 4 or 2 */
#define FD_UNROLL 4                     /**< keys per lane group per step */
#define FD_STEP (FD_GROUPS * FD_UNROLL) /**< keys per warp per step: 16 or 8 */
#define FD_LOG2E 1.4426950408889634f    /**< e^x = 2^(x log2 e) */
#define FD_LN2 0.6931471805599453f      /**< log x = log2(x) ln 2 */

/** 16 bytes from global memory through the non-coherent (read-only) path, not kept in L1: a block
 * reads each K and V row once, so L1 would only hold lines nobody asks for again. */
static __device__ __forceinline__ uint4 fd_ld_stream(const void *p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}

/** Eight bf16 (the low half of each word first, as they lie in memory) to fp32: a bf16 is the top
 * 16 bits of the fp32 with the same value. */
static __device__ __forceinline__ void fd_unpack8(uint4 u, float *f) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    f[2 * t] = __uint_as_float(w[t] << 16);
    f[2 * t + 1] = __uint_as_float(w[t] & 0xffff0000u);
  }
}

/** Sum over the FD_LPK lanes of one key group (consecutive lanes): every lane gets the sum. */
static __device__ __forceinline__ float fd_group_sum(float x) {
#pragma unroll
  for (int off = FD_LPK / 2; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

/** Merge the state (m2, l2, o2) into (m, l, o): base-2 maxima, FD_VEC columns of O. */
static __device__ __forceinline__ void fd_merge(float *m, float *l, float *o, float m2, float l2,
                                                const float *o2) {
  const float mn = fmaxf(*m, m2);
  const float mu = mn == -INFINITY ? 0.f : mn; /* both empty: keep the exponents finite */
  const float a = exp2f(*m - mu), b = exp2f(m2 - mu);
  *l = *l * a + l2 * b;
#pragma unroll
  for (int t = 0; t < FD_VEC; ++t) o[t] = o[t] * a + o2[t] * b;
  *m = mn;
}

/**
 * One query row over the keys [j0, j1) by the whole block (L06_THREADS threads). The keys are cut
 * into FD_WARPS contiguous ranges, one per warp; inside a warp the lane groups take interleaved
 * keys and keep their own online state (m, l, 8 columns of O); the groups merge by shuffles, the
 * warps through shared memory. On return, thread d < HEAD_DIM holds column d of the row's
 * normalised O in *o_d (0 when no key was seen), and every such thread the row's natural-log
 * log-sum-exp in *lse
 * (-inf when no key was seen). Every thread of the block must call it (it has a barrier).
 * @param qr    the query row, HEAD_DIM bf16
 * @param kg    key 0 of the row's KV head; key j is at kg + j * kv_stride
 * @param vg    value 0, same strides
 * @param kv_stride elements from one key to the next: kv_heads * HEAD_DIM
 * @param j0    first key of the range
 * @param j1    one past its last key (j1 <= j0: no key, the empty state)
 * @param scale the softmax scale
 * @param o_d   out (threads d < HEAD_DIM): column d of the normalised O
 * @param lse   out (threads d < HEAD_DIM): the natural-log log-sum-exp
 */
static __device__ __forceinline__ void fd_row(const attn_bf16 *__restrict__ qr,
                                              const attn_bf16 *__restrict__ kg,
                                              const attn_bf16 *__restrict__ vg, size_t kv_stride,
                                              int j0, int j1, float scale, float *o_d, float *lse) {
  __shared__ float part_m[FD_WARPS], part_l[FD_WARPS];
  __shared__ float part_o[FD_WARPS][HEAD_DIM];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int group = lane / FD_LPK, sub = lane % FD_LPK; /* key slot, and 8-column slice */

  /* q's slice, scaled by scale * log2(e) once: scores come out in base 2. */
  float qf[FD_VEC];
  fd_unpack8(*(const uint4 *)(qr + sub * FD_VEC), qf);
#pragma unroll
  for (int t = 0; t < FD_VEC; ++t) qf[t] *= scale * FD_LOG2E;

  /* This warp's keys: a contiguous range, a whole number of steps long (the last one clipped). */
  const int n = j1 > j0 ? j1 - j0 : 0;
  const int per = attn_cdiv(attn_cdiv(n, FD_WARPS), FD_STEP) * FD_STEP;
  const int w0 = min(j1, j0 + warp * per), w1 = min(j1, w0 + per);

  float m = -INFINITY, l = 0.f, acc[FD_VEC];
#pragma unroll
  for (int t = 0; t < FD_VEC; ++t) acc[t] = 0.f;

  for (int base = w0; base < w1; base += FD_STEP) {
    /* Issue every load of the step first: FD_UNROLL keys and values per lane in flight. */
    uint4 kr[FD_UNROLL], vr[FD_UNROLL];
#pragma unroll
    for (int u = 0; u < FD_UNROLL; ++u) {
      const int j = base + u * FD_GROUPS + group;
      kr[u] = make_uint4(0u, 0u, 0u, 0u), vr[u] = kr[u];
      if (j < w1) {
        kr[u] = fd_ld_stream(kg + (size_t)j * kv_stride + sub * FD_VEC);
        vr[u] = fd_ld_stream(vg + (size_t)j * kv_stride + sub * FD_VEC);
      }
    }
    float s[FD_UNROLL], mx = -INFINITY;
#pragma unroll
    for (int u = 0; u < FD_UNROLL; ++u) {
      float kf[FD_VEC], dot = 0.f;
      fd_unpack8(kr[u], kf);
#pragma unroll
      for (int t = 0; t < FD_VEC; ++t) dot += qf[t] * kf[t];
      dot = fd_group_sum(dot); /* every lane of the warp shuffles, masked keys too */
      s[u] = base + u * FD_GROUPS + group < w1 ? dot : -INFINITY;
      mx = fmaxf(mx, s[u]);
    }
    /* The online update for FD_UNROLL scores at once: one rescale per step. */
    const float m_new = fmaxf(m, mx);
    const float m_use = m_new == -INFINITY ? 0.f : m_new; /* nothing seen yet by this group */
    const float alpha = exp2f(m - m_use);
    l *= alpha;
#pragma unroll
    for (int t = 0; t < FD_VEC; ++t) acc[t] *= alpha;
#pragma unroll
    for (int u = 0; u < FD_UNROLL; ++u) {
      const float p = exp2f(s[u] - m_use); /* 0 for a masked key */
      float vf[FD_VEC];
      fd_unpack8(vr[u], vf);
      l += p;
#pragma unroll
      for (int t = 0; t < FD_VEC; ++t) acc[t] += p * vf[t];
    }
    m = m_new;
  }

  /* The warp's FD_GROUPS states, merged by shuffles: lane and lane ^ off hold the same columns. */
#pragma unroll
  for (int off = FD_LPK; off < 32; off <<= 1) {
    float o2[FD_VEC];
#pragma unroll
    for (int t = 0; t < FD_VEC; ++t) o2[t] = __shfl_xor_sync(0xffffffffu, acc[t], off);
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float l2 = __shfl_xor_sync(0xffffffffu, l, off);
    fd_merge(&m, &l, acc, m2, l2, o2);
  }
  if (lane < FD_LPK) {
#pragma unroll
    for (int t = 0; t < FD_VEC; ++t) part_o[warp][sub * FD_VEC + t] = acc[t];
    if (lane == 0) part_m[warp] = m, part_l[warp] = l;
  }
  __syncthreads();

  /* The warps' states, column by column: thread d folds the FD_WARPS states of column d. */
  if (threadIdx.x < HEAD_DIM) {
    const int d = threadIdx.x;
    float mm = -INFINITY, ll = 0.f, oo = 0.f;
#pragma unroll
    for (int w = 0; w < FD_WARPS; ++w) {
      const float mn = fmaxf(mm, part_m[w]);
      const float mu = mn == -INFINITY ? 0.f : mn;
      const float a = exp2f(mm - mu), b = exp2f(part_m[w] - mu);
      ll = ll * a + part_l[w] * b;
      oo = oo * a + part_o[w][d] * b;
      mm = mn;
    }
    *o_d = ll > 0.f ? oo / ll : 0.f;
    *lse = ll > 0.f ? (mm + log2f(ll)) * FD_LN2 : -INFINITY;
  }
}

#endif /* L06_DECODE_CUH */
