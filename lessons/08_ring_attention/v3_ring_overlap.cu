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
 * Measured: two NVIDIA H200s, a GPU per rank (NCCL), 2026-11-24
 * (docs/results/h200x2-l08-2026-11-24), batch 1, 16 heads, dim 128, 2 ranks: seq 32768 7.48 ms,
 * 1175.3 TFLOP/s against version 2's 7.77 ms; 1.85x over version 1 at 32k, 1.93x at 128k, 1.94x
 * at 256k (the model from the one-GPU run below: 1.93x, 1.98x, 2.00x); causal 1.19x, 1.28x,
 * 1.30x: the imbalance, as predicted.
 * On one H200 with 2 virtual ranks (2026-11-24, docs/results/h200-l08-2026-11-24, the newest run
 * of that setup): seq 32768 14.50 ms against version 2's 14.57 (causal 7.69 against 7.70); seq
 * 262144: 904.8 against 908.1 ms, 0.1% over version 1. On one GPU a step's copy is short (0.13 ms
 * for the 134 MB block at 32k) and competes with the compute for the same memory.
 *
 * Run: `./run 3 --ranks 2`.
 */
// clang-format on
#include "ring_internal.h"

/* The algorithm on a whiteboard, version 3: version 2's moves, the exchange on a second stream per
 * rank (comm) into the buffer the compute is not reading, ordered by two event waits.
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
 *       for each (query chunk, key chunk of the block) the mask does not skip:
 *         (O_p, lse_p) = forward(Q chunk, K chunk, V chunk)     the diagonal with the mask
 *         (O_r, lse_r) = merge((O_r, lse_r), (O_p, lse_p))     l08_state_merge()
 *       record ev[s][COMPUTE_END]
 *   O_r -> bf16, lse_r -> the outputs; `after` waits on every rank's done    l08_run_end()
 */
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
