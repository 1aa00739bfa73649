// Test kernels for the harness's own GPU suite. Deliberately plain: one thread per O row, online
// softmax, fp32 accumulation. Lessons 02-03 teach this properly; here it only has to be right.
#include "attn_cuda.cuh"
#include "harness_kernels.h"

enum { FAULT_NONE = 0, FAULT_SKIP_LAST_ROW = 1, FAULT_SCALE = 2 };

static __device__ __forceinline__ float ld(const void *p, size_t i, int bf16) {
  return bf16 ? __bfloat162float(((const attn_bf16 *)p)[i]) : ((const float *)p)[i];
}

static __device__ __forceinline__ void st(void *p, size_t i, float x, int bf16) {
  if (bf16)
    ((attn_bf16 *)p)[i] = __float2bfloat16(x);
  else
    ((float *)p)[i] = x;
}

// K/V row of token j for (b, g): dense BSHD, or through the block table when `table` is set.
static __device__ __forceinline__ size_t kv_row(const attn_problem &p, const int *table,
                                                int max_blocks, int b, int j, int g) {
  if (table) {
    int blk = table[(size_t)b * max_blocks + j / p.block_size];
    return ((size_t)blk * p.block_size + j % p.block_size) * p.kv_heads + g;
  }
  return ((size_t)b * p.seq_kv + j) * p.kv_heads + g;
}

static __global__ void row_attention(attn_problem p, const void *q, const void *k, const void *v,
                                     const int *table, int max_blocks, void *o, float *lse,
                                     int bf16, int fault) {
  size_t rows = (size_t)p.batch * p.seq_q * p.heads;
  size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  if (fault == FAULT_SKIP_LAST_ROW && r == rows - 1) return;
  int h = (int)(r % p.heads);
  size_t bi = r / p.heads;
  int i = (int)(bi % p.seq_q), b = (int)(bi / p.seq_q);
  int g = h / (p.heads / p.kv_heads);
  float scale = p.scale != 0.0f ? p.scale : rsqrtf((float)p.dim);
  if (fault == FAULT_SCALE) scale *= 1.01f;
  int n = p.seq_kv;
  if (p.causal) n = min(max(i + p.seq_kv - p.seq_q + 1, 0), p.seq_kv);

  float acc[TH_MAX_DIM];
  for (int d = 0; d < p.dim; ++d) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for (int j = 0; j < n; ++j) {
    size_t kr = kv_row(p, table, max_blocks, b, j, g) * p.dim;
    float s = 0.0f;
    for (int d = 0; d < p.dim; ++d) s += ld(q, r * p.dim + d, bf16) * ld(k, kr + d, bf16);
    s *= scale;
    float m_new = fmaxf(m, s);
    float corr = expf(m - m_new);  // 0 on the first key (m = -inf)
    float w = expf(s - m_new);
    l = l * corr + w;
    for (int d = 0; d < p.dim; ++d) acc[d] = acc[d] * corr + w * ld(v, kr + d, bf16);
    m = m_new;
  }
  for (int d = 0; d < p.dim; ++d) st(o, r * p.dim + d, n > 0 ? acc[d] / l : 0.0f, bf16);
  if (lse) lse[((size_t)b * p.heads + h) * p.seq_q + i] = n > 0 ? m + logf(l) : -INFINITY;
}

static cudaError_t launch(const attn_problem *p, const attn_args *a, cudaStream_t s, int bf16,
                          int paged, int fault) {
  if (p->dim > TH_MAX_DIM) return cudaErrorInvalidValue;
  size_t rows = attn_rows(p);
  int threads = 128;
  unsigned blocks = (unsigned)((rows + threads - 1) / threads);
  row_attention<<<blocks, threads, 0, s>>>(*p, a->q, paged ? a->k_cache : a->k,
                                           paged ? a->v_cache : a->v, paged ? a->block_table : NULL,
                                           a->max_blocks, a->o, a->lse, bf16, fault);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t th_attention_f32(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  return launch(p, a, s, 0, 0, FAULT_NONE);
}
extern "C" cudaError_t th_attention_bf16(const attn_problem *p, const attn_args *a,
                                         cudaStream_t s) {
  return launch(p, a, s, 1, 0, FAULT_NONE);
}
extern "C" cudaError_t th_attention_paged_bf16(const attn_problem *p, const attn_args *a,
                                               cudaStream_t s) {
  return launch(p, a, s, 1, 1, FAULT_NONE);
}
extern "C" cudaError_t th_attention_skips_last_row(const attn_problem *p, const attn_args *a,
                                                   cudaStream_t s) {
  return launch(p, a, s, 0, 0, FAULT_SKIP_LAST_ROW);
}
extern "C" cudaError_t th_attention_wrong_scale(const attn_problem *p, const attn_args *a,
                                                cudaStream_t s) {
  return launch(p, a, s, 0, 0, FAULT_SCALE);
}

static __global__ void affine(const float *x, float *y, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

extern "C" cudaError_t th_affine(const float *x, float *y, size_t n, cudaStream_t s) {
  affine<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
