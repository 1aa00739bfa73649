/* Lesson 06's split plan and combine (split_plan.h): the answers the checklist holds the drill to.
 * The GPU combine kernel (v2_split_kv.cu) folds the partial states with the same arithmetic. */
#include "split_plan.h"

#include <math.h>

int l06_num_splits(int slots, int units, int seq_kv, int max_splits) {
  if (slots < 1 || units < 1 || seq_kv < 1 || max_splits < 1) return 1;
  long n = slots / units;                     /* one wave: every block resident at once */
  const long by_len = seq_kv / L06_MIN_CHUNK; /* each chunk keeps its minimum */
  if (n > by_len) n = by_len;
  if (n > max_splits) n = max_splits;
  if (n < 1) return 1;
  const int len = l06_chunk_len(seq_kv, (int)n); /* rounded up: maybe fewer chunks are needed */
  return (int)(((long)seq_kv + len - 1) / len);
}

int l06_chunk_len(int seq_kv, int num_splits) {
  if (seq_kv < 1 || num_splits < 1) return L06_CHUNK_ALIGN;
  const long len = ((long)seq_kv + num_splits - 1) / num_splits;
  return (int)((len + L06_CHUNK_ALIGN - 1) / L06_CHUNK_ALIGN * L06_CHUNK_ALIGN);
}

void l06_merge(float *lse, float *o, float lse_b, const float *o_b, int dim) {
  const float mx = fmaxf(*lse, lse_b);
  if (mx == -INFINITY) return; /* both empty: stays (-inf, O) */
  /* Weights relative to the larger log-sum-exp, so neither exponential overflows. */
  const float wa = expf(*lse - mx), wb = expf(lse_b - mx), sum = wa + wb;
  for (int d = 0; d < dim; ++d) o[d] = (wa * o[d] + wb * o_b[d]) / sum;
  *lse = mx + logf(sum);
}

void l06_combine(const float *lse, const float *o, int n, int dim, float *lse_out, float *o_out) {
  float mx = -INFINITY;
  for (int s = 0; s < n; ++s) mx = fmaxf(mx, lse[s]);
  for (int d = 0; d < dim; ++d) o_out[d] = 0.0f;
  if (mx == -INFINITY) { /* no chunk saw a key */
    *lse_out = -INFINITY;
    return;
  }
  float sum = 0.0f;
  for (int s = 0; s < n; ++s) {
    const float w = expf(lse[s] - mx); /* 0 for an empty chunk */
    sum += w;
    for (int d = 0; d < dim; ++d) o_out[d] += w * o[(long)s * dim + d];
  }
  for (int d = 0; d < dim; ++d) o_out[d] /= sum;
  *lse_out = mx + logf(sum);
}
