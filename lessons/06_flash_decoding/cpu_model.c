/* Version 2 on the CPU, in fp32: the same chunks, the same partial states, the same combine
 * (split_plan.c). It proves the split and the merge against the reference without a GPU; see
 * l06_cpu_split_forward() in flash_decoding.h. */
#include <math.h>
#include <stdlib.h>

#include "flash_decoding.h"

/* One chunk [j0, j1) of one row: its normalised O into o (dim floats) and its log-sum-exp, or
 * (0, -inf) when the chunk has no key. */
static float chunk_state(const attn_problem *p, const float *qi, const float *kg, const float *vg,
                         int j0, int j1, float scale, float *s, float *o) {
  const int dim = p->dim;
  const size_t stride = (size_t)p->kv_heads * dim;
  for (int d = 0; d < dim; ++d) o[d] = 0.0f;
  if (j0 >= j1) return -INFINITY;
  float m = -INFINITY;
  for (int j = j0; j < j1; ++j) {
    const float *kj = kg + (size_t)j * stride;
    float dot = 0.0f;
    for (int d = 0; d < dim; ++d) dot += qi[d] * kj[d];
    s[j - j0] = dot * scale;
    m = fmaxf(m, s[j - j0]);
  }
  float l = 0.0f;
  for (int j = j0; j < j1; ++j) {
    const float e = expf(s[j - j0] - m);
    const float *vj = vg + (size_t)j * stride;
    l += e;
    for (int d = 0; d < dim; ++d) o[d] += e * vj[d];
  }
  for (int d = 0; d < dim; ++d) o[d] /= l;
  return m + logf(l);
}

long l06_cpu_split_forward(const attn_problem *p, const float *q, const float *k, const float *v,
                           float *o, float *lse, int num_splits) {
  const int dim = p->dim, group = p->heads / p->kv_heads;
  const int chunk = l06_chunk_len(p->seq_kv, num_splits);
  const float scale = attn_scale(p);
  float *s = malloc(sizeof(float) * chunk);
  float *part_o = malloc(sizeof(float) * (size_t)num_splits * dim);
  float *part_lse = malloc(sizeof(float) * (size_t)num_splits);
  long empty = 0;
  if (!s || !part_o || !part_lse) {
    empty = -1;
    goto done;
  }
  for (int b = 0; b < p->batch; ++b)
    for (int i = 0; i < p->seq_q; ++i)
      for (int h = 0; h < p->heads; ++h) {
        const size_t r = ((size_t)b * p->seq_q + i) * p->heads + h; /* O row */
        const float *qi = q + r * dim;
        const size_t kv0 = ((size_t)b * p->seq_kv * p->kv_heads + h / group) * dim;
        const int n = attn_visible_keys_in(p, b, i);
        for (int c = 0; c < num_splits; ++c) {
          const long c0 = (long)c * chunk, c1 = c0 + chunk;
          const int j0 = (int)(c0 < n ? c0 : n), j1 = (int)(c1 < n ? c1 : n);
          part_lse[c] =
              chunk_state(p, qi, k + kv0, v + kv0, j0, j1, scale, s, part_o + (size_t)c * dim);
          empty += j0 >= j1;
        }
        l06_combine(part_lse, part_o, num_splits, dim,
                    &lse[((size_t)b * p->heads + h) * p->seq_q + i], o + r * dim);
      }
done:
  free(s);
  free(part_o);
  free(part_lse);
  return empty;
}

int l06_cpu_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx) {
  l06_cpu_split *split = (l06_cpu_split *)ctx;
  split->empty_chunks = l06_cpu_split_forward(p, q, k, v, o, lse, split->num_splits);
  return split->empty_chunks < 0 ? -1 : 0;
}
