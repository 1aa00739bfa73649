/* Version 3's plan on the host (serving_decode.h): which sequences share the pages of a prompt,
 * read from the block table alone, and the two passes that read those pages once for all of
 * them. Lesson 07's fork gives the children the parent's page numbers; its copy-on-write gives a
 * child its own copy of the page it writes next. So the pages two neighbours share are the equal
 * entries at the start of their two table rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flash_decoding.h" /* l06_sm_count() */
#include "serving_decode.h"

void l10_cascade_plan_free(l10_cascade_plan *p) {
  if (!p) return;
  free(p->pre_q_start), free(p->pre_q_lens), free(p->pre_seq_lens), free(p->pre_table);
  free(p->suf_seq_lens), free(p->suf_table), free(p->shared_keys);
  memset(p, 0, sizeof *p);
}

/* Entries at the start of table rows @p a and @p b that are equal, at most @p most. */
static int common_pages(const int *a, const int *b, int most) {
  int n = 0;
  while (n < most && a[n] == b[n]) ++n;
  return n;
}

int l10_cascade_plan_make(int batch, int max_blocks, int block_size, const int *q_start,
                          const int *q_lens, const int *seq_lens, const int *block_table,
                          l10_cascade_plan *p) {
  memset(p, 0, sizeof *p);
  if (batch < 1 || max_blocks < 1 || block_size < 1) return -1;
  p->pre_q_start = (int *)malloc(sizeof(int) * (size_t)batch);
  p->pre_q_lens = (int *)malloc(sizeof(int) * (size_t)batch);
  p->pre_seq_lens = (int *)malloc(sizeof(int) * (size_t)batch);
  p->pre_table = (int *)malloc(sizeof(int) * (size_t)batch * max_blocks);
  p->suf_seq_lens = (int *)malloc(sizeof(int) * (size_t)batch);
  p->suf_table = (int *)malloc(sizeof(int) * (size_t)batch * max_blocks);
  p->shared_keys = (int *)calloc((size_t)batch, sizeof(int));
  if (!p->pre_q_start || !p->pre_q_lens || !p->pre_seq_lens || !p->pre_table || !p->suf_seq_lens ||
      !p->suf_table || !p->shared_keys) {
    l10_cascade_plan_free(p);
    return -1;
  }
  /* Runs of neighbours whose rows start with the same page. A run shares the pages every member's
   * row has in common with the first's, and only whole pages that lie before each member's draft
   * tokens (every draft token sees every key before the first of them, under any mask). */
  for (int s = 0; s < batch;) {
    const int *first = block_table + (size_t)s * max_blocks;
    int e = s + 1, shared = (seq_lens[s] - q_lens[s]) / block_size;
    while (e < batch && q_start[e] == q_start[e - 1] + q_lens[e - 1]) {
      const int *row = block_table + (size_t)e * max_blocks;
      const int usable = (seq_lens[e] - q_lens[e]) / block_size;
      const int n = common_pages(first, row, usable < shared ? usable : shared);
      if (n == 0) break;
      shared = n, ++e;
    }
    if (e - s >= 2 && shared > 0) {
      /* The run's rows, packed into prefix-pass sequences of at most L10_MAX_SHARED_Q tokens. */
      for (int b = s; b < e;) {
        const int v = p->n_prefix++;
        p->pre_q_start[v] = q_start[b];
        p->pre_q_lens[v] = 0;
        p->pre_seq_lens[v] = shared * block_size;
        memcpy(p->pre_table + (size_t)v * max_blocks, first, sizeof(int) * (size_t)shared);
        for (int c = shared; c < max_blocks; ++c)
          p->pre_table[(size_t)v * max_blocks + c] = first[0];
        while (b < e && p->pre_q_lens[v] + q_lens[b] <= L10_MAX_SHARED_Q) {
          p->pre_q_lens[v] += q_lens[b];
          p->shared_keys[b++] = shared * block_size;
        }
        if (p->pre_q_lens[v] > p->max_prefix_q) p->max_prefix_q = p->pre_q_lens[v];
      }
      if (shared * block_size > p->max_prefix_keys) p->max_prefix_keys = shared * block_size;
    }
    s = e;
  }
  /* The suffix pass: each sequence from its first page it does not share. */
  for (int b = 0; b < batch; ++b) {
    const int skip = p->shared_keys[b] / block_size;
    const int *row = block_table + (size_t)b * max_blocks;
    int *out = p->suf_table + (size_t)b * max_blocks;
    for (int c = 0; c < max_blocks; ++c) out[c] = c + skip < max_blocks ? row[c + skip] : row[0];
    p->suf_seq_lens[b] = seq_lens[b] - p->shared_keys[b];
    if (p->suf_seq_lens[b] > p->max_suffix_keys) p->max_suffix_keys = p->suf_seq_lens[b];
  }
  return 0;
}

cudaError_t l10_cascade_upload(const l10_cascade_plan *p, int batch, int max_blocks,
                               l10_cascade_dev *d) {
  memset(d, 0, sizeof *d);
  const size_t nv = (size_t)(p->n_prefix > 0 ? p->n_prefix : 1);
  struct {
    int **dst;
    const int *src;
    size_t n;
  } parts[] = {{&d->pre_q_start, p->pre_q_start, nv},
               {&d->pre_q_lens, p->pre_q_lens, nv},
               {&d->pre_seq_lens, p->pre_seq_lens, nv},
               {&d->pre_table, p->pre_table, nv * max_blocks},
               {&d->suf_seq_lens, p->suf_seq_lens, (size_t)batch},
               {&d->suf_table, p->suf_table, (size_t)batch * max_blocks}};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i) {
    cudaError_t e = cudaMalloc((void **)parts[i].dst, parts[i].n * sizeof(int));
    if (e == cudaSuccess)
      e = cudaMemcpy(*parts[i].dst, parts[i].src, parts[i].n * sizeof(int), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
      l10_cascade_dev_free(d);
      return e;
    }
  }
  return cudaSuccess;
}

void l10_cascade_dev_free(l10_cascade_dev *d) {
  if (!d) return;
  cudaFree(d->pre_q_start), cudaFree(d->pre_q_lens), cudaFree(d->pre_seq_lens);
  cudaFree(d->pre_table), cudaFree(d->suf_seq_lens), cudaFree(d->suf_table);
  memset(d, 0, sizeof *d);
}

void l10_prefill_grid(int runs, int kv_heads, int group, int max_q, int max_keys, int slots,
                      int *units, int *chunks, int *tiles) {
  *units = (group * max_q + 127) / 128;
  const int per_chunk = runs * kv_heads * *units; /* blocks per chunk index */
  const int all = (max_keys + 127) / 128;         /* tiles of the longest run */
  const int fill = slots / per_chunk;
  const int want = fill < 1 ? 1 : fill > all ? all : fill;
  *tiles = (all + want - 1) / want;
  *chunks = (all + *tiles - 1) / *tiles; /* rounding up may leave fewer than wanted */
}

void l10_cascade_make(const l10_step *s, int total_q, const l10_cascade_plan *p,
                      const l10_cascade_dev *d, l10_cascade *c) {
  c->total_q = total_q;
  c->suffix = *s;
  c->suffix.seq_lens = d->suf_seq_lens;
  c->suffix.block_table = d->suf_table;
  c->suffix.max_seq_kv = p->max_suffix_keys;
  c->prefix = *s;
  c->prefix.batch = p->n_prefix;
  c->prefix.q_start = d->pre_q_start;
  c->prefix.q_lens = d->pre_q_lens;
  c->prefix.seq_lens = d->pre_seq_lens;
  c->prefix.block_table = d->pre_table;
  c->prefix.tree = NULL;
  c->prefix.mask = L10_MASK_NONE;
  c->prefix.max_q = p->max_prefix_q > 0 ? p->max_prefix_q : 1;
  c->prefix.max_seq_kv =
      p->max_prefix_keys > c->prefix.max_q ? p->max_prefix_keys : c->prefix.max_q;
  /* The prefix pass is prefill-shaped (the draft tokens of every forked sequence over one set of
   * keys): version 4's warpgroup where it runs (its occupancy query is 0 where it was not built or
   * the GPU cannot run sm_90a code), and then the suffix pass in the same launch; version 1
   * elsewhere. */
  c->wg = !s->k_scale && l10_wg_per_sm(s->dim) > 0;
  /* Where lesson 05's version 5 runs (dims 64 and 128, a bf16 cache, pages its TMA boxes can
   * read), the prefix pass is its prefill: blocks of 128 group rows a KV head, the shared keys cut
   * into as many chunks as fill the GPU once (at least one tile each). */
  c->pf = 0, c->pf_units = c->pf_chunks = c->pf_tiles = c->pf_pages = 0;
  if (p->n_prefix > 0 && !s->k_scale && s->block_size >= 8 && l10_prefill_per_sm(s->dim) > 0) {
    int pages = 0;
    for (size_t i = 0; i < (size_t)p->n_prefix * s->max_blocks; ++i)
      if (p->pre_table[i] + 1 > pages) pages = p->pre_table[i] + 1;
    l10_prefill_grid(p->n_prefix, s->kv_heads, s->heads / s->kv_heads, c->prefix.max_q,
                     p->max_prefix_keys, l06_sm_count() * l10_prefill_per_sm(s->dim), &c->pf_units,
                     &c->pf_chunks, &c->pf_tiles);
    c->pf_pages = pages, c->pf = 1;
  }
}

int l10_cascade_cpu(const l10_step *s, int chunk, const float *q, const int *q_start,
                    const int *q_lens, const uint32_t *tree, const float *k_cache,
                    const float *v_cache, const int *block_table, const int *seq_lens, int total_q,
                    float *o, float *lse) {
  l10_cascade_plan p;
  if (l10_cascade_plan_make(s->batch, s->max_blocks, s->block_size, q_start, q_lens, seq_lens,
                            block_table, &p) != 0)
    return -1;
  /* the suffix pass: every sequence over its own pages, into O and the LSE */
  l10_step suf = *s;
  suf.max_seq_kv = p.max_suffix_keys;
  int status = l10_cpu_model(&suf, chunk, q, q_start, q_lens, tree, k_cache, v_cache, p.suf_table,
                             p.suf_seq_lens, o, lse);
  if (status == 0 && p.n_prefix > 0) {
    /* the prefix pass: forked neighbours' rows together over their shared pages, no mask */
    const size_t rows = (size_t)total_q * s->heads;
    float *o_pre = (float *)malloc(sizeof(float) * rows * s->dim + 1);
    float *lse_pre = (float *)malloc(sizeof(float) * rows + 1);
    if (!o_pre || !lse_pre) status = -1;
    l10_step pre = *s;
    pre.batch = p.n_prefix, pre.mask = L10_MASK_NONE, pre.tree = NULL;
    pre.max_q = p.max_prefix_q, pre.max_seq_kv = p.max_prefix_keys;
    if (status == 0) {
      for (size_t i = 0; i < rows; ++i) lse_pre[i] = -INFINITY;
      status = l10_cpu_model(&pre, chunk, q, p.pre_q_start, p.pre_q_lens, NULL, k_cache, v_cache,
                             p.pre_table, p.pre_seq_lens, o_pre, lse_pre);
    }
    /* the merge: the drill's algebra, row by row */
    for (size_t i = 0; status == 0 && i < rows; ++i)
      l10_merge_state(&lse[i], o + i * s->dim, lse_pre[i], o_pre + i * s->dim, s->dim);
    free(o_pre), free(lse_pre);
  }
  l10_cascade_plan_free(&p);
  return status;
}
