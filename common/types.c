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

/* Keys visible to query i of a sequence of n keys. */
static int visible(const attn_problem *p, int n_keys, int i) {
  if (!p->causal) return n_keys;
  /* Bottom-right alignment: the last query sees every key, each earlier query one key fewer. */
  long n = (long)i + ((long)n_keys - (long)p->seq_q) + 1;
  if (n < 0) return 0;
  if (n > n_keys) return n_keys;
  return (int)n;
}

int attn_visible_keys(const attn_problem *p, int i) {
  return visible(p, p->seq_kv, i);
}

int attn_kv_len(const attn_problem *p, int b) {
  return p->kv_lens ? p->kv_lens[b] : p->seq_kv;
}

int attn_visible_keys_in(const attn_problem *p, int b, int i) {
  return visible(p, attn_kv_len(p, b), i);
}

double attn_total_kv(const attn_problem *p) {
  if (!p->kv_lens) return (double)p->batch * p->seq_kv;
  double n = 0.0;
  for (int b = 0; b < p->batch; ++b) n += p->kv_lens[b];
  return n;
}

char *attn_kv_lens_str(const attn_problem *p, char *buf, size_t len) {
  if (len) buf[0] = '\0';
  if (!p->kv_lens || !len) return buf;
  size_t used = 0;
  for (int b = 0; b < p->batch && used < len;) {
    int run = 1;
    while (b + run < p->batch && p->kv_lens[b + run] == p->kv_lens[b]) ++run;
    used += (size_t)snprintf(buf + used, len - used, run > 1 ? "%s%dx%d" : "%s%d", b ? "," : "",
                             p->kv_lens[b], run);
    b += run;
  }
  return buf;
}

double attn_visible_pairs(const attn_problem *p) {
  double pairs = 0.0;
  for (int b = 0; b < (p->kv_lens ? p->batch : 1); ++b) {
    const int n = attn_kv_len(p, b);
    double per_seq = 0.0;
    if (!p->causal) {
      per_seq = (double)p->seq_q * (double)n;
    } else {
      for (int i = 0; i < p->seq_q; ++i) per_seq += visible(p, n, i);
    }
    pairs += per_seq * (p->kv_lens ? 1 : p->batch);
  }
  return pairs * p->heads;
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
  /* K and V: the keys the sequences hold, not the padded layout */
  double bytes =
      e * (2.0 * attn_q_elems(p) + 2.0 * attn_total_kv(p) * (double)p->kv_heads * p->dim);
  if (with_lse) bytes += 4.0 * attn_rows(p);
  return bytes;
}

void attn_cuda_report(cudaError_t err, const char *call, const char *file, int line) {
  fprintf(stderr, "%s:%d: %s: %s: %s\n", file, line, call, cudaGetErrorName(err),
          cudaGetErrorString(err));
}
