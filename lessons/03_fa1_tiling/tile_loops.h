/**
 * @file tile_loops.h
 * @brief The bookkeeping of FlashAttention-1's double loop: tile sizes from the shared memory, tile
 *        counts and bounds for lengths that are not tile multiples, the causal tile class, and
 *        the HBM traffic those tiles cause.
 *
 * These are the functions of `make drill-3`: drills/03_tile_loops.c holds them with empty bodies,
 * tile_loops.c holds the lesson's own versions. The CPU model (cpu_model.c) and the kernels'
 * launchers use the lesson's versions, so a mistake here shows up as a wrong tile count or a wrong
 * answer.
 *
 * Indices are 0-based. A tile covers the half-open range [start, end) of one axis: query rows for
 * the i (Q) axis, keys for the j (K/V) axis.
 */
#ifndef L03_TILE_LOOPS_H
#define L03_TILE_LOOPS_H

#ifdef __cplusplus
extern "C" {
#endif

/** How a bottom-right causal mask meets one (query tile, key tile) pair. */
typedef enum l03_tile_class {
  L03_TILE_VISIBLE = 1, /**< every query of the tile sees every key of the tile: no mask needed */
  L03_TILE_PARTIAL = 2, /**< some pairs are visible and some are not: mask element by element */
  L03_TILE_MASKED = 3   /**< no query of the tile sees any key of the tile: skip the tile */
} l03_tile_class;

/**
 * The tile sizes of Algorithm 1 (Dao et al. 2022) for an on-chip memory of @p m_floats floats:
 * Bc = ceil(M / 4d) and Br = min(Bc, d).
 * @param m_floats  M, the shared memory one block may use, counted in floats (> 0)
 * @param d         head dimension (> 0)
 * @param br        out: Br, query rows per tile
 * @param bc        out: Bc, keys per tile
 */
void l03_paper_tile_sizes(long m_floats, int d, int *br, int *bc);

/**
 * Tiles needed to cover @p len elements with tiles of @p tile: ceil(len / tile); 0 when len is 0.
 * @param len   length of the axis (>= 0)
 * @param tile  tile size (> 0)
 * @return the number of tiles (Tr for queries, Tc for keys)
 */
int l03_num_tiles(int len, int tile);

/**
 * First index of tile @p t.
 * @param t     tile number, 0-based
 * @param tile  tile size
 * @return t * tile
 */
int l03_tile_start(int t, int tile);

/**
 * One past the last index of tile @p t: the last tile stops at @p len, the others are full.
 * @param t     tile number, 0-based, below l03_num_tiles(len, tile)
 * @param tile  tile size
 * @param len   length of the axis
 * @return min((t + 1) * tile, len)
 */
int l03_tile_end(int t, int tile, int len);

/**
 * Classify query tile @p i against key tile @p j under a bottom-right causal mask: query r sees key
 * c when c <= r + (seq_kv - seq_q). The tiles are clipped to seq_q and seq_kv.
 * @param i       query tile, 0-based, below l03_num_tiles(seq_q, br)
 * @param j       key tile, 0-based, below l03_num_tiles(seq_kv, bc)
 * @param br      query rows per tile (Br)
 * @param bc      keys per tile (Bc)
 * @param seq_q   query tokens
 * @param seq_kv  key tokens
 * @return L03_TILE_VISIBLE, L03_TILE_PARTIAL or L03_TILE_MASKED
 */
l03_tile_class l03_causal_tile_class(int i, int j, int br, int bc, int seq_q, int seq_kv);

/**
 * Algorithm 1's HBM traffic in closed form, in bytes, for one (batch, head) of @p n queries and
 * @p n keys without a mask, on the paper's tiles (l03_paper_tile_sizes()) for an on-chip memory of
 * M = smem_bytes / elem_bytes elements. It counts what the lesson's CPU model (l03_fa1_model())
 * counts: O, l and m initialised; K_j and V_j read once each; at every one of the Tc key tiles,
 * each query row's Q_i, O_i, l_i and m_i read and O_i, l_i and m_i written back; at the end l and m
 * read and the log-sum-exp written. Q, K, V and O move in elements of @p elem_bytes; m, l and the
 * log-sum-exp are fp32 (4 bytes) whatever the inputs are.
 * @param n           queries, and keys (> 0)
 * @param d           head dimension (> 0)
 * @param elem_bytes  bytes per element of Q, K, V and O: 4 for fp32, 2 for bf16
 * @param smem_bytes  the shared memory one block may use, in bytes (at least elem_bytes)
 * @return the bytes read plus the bytes written
 */
double l03_fa1_hbm_bytes(int n, int d, int elem_bytes, long smem_bytes);

#ifdef __cplusplus
}
#endif

#endif /* L03_TILE_LOOPS_H */
