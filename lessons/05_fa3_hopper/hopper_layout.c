/* Lesson 05's drill, the lesson's answers (contracts in hopper_layout.h). */
#include "hopper_layout.h"

#include <limits.h>

#include "fp8_workspace.cuh"

#include "attn_causal.h"

int l05_stage(long k, int stages) {
  if (k < 0 || stages < 1) return -1;
  return (int)(k % stages);
}

/* Tile k is the (k / stages)-th use of its stage, so the full barrier has completed k / stages
 * phases before this one: wait for the phase whose parity is that count's. */
int l05_full_parity(long k, int stages) {
  if (k < 0 || stages < 1) return -1;
  return (int)((k / stages) & 1);
}

/* Use u = k / stages of a stage needs use u - 1 released: the empty barrier's phase u - 1, whose
 * parity is that of u + 1. For u = 0 that is "phase -1", which a fresh barrier reports as done. */
int l05_empty_parity(long k, int stages) {
  if (k < 0 || stages < 1) return -1;
  return (int)(((k / stages) & 1) ^ 1);
}

uint32_t l05_swizzle128_offset(int row, int col, int rows) {
  if (row < 0 || col < 0 || col >= 1024 || rows <= row) return 0xFFFFFFFFu;
  const uint32_t panel = (uint32_t)col / 64, chunk = ((uint32_t)col % 64) / 8;
  const uint32_t within = ((uint32_t)col % 8) * 2;
  return panel * (uint32_t)rows * 128u + (uint32_t)row * 128u +
         ((chunk ^ ((uint32_t)row & 7u)) << 4) + within;
}

uint64_t l05_wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, int swizzle_bytes) {
  uint64_t mode;
  switch (swizzle_bytes) {
    case 0:
      mode = 0;
      break;
    case 128:
      mode = 1;
      break;
    case 64:
      mode = 2;
      break;
    case 32:
      mode = 3;
      break;
    default:
      return 0;
  }
  const uint32_t limit = 1u << 18;
  if ((addr | lbo | sbo) & 15u || addr >= limit || lbo >= limit || sbo >= limit) return 0;
  return (uint64_t)(addr >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 |
         mode << 62;
}

/* The kernels' own order (attn_causal.h): the group sizes, then the item's place in its group. */
int l05_causal_item(int item, int n_q_tiles, int n_pairs, int grid, int waves, int *q_tile,
                    int *pair) {
  if (n_q_tiles < 1 || n_pairs < 1 || grid < 1 || waves < 1 || !q_tile || !pair || item < 0 ||
      (long long)item >= (long long)n_q_tiles * n_pairs)
    return -1;
  int grp = 0, grp_big = 0;
  attn_causal_groups(n_pairs, n_q_tiles, grid, waves, &grp, &grp_big);
  attn_causal_item(item, n_q_tiles, grp, grp_big, q_tile, pair);
  return 0;
}

/* Version 13's own helper (fp8_workspace.cuh): one answer for the drill and the kernel. */
float l05_exp2_fma(float x) {
  return l05_exp2_line(x + L05_EXP2_MAGIC);
}

/* The keys the tile's last real row sees (a row sees a prefix of the keys, and the last row the
 * longest) end within the first half of the last tile they reach: the kernel's own rule. */
int l05_last_tile_half(int q0, int br, int seq_q, int seq_kv, int bc, int causal) {
  if (br < 1 || bc < 2 || bc % 2) return -1;
  return attn_last_tile_half(q0, br, seq_q, seq_kv, bc, causal);
}

/* Version 15's own list (attn_causal.h): the place in the items, then the item's Q tile. */
int l05_pair_item(int k, int grid, int block, int n_q_tiles, int n_pairs, int causal, int *q_tile,
                  int *pair) {
  if (k < 0 || grid < 1 || block < 0 || block >= grid || n_q_tiles < 1 || n_pairs < 1 || !q_tile ||
      !pair || (long long)n_q_tiles * n_pairs > INT_MAX / 2 || k > INT_MAX / 2 / grid)
    return -1;
  const int item = attn_pair_place(k, grid, block, causal);
  if (item >= n_q_tiles * n_pairs) return 1;
  attn_pair_item(item, n_q_tiles, causal, q_tile, pair);
  return 0;
}
