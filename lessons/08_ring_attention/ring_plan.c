/* Lesson 08's plan: the shards of the two layouts, the ring's order, what one pair of chunks
 * computes under the causal mask, and the work model built on them (ring_plan.h). Plain C: the
 * ring's driver, the CPU model and the checklist all call these functions. */
#include "ring_plan.h"

#include <string.h>

/* Chunk c of n tokens cut into `chunks` near-equal chunks: the first n % chunks chunks get one
 * token more than the others, so chunk c starts after c short chunks plus min(c, n % chunks)
 * extra tokens. */
static void near_equal_chunk(int n, int chunks, int c, int *start, int *len) {
  const int base = n / chunks, extra = n % chunks;
  *start = c * base + (c < extra ? c : extra);
  *len = base + (c < extra ? 1 : 0);
}

int l08_shard_of(int n, int p, l08_layout layout, int rank, l08_shard *out) {
  if (!out) return -1;
  memset(out, 0, sizeof *out);
  if (n < 1 || p < 1 || p > L08_MAX_RANKS || rank < 0 || rank >= p) return -1;
  if (layout == L08_CONTIGUOUS) {
    out->n_chunks = 1;
    near_equal_chunk(n, p, rank, &out->start[0], &out->len[0]);
  } else if (layout == L08_ZIGZAG) {
    /* One chunk from the front of the sequence (few keys to the left of it under the causal
     * mask) and its mirror image from the back (many): the two costs add up to the same total
     * on every rank. */
    out->n_chunks = 2;
    near_equal_chunk(n, 2 * p, rank, &out->start[0], &out->len[0]);
    near_equal_chunk(n, 2 * p, 2 * p - 1 - rank, &out->start[1], &out->len[1]);
  } else {
    return -1;
  }
  for (int c = 0; c < out->n_chunks; ++c) out->tokens += out->len[c];
  return 0;
}

int l08_block_origin(int rank, int step, int p) {
  if (p < 1) return 0;
  /* C's % keeps the sign of the dividend: fold a negative remainder back into 0..p-1. */
  const int r = (rank - step) % p;
  return r < 0 ? r + p : r;
}

int l08_pair_kind(int q_start, int q_len, int k_start, int k_len, int causal) {
  if (q_len <= 0 || k_len <= 0) return L08_PAIR_SKIP;
  if (!causal) return L08_PAIR_FULL;
  const int q_last = q_start + q_len - 1, k_last = k_start + k_len - 1;
  if (k_start > q_last) return L08_PAIR_SKIP;  /* every key is in every query's future */
  if (k_last <= q_start) return L08_PAIR_FULL; /* every key is in every query's past */
  /* Same last token: query a of the chunk is token q_start + a and sees key b of the block
   * (token k_start + b) when k_start + b <= q_start + a, i.e. b <= a + (k_len - q_len): the
   * bottom-right mask every kernel of the course already applies. */
  if (q_last == k_last && k_start <= q_start) return L08_PAIR_DIAG;
  return -1;
}

double l08_pair_work(int q_start, int q_len, int k_start, int k_len, int causal) {
  switch (l08_pair_kind(q_start, q_len, k_start, k_len, causal)) {
    case L08_PAIR_FULL:
      return (double)q_len * k_len;
    case L08_PAIR_DIAG: {
      /* Query a sees a + (k_len - q_len) + 1 keys (never more than k_len, since a < q_len):
       * q_len rows of the offset d = k_len - q_len, plus the triangle 1 + 2 + ... + q_len. */
      const double d = (double)k_len - q_len;
      return q_len * d + (double)q_len * (q_len + 1) / 2.0;
    }
    default:
      return 0.0;
  }
}

double l08_step_work(int n, int p, l08_layout layout, int causal, int rank, int step) {
  l08_shard mine, held;
  if (step < 0 || step >= p) return 0.0;
  if (l08_shard_of(n, p, layout, rank, &mine) != 0) return 0.0;
  if (l08_shard_of(n, p, layout, l08_block_origin(rank, step, p), &held) != 0) return 0.0;
  double work = 0.0;
  for (int qc = 0; qc < mine.n_chunks; ++qc)
    for (int kc = 0; kc < held.n_chunks; ++kc)
      work += l08_pair_work(mine.start[qc], mine.len[qc], held.start[kc], held.len[kc], causal);
  return work;
}

int l08_balance_of(int n, int p, l08_layout layout, int causal, l08_balance *out) {
  if (!out) return -1;
  memset(out, 0, sizeof *out);
  l08_shard probe;
  if (l08_shard_of(n, p, layout, 0, &probe) != 0) return -1; /* checks n, p and the layout */
  double per_rank[L08_MAX_RANKS] = {0};
  for (int s = 0; s < p; ++s) {
    double busiest = 0.0; /* the step ends when its slowest rank does */
    for (int r = 0; r < p; ++r) {
      const double w = l08_step_work(n, p, layout, causal, r, s);
      per_rank[r] += w;
      out->total += w;
      if (w > busiest) busiest = w;
    }
    out->critical += busiest;
  }
  for (int r = 0; r < p; ++r)
    if (per_rank[r] > out->max_rank) out->max_rank = per_rank[r];
  /* n >= 1, so the diagonal alone gives every sum at least one pair: no division by 0. */
  out->imbalance = out->max_rank / (out->total / p);
  out->ideal_speedup = out->total / out->max_rank;
  out->critical_speedup = out->total / out->critical;
  return 0;
}

double l08_compute_bound_len(int heads, int kv_heads, int causal, double flops_per_s,
                             double bytes_per_s) {
  if (heads <= 0 || kv_heads <= 0 || flops_per_s <= 0.0 || bytes_per_s <= 0.0) return 0.0;
  /* compute 4 L^2 H D / F (half with the mask) > send 4 L Hkv D / B  <=>  L > Hkv / H * F / B
   * (twice that with the mask). */
  const double len = (double)kv_heads / heads * flops_per_s / bytes_per_s;
  return causal ? 2.0 * len : len;
}
