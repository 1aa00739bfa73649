/**
 * @file attn_paged.h
 * @brief Building a paged KV cache from dense K and V, the way a serving engine would hold it.
 *
 * Sequence b's token t lives in physical block `block_table[b * max_blocks + t / block_size]`, slot
 * `t % block_size`. Blocks are handed out in a random order (so a kernel that assumes contiguous
 * blocks fails), the pool has spare blocks nobody owns, and every slot no token owns, in spare
 * blocks and in the tail of each sequence's last block, holds NaN: a kernel that reads one poisons
 * its output. Unused table entries are -1.
 */
#ifndef ATTN_PAGED_H
#define ATTN_PAGED_H

#include <stddef.h>
#include <stdint.h>

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A paged cache on the host, in fp32. */
typedef struct attn_paged {
  int num_blocks;   /**< physical blocks in the pool */
  int block_size;   /**< tokens per block */
  int max_blocks;   /**< block-table columns: ceil(seq_kv / block_size) */
  int kv_heads;     /**< KV heads per token slot */
  int dim;          /**< head dimension */
  float *k_cache;   /**< [num_blocks, block_size, kv_heads, dim] */
  float *v_cache;   /**< [num_blocks, block_size, kv_heads, dim] */
  int *block_table; /**< [batch, max_blocks] */
  int *seq_lens;    /**< [batch] */
} attn_paged;

/** Build a cache holding dense @p k and @p v (`[batch, seq_kv, kv_heads, dim]`) with
 *  p->block_size tokens per block, a shuffled block order drawn from @p seed, and a quarter spare
 *  blocks (at least one). Returns 0, or -1 when a size is invalid or memory runs out. */
int attn_paged_build(const attn_problem *p, const float *k, const float *v, uint64_t seed,
                     attn_paged *out);

/** Element (b, t, g, d) of the cache's K (or V with @p which_v), through the block table. */
float attn_paged_at(const attn_paged *c, int which_v, int b, int t, int g, int d);

/** Free what attn_paged_build() allocated. */
void attn_paged_free(attn_paged *c);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_PAGED_H */
