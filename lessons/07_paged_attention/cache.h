/**
 * @file cache.h
 * @brief Lesson 07's KV-cache manager: sequences that grow a token at a time over a pool of
 *        physical blocks, forks that share a prefix, copy-on-write of a shared last block.
 *
 * Each sequence has a row of the block table (logical block -> physical block) and a length. An
 * append hands out blocks only when the last one is full; a fork gives the child the parent's
 * table and one more reference to every block; an append to a sequence whose partly filled last
 * block is shared first copies that block to a fresh one (copy-on-write) and reports the copy, for
 * whoever holds the data (the GPU, or the CPU model) to perform. Every call either succeeds or
 * changes nothing and says why: no crash, no block handed out twice, no silent reuse.
 */
#ifndef L07_CACHE_H
#define L07_CACHE_H

#include "paging.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a cache call reports. */
typedef enum l07_status {
  L07_OK = 0,        /**< done */
  L07_NO_BLOCKS,     /**< the pool has too few free blocks (nothing was changed) */
  L07_NO_SEQ_SLOT,   /**< every sequence slot is in use */
  L07_BAD_SEQ,       /**< no open sequence has this id (never opened, or closed already) */
  L07_TOO_LONG,      /**< the sequence would need more blocks than a table row holds */
  L07_BAD_ARG,       /**< an argument out of range */
  L07_OUT_OF_MEMORY, /**< the host ran out of memory (init only) */
} l07_status;

/** A short description of @p s, e.g. "the pool has too few free blocks". */
const char *l07_status_text(l07_status s);

/** The cache's bookkeeping (the data itself lives elsewhere: a pool of
 * `[num_blocks, block_size, kv_heads, dim]` on the GPU, or the CPU model's arrays). */
typedef struct l07_cache {
  int block_size; /**< tokens per block */
  int max_seqs;   /**< sequence slots */
  int max_blocks; /**< block-table columns: the most blocks one sequence may hold */
  l07_pool pool;  /**< the physical blocks */
  int *tables;    /**< [max_seqs, max_blocks] physical block ids; -1 where none */
  int *lens;      /**< [max_seqs] tokens of each sequence; -1 for a free slot */
} l07_cache;

/** A block copy that copy-on-write asks for: the first @p tokens slots of block @p src into block
 * @p dst (tokens 0: no copy). */
typedef struct l07_copy {
  int src;    /**< the shared block */
  int dst;    /**< the fresh block the sequence gets instead */
  int tokens; /**< its filled slots to copy; 0: no copy */
} l07_copy;

/** An empty cache of @p num_blocks blocks of @p block_size tokens, for up to @p max_seqs sequences
 * of up to @p max_blocks blocks each. L07_OK, L07_BAD_ARG or L07_OUT_OF_MEMORY. */
l07_status l07_cache_init(l07_cache *c, int num_blocks, int block_size, int max_seqs,
                          int max_blocks);

/** Free what l07_cache_init() allocated (a zeroed or already destroyed cache is fine). */
void l07_cache_destroy(l07_cache *c);

/** Open an empty sequence; its id in *@p seq. L07_OK or L07_NO_SEQ_SLOT. */
l07_status l07_seq_open(l07_cache *c, int *seq);

/**
 * Append @p n tokens to sequence @p seq: blocks are taken as the last one fills, and a shared,
 * partly filled last block is first copied to a fresh one (copy-on-write).
 * @param c     the cache
 * @param seq   an open sequence
 * @param n     tokens to add, >= 0
 * @param slots out (may be NULL): `[n]` the physical slot of each new token, block * block_size +
 *              offset, where its K and V go
 * @param copy  out (may be NULL): the copy copy-on-write needs, or tokens 0
 * @return L07_OK; L07_BAD_SEQ, L07_BAD_ARG (n < 0), L07_TOO_LONG or L07_NO_BLOCKS with nothing
 *         changed
 */
l07_status l07_seq_append(l07_cache *c, int seq, int n, int *slots, l07_copy *copy);

/** A new sequence sharing every block of @p parent (one more reference each); its id in
 * *@p child. L07_OK, L07_BAD_SEQ or L07_NO_SEQ_SLOT. */
l07_status l07_seq_fork(l07_cache *c, int parent, int *child);

/** Close sequence @p seq: one reference fewer on each of its blocks (those left with none go back
 * to the free list) and its slot free. L07_OK or L07_BAD_SEQ (also for a second close). */
l07_status l07_seq_close(l07_cache *c, int seq);

/** Drop the last @p n tokens of sequence @p seq (draft tokens a verifier rejected): a block left
 * with none of its tokens loses its reference (back to the free list when no other sequence holds
 * it). The slots past the new length are written again by the next append, after a copy-on-write
 * copy when the last block is shared. L07_OK; L07_BAD_SEQ, or L07_BAD_ARG (n < 0 or more than its
 * tokens), with nothing changed. */
l07_status l07_seq_truncate(l07_cache *c, int seq, int n);

/** Tokens of sequence @p seq, or -1 when it is not open. */
int l07_seq_len(const l07_cache *c, int seq);

/** The row of the block table of sequence @p seq (max_blocks entries, -1 past its blocks). */
const int *l07_seq_table(const l07_cache *c, int seq);

/** Blocks on the free list. */
int l07_cache_free_blocks(const l07_cache *c);

#ifdef __cplusplus
}
#endif

#endif /* L07_CACHE_H */
