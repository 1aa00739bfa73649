/* Lesson 07's CPU model: decode attention reading K and V out of a paged pool through the block
 * table (l07_kv_offset()), checked against the dense reference by attn_cpu_check(). It proves the
 * page-table arithmetic without a GPU; see l07_cpu_paged() in paged_attention.h. */
#include <math.h>
#include <stdlib.h>

#include "attn_paged.h"
#include "paged_attention.h"

int l07_cpu_paged(const attn_problem *p, const float *q, const float *k, const float *v, float *o,
                  float *lse, void *ctx) {
  (void)ctx;
  attn_paged c;
  if (attn_paged_build(p, k, v, 7, &c) != 0) return -1;
  const int dim = p->dim, group = p->heads / p->kv_heads;
  const float scale = attn_scale(p);
  float *s = (float *)malloc(sizeof(float) * (size_t)(p->seq_kv > 0 ? p->seq_kv : 1));
  if (!s) {
    attn_paged_free(&c);
    return -1;
  }
  for (int b = 0; b < p->batch; ++b) {
    const int *table = c.block_table + (size_t)b * c.max_blocks;
    for (int i = 0; i < p->seq_q; ++i)
      for (int h = 0; h < p->heads; ++h) {
        const size_t r = ((size_t)b * p->seq_q + i) * p->heads + h; /* O row */
        const float *qi = q + r * dim;
        float *oi = o + r * dim;
        const int n = attn_visible_keys_in(p, b, i), g = h / group;
        float m = -INFINITY, l = 0.0f;
        for (int j = 0; j < n; ++j) {
          const float *kj =
              c.k_cache + l07_kv_offset(table, c.block_size, c.kv_heads, dim, j, g, 0);
          float dot = 0.0f;
          for (int d = 0; d < dim; ++d) dot += qi[d] * kj[d];
          s[j] = dot * scale;
          m = fmaxf(m, s[j]);
        }
        for (int d = 0; d < dim; ++d) oi[d] = 0.0f;
        for (int j = 0; j < n; ++j) {
          const float e = expf(s[j] - m);
          const float *vj =
              c.v_cache + l07_kv_offset(table, c.block_size, c.kv_heads, dim, j, g, 0);
          l += e;
          for (int d = 0; d < dim; ++d) oi[d] += e * vj[d];
        }
        for (int d = 0; d < dim; ++d) oi[d] = n > 0 ? oi[d] / l : 0.0f;
        lse[((size_t)b * p->heads + h) * p->seq_q + i] = n > 0 ? m + logf(l) : -INFINITY;
      }
  }
  free(s);
  attn_paged_free(&c);
  return 0;
}
