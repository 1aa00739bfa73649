/**
 * @file hopper_layout.h
 * @brief Lesson 05's drill: the Hopper bookkeeping that is easy to get wrong and silent when wrong.
 *
 * Four pieces of bookkeeping an FA3-style kernel carries, as pure functions on the CPU (the
 * kernels in this lesson compute the same in device code; tests/lesson05/checklist.c holds both to
 * the same answers):
 *  - the stage ring: which shared-memory stage the k-th tile uses, and which phase parity of that
 *    stage's "full" and "empty" mbarriers a consumer and a producer wait on;
 *  - the 128-byte swizzle: where element (row, column) of a bf16 tile lives in shared memory when
 *    TMA writes it with CU_TENSOR_MAP_SWIZZLE_128B and wgmma reads it with swizzle mode 1;
 *  - the wgmma matrix descriptor: the 64-bit word that tells the tensor cores where an operand
 *    starts in shared memory and how its 8 x 16-byte core matrices are spaced;
 *  - the order in which a persistent grid hands out its work items under the causal mask (versions
 *    9 and 11): an order that is not a permutation computes some tiles twice and others never;
 *  - 2^x from a float's bits, as version 13 computes half its exponentials on the FMA pipes: off by
 *    a few percent where it should be, and silently wrong for -inf if the floor is missed.
 *
 * `make drill-5` runs the checklist against drills/05_hopper_bookkeeping.c, the reader's version.
 */
#ifndef L05_HOPPER_LAYOUT_H
#define L05_HOPPER_LAYOUT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The stage of a ring of @p stages shared-memory buffers that tile @p k (0, 1, 2, ...) uses.
 * @return k mod stages; -1 when k < 0 or stages < 1
 */
int l05_stage(long k, int stages);

/**
 * The phase parity a consumer waits on, on the "full" mbarrier of tile @p k's stage, before it
 * reads the tile. Each stage's barrier completes one phase per use; phases alternate parity 0, 1,
 * 0, ... from a freshly initialised barrier (phase 0).
 * @return 0 or 1; -1 when k < 0 or stages < 1
 */
int l05_full_parity(long k, int stages);

/**
 * The phase parity a producer waits on, on the "empty" mbarrier of tile @p k's stage, before it
 * overwrites the stage with tile k. The first pass over the ring must not block (no consumer has
 * released anything yet, and nothing needs releasing): on a fresh barrier, waiting for the parity
 * opposite to phase 0 returns at once.
 * @return 0 or 1; -1 when k < 0 or stages < 1
 */
int l05_empty_parity(long k, int stages);

/**
 * Byte offset of bf16 element (@p row, @p col) in a tile of @p rows rows stored with the 128-byte
 * swizzle: the columns cut into panels of 64 (128 bytes), each panel @p rows x 128 bytes, row r of
 * a panel at r * 128 bytes, and within a row the 16-byte chunk c (8 elements) stored at chunk
 * position c XOR (r mod 8). The tile starts on a 1024-byte boundary.
 * @return the offset; -1 (as a uint32_t: 0xFFFFFFFF) for a negative index or col outside 0..1023
 */
uint32_t l05_swizzle128_offset(int row, int col, int rows);

/**
 * The wgmma shared-memory matrix descriptor.
 * @param addr          shared-memory address of the operand's first core matrix (bytes)
 * @param lbo           leading dimension byte offset (bytes)
 * @param sbo           stride dimension byte offset (bytes)
 * @param swizzle_bytes 0 (none), 32, 64 or 128
 * @return bits 0-13 addr / 16, bits 16-29 lbo / 16, bits 32-45 sbo / 16, bits 49-51 base offset
 *         (0), bits 62-63 the swizzle mode (0 none, 1 128-byte, 2 64-byte, 3 32-byte); 0 when an
 *         argument cannot be encoded (not a multiple of 16, 2^18 bytes or more, another swizzle)
 */
uint64_t l05_wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, int swizzle_bytes);

/**
 * Item @p item's Q tile and (sequence, head) pair in the order a persistent grid of @p grid blocks
 * hands out causal work: longest first inside groups of pairs. There are @p n_pairs pairs of
 * @p n_q_tiles Q tiles each, and a Q tile's work grows with its index. The pairs are cut into
 * contiguous groups of whole pairs: as many groups as can each hold at least @p waves * grid items
 * (one group when all the pairs together hold fewer), their sizes as equal as possible, the larger
 * ones first. A group hands out the last Q tile of each of its pairs, in pair order, then the tile
 * before it, and so on; then the next group.
 * @return 0, with *q_tile and *pair set; -1 when item is outside [0, n_q_tiles * n_pairs), a
 *         size or count is below 1, or a pointer is NULL
 */
int l05_causal_item(int item, int n_q_tiles, int n_pairs, int grid, int waves, int *q_tile,
                    int *pair);

/**
 * 2^x without the special function unit, for x <= 0 (version 13): add 1.5 x 2^15 to x, so that
 * the sum's low mantissa bits hold x in steps of 2^-8; multiply those bits, as an unsigned integer,
 * by 2^15 and add 127 << 23, so that x's integer part lands in the exponent field and its fraction
 * in the mantissa. The result is 2^n (1 + f) for x = n + f: exact at every power of two, above 2^x
 * by at most 6.2% between them. Below x = -127 the integer would wrap round the exponent field, so
 * the sum is first held at 1.5 x 2^15 - 127.
 * @return the line's value; +0 for x <= -127 and for -inf
 */
float l05_exp2_fma(float x);

/**
 * Whether the Q tile of rows [q0, q0 + br) needs only the first half of the last KV tile of
 * @p bc keys it visits (version 14's half tile): every key of that tile's second half is masked
 * for every one of its rows, under the causal mask (bottom-right: row i sees keys j <= i + seq_kv
 * - seq_q) or because the keys end there. Rows past seq_q are not rows.
 * @return 1 if so; 0 if not, or if the Q tile sees no key at all; -1 for br < 1, bc < 2 or bc odd
 */
int l05_last_tile_half(int q0, int br, int seq_q, int seq_kv, int bc, int causal);

/**
 * Place @p k of block @p block's list in a persistent grid of @p grid blocks that deals its items
 * before the launch (version 15): without the mask block b takes items b, b + grid, b + 2 grid,
 * ...; with it a (sequence, head) pair's Q tiles go two by two, tile j beside tile n_q_tiles - 1 -
 * j, and block b takes the two-by-twos b, b + grid, ... Items run over a pair's n_q_tiles Q tiles,
 * then the @p n_pairs pairs.
 * @return 0, with *q_tile and *pair set; 1 when block's list holds fewer than k + 1 items; -1 when
 *         k, grid or n_q_tiles or n_pairs is out of range, block is not in [0, grid), or a pointer
 * is NULL
 */
int l05_pair_item(int k, int grid, int block, int n_q_tiles, int n_pairs, int causal, int *q_tile,
                  int *pair);

#ifdef __cplusplus
}
#endif

#endif /* L05_HOPPER_LAYOUT_H */
