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

int l06_varlen_chunks(int chunk, const int *lens, int batch, int seq_kv) {
  if (chunk < 1) chunk = 1;
  long long n = 0;
  for (int b = 0; b < batch; ++b) {
    const int len = lens ? lens[b] : seq_kv;
    n += len > chunk ? (len + chunk - 1) / chunk : 1;
  }
  return n > 0x7fffffff ? 0x7fffffff : (int)n;
}

int l06_varlen_chunk(int slots, int units, const int *lens, int batch, int seq_kv) {
  long long total = 0;
  int longest = 1;
  for (int b = 0; b < batch; ++b) {
    const int len = lens ? lens[b] : seq_kv;
    total += len;
    if (len > longest) longest = len;
  }
  const long long one = ((long long)longest + L06_CHUNK_ALIGN - 1) / L06_CHUNK_ALIGN;
  if (slots < 1 || units < 1 || batch < 1) return (int)(one * L06_CHUNK_ALIGN);
  if ((long long)units * batch > slots) { /* more sequences than a wave: balance the blocks */
    long long c = (total * units + slots - 1) / slots;
    /* A sequence longer than a slot's share is cut finer, into quarters of the share: blocks end
     * at most a quarter share apart, so the last wave's tail is short. */
    if (longest > c) c /= L06_VARLEN_CUTS;
    if (c < L06_MIN_CHUNK) c = L06_MIN_CHUNK;
    c = (c + L06_CHUNK_ALIGN - 1) / L06_CHUNK_ALIGN;
    return (int)((c < one ? c : one) * L06_CHUNK_ALIGN);
  }
  /* One wave: the shortest chunk that keeps units x chunks within the slots (chunks only shrink
   * as the chunk grows; at `one` every sequence is one chunk and the wave holds them). */
  long long lo = L06_MIN_CHUNK / L06_CHUNK_ALIGN, hi = one;
  if (lo > hi) lo = hi;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if ((long long)units * l06_varlen_chunks((int)(mid * L06_CHUNK_ALIGN), lens, batch, seq_kv) <=
        slots)
      hi = mid;
    else
      lo = mid + 1;
  }
  return (int)(lo * L06_CHUNK_ALIGN);
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
