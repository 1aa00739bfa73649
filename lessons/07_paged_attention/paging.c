/* Lesson 07's page-table address and block pool (paging.h): the answers the checklist holds the
 * drill to. */
#include "paging.h"

size_t l07_kv_offset(const int *block_table, int block_size, int kv_heads, int dim, int token,
                     int head, int d) {
  const size_t block = (size_t)block_table[token / block_size]; /* the page table */
  const size_t slot = block * block_size + token % block_size;  /* the token's row in the pool */
  return (slot * kv_heads + head) * dim + d;
}

void l07_pool_init(l07_pool *p, int num_blocks, int *free_list, int *ref) {
  p->num_blocks = num_blocks;
  p->free_list = free_list;
  p->ref = ref;
  p->n_free = num_blocks;
  /* A stack: the last entry goes first, so fill it backwards to hand out 0, 1, 2, ... */
  for (int i = 0; i < num_blocks; ++i) {
    free_list[i] = num_blocks - 1 - i;
    ref[i] = 0;
  }
}

int l07_pool_alloc(l07_pool *p) {
  if (p->n_free == 0) return -1;
  const int b = p->free_list[--p->n_free];
  p->ref[b] = 1;
  return b;
}

int l07_pool_retain(l07_pool *p, int block) {
  if (block < 0 || block >= p->num_blocks || p->ref[block] == 0) return -1;
  p->ref[block]++;
  return 0;
}

int l07_pool_release(l07_pool *p, int block) {
  if (block < 0 || block >= p->num_blocks || p->ref[block] == 0) return -1;
  if (--p->ref[block] == 0) p->free_list[p->n_free++] = block;
  return 0;
}
