/** @file
 * @brief Version 8: the attention form. One query row, its keys split over warps, the warps' (m, l,
 * O) states merged: flash-decoding inside one block.
 *
 * What changed: from the softmax versions, the row's scores are no longer stored anywhere. They
 * are made one key at a time, s_j = scale * (q . k_j), and consumed at once by the online update,
 * which now carries the weighted sum of value rows beside (m, l):
 *
 *     m' = max(m, s_j)       alpha = exp(m - m')       p = exp(s_j - m')
 *     l' = l * alpha + p
 *     O' = O * alpha + p * v_j                          (O is divided by l only at the end)
 *
 * Each of the block's 8 warps takes a contiguous eighth of the keys and keeps its own (m, l, O);
 * the warps' states are then merged, with the same rescaling applied to two states:
 *
 *     m = max(m1, m2)   l = l1 e^(m1 - m) + l2 e^(m2 - m)   O = O1 e^(m1 - m) + O2 e^(m2 - m)
 *
 *     block = one query row (b, i, h), 8 warps                    keys 0 .. n-1 (n visible keys)
 *     warp w: keys [w n/8, (w+1) n/8)  ->  (m_w, l_w, O_w[dim])  -> shared memory
 *     __syncthreads(); thread d (d < dim) folds the 8 states for output column d:
 *         O[d] = (merged O_w[d]) / (merged l),   lse = m + log(l)
 *
 * Inside a warp, lane c holds q and O for columns c, c + 32, ..., (up to dim = 256: 8 per lane);
 * a score is a warp-wide dot product: a partial sum per lane, then warp_sum (the shuffle
 * butterfly).
 *
 * Why: with seq_q = 1 (decode) there is one block per (batch, head), far fewer than the GPU's SMs
 * for small batches; that is the problem flash-decoding solves by splitting the keys over blocks
 * as well, and combining the blocks' states with this same merge (lesson 06). Here the split is
 * over the warps of one block, which makes the merge visible in a few lines. Any seq_q works (one
 * block per query row), so the harness checks it on the lesson's shape too; causal masking
 * shortens n per row (bottom-right aligned) and a row that sees no key writes O = 0 and
 * lse = -inf.
 *
 * Prediction: correct algebra on real attention, not speed: every warp re-reads K and V for every
 * query (no tiling: lesson 03), and each key costs a shuffle reduction.
 *
 * Measured: NVIDIA H200, 2026-11-23, fp32: batch 1, heads 16, seq 1024, kv-seq 4096, dim 64:
 * 12.52398 ms, 1.372 TFLOP/s = 2.05% of the fp32 peak; decode, batch 64, heads 32 (8 KV heads),
 * seq 1, kv-seq 8192, dim 128: 5.44162 ms, 789.67 GB/s = 16.40% of HBM. Slow, as predicted.
 *
 * Run: `./run 8` and `./run 8 --batch 64 --heads 32 --kv-heads 8 --seq 1 --kv-seq 8192 --dim 128`
 */
#include "online_softmax.h"

#include "softmax_reduce.cuh"

#define D_PER_LANE (L02_SPLIT_MAX_DIM / L02_WARP_SIZE) /**< 8 columns of q and O per lane */
/** Threads per block: L02_SPLIT_WARPS warps. */
#define THREADS (L02_SPLIT_WARPS * L02_WARP_SIZE)

/** One block per query row (batch, query, head): its visible keys are split into
 * L02_SPLIT_WARPS chunks, each warp runs the online (m, l, O) update over its chunk, and the
 * warps' states are merged column by column into the row of O and its log-sum-exp. */
static __global__ void __launch_bounds__(THREADS)
    l02_attn_v8_kernel(const float *q, /* [batch, seq_q, heads, dim] */
                       const float *k, /* [batch, seq_kv, kv_heads, dim] */
                       const float *v, /* [batch, seq_kv, kv_heads, dim] */
                       float *o,       /* [batch, seq_q, heads, dim] */
                       float *lse,     /* [batch, heads, seq_q] */
                       int heads, int kv_heads, int seq_q, int seq_kv, int dim, int causal,
                       float scale) {
  __shared__ float part_m[L02_SPLIT_WARPS], part_l[L02_SPLIT_WARPS];
  __shared__ float part_o[L02_SPLIT_WARPS][L02_SPLIT_MAX_DIM];
  const int lane = threadIdx.x % L02_WARP_SIZE, warp = threadIdx.x / L02_WARP_SIZE;

  /* O row r = (b * seq_q + i) * heads + h, as in attn_reference.h. */
  const size_t r = blockIdx.x;
  const int h = (int)(r % heads);
  const int i = (int)((r / heads) % seq_q);
  const int b = (int)(r / ((size_t)heads * seq_q));
  const int g = h / (heads / kv_heads); /* the KV head this query head reads (GQA) */

  /* Visible keys 0..n-1: all of them, or the bottom-right causal window. */
  int n = seq_kv;
  if (causal) {
    const long w = (long)i + (seq_kv - seq_q) + 1;
    n = w < 0 ? 0 : (w > seq_kv ? seq_kv : (int)w);
  }
  const int chunk = attn_cdiv(n, L02_SPLIT_WARPS);
  const int j0 = min(n, warp * chunk), j1 = min(n, j0 + chunk);

  float qr[D_PER_LANE], acc[D_PER_LANE];
#pragma unroll
  for (int t = 0; t < D_PER_LANE; ++t) {
    const int d = lane + L02_WARP_SIZE * t;
    qr[t] = d < dim ? q[r * dim + d] : 0.0f;
    acc[t] = 0.0f;
  }

  /* This warp's keys, one at a time, through the online (m, l, O) update. */
  float m = -INFINITY, l = 0.0f;
  const size_t kv_stride = (size_t)kv_heads * dim; /* from key j to key j + 1 */
  const float *kj = k + ((size_t)b * seq_kv * kv_heads + g) * dim + (size_t)j0 * kv_stride;
  const float *vj = v + ((size_t)b * seq_kv * kv_heads + g) * dim + (size_t)j0 * kv_stride;
  for (int j = j0; j < j1; ++j, kj += kv_stride, vj += kv_stride) {
    float part = 0.0f;
#pragma unroll
    for (int t = 0; t < D_PER_LANE; ++t) {
      const int d = lane + L02_WARP_SIZE * t;
      if (d < dim) part += qr[t] * kj[d];
    }
    const float s = warp_sum(part) * scale; /* the same in every lane */
    const float m_new = fmaxf(m, s);
    const float alpha = expf(m - m_new); /* 0 for the first key (m = -inf) */
    const float p = expf(s - m_new);
    l = l * alpha + p;
#pragma unroll
    for (int t = 0; t < D_PER_LANE; ++t) {
      const int d = lane + L02_WARP_SIZE * t;
      if (d < dim) acc[t] = acc[t] * alpha + p * vj[d];
    }
    m = m_new;
  }

  /* Each warp leaves its state; a warp with no keys leaves the empty state (-inf, 0, 0). */
  if (lane == 0) {
    part_m[warp] = m;
    part_l[warp] = l;
  }
#pragma unroll
  for (int t = 0; t < D_PER_LANE; ++t) {
    const int d = lane + L02_WARP_SIZE * t;
    if (d < dim) part_o[warp][d] = acc[t];
  }
  __syncthreads();

  /* Merge the warps' states, column by column: the pairwise merge folded over the 8 warps. */
  for (int d = threadIdx.x; d < dim; d += blockDim.x) {
    float mm = -INFINITY, ll = 0.0f, oo = 0.0f;
    for (int w = 0; w < L02_SPLIT_WARPS; ++w) {
      const float m2 = part_m[w];
      const float m_new = fmaxf(mm, m2);
      if (m_new == -INFINITY) continue; /* both empty so far */
      const float a = expf(mm - m_new), c = expf(m2 - m_new);
      ll = ll * a + part_l[w] * c;
      oo = oo * a + part_o[w][d] * c;
      mm = m_new;
    }
    o[r * dim + d] = ll > 0.0f ? oo / ll : 0.0f; /* no visible key: O = 0 */
    if (d == 0 && lse)
      lse[((size_t)b * heads + h) * seq_q + i] = ll > 0.0f ? mm + logf(ll) : -INFINITY;
  }
}

extern "C" const char *l02_attn_v8_supports(const attn_problem *p) {
  if (p->dim > L02_SPLIT_MAX_DIM)
    return "head dim above 256: a lane keeps at most 8 columns of q and O in registers";
  if (attn_rows(p) > 0x7fffffffu) return "more than 2^31 - 1 query rows (one block each)";
  return NULL;
}

extern "C" cudaError_t l02_attn_v8_decode_split(const attn_problem *p, const attn_args *a,
                                                cudaStream_t stream) {
  const char *why = l02_attn_v8_supports(p);
  if (why) {
    attn_cuda_report(cudaErrorInvalidValue, why, __FILE__, __LINE__);
    return cudaErrorInvalidValue;
  }
  const size_t rows = attn_rows(p);
  if (rows == 0) return cudaSuccess;
  l02_attn_v8_kernel<<<(unsigned)rows, THREADS, 0, stream>>>(
      (const float *)a->q, (const float *)a->k, (const float *)a->v, (float *)a->o, a->lse,
      p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim, p->causal, attn_scale(p));
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
