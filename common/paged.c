/* A paged KV cache built from dense K and V. See attn_paged.h. */
#include "attn_paged.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_rng.h"

int attn_paged_build(const attn_problem *p, const float *k, const float *v, uint64_t seed,
                     attn_paged *c) {
  memset(c, 0, sizeof *c);
  if (p->block_size < 1 || p->batch < 1 || p->seq_kv < 0) return -1;
  const int bs = p->block_size;
  c->block_size = bs;
  c->kv_heads = p->kv_heads;
  c->dim = p->dim;
  c->max_blocks = (p->seq_kv + bs - 1) / bs;
  if (c->max_blocks < 1) c->max_blocks = 1;
  const long used = (long)p->batch * c->max_blocks;
  const long spare = used / 4 > 0 ? used / 4 : 1;
  if (used + spare > 0x7FFFFFFFL) return -1;
  c->num_blocks = (int)(used + spare);

  const size_t token = (size_t)p->kv_heads * p->dim; /* floats per token slot */
  const size_t cache_elems = (size_t)c->num_blocks * bs * token;
  c->k_cache = (float *)malloc(sizeof(float) * cache_elems);
  c->v_cache = (float *)malloc(sizeof(float) * cache_elems);
  c->block_table = (int *)malloc(sizeof(int) * (size_t)used);
  c->seq_lens = (int *)malloc(sizeof(int) * (size_t)p->batch);
  int *perm = (int *)malloc(sizeof(int) * (size_t)c->num_blocks);
  if (!c->k_cache || !c->v_cache || !c->block_table || !c->seq_lens || !perm) {
    free(perm);
    attn_paged_free(c);
    return -1;
  }
  /* Every slot starts as NaN: only slots a token owns are overwritten below. */
  for (size_t e = 0; e < cache_elems; ++e) c->k_cache[e] = c->v_cache[e] = NAN;

  /* A shuffled pool (Fisher-Yates): block j of sequence b is perm[b * max_blocks + j]. */
  attn_rng rng;
  attn_rng_seed(&rng, seed, 0xB10C4u);
  for (int i = 0; i < c->num_blocks; ++i) perm[i] = i;
  for (int i = c->num_blocks - 1; i > 0; --i) {
    int j = (int)attn_rng_below(&rng, (uint32_t)i + 1u);
    int t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int b = 0; b < p->batch; ++b) {
    c->seq_lens[b] = attn_kv_len(p, b);
    for (int j = 0; j < c->max_blocks; ++j) {
      int owned = j * bs < c->seq_lens[b]; /* blocks past the length stay unowned */
      c->block_table[(size_t)b * c->max_blocks + j] =
          owned ? perm[(size_t)b * c->max_blocks + j] : -1;
    }
    for (int t = 0; t < c->seq_lens[b]; ++t) {
      int blk = c->block_table[(size_t)b * c->max_blocks + t / bs];
      size_t dst = ((size_t)blk * bs + t % bs) * token;
      size_t src = ((size_t)b * p->seq_kv + t) * token;
      memcpy(c->k_cache + dst, k + src, sizeof(float) * token);
      memcpy(c->v_cache + dst, v + src, sizeof(float) * token);
    }
  }
  free(perm);
  return 0;
}

float attn_paged_at(const attn_paged *c, int which_v, int b, int t, int g, int d) {
  int blk = c->block_table[(size_t)b * c->max_blocks + t / c->block_size];
  size_t idx = (((size_t)blk * c->block_size + t % c->block_size) * c->kv_heads + g) * c->dim + d;
  return which_v ? c->v_cache[idx] : c->k_cache[idx];
}

void attn_paged_free(attn_paged *c) {
  free(c->k_cache);
  free(c->v_cache);
  free(c->block_table);
  free(c->seq_lens);
  memset(c, 0, sizeof *c);
}
