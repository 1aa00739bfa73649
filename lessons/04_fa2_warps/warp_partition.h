/**
 * @file warp_partition.h
 * @brief Lesson 04's drill: who owns what. Which rows a warp owns, which element of an mma.sync
 *        m16n8k16 fragment a lane holds, where ldmatrix reads, the swizzle, and the causal tile
 *        plan.
 *
 * The lesson's own answers are in warp_partition.c; drills/04_warp_partition.c has the same
 * functions with empty bodies, and `make drill-4` runs the checklist (tests/lesson04/checklist.c)
 * against your version.
 *
 * Fragments of `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` (PTX ISA, "Matrix fragments
 * for mma.m16n8k16"): A is 16x16 (rows x k) in 4 registers of two bf16, B is 16x8 (k x cols) in 2
 * registers of two bf16, C/D is 16x8 in 4 fp32 registers. Within a register the element with the
 * smaller column (A, C) or k (B) index is the low half, `half` 0.
 */
#ifndef L04_WARP_PARTITION_H
#define L04_WARP_PARTITION_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Split-Q: the first row of a Q tile of @p br rows that warp @p warp owns, when the tile is split
 * into @p n_warps equal, consecutive bands (br is a multiple of n_warps).
 * @param warp    0..n_warps-1
 * @param br      rows in the Q tile
 * @param n_warps warps in the block
 * @return the first row of the warp's band (it owns br / n_warps rows from there)
 */
int l04_warp_first_row(int warp, int br, int n_warps);

/**
 * The A fragment (16x16, row-major): element @p half of register @p reg in lane @p lane.
 * @param lane 0..31
 * @param reg  0..3
 * @param half 0 (low 16 bits) or 1
 * @param row  out: 0..15
 * @param col  out: 0..15 (the k index)
 */
void l04_frag_a(int lane, int reg, int half, int *row, int *col);

/**
 * The B fragment (16x8, k x n): element @p half of register @p reg in lane @p lane.
 * @param lane 0..31
 * @param reg  0..1
 * @param half 0 or 1
 * @param k    out: 0..15
 * @param n    out: 0..7
 */
void l04_frag_b(int lane, int reg, int half, int *k, int *n);

/**
 * The C/D accumulator (16x8 fp32): register @p reg of lane @p lane.
 * @param lane 0..31
 * @param reg  0..3
 * @param row  out: 0..15
 * @param col  out: 0..7
 */
void l04_frag_c(int lane, int reg, int *row, int *col);

/**
 * `ldmatrix.x4` loading a 16x16 A tile stored row-major (16 rows of 16 bf16): the row and the first
 * column of the 16-byte row segment whose address lane @p lane supplies, so that the four 8x8
 * matrices land in A-fragment registers 0..3.
 * @param lane 0..31
 * @param row  out: 0..15
 * @param col  out: 0 or 8
 */
void l04_ldmatrix_a_src(int lane, int *row, int *col);

/**
 * The XOR swizzle of the tensor-core versions: the 16-byte chunk where logical chunk @p chunk of
 * tile row @p row is stored. Eight consecutive rows read at the same logical chunk then hit eight
 * different groups of four banks.
 * @param row   tile row, >= 0
 * @param chunk 16-byte chunk within the row, 0..chunks-1 (chunks a multiple of 8)
 * @return the physical chunk, in the same row
 */
int l04_swizzle(int row, int chunk);

/**
 * KV tiles a Q tile must visit: all of them without a mask; with the bottom-right causal mask only
 * those holding a key that some row of the tile may see.
 * @param q0     first query row of the tile
 * @param br     rows per Q tile (rows past @p seq_q do not count)
 * @param seq_q  query tokens
 * @param seq_kv key tokens
 * @param bc     keys per KV tile
 * @param causal 1: bottom-right causal
 * @return the number of KV tiles, from tile 0, to visit (0 when no row sees any key)
 */
int l04_kv_tiles_visited(int q0, int br, int seq_q, int seq_kv, int bc, int causal);

/**
 * Of those, the leading tiles that need no mask at all: every key of the tile exists and every row
 * of the Q tile sees it. The rest (the diagonal tiles, and a last tile cut short by @p seq_kv) are
 * masked element by element.
 * @param q0,br,seq_q,seq_kv,bc,causal as in l04_kv_tiles_visited()
 * @return the number of leading unmasked tiles
 */
int l04_kv_tiles_unmasked(int q0, int br, int seq_q, int seq_kv, int bc, int causal);

/**
 * The block schedule of version 6: block @p block of a 1-D grid of `n_bh * n_q_tiles` blocks
 * (n_bh = batch * heads) takes (batch*heads index, Q tile). The blocks of one head stay together
 * (they share K and V in L2); with @p causal the heaviest Q tile (the last, which sees most keys)
 * comes first and the lightest last, so the grid's tail holds short blocks.
 * @param block     0..n_bh * n_q_tiles - 1
 * @param n_q_tiles Q tiles per (batch, head)
 * @param causal    1: heavy tiles first
 * @param bh        out: batch * heads index (b * heads + h)
 * @param q_tile    out: the Q tile
 */
void l04_schedule(int block, int n_q_tiles, int causal, int *bh, int *q_tile);

#ifdef __cplusplus
}
#endif

#endif /* L04_WARP_PARTITION_H */
