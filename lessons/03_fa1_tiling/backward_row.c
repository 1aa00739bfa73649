/* The backward of one attention row, the probabilities recomputed from the log-sum-exp: the
 * lesson's answer to the last function of `make drill-3`. See backward_row.h. */
#include "backward_row.h"

#include <math.h>
#include <stddef.h>

void l03_row_backward(const float *q, const float *k, const float *v, const float *o,
                      const float *d_o, float lse, float scale, int n, int n_visible, int d,
                      float *dq, float *dk, float *dv) {
  /* A row that saw no key has nothing to differentiate; exp(s - lse) would be +inf there. */
  const int visible = lse == -INFINITY ? 0 : n_visible;
  float D = 0.0f; /* dO . o = sum_j p_j dP_j, from the forward output instead of a pass over P */
  for (int x = 0; x < d; ++x) D += d_o[x] * o[x];
  for (int x = 0; x < d; ++x) dq[x] = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float *kj = k + (size_t)j * d, *vj = v + (size_t)j * d;
    float *dkj = dk + (size_t)j * d, *dvj = dv + (size_t)j * d;
    if (j >= visible) { /* masked: p_j = 0, so nothing flows to this key or from it */
      for (int x = 0; x < d; ++x) dkj[x] = dvj[x] = 0.0f;
      continue;
    }
    float s = 0.0f, dp = 0.0f;
    for (int x = 0; x < d; ++x) {
      s += q[x] * kj[x];
      dp += d_o[x] * vj[x];
    }
    const float p = expf(scale * s - lse); /* P recomputed: S and the LSE, no max, no sum */
    const float ds = p * (dp - D);
    for (int x = 0; x < d; ++x) {
      dq[x] += scale * ds * kj[x];
      dkj[x] = scale * ds * q[x];
      dvj[x] = p * d_o[x];
    }
  }
}
