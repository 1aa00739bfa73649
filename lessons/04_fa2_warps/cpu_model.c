/* The tile loop of version 6 on the CPU, in fp32: the same tiles, the same skip, the same place
 * for the mask, the same base-2 online softmax. It proves the plan (warp_partition.c) against the
 * reference without a GPU; see l04_cpu_forward() in fa2_warps.h. */
#include <math.h>
#include <stdlib.h>

#include "fa2_warps.h"
#include "warp_partition.h"

long l04_cpu_forward(const attn_problem *p, const float *q, const float *k, const float *v,
                     float *o, float *lse, int br, int bc) {
  const int dim = p->dim, group = p->heads / p->kv_heads, diag = p->seq_kv - p->seq_q;
  const float scale_log2 = attn_scale(p) * 1.4426950408889634f; /* e^x = 2^(x log2 e) */
  float *m = (float *)malloc(sizeof(float) * br);
  float *l = (float *)malloc(sizeof(float) * br);
  float *acc = (float *)malloc(sizeof(float) * br * dim);
  float *s = (float *)malloc(sizeof(float) * bc);
  long visits = 0;
  if (!m || !l || !acc || !s) {
    visits = -1;
    goto done;
  }
  for (int b = 0; b < p->batch; ++b)
    for (int h = 0; h < p->heads; ++h) {
      const int g = h / group;
      for (int q0 = 0; q0 < p->seq_q; q0 += br) {
        const int rows = p->seq_q - q0 < br ? p->seq_q - q0 : br;
        const int n_tiles = l04_kv_tiles_visited(q0, br, p->seq_q, p->seq_kv, bc, p->causal);
        const int n_unmasked = l04_kv_tiles_unmasked(q0, br, p->seq_q, p->seq_kv, bc, p->causal);
        visits += n_tiles;
        for (int r = 0; r < rows; ++r) {
          m[r] = -INFINITY;
          l[r] = 0.f;
          for (int d = 0; d < dim; ++d) acc[r * dim + d] = 0.f;
        }
        for (int j = 0; j < n_tiles; ++j) {
          const int masked = j >= n_unmasked;
          for (int r = 0; r < rows; ++r) {
            const int i = q0 + r;
            const float *qi = q + (((size_t)b * p->seq_q + i) * p->heads + h) * dim;
            float mx = -INFINITY;
            for (int c = 0; c < bc; ++c) {
              const int key = j * bc + c;
              if (masked && (key >= p->seq_kv || (p->causal && key > i + diag))) {
                s[c] = -INFINITY;
                continue;
              }
              const float *kj = k + (((size_t)b * p->seq_kv + key) * p->kv_heads + g) * dim;
              float dot = 0.f;
              for (int d = 0; d < dim; ++d) dot += qi[d] * kj[d];
              s[c] = dot;
              mx = fmaxf(mx, dot);
            }
            const float m_new = fmaxf(m[r], mx * scale_log2);
            const float m_use = m_new == -INFINITY ? 0.f : m_new;
            const float alpha = exp2f(m[r] - m_use);
            m[r] = m_new;
            l[r] *= alpha;
            for (int d = 0; d < dim; ++d) acc[r * dim + d] *= alpha;
            for (int c = 0; c < bc; ++c) {
              if (s[c] == -INFINITY) continue;
              const float pr = exp2f(s[c] * scale_log2 - m_use);
              const float *vj = v + (((size_t)b * p->seq_kv + j * bc + c) * p->kv_heads + g) * dim;
              l[r] += pr;
              for (int d = 0; d < dim; ++d) acc[r * dim + d] += pr * vj[d];
            }
          }
        }
        for (int r = 0; r < rows; ++r) {
          const int i = q0 + r;
          float *oi = o + (((size_t)b * p->seq_q + i) * p->heads + h) * dim;
          const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
          for (int d = 0; d < dim; ++d) oi[d] = acc[r * dim + d] * inv;
          lse[((size_t)b * p->heads + h) * p->seq_q + i] =
              l[r] > 0.f ? (m[r] + log2f(l[r])) * 0.6931471805599453f : -INFINITY;
        }
      }
    }
done:
  free(m);
  free(l);
  free(acc);
  free(s);
  return visits;
}

int l04_cpu_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx) {
  l04_cpu_tiles *t = (l04_cpu_tiles *)ctx;
  t->visits = l04_cpu_forward(p, q, k, v, o, lse, t->br, t->bc);
  return 0;
}
