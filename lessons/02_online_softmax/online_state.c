/* Partial softmax states, pushed and merged (see online_state.h for the algebra).
 *
 * These are the lesson's answers to the drill in drills/02_online_softmax.c, and the CPU model uses
 * them for its online softmax. The GPU kernels do the same arithmetic in registers
 * (softmax_reduce.cuh and v8_decode_split.cu). The warp reductions at the end mirror warp_max() and
 * warp_sum() of softmax_reduce.cuh line for line, with the shuffle modelled by l02_shfl_xor().
 */
#include "online_state.h"

#include <math.h>

l02_online_ml l02_online_ml_push(l02_online_ml s, float x) {
  float m_new = fmaxf(s.m, x);
  if (m_new == -INFINITY) return s; /* only masked scores so far: still empty */
  /* Everything in l was summed relative to s.m; re-base it on m_new. When x does not raise the max,
   * the factor is exp(0) = 1 exactly. When s is empty, exp(-inf) = 0 drops the old l (which is 0).
   */
  s.l = s.l * expf(s.m - m_new) + expf(x - m_new);
  s.m = m_new;
  return s;
}

l02_online_ml l02_online_ml_merge(l02_online_ml a, l02_online_ml b) {
  float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return a; /* both empty */
  l02_online_ml r;
  r.m = m;
  /* Each sum is re-based on the common max. The side that holds the max gets the factor 1 exactly,
   * and an empty side contributes 0 * exp(-inf) = 0, so merging with the empty state is exact. */
  r.l = a.l * expf(a.m - m) + b.l * expf(b.m - m);
  return r;
}

void l02_online_mlo_push(l02_online_mlo *s, float score, const float *v, int dim) {
  float m_new = fmaxf(s->m, score);
  if (m_new == -INFINITY) return;
  float alpha = expf(s->m - m_new); /* rescales what was accumulated under the old max */
  float p = expf(score - m_new);    /* this key's weight under the new max */
  s->l = s->l * alpha + p;
  for (int d = 0; d < dim; ++d) s->o[d] = s->o[d] * alpha + p * v[d];
  s->m = m_new;
}

void l02_online_mlo_merge(l02_online_mlo *a, const l02_online_mlo *b, int dim) {
  float m = fmaxf(a->m, b->m);
  if (m == -INFINITY) return;
  float alpha = expf(a->m - m), beta = expf(b->m - m);
  a->l = a->l * alpha + b->l * beta;
  for (int d = 0; d < dim; ++d) a->o[d] = a->o[d] * alpha + b->o[d] * beta;
  a->m = m;
}

void l02_online_mlo_finish(const l02_online_mlo *s, int dim, float *out, float *lse) {
  if (!(s->l > 0.0f)) { /* empty: a fully masked row attends to nothing */
    for (int d = 0; d < dim; ++d) out[d] = 0.0f;
    if (lse) *lse = -INFINITY;
    return;
  }
  float inv = 1.0f / s->l;
  for (int d = 0; d < dim; ++d) out[d] = s->o[d] * inv;
  if (lse) *lse = s->m + logf(s->l);
}

void l02_warp_max(float *lanes) {
  float partner[L02_LANES];
  for (int offset = L02_LANES / 2; offset > 0; offset >>= 1) {
    l02_shfl_xor(lanes, offset, partner); /* every lane reads its partner's value first */
    for (int lane = 0; lane < L02_LANES; ++lane) lanes[lane] = fmaxf(lanes[lane], partner[lane]);
  }
}

void l02_warp_sum(float *lanes) {
  float partner[L02_LANES];
  for (int offset = L02_LANES / 2; offset > 0; offset >>= 1) {
    l02_shfl_xor(lanes, offset, partner);
    for (int lane = 0; lane < L02_LANES; ++lane) lanes[lane] += partner[lane];
  }
}
