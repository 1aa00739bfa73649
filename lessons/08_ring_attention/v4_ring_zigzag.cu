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
 * Measured: NVIDIA H200, 2026-11-24 (docs/results/h200-l08-2026-11-24), virtual ranks on one
 * GPU only: batch 1, 16 heads, dim 128, 2 ranks, seq 32768: 15.14 ms against version 3's 14.50
 * (causal 8.02 against 7.69): twice the launches and merges, and on one GPU nothing to balance.
 * The program's model for a GPU per rank (not measured), causal: 1.71x at 32k, 1.92x at 128k,
 * 1.97x at 256k (version 3: 1.19x, 1.29x, 1.31x); 4 ranks, GQA 4:1, 64k: 3.59x (2.13x); 8 ranks,
 * 128k: 7.04x (3.92x).
 * On two H200s, a GPU per rank (2026-11-24, docs/results/h200x2-l08-2026-11-24), causal: 1.64x
 * over version 1 at 32k, 1.82x at 64k (dim 64, 32 heads), 1.88x at 128k, 1.97x at 256k (the model:
 * 1.71x, 1.86x, 1.92x, 1.97x); without the mask 1.74x, 1.89x and 1.93x at 32k, 128k and 256k.
 *
 * Run: `./run 4 --ranks 2 --causal`.
 */
// clang-format on
#include "ring_internal.h"

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
