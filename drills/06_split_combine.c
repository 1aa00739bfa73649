/* Drill for lesson 06: cut the keys into chunks, and put the chunks' softmax states back together.
 *
 * Fill in the four functions below (the contracts are in lessons/06_flash_decoding/split_plan.h),
 * then run `make drill-6`: the checklist tests say which answers are wrong. The lesson's own
 * answers are in lessons/06_flash_decoding/split_plan.c; try without looking. Hints: a partial
 * state is (lse, O) with O already divided by its own sum, so merging two is a weighted average
 * whose weights are e^(lse_a - lse) and e^(lse_b - lse); subtract the larger log-sum-exp before
 * any exponential; a chunk that saw no key has lse = -inf, and -inf - (-inf) is NaN. The split
 * count fills the GPU with one wave of blocks, without chunks too short to be worth a block.
 */
#include "split_plan.h"

int l06_num_splits(int slots, int units, int seq_kv, int max_splits) {
  (void)slots, (void)units, (void)seq_kv, (void)max_splits;
  return 0;
}

int l06_chunk_len(int seq_kv, int num_splits) {
  (void)seq_kv, (void)num_splits;
  return 0;
}

void l06_merge(float *lse, float *o, float lse_b, const float *o_b, int dim) {
  (void)lse, (void)o, (void)lse_b, (void)o_b, (void)dim;
}

void l06_combine(const float *lse, const float *o, int n, int dim, float *lse_out, float *o_out) {
  (void)lse, (void)o, (void)n;
  *lse_out = 0.0f;
  for (int d = 0; d < dim; ++d) o_out[d] = 0.0f;
}
