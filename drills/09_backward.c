/* Drill for lesson 09: the softmax backward of one row, the D term, the Q tiles a K/V tile visits
 * in the KV-outer backward loop, the shared-memory passes of a warp's access, and the bytes one
 * step of the loop moves through shared memory.
 *
 * Fill in the six functions below (the contracts are in lessons/09_backward/bwd_plan.h), then run
 * `make drill-9`: it builds the checklist tests of lesson 09 (tests/lesson09/checklist.c) against
 * this file, and says which answers are wrong. Out of the box every test fails. The lesson's own
 * answers are in lessons/09_backward/bwd_plan.c; try without looking.
 *
 * Hints, in words only:
 *  - Softmax backward: the Jacobian of P = softmax(S) is diag(P) - P P^T. Apply it to dP without
 *    forming it; the one number the whole row shares is D.
 *  - The D term: D = sum_k P_k dP_k needs the whole row of P. Write dP_k = dO . V_k and
 *    O = sum_k P_k V_k, and swap the sums: which two vectors, both already in memory, give D?
 *    Accumulate the dot product in double.
 *  - Loop bounds: with the bottom-right mask, query i sees key j when j <= i + seq_kv - seq_q.
 *    Each row sees a prefix of the keys, so a row that sees any key of a tile sees its first one,
 *    and a row that sees the tile's last key sees all of it. Which row is the first to see key j0?
 *    Which tile holds it? Which is the first tile that starts at or after the first row to see the
 *    last key? Mind the last tile, which may be short, rows that see no key at all (seq_q >
 *    seq_kv), and a K/V tile cut short by the end of the keys.
 *  - Shared-memory passes: a pass serves 128 bytes, so how many lanes does one pass serve at 4, 8
 *    and 16 bytes a lane? Within those lanes, list the 4-byte words touched (an 8-byte access is
 * two words), count each word once, and find the bank (word mod 32) with the most of them. The
 * tests then apply your function to version 7's dQ staging (lessons/09_backward/dq_staging.h), in
 * the order before and after its stores were reordered.
 *  - Bytes a step: write down the five products with their shapes, then for each operand say where
 *    it comes from (shared memory or registers) and how many bytes it is. Add what is stored into
 *    shared memory and read back (dS, the fp32 dQ block) and what lands there from global memory
 *    (Q and dO). Check the total against the tensor cores' time for the same step.
 */
#include "bwd_plan.h"

float l09_d_term(const float *d_o, const float *o, int dim) {
  (void)d_o, (void)o, (void)dim;
  return 0.0f;
}

void l09_softmax_grad_row(const float *p, const float *dp, float d, int n, float *ds) {
  (void)p, (void)dp, (void)d;
  for (int j = 0; j < n; ++j) ds[j] = 0.0f;
}

int l09_first_q_tile(int j0, int br, int seq_q, int seq_kv, int causal) {
  (void)j0, (void)br, (void)seq_q, (void)seq_kv, (void)causal;
  return 0;
}

int l09_first_unmasked_q_tile(int j0, int bc, int br, int seq_q, int seq_kv, int causal) {
  (void)j0, (void)bc, (void)br, (void)seq_q, (void)seq_kv, (void)causal;
  return 0;
}

int l09_shared_passes(const unsigned offsets[32], int bytes) {
  (void)offsets, (void)bytes;
  return 0;
}

long l09_step_shared_bytes(int br, int bc, int dim, int dq_row_parts, int dq_col_parts) {
  (void)br, (void)bc, (void)dim, (void)dq_row_parts, (void)dq_col_parts;
  return 0;
}
