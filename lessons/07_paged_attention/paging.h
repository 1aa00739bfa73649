/**
 * @file paging.h
 * @brief Lesson 07's drill: the page-table address of a cached element, and a pool of physical
 *        blocks with a free list and reference counts.
 *
 * The cache is a pool `[num_blocks, block_size, kv_heads, dim]`. Sequence b's token t lives in
 * logical block t / block_size, which its block table maps to a physical block; inside that block
 * it is slot t % block_size. That is virtual memory: logical pages, a page table per process, a
 * pool of physical frames, a free list, and frames shared (with a count) after a fork.
 *
 * The lesson's own answers are in paging.c; drills/07_paging.c has the same functions with empty
 * bodies, and `make drill-7` runs the checklist (tests/lesson07/checklist.c) against it. Plain C,
 * no CUDA: the kernels use the same arithmetic.
 */
#ifndef L07_PAGING_H
#define L07_PAGING_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Offset, in elements, of element @p d of head @p head of token @p token of a sequence in the pool
 * `[num_blocks, block_size, kv_heads, dim]`.
 * @param block_table the sequence's row of the block table: logical block -> physical block
 * @param block_size  tokens per block
 * @param kv_heads    heads per token slot
 * @param dim         elements per head
 * @param token       the token's position in its sequence (0-based)
 * @param head        the KV head
 * @param d           the element in the head
 */
size_t l07_kv_offset(const int *block_table, int block_size, int kv_heads, int dim, int token,
                     int head, int d);

/** A pool of physical blocks: a free list (a stack of free block ids) and a count per block of
 * the block tables that hold it. */
typedef struct l07_pool {
  int num_blocks; /**< blocks in the pool, ids 0..num_blocks-1 */
  int n_free;     /**< entries of free_list in use */
  int *free_list; /**< [num_blocks] free block ids; the next to hand out is free_list[n_free - 1] */
  int *ref;       /**< [num_blocks] holders of each block; 0: free */
} l07_pool;

/** Set up @p p over caller-owned arrays of @p num_blocks ints each: every block free, and handed
 * out in the order 0, 1, 2, ... */
void l07_pool_init(l07_pool *p, int num_blocks, int *free_list, int *ref);

/** Take a free block: its id, with its count set to 1; -1 when none is left (the pool is then
 * unchanged). */
int l07_pool_alloc(l07_pool *p);

/** One more holder of an allocated block (a fork shares it): 0, or -1 for an id out of range or a
 * free block (nothing changes). */
int l07_pool_retain(l07_pool *p, int block);

/** One holder fewer; at 0 the block goes back on the free list: 0, or -1 for an id out of range
 * or a block already free (a double free; nothing changes). */
int l07_pool_release(l07_pool *p, int block);

#ifdef __cplusplus
}
#endif

#endif /* L07_PAGING_H */
