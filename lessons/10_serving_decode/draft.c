/* Lesson 10's drill answers (draft.h): what a draft token sees, and the merge of two partial
 * states. drills/10_draft_merge.c has the same functions with empty bodies; `make drill-10` runs
 * the checklist against it, and checklist-10 against this file. Nothing here but draft.h: the
 * drill builds without the rest of the course. */
#include "draft.h"

#include <math.h>

int l10_sees(l10_mask mask, uint32_t bits, int i, int q_len, int n_keys, int key) {
  if (key < 0 || key >= n_keys) return 0; /* no such key */
  const int first = n_keys - q_len;       /* the first draft token's key */
  switch (mask) {
    case L10_MASK_NONE:
      return 1;
    case L10_MASK_CAUSAL:
      return key <= first + i; /* up to the token's own position */
    case L10_MASK_TREE: {
      if (key < first) return 1; /* the keys before the draft tokens: the accepted prefix */
      const int j = key - first; /* draft token j's key, 0 <= j < q_len */
      return j < 32 && ((bits >> j) & 1u) != 0;
    }
  }
  return 0; /* not a mask */
}

void l10_merge_state(float *lse, float *o, float lse_b, const float *o_b, int dim) {
  if (lse_b == -INFINITY) return; /* nothing merged in: nothing changes, not even o by rounding */
  if (*lse == -INFINITY) {        /* the running state is empty: it becomes the other one */
    *lse = lse_b;
    for (int d = 0; d < dim; ++d) o[d] = o_b[d];
    return;
  }
  /* Each o is its keys' weighted mean; the weights of the two sets are exp(lse) and exp(lse_b).
   * Taken relative to the larger, so neither exponential overflows (lse may be in the hundreds). */
  const float mx = fmaxf(*lse, lse_b);
  const float wa = expf(*lse - mx), wb = expf(lse_b - mx), sum = wa + wb; /* 1 <= sum <= 2 */
  for (int d = 0; d < dim; ++d) o[d] = (wa * o[d] + wb * o_b[d]) / sum;
  *lse = mx + logf(sum);
}
