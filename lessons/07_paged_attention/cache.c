/* Lesson 07's KV-cache manager (cache.h) over the block pool of paging.c. */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

const char *l07_status_text(l07_status s) {
  switch (s) {
    case L07_OK:
      return "ok";
    case L07_NO_BLOCKS:
      return "the pool has too few free blocks";
    case L07_NO_SEQ_SLOT:
      return "every sequence slot is in use";
    case L07_BAD_SEQ:
      return "no open sequence has this id";
    case L07_TOO_LONG:
      return "the sequence would outgrow its block-table row";
    case L07_BAD_ARG:
      return "an argument is out of range";
    case L07_OUT_OF_MEMORY:
      return "out of host memory";
  }
  return "unknown status";
}

l07_status l07_cache_init(l07_cache *c, int num_blocks, int block_size, int max_seqs,
                          int max_blocks) {
  memset(c, 0, sizeof *c);
  if (num_blocks < 1 || block_size < 1 || max_seqs < 1 || max_blocks < 1) return L07_BAD_ARG;
  int *free_list = (int *)malloc(sizeof(int) * (size_t)num_blocks);
  int *ref = (int *)malloc(sizeof(int) * (size_t)num_blocks);
  c->tables = (int *)malloc(sizeof(int) * (size_t)max_seqs * max_blocks);
  c->lens = (int *)malloc(sizeof(int) * (size_t)max_seqs);
  if (!free_list || !ref || !c->tables || !c->lens) {
    free(free_list), free(ref), free(c->tables), free(c->lens);
    memset(c, 0, sizeof *c);
    return L07_OUT_OF_MEMORY;
  }
  l07_pool_init(&c->pool, num_blocks, free_list, ref);
  c->block_size = block_size;
  c->max_seqs = max_seqs;
  c->max_blocks = max_blocks;
  for (size_t i = 0; i < (size_t)max_seqs * max_blocks; ++i) c->tables[i] = -1;
  for (int s = 0; s < max_seqs; ++s) c->lens[s] = -1;
  return L07_OK;
}

void l07_cache_destroy(l07_cache *c) {
  free(c->pool.free_list), free(c->pool.ref), free(c->tables), free(c->lens);
  memset(c, 0, sizeof *c);
}

static int is_open(const l07_cache *c, int seq) {
  return seq >= 0 && seq < c->max_seqs && c->lens && c->lens[seq] >= 0;
}

static int *row(l07_cache *c, int seq) {
  return c->tables + (size_t)seq * c->max_blocks;
}

l07_status l07_seq_open(l07_cache *c, int *seq) {
  for (int s = 0; s < c->max_seqs; ++s)
    if (c->lens[s] < 0) {
      c->lens[s] = 0;
      *seq = s;
      return L07_OK;
    }
  return L07_NO_SEQ_SLOT;
}

l07_status l07_seq_append(l07_cache *c, int seq, int n, int *slots, l07_copy *copy) {
  if (copy) copy->src = copy->dst = -1, copy->tokens = 0;
  if (!is_open(c, seq)) return L07_BAD_SEQ;
  if (n < 0) return L07_BAD_ARG;
  const int bs = c->block_size, len = c->lens[seq];
  int *t = row(c, seq);
  const long have = (len + bs - 1) / bs, need = ((long)len + n + bs - 1) / bs;
  if (need > c->max_blocks) return L07_TOO_LONG;
  /* A shared last block with free slots must be copied before anything is written into it. */
  const int cow = n > 0 && len % bs != 0 && c->pool.ref[t[have - 1]] > 1;
  if (need - have + cow > c->pool.n_free) return L07_NO_BLOCKS; /* all or nothing */
  if (cow) {
    const int fresh = l07_pool_alloc(&c->pool);
    if (copy) copy->src = t[have - 1], copy->dst = fresh, copy->tokens = len % bs;
    l07_pool_release(&c->pool, t[have - 1]); /* still held by the other sequences */
    t[have - 1] = fresh;
  }
  for (long b = have; b < need; ++b) t[b] = l07_pool_alloc(&c->pool);
  if (slots)
    for (int i = 0; i < n; ++i) slots[i] = t[(len + i) / bs] * bs + (len + i) % bs;
  c->lens[seq] = len + n;
  return L07_OK;
}

l07_status l07_seq_fork(l07_cache *c, int parent, int *child) {
  if (!is_open(c, parent)) return L07_BAD_SEQ;
  int s;
  l07_status st = l07_seq_open(c, &s);
  if (st != L07_OK) return st;
  const int blocks = (c->lens[parent] + c->block_size - 1) / c->block_size;
  memcpy(row(c, s), row(c, parent), sizeof(int) * (size_t)c->max_blocks);
  for (int b = 0; b < blocks; ++b) l07_pool_retain(&c->pool, row(c, s)[b]);
  c->lens[s] = c->lens[parent];
  *child = s;
  return L07_OK;
}

l07_status l07_seq_close(l07_cache *c, int seq) {
  if (!is_open(c, seq)) return L07_BAD_SEQ;
  int *t = row(c, seq);
  const int blocks = (c->lens[seq] + c->block_size - 1) / c->block_size;
  for (int b = 0; b < blocks; ++b) {
    l07_pool_release(&c->pool, t[b]);
    t[b] = -1;
  }
  c->lens[seq] = -1;
  return L07_OK;
}

l07_status l07_seq_truncate(l07_cache *c, int seq, int n) {
  if (!is_open(c, seq)) return L07_BAD_SEQ;
  const int len = c->lens[seq], bs = c->block_size;
  if (n < 0 || n > len) return L07_BAD_ARG;
  int *t = row(c, seq);
  const int have = (len + bs - 1) / bs, keep = (len - n + bs - 1) / bs;
  for (int b = keep; b < have; ++b) {
    l07_pool_release(&c->pool, t[b]);
    t[b] = -1;
  }
  c->lens[seq] = len - n;
  return L07_OK;
}

int l07_seq_len(const l07_cache *c, int seq) {
  return is_open(c, seq) ? c->lens[seq] : -1;
}

const int *l07_seq_table(const l07_cache *c, int seq) {
  return c->tables + (size_t)seq * c->max_blocks;
}

int l07_cache_free_blocks(const l07_cache *c) {
  return c->pool.n_free;
}
