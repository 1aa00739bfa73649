/* Drill for lesson 07: the address of a cached element through the block table, and a pool of
 * physical blocks with a free list and reference counts.
 *
 * Fill in the functions below (the contracts are in lessons/07_paged_attention/paging.h), then run
 * `make drill-7`: the checklist tests say which answers are wrong. The lesson's own answers are in
 * lessons/07_paged_attention/paging.c; try without looking. Hints: the block table maps a logical
 * block (token / block_size) to a physical one, and the slot inside it is token % block_size; the
 * pool is [num_blocks, block_size, kv_heads, dim]. The free list is a stack; a block's count says
 * how many block tables hold it, and only at 0 does it go back. A release of a free block must
 * fail and change nothing.
 */
#include "paging.h"

size_t l07_kv_offset(const int *block_table, int block_size, int kv_heads, int dim, int token,
                     int head, int d) {
  (void)block_table, (void)block_size, (void)kv_heads, (void)dim, (void)token, (void)head, (void)d;
  return 0;
}

void l07_pool_init(l07_pool *p, int num_blocks, int *free_list, int *ref) {
  p->num_blocks = num_blocks;
  p->free_list = free_list;
  p->ref = ref;
  p->n_free = 0;
}

int l07_pool_alloc(l07_pool *p) {
  (void)p;
  return 0;
}

int l07_pool_retain(l07_pool *p, int block) {
  (void)p, (void)block;
  return 0;
}

int l07_pool_release(l07_pool *p, int block) {
  (void)p, (void)block;
  return 0;
}
