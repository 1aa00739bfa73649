/**
 * @file dq_staging.h
 * @brief Version 7's dQ staging as host arithmetic: where `add_dq()` in `v7_bulk_dq.cu` puts each
 *        fp32 value of a warpgroup's dQ block in its staging tile, and the order in which a thread
 *        stores them. The checklist's shared-memory bank model (`tests/lesson09/checklist.c`) reads
 *        the kernel's stores through these two functions.
 *
 * The tile holds a warpgroup's 64 x 64 fp32 block as two boxes of 32 columns (8 KB each, one TMA
 * reduction each), a row of a box being 128 bytes. The tensor map reads it with the 128-byte
 * swizzle: 16-byte chunk k of row r is stored at chunk k ^ (r % 8).
 *
 * A thread holds the wgmma accumulator layout: in each of the 8 column blocks of 8, row
 * 16 warp + g + 8 h (h = 0, 1) and columns 2 t4, 2 t4 + 1 of the block (g = lane / 4,
 * t4 = lane % 4), which it stores with one 8-byte `st.shared.v2.f32`. An 8-byte access is served
 * half a warp at a time (16 lanes, 128 bytes). If the half-warp stores one column block, lanes g
 * and g ^ 1 write the same four chunks of their rows, so each bank twice: two passes where one
 * would do. Version 7 lets the lanes with t4 >= 2 store block nt ^ 2 in turn nt
 * (l09_dq_staging_block()), and the eight (g, t4 / 2) pairs of a half-warp then write eight
 * different chunks.
 *
 * The kernel writes the same expressions inline (keeping its machine code as measured); the host
 * functions are their model, not a second implementation the kernel calls.
 */
#ifndef L09_DQ_STAGING_H
#define L09_DQ_STAGING_H

/** Byte offset in the staging tile of row @p r (0..63) and column @p c (0..63) of the block: box
 * c / 32, row r of it, chunk (c % 32) / 4 swizzled with the row, 4 bytes a column. */
static inline unsigned l09_dq_staging_offset(int r, int c) {
  const int cc = c & 31;
  return (unsigned)((c >> 5) * (64 * 32 * 4) + r * 128 +
                    ((((cc >> 2) ^ (r & 7)) << 4) | ((cc & 3) << 2)));
}

/** The column block (of 8 columns, 0..7) that the lane with @p t4 = lane % 4 stores in turn @p nt:
 * @p nt, or nt ^ 2 when t4 >= 2 (in the same box; over the 8 turns each block once). */
static inline int l09_dq_staging_block(int nt, int t4) {
  return (t4 >> 1) ? nt ^ 2 : nt;
}

#endif /* L09_DQ_STAGING_H */
