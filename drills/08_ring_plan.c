/* Drill for lesson 08: shard one sequence over a ring of ranks, and say what each rank computes
 * at each step.
 *
 * Fill in the functions below (the contracts are in lessons/08_ring_attention/ring_plan.h), then
 * run `make drill-8`: the checklist tests say which answers are wrong. The lesson's own answers
 * are in lessons/08_ring_attention/ring_plan.c; try without looking. Hints: near-equal chunks
 * give the first n % c chunks one token more, so chunk i starts at i * (n / c) + min(i, n % c);
 * zig-zag pairs chunk r with its mirror 2p - 1 - r; in C, -1 % 4 is -1, not 3; under the causal
 * mask two chunks of these layouts are either disjoint (all keys before the queries, or all
 * after) or the same chunk, whose visible pairs are the triangle q (q + 1) / 2 (the bottom-right
 * mask in general: q (k - q) + q (q + 1) / 2, with k >= q keys and q queries).
 * The balance sums l08_step_work() over the steps, per rank (the busiest rank) and per step (the
 * busiest rank of each step). The compute-bound length sets a step's flops over the kernel's rate
 * equal to the block's bytes over the link's rate.
 */
#include <string.h>

#include "ring_plan.h"

int l08_shard_of(int n, int p, l08_layout layout, int rank, l08_shard *out) {
  (void)n, (void)p, (void)layout, (void)rank;
  if (out) memset(out, 0, sizeof *out);
  return 0;
}

int l08_block_origin(int rank, int step, int p) {
  (void)rank, (void)step, (void)p;
  return 0;
}

int l08_pair_kind(int q_start, int q_len, int k_start, int k_len, int causal) {
  (void)q_start, (void)q_len, (void)k_start, (void)k_len, (void)causal;
  return 0;
}

double l08_pair_work(int q_start, int q_len, int k_start, int k_len, int causal) {
  (void)q_start, (void)q_len, (void)k_start, (void)k_len, (void)causal;
  return 0.0;
}

double l08_step_work(int n, int p, l08_layout layout, int causal, int rank, int step) {
  (void)n, (void)p, (void)layout, (void)causal, (void)rank, (void)step;
  return 0.0;
}

int l08_balance_of(int n, int p, l08_layout layout, int causal, l08_balance *out) {
  (void)n, (void)p, (void)layout, (void)causal;
  if (out) memset(out, 0, sizeof *out);
  return 0;
}

double l08_compute_bound_len(int heads, int kv_heads, int causal, double flops_per_s,
                             double bytes_per_s) {
  (void)heads, (void)kv_heads, (void)causal, (void)flops_per_s, (void)bytes_per_s;
  return 0.0;
}
