// clang-format off
/** @file
 * @brief Version 3: the ring with the transfers under the compute.
 *
 * What changed: the send and receive of a step run on a second stream per rank, into the buffer
 * the compute is not reading (two buffers in turn: the block of step s + 1 lands in one while the
 * compute of step s reads the other). Two waits keep it right: the compute of step s + 1 waits for
 * the block to arrive, and the transfer of step s + 1 waits for the compute of step s, whose buffer
 * it overwrites.
 *
 * Why: a step's compute grows with the square of the shard length and its transfer linearly, so
 * past a modest length (l08_compute_bound_len(), printed by the program) the transfer fits under
 * the compute and costs nothing but the link's share of memory bandwidth.
 *
 * Prediction: one GPU per rank, non-causal: the transfers hidden, P times one GPU's speed less the
 * merge and the smaller launches: at least 1.8x at P = 2 from 128k tokens. Causal: still the
 * contiguous layout's imbalance, P^2 / (2P - 1) at best (version 4 fixes it). Virtual ranks on one
 * GPU: as version 2, the
 * copies now beside the compute.
 *
 * Measured: NVIDIA H200, 2026-11-24 (docs/results/h200-l08-2026-11-24), virtual ranks on one
 * GPU only: batch 1, 16 heads, dim 128, 2 ranks, seq 32768: 14.50 ms against version 2's 14.57
 * (causal 7.69 against 7.70); seq 262144: 904.8 against 908.1 ms, 0.1% over version 1. On one GPU
 * a step's copy is short (0.13 ms for the 134 MB block at 32k) and competes with the compute for
 * the same memory, so there is little to win. The program's model for a GPU per rank (not
 * measured): 1.93x at 32k, 1.98x at 128k, 2.00x at 256k; causal 1.19x, 1.29x, 1.31x: the
 * imbalance, as predicted.
 * On two H200s, a GPU per rank (2026-11-24, docs/results/h200x2-l08-2026-11-24): 1.85x over
 * version 1 at 32k, 1.93x at 128k, 1.94x at 256k (the model: 1.93x, 1.98x, 2.00x); causal 1.19x,
 * 1.28x, 1.30x.
 *
 * Run: `./run 3 --ranks 2`.
 */
// clang-format on
#include "ring_internal.h"

extern "C" cudaError_t l08_run_overlap(l08_ring *r, cudaStream_t after) {
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
      ATTN_TRY(l08_compute_step(r, i, s));
    }
  }
  return l08_run_end(r, after);
}
