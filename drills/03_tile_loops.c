/* Drill 3: the bookkeeping of FlashAttention-1's double loop, the HBM traffic it causes, and the
 * backward pass of one row by recomputation.
 *
 * Fill in the bodies below, then run `make drill-3`: it builds the checklist tests of lesson 3
 * (tests/lesson03/checklist.c) against this file. Out of the box every test fails; when they all
 * pass you can write the loop bounds of a tiled attention kernel without thinking about them,
 * count its traffic on a whiteboard and write the backward of a row from its log-sum-exp.
 * The declarations and the exact contract of each function are in
 * lessons/03_fa1_tiling/tile_loops.h and lessons/03_fa1_tiling/backward_row.h.
 *
 * Hints, in words only:
 *  - Algorithm 1 sizes the key tile so that four tiles of Bc x d floats fit in M, and never lets
 * the query tile be taller than d or than the key tile.
 *  - The last tile of an axis is short when the length is not a multiple of the tile.
 *  - Bottom-right alignment: query r sees key c when c <= r + (seq_kv - seq_q). Which row of a tile
 *    sees the fewest keys, and which the most?
 *  - Traffic: walk Algorithm 1 and write down what crosses HBM at each step, once per key tile or
 *    once in all. Which arrays are read once, and which once per key tile? Does Br matter? The
 *    checklist compares your count with the CPU model's (cpu_model.c) on tiles that divide N and
 *    tiles that do not; your tile functions above feed that model, so write them first.
 *  - Backward: the forward kept O and the log-sum-exp, not P. How do you get p_j back in one step?
 *    The softmax Jacobian needs sum_j p_j dP_j: which number the forward already wrote equals it?
 */
#include "backward_row.h"
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

double l03_fa1_hbm_bytes(int n, int d, int elem_bytes, long smem_bytes) {
  (void)n;
  (void)d;
  (void)elem_bytes;
  (void)smem_bytes;
  /* TODO: the bytes Algorithm 1 reads and writes, in closed form */
  return 0.0;
}

void l03_row_backward(const float *q, const float *k, const float *v, const float *o,
                      const float *d_o, float lse, float scale, int n, int n_visible, int d,
                      float *dq, float *dk, float *dv) {
  (void)q;
  (void)k;
  (void)v;
  (void)o;
  (void)d_o;
  (void)lse;
  (void)scale;
  (void)n;
  (void)n_visible;
  (void)d;
  (void)dq;
  (void)dk;
  (void)dv;
  /* TODO: recompute p_j from the LSE, then dv, dP, D, dS, dq and dk */
}
