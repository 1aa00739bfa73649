/**
 * @file attn_causal.h
 * @brief The bottom-right causal mask as tile bounds, written once for every kernel and host model.
 *
 * The course's mask aligns the last query with the last key (FlashAttention's rule when
 * seq_q != seq_kv): query row i sees the keys j <= i + (seq_kv - seq_q). Every bound below follows
 * from that one inequality and from the fact that a row sees a prefix of the keys:
 *
 *     keys row i sees          n(i) = clamp(i + seq_kv - seq_q + 1, 0, seq_kv)
 *     KV tiles a Q tile visits  those holding a key its LAST row sees:   ceil(n(q0 + Br - 1) / Bc)
 *     KV tiles it sees whole    those whose last key its FIRST row sees: floor(n(q0) / Bc)
 *     first Q tile of a KV tile the tile of the first row that sees the KV tile's first key
 *
 * The functions are `static inline` C, usable from host C and, compiled by nvcc, from device code
 * (ATTN_HD). The checklist's drills (lesson 04's l04_kv_tiles_visited(), lesson 09's
 * l09_first_q_tile(), ...) are the reader's own versions of these; their tests compare the two.
 */
#ifndef ATTN_CAUSAL_H
#define ATTN_CAUSAL_H

/** The functions' qualifiers: host and device, always inlined, under nvcc; `inline` in C. */
#ifdef __CUDACC__
#define ATTN_HD __host__ __device__ __forceinline__
#else
#define ATTN_HD inline
#endif

/** Keys query row @p i sees: all @p seq_kv, or under the causal mask j <= i + seq_kv - seq_q
 *  (0 when that is negative). In int arithmetic, as the kernels' index maths: the lengths the
 *  course runs keep i + seq_kv far below 2^31. */
static ATTN_HD int attn_keys_seen(int i, int seq_q, int seq_kv, int causal) {
  if (!causal) return seq_kv;
  const int n = i + seq_kv - seq_q + 1;
  return n < 0 ? 0 : (n > seq_kv ? seq_kv : n);
}

/** KV tiles of @p bc keys, from tile 0, that the Q tile of rows [q0, q0 + br) must visit: the
 *  keys its last real row sees, rounded up to whole tiles. */
static ATTN_HD int attn_kv_tiles_visited(int q0, int br, int seq_q, int seq_kv, int bc,
                                         int causal) {
  const int last_row = (q0 + br < seq_q ? q0 + br : seq_q) - 1;
  const int n = attn_keys_seen(last_row, seq_q, seq_kv, causal);
  return (int)(((long long)n + bc - 1) / bc);
}

/** 1 when the last KV tile of @p bc keys that the Q tile of rows [q0, q0 + br) visits holds no key
 *  any of its rows sees in its second half: the keys its last real row sees end within the tile's
 *  first bc / 2 (lesson 05's version 14 runs that tile as a half tile); 0 otherwise, and when the
 *  Q tile visits no tile. */
static ATTN_HD int attn_last_tile_half(int q0, int br, int seq_q, int seq_kv, int bc, int causal) {
  const int last_row = (q0 + br < seq_q ? q0 + br : seq_q) - 1;
  const int n = attn_keys_seen(last_row, seq_q, seq_kv, causal);
  return n > 0 && n - (n - 1) / bc * bc <= bc / 2;
}

/** KV tiles, from tile 0, that every row of the Q tile starting at @p q0 sees whole (no mask
 *  needed): the whole tiles among the keys its first row sees. */
static ATTN_HD int attn_kv_tiles_unmasked(int q0, int seq_q, int seq_kv, int bc, int causal) {
  return attn_keys_seen(q0, seq_q, seq_kv, causal) / bc;
}

/** Q tiles of @p br rows over @p seq_q rows. */
static ATTN_HD int attn_q_tiles(int br, int seq_q) {
  return (int)(((long long)seq_q + br - 1) / br);
}

/** The first Q tile of @p br rows with a row that sees key @p j0 (the KV-outer walk of the
 *  backward pass starts there); attn_q_tiles() when no row sees it. */
static ATTN_HD int attn_first_q_tile(int j0, int br, int seq_q, int seq_kv, int causal) {
  if (!causal) return 0;
  const long long row = (long long)j0 - ((long long)seq_kv - seq_q); /* first row that sees j0 */
  if (row <= 0) return 0;
  return row >= seq_q ? attn_q_tiles(br, seq_q) : (int)(row / br);
}

/** The first Q tile of @p br rows whose every row sees every key of the KV tile
 *  [j0, j0 + bc) (clipped to seq_kv): from there on the tile needs no mask. */
static ATTN_HD int attn_first_unmasked_q_tile(int j0, int bc, int br, int seq_q, int seq_kv,
                                              int causal) {
  if (!causal) return 0;
  const long long last = ((long long)j0 + bc < seq_kv ? (long long)j0 + bc : seq_kv) - 1;
  const long long row = last - ((long long)seq_kv - seq_q); /* first row that sees them all */
  const long long t = row <= 0 ? 0 : (row + br - 1) / br;   /* that row's tile or the next */
  const int n = attn_q_tiles(br, seq_q);
  return t < n ? (int)t : n;
}

/** The groups' size in waves of blocks that the course's kernels ask for: two (measured against
 *  four on lesson 05's version 11, `h200-l05i-2026-11-28`). */
#define ATTN_CAUSAL_WAVES 2

/** A persistent grid's work items under the causal mask: longest first inside groups of heads.
 *  An item is one Q tile of one (sequence, head) pair, and under the mask a Q tile's work grows
 *  with its index. Handed out pair after pair, each pair's heaviest tile first (the order of a
 *  grid of one block per item), the last pair's heaviest tiles start when little work is left and
 *  the blocks that take them finish last, the others idle. Instead the n_bh pairs are cut into
 *  groups of whole pairs, each about @p waves waves of @p grid blocks' worth of items, cut as
 *  evenly as the pairs allow (sizes differ by at most one, so the last group is not a short one),
 *  and a group hands out its pairs' last Q tiles first, one per pair, then the tiles before them:
 *  longest first inside a group, whose pairs' K and V are read from L2 while it runs. (Lesson
 *  09's backward, one block per item, uses it only where its blocks are long, or with GQA where
 *  the tail is long: with short blocks the order lost, `WG_ORDER_MIN_WORK` and
 *  `WG_ORDER_GQA_TILES` in its version 7.)
 *  Sets @p grp, the smaller group size, and @p grp_big, the number of groups of grp + 1 pairs
 *  (placed first). */
static ATTN_HD void attn_causal_groups(int n_bh, int n_q_tiles, int grid, int waves, int *grp,
                                       int *grp_big) {
  long long want = ((long long)waves * grid + n_q_tiles - 1) / (n_q_tiles > 0 ? n_q_tiles : 1);
  if (want > n_bh) want = n_bh;
  if (want < 1) want = 1;
  const int n_groups = n_bh / (int)want > 0 ? n_bh / (int)want : 1;
  *grp = n_bh / n_groups > 0 ? n_bh / n_groups : 1;
  *grp_big = n_bh > n_groups * *grp ? n_bh - n_groups * *grp : 0;
}

/** Item @p item's Q tile and (sequence, head) pair in the order of attn_causal_groups(): the
 *  group that holds it, its place j in the group, Q tile n_q_tiles - 1 - j / (group size), pair
 *  j mod (group size) of the group. */
static ATTN_HD void attn_causal_item(int item, int n_q_tiles, int grp, int grp_big, int *q_tile,
                                     int *bh) {
  const int big = grp_big * (grp + 1) * n_q_tiles; /* the items of the larger groups */
  int g0, gs;                                      /* the group's first pair, its size */
  if (item < big) {
    gs = grp + 1;
    g0 = item / (gs * n_q_tiles) * gs;
  } else {
    gs = grp;
    g0 = grp_big * (grp + 1) + (item - big) / (gs * n_q_tiles) * gs;
  }
  const int j = item - g0 * n_q_tiles;
  *q_tile = n_q_tiles - 1 - j / gs;
  *bh = g0 + j % gs;
}

/** A persistent grid's lists fixed before the launch (lesson 05's version 15): place @p k of block
 *  @p b's list among @p grid blocks, as an index into the items (Q tiles, then (sequence, head)
 *  pairs; attn_pair_item() turns it into a Q tile). Without the mask block b takes items b, b +
 *  grid, b + 2 grid, ...; with it the items go two by two, a pair of places 2p and 2p + 1 at a
 *  time: pairs b, b + grid, ... */
static ATTN_HD int attn_pair_place(int k, int grid, int b, int causal) {
  return causal ? 2 * (b + (k >> 1) * grid) + (k & 1) : b + k * grid;
}

/** Item @p item's Q tile and (sequence, head) pair for attn_pair_place()'s lists: items run over
 *  a pair's @p n_q_tiles Q tiles, then the pairs. With the mask the tiles go two by two, tile j
 *  beside tile n_q_tiles - 1 - j (places 2j and 2j + 1 of the pair's), which under the causal mask
 *  with seq_q == seq_kv see n_q_tiles + 1 KV tiles together, whatever j. */
static ATTN_HD void attn_pair_item(int item, int n_q_tiles, int causal, int *q_tile, int *bh) {
  *bh = item / n_q_tiles;
  const int j = item % n_q_tiles;
  *q_tile = causal ? ((j & 1) ? n_q_tiles - 1 - (j >> 1) : (j >> 1)) : j;
}

#endif /* ATTN_CAUSAL_H */
