/* Drill for lesson 10: what a draft token of a speculative step sees, and the merge of two
 * partial attention states.
 *
 * Fill in the functions below (the contracts are in lessons/10_serving_decode/draft.h; the masks
 * are drawn in serving_decode.h's file comment), then run `make drill-10`: the checklist tests say
 * which answers are wrong. The lesson's own answers are in lessons/10_serving_decode/draft.c; try
 * without looking. Hints: a sequence of n keys whose last q belong to the draft tokens puts token
 * i at position n - q + i. No mask sees a key outside 0..n-1; causal sees up to the token's own
 * position; the tree sees every key before the drafts, and draft token j's key only when bit j of
 * the token's word is set. For the merge, each o is a weighted mean with weight exp(lse): take
 * both weights relative to the larger lse so neither overflows, and remember that -inf is an empty
 * state (merging one in changes nothing; two empty states stay empty).
 */
#include "draft.h"

int l10_sees(l10_mask mask, uint32_t bits, int i, int q_len, int n_keys, int key) {
  (void)mask, (void)bits, (void)i, (void)q_len, (void)n_keys, (void)key;
  return 0;
}

void l10_merge_state(float *lse, float *o, float lse_b, const float *o_b, int dim) {
  (void)lse, (void)o, (void)lse_b, (void)o_b, (void)dim;
}
