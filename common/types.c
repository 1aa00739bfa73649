/* Shapes, the work model and CUDA error reporting. See attn_types.h. */
#include <math.h>
#include <stdio.h>

#include "attn_types.h"

size_t attn_dtype_size(attn_dtype t) {
  return t == ATTN_BF16 ? 2 : 4;
}

const char *attn_dtype_name(attn_dtype t) {
  return t == ATTN_BF16 ? "bf16" : "fp32";
}

float attn_scale(const attn_problem *p) {
  return p->scale != 0.0f ? p->scale : 1.0f / sqrtf((float)p->dim);
}

int attn_visible_keys(const attn_problem *p, int i) {
  if (!p->causal) return p->seq_kv;
  /* Bottom-right alignment: the last query sees every key, each earlier query one key fewer. */
  long n = (long)i + ((long)p->seq_kv - (long)p->seq_q) + 1;
  if (n < 0) return 0;
  if (n > p->seq_kv) return p->seq_kv;
  return (int)n;
}

double attn_visible_pairs(const attn_problem *p) {
  double per_seq = 0.0;
  if (!p->causal) {
    per_seq = (double)p->seq_q * (double)p->seq_kv;
  } else {
    for (int i = 0; i < p->seq_q; ++i) per_seq += attn_visible_keys(p, i);
  }
  return per_seq * p->batch * p->heads;
}

double attn_flops(const attn_problem *p) {
  return 4.0 * p->dim * attn_visible_pairs(p);
}

size_t attn_q_elems(const attn_problem *p) {
  return (size_t)p->batch * p->seq_q * p->heads * p->dim;
}

size_t attn_kv_elems(const attn_problem *p) {
  return (size_t)p->batch * p->seq_kv * p->kv_heads * p->dim;
}

size_t attn_rows(const attn_problem *p) {
  return (size_t)p->batch * p->heads * p->seq_q;
}

double attn_min_bytes(const attn_problem *p, attn_dtype t, int with_lse) {
  double e = (double)attn_dtype_size(t);
  double bytes = e * (2.0 * attn_q_elems(p) + 2.0 * attn_kv_elems(p));
  if (with_lse) bytes += 4.0 * attn_rows(p);
  return bytes;
}

void attn_cuda_report(cudaError_t err, const char *call, const char *file, int line) {
  fprintf(stderr, "%s:%d: %s: %s: %s\n", file, line, call, cudaGetErrorName(err),
          cudaGetErrorString(err));
}
