// clang-format off
/** @file
 * @brief Version 1: the whole sequence on one GPU, the yardstick every ring is measured against.
 *
 * What changed: nothing yet. One forward kernel over the whole sequence: lesson 05's version 5 on
 * an sm_90 GPU where this build has lesson 05, lesson 04's version 7 on any other GPU from sm_80.
 * It writes the log-sum-exp, which the ring's merge needs and the harness checks.
 *
 * Why: the ring's claim is "P GPUs, P times the speed", so its speed-up is this version's time
 * over the ring's, on the same problem, in the same run. The ring's result is also checked
 * against this version's output, element by element, as well as against the fp64 reference.
 *
 * Prediction: whatever the kernel's own lesson measured at this shape (lesson 05's version 5 at
 * about 650 TFLOP/s at dim 128 on the H200, non-causal, long sequences).
 *
 * Measured: NVIDIA H200, 2026-11-24 (docs/results/h200x2-l08-2026-11-24), lesson 05's version 5,
 * batch 1, 16 heads, dim 128: seq 32768 13.87 ms, 634.0 TFLOP/s (causal 6.89 ms, 638.3); from
 * 32k to 256k tokens 630.7-648.6 TFLOP/s, about the 650 predicted; dim 64, 32 heads, 64k, causal:
 * 457.5.
 *
 * Run: `./run 1`; `./run 1 --causal`.
 */
// clang-format on
#include "ring_attention.h"

/* The algorithm on a whiteboard, version 1: no ring. One GPU holds every token, and the forward
 * kernel's own loop is the whole schedule.
 *
 *   Q, K, V: the whole sequence, [batch, seq, heads, dim]; one stream (the caller's), no events
 *   for each Q tile (Br rows), one block:        lesson 05's version 5 (sm_90), lesson 04's 7
 *     (O, lse) = (0, -inf)
 *     for each K/V tile (Bc keys) the mask lets it see:
 *       (O, lse) = merge((O, lse), the tile's softmax(Q K^T) V and its lse)    online softmax
 *   O (bf16), lse (fp32) -> the outputs
 *
 * The ring (versions 2-4) cuts the K/V loop into P blocks on P GPUs and merges the P partial
 * (O, lse) with the same rule; this version's time over theirs is their speed-up.
 */
extern "C" cudaError_t l08_one_gpu(const attn_problem *p, const attn_args *a, cudaStream_t stream) {
  return l08_forward(a->q, a->k, a->v, a->o, a->lse, p->batch, p->heads, p->kv_heads, p->seq_q,
                     p->seq_kv, p->dim, p->causal, attn_scale(p), stream);
}
