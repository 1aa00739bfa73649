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
 * Measured: two NVIDIA H200s, a GPU per rank (NCCL), 2026-11-24
 * (docs/results/h200x2-l08-2026-11-24), batch 1, 16 heads, dim 128, 2 ranks: seq 32768 7.77 ms,
 * 1132.3 TFLOP/s, 1.79x over version 1 (causal 6.06 ms, 1.14x); 1.91x at 128k (causal 1.27x),
 * 1.94x at 256k (causal 1.29x): the causal imbalance, as predicted. 4 ranks, GQA 4:1, 64k, causal
 * (virtual ranks on one GPU in that run): 29.44 ms against version 1's 27.12; the program's model
 * for a GPU per rank: 2.11x against the 2.29x bound.
 * On one H200 with 2 virtual ranks (2026-11-24, docs/results/h200-l08-2026-11-24, the newest run
 * of that setup): seq 32768 14.57 ms against version 1's 13.99 (4.1% slower), causal 7.70
 * against 6.85 (12.5%); seq 262144: 0.5% slower (causal 1.6%).
 *
 * Run: `./run 2 --ranks 2` (virtual ranks on one GPU, or a GPU per rank where there are 2).
 */
// clang-format on
#include "ring_internal.h"

/* The algorithm on a whiteboard, version 2: P ranks in a ring, each step's two moves in series on
 * one stream per rank (the compute stream). Rank r holds its queries Q_r and its own block.
 *
 *   (O_r, lse_r) = (0, -inf) for every rank                 l08_state_init(), at step 0
 *   for step s in 0 .. P - 1:
 *     for each rank r:                                      l08_compute_step(), compute stream
 *       block in hand: own (s = 0) or kv[s % 2], the block of rank (r - s) mod P
 *       record ev[s][COMPUTE_START]
 *       for each (query chunk, key chunk of the block) the mask does not skip:
 *         (O_p, lse_p) = forward(Q chunk, K chunk, V chunk)     the diagonal with the mask
 *         (O_r, lse_r) = merge((O_r, lse_r), (O_p, lse_p))     l08_state_merge()
 *       record ev[s][COMPUTE_END]
 *     if s + 1 < P:                                         l08_exchange(on_comm = 0)
 *       every rank: send the block in hand to r + 1, receive the next into kv[(s + 1) % 2]
 *         (one NCCL group; or copies, paired by ev[s][READY] and ev[s][EXCHANGE_END])
 *       record ev[s][EXCHANGE_END]                          step s + 1 follows in stream order
 *   O_r -> bf16, lse_r -> the outputs; `after` waits on every rank's done    l08_run_end()
 */
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
