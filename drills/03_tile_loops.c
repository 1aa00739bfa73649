/* Drill 3: the bookkeeping of FlashAttention-1's double loop.
 *
 * Fill in the bodies below, then run `make drill-3`: it builds the checklist tests of lesson 3
 * (tests/lesson03/checklist.c) against this file. Out of the box every test fails; when they all
 * pass you can write the loop bounds of a tiled attention kernel without thinking about them.
 * The declarations and the exact contract of each function are in
 * lessons/03_fa1_tiling/tile_loops.h.
 *
 * Hints, in words only:
 *  - Algorithm 1 sizes the key tile so that four tiles of Bc x d floats fit in M, and never lets
 * the query tile be taller than d or than the key tile.
 *  - The last tile of an axis is short when the length is not a multiple of the tile.
 *  - Bottom-right alignment: query r sees key c when c <= r + (seq_kv - seq_q). Which row of a tile
 *    sees the fewest keys, and which the most?
 */
#include "tile_loops.h"

void l03_paper_tile_sizes(long m_floats, int d, int *br, int *bc) {
  (void)m_floats;
  (void)d;
  *br = 0;
  *bc = 0;
}

int l03_num_tiles(int len, int tile) {
  (void)len;
  (void)tile;
  return 0;
}

int l03_tile_start(int t, int tile) {
  (void)t;
  (void)tile;
  return 0;
}

int l03_tile_end(int t, int tile, int len) {
  (void)t;
  (void)tile;
  (void)len;
  return 0;
}

l03_tile_class l03_causal_tile_class(int i, int j, int br, int bc, int seq_q, int seq_kv) {
  (void)i;
  (void)j;
  (void)br;
  (void)bc;
  (void)seq_q;
  (void)seq_kv;
  return (l03_tile_class)0;
}
