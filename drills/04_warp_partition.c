/* Drill for lesson 04: who owns what in a FlashAttention-2 block.
 *
 * Fill in every function below (the contracts are in lessons/04_fa2_warps/warp_partition.h), then
 * run `make drill-4`: the checklist tests say which answers are wrong. The lesson's own answers are
 * in lessons/04_fa2_warps/warp_partition.c; try without looking. Hints: lane = 4 * g + t
 * (g = lane / 4, t = lane % 4); the PTX ISA's "Matrix fragments for mma.m16n8k16" figures; the
 * lesson's README draws all four layouts.
 */
#include "warp_partition.h"

int l04_warp_first_row(int warp, int br, int n_warps) {
  (void)warp, (void)br, (void)n_warps;
  return 0;
}

void l04_frag_a(int lane, int reg, int half, int *row, int *col) {
  (void)lane, (void)reg, (void)half;
  *row = 0;
  *col = 0;
}

void l04_frag_b(int lane, int reg, int half, int *k, int *n) {
  (void)lane, (void)reg, (void)half;
  *k = 0;
  *n = 0;
}

void l04_frag_c(int lane, int reg, int *row, int *col) {
  (void)lane, (void)reg;
  *row = 0;
  *col = 0;
}

void l04_ldmatrix_a_src(int lane, int *row, int *col) {
  (void)lane;
  *row = 0;
  *col = 0;
}

int l04_swizzle(int row, int chunk) {
  (void)row, (void)chunk;
  return 0;
}

int l04_kv_tiles_visited(int q0, int br, int seq_q, int seq_kv, int bc, int causal) {
  (void)q0, (void)br, (void)seq_q, (void)seq_kv, (void)bc, (void)causal;
  return 0;
}

int l04_kv_tiles_unmasked(int q0, int br, int seq_q, int seq_kv, int bc, int causal) {
  (void)q0, (void)br, (void)seq_q, (void)seq_kv, (void)bc, (void)causal;
  return 0;
}

void l04_schedule(int block, int n_q_tiles, int causal, int *bh, int *q_tile) {
  (void)block, (void)n_q_tiles, (void)causal;
  *bh = 0;
  *q_tile = 0;
}
