/* Tile sizes, tile bounds, the causal tile class and the traffic of the tiles: the lesson's answers
 * to `make drill-3` (with backward_row.c). See tile_loops.h. */
#include "tile_loops.h"

void l03_paper_tile_sizes(long m_floats, int d, int *br, int *bc) {
  /* Four tiles of Bc x d floats (K_j, V_j, Q_i, O_i) fill M; Br <= d keeps Q_i and O_i no bigger
   * than a K tile, and Br <= Bc keeps the S_ij tile (Br x Bc) within one more tile. */
  long c = (m_floats + 4L * d - 1) / (4L * d);
  *bc = (int)c;
  *br = c < d ? (int)c : d;
}

int l03_num_tiles(int len, int tile) {
  return (len + tile - 1) / tile;
}

int l03_tile_start(int t, int tile) {
  return t * tile;
}

int l03_tile_end(int t, int tile, int len) {
  int end = (t + 1) * tile;
  return end < len ? end : len;
}

l03_tile_class l03_causal_tile_class(int i, int j, int br, int bc, int seq_q, int seq_kv) {
  /* Query r sees keys 0 .. r + offset. The first row of a tile sees the fewest keys, the last row
   * the most, so two comparisons decide the whole tile. */
  const long offset = (long)seq_kv - (long)seq_q;
  const long r_first = l03_tile_start(i, br), r_last = l03_tile_end(i, br, seq_q) - 1;
  const long c_first = l03_tile_start(j, bc), c_last = l03_tile_end(j, bc, seq_kv) - 1;
  if (c_first > r_last + offset) return L03_TILE_MASKED;   /* even the last row sees none */
  if (c_last <= r_first + offset) return L03_TILE_VISIBLE; /* even the first row sees all */
  return L03_TILE_PARTIAL;
}

double l03_fa1_hbm_bytes(int n, int d, int elem_bytes, long smem_bytes) {
  int br, bc;
  l03_paper_tile_sizes(smem_bytes / elem_bytes, d, &br, &bc);
  (void)br; /* every query row is visited once per key tile, whatever the height of its tile */
  const double N = n, D = d, tc = l03_num_tiles(n, bc);
  /* Q, K, V, O: K and V once, O zeroed once, then Q_i in, O_i in and O_i out at each key tile. */
  const double tensors = 2.0 * N * D + N * D + tc * 3.0 * N * D;
  /* m and l: set once, in and out at each key tile, read once more for the LSE, which is written.
   */
  const double stats = 2.0 * N + tc * 4.0 * N + 2.0 * N + N;
  /* 3Nd (Tc + 1) elements with Tc about 4Nd / M: the Theta(N^2 d^2 / M) of the paper. */
  return elem_bytes * tensors + 4.0 * stats;
}
