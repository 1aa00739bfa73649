/* Lesson 04's answers to its drill: the warp and fragment index maths. See warp_partition.h. */
#include "warp_partition.h"

int l04_warp_first_row(int warp, int br, int n_warps) {
  return warp * (br / n_warps);
}

/* A: lane = 4 * g + t. Registers 0/1 are columns 0..7, 2/3 columns 8..15; odd registers are the
 * lower 8 rows. Each register holds the column pair 2t, 2t + 1 of row g (or g + 8). */
void l04_frag_a(int lane, int reg, int half, int *row, int *col) {
  int g = lane >> 2, t = lane & 3;
  *row = g + (reg & 1) * 8;
  *col = 2 * t + half + (reg >> 1) * 8;
}

/* B: column n = g; register 0 holds k = 2t, 2t + 1, register 1 the same 8 further down. */
void l04_frag_b(int lane, int reg, int half, int *k, int *n) {
  int g = lane >> 2, t = lane & 3;
  *k = 2 * t + half + reg * 8;
  *n = g;
}

/* C: registers 0, 1 are row g, columns 2t and 2t + 1; registers 2, 3 the same in row g + 8. */
void l04_frag_c(int lane, int reg, int *row, int *col) {
  int g = lane >> 2, t = lane & 3;
  *row = g + (reg >> 1) * 8;
  *col = 2 * t + (reg & 1);
}

/* Matrix i = lane / 8 must be A register i: rows 0-7 or 8-15 (i odd), columns 0-7 or 8-15
 * (i >= 2). Lane 8i + r gives row r of matrix i. */
void l04_ldmatrix_a_src(int lane, int *row, int *col) {
  *row = lane & 15;
  *col = (lane >> 4) * 8;
}

int l04_swizzle(int row, int chunk) {
  return chunk ^ (row & 7);
}

/* Keys 0..n-1 matter, where n is what the tile's last real row sees. */
int l04_kv_tiles_visited(int q0, int br, int seq_q, int seq_kv, int bc, int causal) {
  long n = seq_kv;
  if (causal) {
    long last_row = (q0 + br < seq_q ? q0 + br : seq_q) - 1;
    long last_key = last_row + ((long)seq_kv - seq_q); /* bottom-right alignment */
    n = last_key + 1 < seq_kv ? last_key + 1 : seq_kv;
  }
  if (n <= 0) return 0;
  return (int)((n + bc - 1) / bc);
}

/* Every row sees at least what the first row sees; a tile needs no mask when all its keys exist
 * and the first row sees its last key. */
int l04_kv_tiles_unmasked(int q0, int br, int seq_q, int seq_kv, int bc, int causal) {
  (void)br;
  long n = seq_kv;
  if (causal) {
    long first_sees = (long)q0 + ((long)seq_kv - seq_q) + 1;
    n = first_sees < seq_kv ? first_sees : seq_kv;
  }
  if (n <= 0) return 0;
  return (int)(n / bc);
}

void l04_schedule(int block, int n_q_tiles, int causal, int *bh, int *q_tile) {
  int t = block % n_q_tiles;
  *bh = block / n_q_tiles;
  *q_tile = causal ? n_q_tiles - 1 - t : t;
}
