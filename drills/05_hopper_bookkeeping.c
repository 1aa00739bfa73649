/* Drill for lesson 05: the bookkeeping of a Hopper kernel, which fails silently when it is wrong (a
 * hang, or wrong numbers with no error).
 *
 * Fill in the nine functions below (the contracts are in lessons/05_fa3_hopper/hopper_layout.h),
 * then run `make drill-5`: the checklist tests say which answers are wrong. The lesson's own
 * answers are in lessons/05_fa3_hopper/hopper_layout.c; try without looking. Hints: a stage is used
 * once every `stages` tiles, and each use completes one phase of its barrier; a fresh barrier sits
 * in phase 0, and the phase "before" it counts as complete. The swizzle moves whole 16-byte chunks,
 * never the bytes inside one. The descriptor drops the 4 low bits of each byte count. The causal
 * order: find the group sizes first, then which group an item falls in, then its place there. The
 * exponential: a union of a float and a uint32_t reads the bits; the multiply by 2^15 is allowed to
 * overflow (unsigned arithmetic wraps). The half tile: which row of the Q tile sees the most keys?
 * The pairs' lists: the place in the items first, then which Q tile sits at that place of its pair.
 */
#include "hopper_layout.h"

int l05_stage(long k, int stages) {
  (void)k, (void)stages;
  return 0;
}

int l05_full_parity(long k, int stages) {
  (void)k, (void)stages;
  return 0;
}

int l05_empty_parity(long k, int stages) {
  (void)k, (void)stages;
  return 0;
}

uint32_t l05_swizzle128_offset(int row, int col, int rows) {
  (void)row, (void)col, (void)rows;
  return 0;
}

uint64_t l05_wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, int swizzle_bytes) {
  (void)addr, (void)lbo, (void)sbo, (void)swizzle_bytes;
  return 0;
}

int l05_causal_item(int item, int n_q_tiles, int n_pairs, int grid, int waves, int *q_tile,
                    int *pair) {
  (void)item, (void)n_q_tiles, (void)n_pairs, (void)grid, (void)waves, (void)q_tile, (void)pair;
  return 0;
}

float l05_exp2_fma(float x) {
  (void)x;
  return 0.f;
}

int l05_last_tile_half(int q0, int br, int seq_q, int seq_kv, int bc, int causal) {
  (void)q0, (void)br, (void)seq_q, (void)seq_kv, (void)bc, (void)causal;
  return 0;
}

int l05_pair_item(int k, int grid, int block, int n_q_tiles, int n_pairs, int causal, int *q_tile,
                  int *pair) {
  (void)k, (void)grid, (void)block, (void)n_q_tiles, (void)n_pairs, (void)causal, (void)q_tile,
      (void)pair;
  return -1;
}
