// clang-format off
/** @file
 * @brief Version 4: version 3 on the zig-zag layout, so every rank does the same causal work.
 *
 * What changed: the layout. The sequence is cut into 2P chunks and rank r holds chunks r and
 * 2P - 1 - r (l08_shard_of() with L08_ZIGZAG). The schedule below is version 3's; the compute of a
 * step now walks two query chunks against two key chunks, and under the causal mask each such pair
 * is either skipped, computed whole, or the diagonal (the kernel's own mask). At step 0 a rank
 * computes its two diagonals and one whole pair; at every later step exactly two whole pairs of
 * the four (ring_plan.h works it out): 2 chunk^2 of work everywhere.
 *
 * Why: with contiguous shards the causal mask makes rank P - 1 compute P blocks and rank 0 one,
 * and the ring waits for the slowest rank at every step. Zig-zag pairs a cheap chunk from the front
 * with an expensive one from the back.
 *
 * Prediction: causal, one GPU per rank: from version 3's P^2 / (2P - 1) (1.33x at P = 2) to P
 * less the merge: at least 1.8x at P = 2 from 128k tokens. Non-causal: as version 3 (twice the
 * launches, half as long each). Virtual ranks on one GPU: as version 3.
 *
 * Measured: two NVIDIA H200s, a GPU per rank (NCCL), 2026-11-24
 * (docs/results/h200x2-l08-2026-11-24), batch 1, 16 heads, dim 128, 2 ranks, causal: seq 32768
 * 4.20 ms, 1047.3 TFLOP/s against version 3's 5.78 ms; 1.64x over version 1 at 32k, 1.82x at 64k
 * (dim 64, 32 heads), 1.88x at 128k, 1.97x at 256k (the model from the one-GPU run below: 1.71x,
 * 1.86x, 1.92x, 1.97x); without the mask 1.74x, 1.89x and 1.93x at 32k, 128k and 256k. The model
 * for a GPU per rank from the same run's virtual ranks: 4 ranks, GQA 4:1, 64k, causal: 3.54x
 * (version 3: 2.11x); 8 ranks, 128k: 7.15x (3.99x).
 * On one H200 with 2 virtual ranks (2026-11-24, docs/results/h200-l08-2026-11-24, the newest run
 * of that setup): seq 32768 15.14 ms against version 3's 14.50 (causal 8.02 against 7.69): twice
 * the launches and merges, and on one GPU nothing to balance.
 *
 * Run: `./run 4 --ranks 2 --causal`.
 */
// clang-format on
#include "ring_internal.h"

/* The algorithm on a whiteboard, version 4: version 3's schedule on zig-zag shards: rank r holds
 * chunks r and 2P - 1 - r of 2P, its queries and its own block alike.
 *
 *   (O_r, lse_r) = (0, -inf) for every rank                 l08_state_init(), at step 0
 *   for step s in 0 .. P - 1:
 *     if s + 1 < P:                                         l08_exchange(on_comm = 1), comm stream
 *       if s > 0: comm waits ev[s - 1][COMPUTE_END]         kv[(s + 1) % 2] held step s - 1's block
 *       every rank: send the block in hand to r + 1, receive the next into kv[(s + 1) % 2]
 *       record ev[s][EXCHANGE_END]
 *     for each rank r:                                      l08_compute_step(), compute stream
 *       if s > 0: compute waits ev[s - 1][EXCHANGE_END]     the block of step s has arrived
 *       record ev[s][COMPUTE_START]
 *       for each of the 4 (query chunk, key chunk) pairs, l08_pair_kind():
 *         skip (all keys in the future) | whole | diagonal (the kernel's mask)
 *         (O_p, lse_p) = forward(Q chunk, K chunk, V chunk)
 *         (O_r, lse_r) = merge((O_r, lse_r), (O_p, lse_p))     l08_state_merge()
 *       record ev[s][COMPUTE_END]                           causal: 2 chunk^2 on every rank
 *   O_r -> bf16, lse_r -> the outputs; `after` waits on every rank's done    l08_run_end()
 */
extern "C" cudaError_t l08_run_zigzag(l08_ring *r, cudaStream_t after) {
  const int p = r->cfg.ranks;
  ATTN_TRY(l08_run_begin(r, after));
  for (int s = 0; s < p; ++s) {
    /* Comm stream: pass the block of step s on while step s computes on it (the exchange waits
     * for step s - 1's compute, whose buffer it fills). */
    if (s + 1 < p) ATTN_TRY(l08_exchange(r, s, 1));
    for (int i = 0; i < p; ++i) {
      l08_rank *k = &r->rank[i];
      ATTN_TRY(cudaSetDevice(k->device));
      if (s > 0) ATTN_TRY(cudaStreamWaitEvent(k->compute, k->ev[s - 1][L08_EV_EXCHANGE_END], 0));
      /* The chunk pairs of this step: zig-zag shards, each rank's two chunks against the block's
       * two (l08_compute_step() asks l08_pair_kind() which pairs the mask skips). */
      ATTN_TRY(l08_compute_step(r, i, s));
    }
  }
  return l08_run_end(r, after);
}
