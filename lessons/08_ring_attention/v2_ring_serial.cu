// clang-format off
/** @file
 * @brief Version 2: the ring, one step after the other: compute, then pass the block on.
 *
 * What changed: the sequence is cut into P contiguous shards, one per rank (ring_plan.h). Each rank
 * keeps its queries and starts with its own keys and values; at step s it computes its queries
 * against the block it holds (the block of rank (r - s) mod P), merges the pair's (O, log-sum-exp)
 * into its running state, and then sends the block to rank r + 1 and receives the next from rank
 * r - 1, all on one stream. After P steps every query has seen every key once. With the causal
 * mask a block from a later rank is skipped outright (all its keys are in the future) and the own
 * block is the diagonal, computed with the kernel's mask.
 *
 * Why: this is the algorithm with nothing hidden: the transfers sit between the computes. Each
 * step lasts compute + transfer, and in lock step, since a rank cannot receive before the rank
 * before it has finished computing. It shows what the ring costs before any overlap.
 *
 * Prediction: one GPU per rank: P times one GPU's speed, less the transfers (a step sends
 * 4 * L * kv_heads * dim bytes for a shard of L tokens; over NVLink at ~400 GB/s against
 * 4 * L^2 * heads * dim flops at ~600 TFLOP/s, about 1% at L = 64k, heads = kv_heads) and, with the
 * causal mask, the imbalance: rank r computes r whole blocks and its diagonal, (r + 1/2) L^2 pairs,
 * so the ring runs at the last rank's pace, P^2 / (2P - 1) times one GPU at best (1.33x at P = 2,
 * 2.29x at P = 4). Virtual ranks on one GPU: the same work as version 1 in smaller launches plus
 * the merges and copies, a few percent slower.
 *
 * Measured: NVIDIA H200, 2026-11-24 (docs/results/h200-l08-2026-11-24), virtual ranks on one
 * GPU only (no two-GPU run exists: these are the ring's costs on one GPU, not its speed-up on P):
 * batch 1, 16 heads, dim 128, 2 ranks, seq 32768: 14.57 ms against version 1's 13.99 (4.1%
 * slower), causal 7.70 against 6.85 (12.5%); seq 262144: 0.5% slower (causal 1.6%). The program's
 * model for a GPU per rank (not measured): 1.92x, causal 1.19x at 32k; 4 ranks, GQA 4:1, 64k,
 * causal: 2.11x against the 2.29x bound.
 * On two H200s, a GPU per rank (2026-11-24, docs/results/h200x2-l08-2026-11-24): 1.79x over
 * version 1 at 32k (causal 1.14x), 1.91x at 128k (causal 1.27x), 1.94x at 256k (causal 1.29x).
 *
 * Run: `./run 2 --ranks 2` (virtual ranks on one GPU, or a GPU per rank where there are 2).
 */
// clang-format on
#include "ring_internal.h"

extern "C" cudaError_t l08_run_serial(l08_ring *r, cudaStream_t after) {
  const int p = r->cfg.ranks;
  ATTN_TRY(l08_run_begin(r, after));
  for (int s = 0; s < p; ++s) {
    for (int i = 0; i < p; ++i) ATTN_TRY(l08_compute_step(r, i, s));
    /* Compute stream: the send and receive wait for this step's compute, and the next step's
     * compute waits for them. */
    if (s + 1 < p) ATTN_TRY(l08_exchange(r, s, 0));
  }
  return l08_run_end(r, after);
}
