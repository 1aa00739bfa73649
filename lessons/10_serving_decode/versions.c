/* Lesson 10's table: version 1 (draft tokens over a paged cache) with the shape's mask, the same
 * kernel with a tree of draft tokens, version 2 (the same step over an FP8 cache), and lesson 07's
 * version 5 on the same cache as the yardstick. All are ATTN_CUSTOM: the step has a packed Q and a
 * count per sequence, which the harness's dense and paged kinds do not describe. One setup serves
 * them: it draws Q, K and V, builds lesson 07's kind of pool (shuffled pages, NaN in every slot no
 * token owns) and computes the fp64 reference on a sample of rows. Version 2's setup then appends
 * every slot of that pool to an FP8 pool (l10_fp8_append()), reads the codes and scales back, and
 * checks the kernel against the reference on the values the cache holds; its error against the
 * values before rounding is printed after the table, beside what the rounding alone gives. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_paged.h"
#include "attn_rng.h"
#include "serving_decode.h"

/** The table's rows. */
enum {
  ROW_DRAFT = 1,
  ROW_TREE = 2,
  ROW_FP8 = 3,
  ROW_CASCADE = 4,
  ROW_L07 = 5,
  ROW_L07_FORK = 6,
  ROW_WG = 7 /* version 4, after the yardsticks so that the rows before it keep their numbers */
};

#ifndef L10_HAVE_SM90A
/** 1 when CMake built version 4 (sm_90a, with lesson 05). */
#define L10_HAVE_SM90A 0
#endif

/** Keys every sequence of the cascade's rows (4 and 6) keeps to itself: the batch is forked from
 * sequence 0's prompt, all but this many keys of the shortest sequence shared (whole pages). */
#define FORK_OWN_KEYS 1024

/* The errors of O on the sampled rows, kept by check() for report(): version 2's against the fp64
 * reference on the values before rounding (`got`), that reference against the one on the rounded
 * values (`cache`: the error the cache's rounding alone causes), and version 1's (`bf16`). */
static struct {
  int have, have_bf16;
  double got_max_abs, got_rel_l2, cache_max_abs, cache_rel_l2;
  double bf16_max_abs, bf16_rel_l2; /* version 1's O (draft-tiles) against the same reference */
} g_fp8_err;

/* What a row holds between setup and teardown. */
typedef struct draft_state {
  int row;                /* ROW_* */
  l10_step st;            /* the step, device pointers */
  int total_q;            /* packed query rows */
  int *qs, *ql, *lens;    /* host: q_start, q_lens, seq_lens */
  uint32_t *tree;         /* host tree words, or NULL */
  float *ref_o, *ref_lse; /* the reference on the sampled rows (version 2: on the cache's values) */
  float *orig_o;          /* version 2: the reference on the values before rounding */
  unsigned char *sample;  /* [total_q]: rows checked */
  double kv_bytes;        /* K and V bytes the step must read */
  uint16_t *d_q, *d_k, *d_v, *d_o; /* d_k, d_v: e4m3 codes for version 2 */
  float *d_ks, *d_vs;              /* version 2: the scales */
  int *d_table, *d_lens, *d_qs, *d_ql;
  uint32_t *d_tree;
  float *d_lse;
  void *d_ws;
  size_t ws_bytes;
  l10_cascade_plan plan; /* version 3: the plan, its device arrays and its step */
  l10_cascade_dev cdev;
  l10_cascade casc;
} draft_state;

/* The program's token tree: a binary tree in breadth-first order, token i's parent (i - 1) / 2;
 * each token sees the path from the root to itself. */
static uint32_t tree_word(int i) {
  uint32_t w = 0;
  for (int t = i;; t = (t - 1) / 2) {
    w |= 1u << t;
    if (t == 0) break;
  }
  return w;
}

static const char *supports(const attn_problem *p, int row) {
  static char why[160];
  if (p->dim != 64 && p->dim != 128 && p->dim != 256)
    return "built for head dimensions 64, 128 and 256";
  if (p->seq_q > L10_MAX_DRAFT) {
    snprintf(why, sizeof why, "draft tokens per sequence (--seq) 1..%d", L10_MAX_DRAFT);
    return why;
  }
  if (p->block_size & (p->block_size - 1))
    return "block sizes that are powers of two (the page and the slot are a shift and a mask)";
  for (int b = 0; b < p->batch; ++b)
    if (attn_kv_len(p, b) < p->seq_q)
      return "every sequence holds its draft tokens: keys (--kv-seq, --kv-lens) >= --seq";
  if ((long long)p->batch * p->seq_q * p->heads > INT_MAX) return "more than 2^31 - 1 query rows";
  if (row == ROW_L07 || row == ROW_L07_FORK) {
    if (p->seq_q > L06_MAX_SEQ_Q) return "lesson 07's kernels take 1..8 query tokens";
    if (p->dim == 256) return "lesson 07's kernels are built for head dimensions 64 and 128";
  }
  if (row == ROW_FP8 && p->block_size < L10_FP8_MIN_BLOCK) {
    snprintf(why, sizeof why, "an FP8 cache needs pages of at least %d tokens (--block-size)",
             L10_FP8_MIN_BLOCK);
    return why;
  }
  return NULL;
}

static void teardown(void *state) {
  draft_state *s = (draft_state *)state;
  if (!s) return;
  free(s->qs), free(s->ql), free(s->lens), free(s->tree);
  free(s->ref_o), free(s->ref_lse), free(s->orig_o), free(s->sample);
  cudaFree(s->d_q), cudaFree(s->d_k), cudaFree(s->d_v), cudaFree(s->d_o);
  cudaFree(s->d_table), cudaFree(s->d_lens), cudaFree(s->d_qs), cudaFree(s->d_ql);
  cudaFree(s->d_tree), cudaFree(s->d_lse), cudaFree(s->d_ws);
  cudaFree(s->d_ks), cudaFree(s->d_vs);
  l10_cascade_plan_free(&s->plan);
  l10_cascade_dev_free(&s->cdev);
  free(s);
}

/* Rows the check compares: all of them for a small step, else each sequence's first and last
 * draft token and 64 more drawn from the seed. */
static void choose_rows(draft_state *s, const attn_problem *p, uint64_t seed) {
  double work = 0.0;
  for (int b = 0; b < p->batch; ++b) work += (double)s->ql[b] * s->lens[b];
  const int all = work * p->heads * p->dim <= 1e9;
  for (int r = 0; r < s->total_q; ++r) s->sample[r] = (unsigned char)all;
  if (all) return;
  for (int b = 0; b < p->batch; ++b) s->sample[s->qs[b]] = s->sample[s->qs[b] + s->ql[b] - 1] = 1;
  attn_rng rng;
  attn_rng_seed(&rng, seed, 0x5A3Bu);
  for (int i = 0; i < 64; ++i) s->sample[attn_rng_below(&rng, (uint32_t)s->total_q)] = 1;
}

static cudaError_t upload(void **dst, const void *src, size_t bytes) {
  ATTN_TRY(cudaMalloc(dst, bytes ? bytes : 1));
  return cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice);
}

/* Version 2's cache: every slot of the bf16 pools on the device (s->d_k, s->d_v) appended to e4m3
 * pools by l10_fp8_append(), which replace them; the codes and scales read back into the host's
 * float pools @p k and @p v as the values the cache holds (code x scale: NaN where a slot held
 * NaN, which no token owns). */
static cudaError_t fp8_cache(draft_state *s, const attn_problem *p, int num_blocks, float *k,
                             float *v) {
  const int bs = p->block_size, kvh = p->kv_heads, D = p->dim;
  const size_t slots = (size_t)num_blocks * bs, vals = slots * kvh * D, rows = slots * kvh;
  if (slots > INT_MAX) return cudaErrorInvalidValue;
  int *slot = (int *)malloc(sizeof(int) * slots);
  uint8_t *codes = (uint8_t *)malloc(vals);
  float *scales = (float *)malloc(sizeof(float) * rows);
  void *d_slot = NULL, *k8 = NULL, *v8 = NULL;
  cudaError_t e = slot && codes && scales ? cudaSuccess : cudaErrorMemoryAllocation;
  for (size_t i = 0; e == cudaSuccess && i < slots; ++i) slot[i] = (int)i;
  if (e == cudaSuccess) e = upload(&d_slot, slot, sizeof(int) * slots);
  if (e == cudaSuccess) e = cudaMalloc(&k8, vals);
  if (e == cudaSuccess) e = cudaMalloc(&v8, vals);
  if (e == cudaSuccess) e = cudaMalloc((void **)&s->d_ks, sizeof(float) * rows);
  if (e == cudaSuccess) e = cudaMalloc((void **)&s->d_vs, sizeof(float) * rows);
  if (e == cudaSuccess)
    e = l10_fp8_append(s->d_k, s->d_v, (const int *)d_slot, (int)slots, kvh, D, bs, k8, v8, s->d_ks,
                       s->d_vs, 0);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  for (int which = 0; e == cudaSuccess && which < 2; ++which) {
    e = cudaMemcpy(codes, which ? v8 : k8, vals, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
      e = cudaMemcpy(scales, which ? s->d_vs : s->d_ks, sizeof(float) * rows,
                     cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
      l10_fp8_dequantise_pool(codes, scales, num_blocks, bs, kvh, D, which ? v : k);
  }
  free(slot), free(codes), free(scales);
  cudaFree(d_slot);
  if (e == cudaSuccess) { /* the e4m3 pools take the bf16 pools' place */
    cudaFree(s->d_k), cudaFree(s->d_v);
    s->d_k = (uint16_t *)k8, s->d_v = (uint16_t *)v8;
  } else {
    cudaFree(k8), cudaFree(v8);
  }
  return e;
}

static cudaError_t setup(void **state, const attn_setup_ctx *ctx, const char **skip) {
  *state = NULL;
  const attn_problem *p = ctx->problem;
  const int row = ctx->version;
  const char *why = supports(p, row);
  if (!why && row == ROW_WG && !L10_HAVE_SM90A)
    why = "not built: sm_90a code, built with lesson 05 (ATTN_ARCHS_HOPPER=90a)";
  if (!why && row == ROW_WG && attn_device_sm(ctx->device) != 90)
    why = "sm_90a code (wgmma): runs on sm_90 GPUs (H100, H200) only";
  if (why) {
    *skip = why;
    return cudaSuccess;
  }
  draft_state *s = (draft_state *)calloc(1, sizeof *s);
  if (!s) return cudaErrorMemoryAllocation;
  *state = s;
  s->row = row;
  const int B = p->batch, H = p->heads, D = p->dim;
  s->total_q = B * p->seq_q;
  s->qs = (int *)malloc(sizeof(int) * B);
  s->ql = (int *)malloc(sizeof(int) * B);
  s->lens = (int *)malloc(sizeof(int) * B);
  s->sample = (unsigned char *)malloc((size_t)s->total_q);
  const size_t qn = (size_t)s->total_q * H * D;
  float *q = (float *)malloc(qn * sizeof(float) + 1);
  const size_t kvn = (size_t)B * p->seq_kv * p->kv_heads * D;
  float *k = (float *)malloc(kvn * sizeof(float) + 1),
        *v = (float *)malloc(kvn * sizeof(float) + 1);
  s->ref_o = (float *)malloc(qn * sizeof(float) + 1);
  s->ref_lse = (float *)malloc((size_t)s->total_q * H * sizeof(float) + 1);
  if (!s->qs || !s->ql || !s->lens || !s->sample || !q || !k || !v || !s->ref_o || !s->ref_lse) {
    free(q), free(k), free(v);
    return cudaErrorMemoryAllocation;
  }
  for (int b = 0; b < B; ++b)
    s->qs[b] = b * p->seq_q, s->ql[b] = p->seq_q, s->lens[b] = attn_kv_len(p, b);
  const uint64_t seed = ctx->options->seed;
  attn_fill_attention_input(q, qn, seed, 1);
  /* Rows 4 and 6: every sequence forked from sequence 0's prompt. Its first `forked` keys are
   * copied into the others' (dense layout [batch, seq_kv, kv_heads, dim]), and after the pool is
   * built their table rows point at sequence 0's pages for them, as lesson 07's fork leaves it.
   * Only the keys a sequence owns are drawn (streams of their own), which at 32 sequences of 33k
   * keys saves most of the setup's time. */
  const int fork = row == ROW_CASCADE || row == ROW_L07_FORK;
  int forked = 0;
  if (fork && B >= 2) {
    int shortest = s->lens[0];
    for (int b = 1; b < B; ++b) shortest = s->lens[b] < shortest ? s->lens[b] : shortest;
    const int own = FORK_OWN_KEYS > p->seq_q ? FORK_OWN_KEYS : p->seq_q;
    forked = shortest > own ? (shortest - own) / p->block_size * p->block_size : 0;
  }
  if (forked == 0) {
    attn_fill_attention_input(k, kvn, seed, 2);
    attn_fill_attention_input(v, kvn, seed, 3);
  } else {
    const size_t per_key = (size_t)p->kv_heads * D, per_seq = (size_t)p->seq_kv * per_key;
    const size_t shared = (size_t)forked * per_key;
    attn_fill_attention_input(k, per_seq, seed, 2);
    attn_fill_attention_input(v, per_seq, seed, 3);
    for (int b = 1; b < B; ++b) {
      memcpy(k + b * per_seq, k, sizeof(float) * shared);
      memcpy(v + b * per_seq, v, sizeof(float) * shared);
      attn_fill_attention_input(k + b * per_seq + shared, per_seq - shared, seed, 1000u + 2u * b);
      attn_fill_attention_input(v + b * per_seq + shared, per_seq - shared, seed, 1001u + 2u * b);
    }
  }
  attn_paged c;
  const int built = attn_paged_build(p, k, v, seed, &c);
  free(k), free(v);
  if (built != 0) {
    free(q);
    return cudaErrorMemoryAllocation;
  }
  for (int b = 1; b < B; ++b)
    for (int j = 0; j < forked / p->block_size; ++j)
      c.block_table[(size_t)b * c.max_blocks + j] = c.block_table[j];
  l10_mask mask = p->causal ? L10_MASK_CAUSAL : L10_MASK_NONE;
  if (row == ROW_TREE) {
    mask = L10_MASK_TREE;
    s->tree = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)s->total_q);
    if (!s->tree) {
      free(q), attn_paged_free(&c);
      return cudaErrorMemoryAllocation;
    }
    for (int r = 0; r < s->total_q; ++r) s->tree[r] = tree_word(r % p->seq_q);
  }
  l10_step *st = &s->st;
  *st = (l10_step){.batch = B,
                   .heads = H,
                   .kv_heads = p->kv_heads,
                   .dim = D,
                   .max_q = p->seq_q,
                   .max_seq_kv = p->seq_kv,
                   .max_blocks = c.max_blocks,
                   .block_size = p->block_size,
                   .mask = mask,
                   .scale = attn_scale(p)};
  /* the bytes the step reads: bf16 values, or e4m3 codes and a 4-byte scale per key row */
  const double row_bytes = row == ROW_FP8 ? D + 4.0 : 2.0 * D;
  s->kv_bytes = 0.0;
  for (int b = 0; b < B; ++b) s->kv_bytes += 2.0 * s->lens[b] * p->kv_heads * row_bytes;
  /* rows 4 and 6: the pages the step touches, the shared ones once */
  s->kv_bytes -= 2.0 * (B - 1) * (double)forked * p->kv_heads * row_bytes;
  choose_rows(s, p, seed);
  /* the reference reads the host pool through the same table (NaN in every slot no token owns) */
  l10_reference(st, q, s->qs, s->ql, s->tree, c.k_cache, c.v_cache, c.block_table, c.seq_lens,
                s->sample, s->ref_o, s->ref_lse);
  const size_t pool = (size_t)c.num_blocks * c.block_size * p->kv_heads * D;
  cudaError_t e = attn_upload((void **)&s->d_q, q, qn, ATTN_BF16);
  if (e == cudaSuccess) e = attn_upload((void **)&s->d_k, c.k_cache, pool, ATTN_BF16);
  if (e == cudaSuccess) e = attn_upload((void **)&s->d_v, c.v_cache, pool, ATTN_BF16);
  if (e == cudaSuccess)
    e = upload((void **)&s->d_table, c.block_table, sizeof(int) * (size_t)B * c.max_blocks);
  if (e == cudaSuccess && row == ROW_FP8) {
    /* the reference so far is on the values before rounding: keep it, and check the kernel
     * against the one on the values the FP8 cache holds */
    s->orig_o = (float *)malloc(qn * sizeof(float) + 1);
    e = s->orig_o ? fp8_cache(s, p, c.num_blocks, c.k_cache, c.v_cache) : cudaErrorMemoryAllocation;
    if (e == cudaSuccess) {
      memcpy(s->orig_o, s->ref_o, qn * sizeof(float));
      st->k_scale = s->d_ks, st->v_scale = s->d_vs;
      l10_reference(st, q, s->qs, s->ql, s->tree, c.k_cache, c.v_cache, c.block_table, c.seq_lens,
                    s->sample, s->ref_o, s->ref_lse);
    }
  }
  free(q);
  if (e == cudaSuccess && row == ROW_CASCADE) {
    /* version 3's plan finds the shared pages in the table, as a server's would */
    if (l10_cascade_plan_make(B, c.max_blocks, p->block_size, s->qs, s->ql, s->lens, c.block_table,
                              &s->plan) != 0)
      e = cudaErrorMemoryAllocation;
    if (e == cudaSuccess) e = l10_cascade_upload(&s->plan, B, c.max_blocks, &s->cdev);
  }
  attn_paged_free(&c);
  if (e == cudaSuccess) e = upload((void **)&s->d_lens, s->lens, sizeof(int) * B);
  if (e == cudaSuccess) e = upload((void **)&s->d_qs, s->qs, sizeof(int) * B);
  if (e == cudaSuccess) e = upload((void **)&s->d_ql, s->ql, sizeof(int) * B);
  if (e == cudaSuccess && s->tree)
    e = upload((void **)&s->d_tree, s->tree, sizeof(uint32_t) * (size_t)s->total_q);
  if (e == cudaSuccess) e = cudaMalloc((void **)&s->d_o, qn * sizeof(uint16_t));
  if (e == cudaSuccess) e = cudaMalloc((void **)&s->d_lse, (size_t)s->total_q * H * sizeof(float));
  if (e != cudaSuccess) return e;
  st->q = s->d_q, st->q_start = s->d_qs, st->q_lens = s->d_ql, st->tree = s->d_tree;
  st->k_cache = s->d_k, st->v_cache = s->d_v, st->block_table = s->d_table;
  st->seq_lens = s->d_lens;
  if (row == ROW_CASCADE) l10_cascade_make(st, s->total_q, &s->plan, &s->cdev, &s->casc);
  s->ws_bytes =
      row == ROW_L07 || row == ROW_L07_FORK
          ? l07_paged_workspace_bytes(5, B, H, p->kv_heads, p->seq_q, p->seq_kv, p->kv_lens, D)
      : row == ROW_CASCADE ? l10_cascade_workspace_bytes(&s->casc)
      : row == ROW_WG      ? l10_wg_workspace_bytes(st)
                           : l10_draft_workspace_bytes(st);
  if (s->ws_bytes) {
    ATTN_TRY(cudaMalloc(&s->d_ws, s->ws_bytes));
    ATTN_TRY(cudaMemset(s->d_ws, 0, s->ws_bytes));
  }
  return cudaSuccess;
}

static cudaError_t poison(void *state, cudaStream_t stream) {
  draft_state *s = (draft_state *)state;
  const size_t rows = (size_t)s->total_q * s->st.heads;
  ATTN_TRY(attn_poison(s->d_o, rows * s->st.dim * sizeof(uint16_t), stream));
  return attn_poison(s->d_lse, rows * sizeof(float), stream);
}

static cudaError_t launch(void *state, cudaStream_t stream) {
  draft_state *s = (draft_state *)state;
  const l10_step *st = &s->st;
  if (s->row == ROW_FP8) return l10_fp8(st, s->d_o, s->d_lse, s->d_ws, s->ws_bytes, stream);
  if (s->row == ROW_WG) return l10_wg(st, s->d_o, s->d_lse, s->d_ws, s->ws_bytes, stream);
  if (s->row == ROW_CASCADE)
    return l10_cascade_run(&s->casc, s->d_o, s->d_lse, s->d_ws, s->ws_bytes, stream);
  if (s->row != ROW_L07 && s->row != ROW_L07_FORK)
    return l10_draft(st, s->d_o, s->d_lse, s->d_ws, s->ws_bytes, stream);
  /* lesson 07's version 5: Q [batch, seq_q, heads, dim] is the packed Q when every count is equal
   */
  int any_short = 0;
  for (int b = 0; b < st->batch; ++b) any_short |= s->lens[b] != st->max_seq_kv;
  return (st->dim == 64 ? l07_paged_balance_d64 : l07_paged_balance_d128)(
      st->q, st->k_cache, st->v_cache, st->block_table, st->seq_lens, any_short ? s->lens : NULL,
      s->d_o, s->d_lse, (float *)s->d_ws, s->ws_bytes, st->batch, st->heads, st->kv_heads,
      st->max_q, st->max_seq_kv, st->max_blocks, st->block_size, st->mask == L10_MASK_CAUSAL,
      st->scale, stream);
}

/* O and the log-sum-exp of the sampled rows against the reference; every element scanned for
 * poison and NaN. The verdict with the larger margin is the row's. */
static cudaError_t check(void *state, attn_verdict *v) {
  draft_state *s = (draft_state *)state;
  const int H = s->st.heads, D = s->st.dim;
  const size_t rows = (size_t)s->total_q * H;
  uint16_t *o = (uint16_t *)malloc(rows * D * sizeof(uint16_t) + 1);
  float *lse = (float *)malloc(rows * sizeof(float) + 1);
  cudaError_t e = o && lse ? cudaSuccess : cudaErrorMemoryAllocation;
  if (e == cudaSuccess) e = cudaMemcpy(o, s->d_o, rows * D * 2, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(lse, s->d_lse, rows * 4, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) {
    attn_verdict vl;
    attn_verdict_init(v, ATTN_BF16);
    attn_verdict_init_lse(&vl, ATTN_BF16);
    attn_verdict_scan(v, ATTN_BF16, o, rows * D, 0);
    attn_verdict_scan(&vl, ATTN_F32, lse, rows, 1);
    const int Q = s->st.max_q;
    for (int r = 0; r < s->total_q; ++r) {
      if (!s->sample[r]) continue;
      for (int h = 0; h < H; ++h) {
        const size_t i = (size_t)r * H + h;
        for (int d = 0; d < D; ++d)
          attn_verdict_add(v, attn_load(ATTN_BF16, o, i * D + d), s->ref_o[i * D + d]);
        /* lesson 07 writes the log-sum-exp as [batch, heads, seq_q] */
        const size_t li =
            s->row == ROW_L07 || s->row == ROW_L07_FORK ? ((size_t)(r / Q) * H + h) * Q + r % Q : i;
        attn_verdict_add(&vl, lse[li], s->ref_lse[i]);
      }
    }
    attn_verdict_finish(v);
    attn_verdict_finish(&vl);
    if (s->row == ROW_DRAFT) {
      g_fp8_err.have_bf16 = 1;
      g_fp8_err.bf16_max_abs = v->max_abs, g_fp8_err.bf16_rel_l2 = v->rel_l2;
    }
    if (s->row == ROW_FP8) { /* the errors against the values before rounding, for report() */
      attn_verdict got, cache;
      attn_verdict_init(&got, ATTN_BF16);
      attn_verdict_init(&cache, ATTN_BF16);
      for (int r = 0; r < s->total_q; ++r)
        for (size_t i = (size_t)r * H * D; s->sample[r] && i < (size_t)(r + 1) * H * D; ++i) {
          attn_verdict_add(&got, attn_load(ATTN_BF16, o, i), s->orig_o[i]);
          attn_verdict_add(&cache, s->ref_o[i], s->orig_o[i]);
        }
      attn_verdict_finish(&got);
      attn_verdict_finish(&cache);
      g_fp8_err.have = 1;
      g_fp8_err.got_max_abs = got.max_abs, g_fp8_err.got_rel_l2 = got.rel_l2;
      g_fp8_err.cache_max_abs = cache.max_abs, g_fp8_err.cache_rel_l2 = cache.rel_l2;
    }
    if (attn_verdict_margin(&vl) > attn_verdict_margin(v)) *v = vl;
  }
  free(o), free(lse);
  return e;
}

/* The bytes a step must move: K and V once, Q read and O written. */
static void work(void *state, attn_work *w) {
  draft_state *s = (draft_state *)state;
  memset(w, 0, sizeof *w);
  w->bytes = s->kv_bytes + (double)s->total_q * s->st.heads * s->st.dim * 2 * 2;
}

static void footprint(const attn_problem *p, double *device_bytes, double *host_bytes) {
  const double blocks = (double)p->batch * ((p->seq_kv + p->block_size - 1) / p->block_size);
  const double pool = 1.25 * blocks * p->block_size * p->kv_heads * p->dim;
  const double qn = (double)p->batch * p->seq_q * p->heads * p->dim;
  /* version 2 holds the bf16 and the e4m3 pools at once while it appends (and a slot list) */
  *device_bytes = 2.0 * pool * 2 + 2.0 * pool * 1.1 + 2.0 * qn * 2;
  *host_bytes =
      4.0 * (2.0 * pool + 2.0 * (double)p->batch * p->seq_kv * p->kv_heads * p->dim + 4.0 * qn) +
      1.1 * pool;
}

static const attn_custom kDraft = {.setup = setup,
                                   .poison = poison,
                                   .launch = launch,
                                   .check = check,
                                   .work = work,
                                   .teardown = teardown,
                                   .footprint = footprint};

static const attn_version kVersions[L10_VERSIONS] = {
    {.name = "draft-tiles",
     .summary = "every draft token of a KV group in one block: the keys read once for 64 rows",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .custom = &kDraft},
    {.name = "draft-tree",
     .summary = "version 1 with a binary tree of draft tokens (each sees its path to the root)",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .custom = &kDraft},
    {.name = "fp8-cache",
     .summary = "version 1 over e4m3 pages, a scale per key row: half the bytes, f16 on the mma",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 89,
     .writes_lse = 1,
     .varlen = 1,
     .custom = &kDraft},
    {.name = "cascade",
     .summary = "the batch forked from one prompt: its shared pages read once for all of it, "
                "then each sequence's own, the states merged",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .custom = &kDraft},
    {.name = "l07-balance",
     .summary = "yardstick: lesson 07's version 5 on the same cache (16-row tiles, one block each)",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .custom = &kDraft},
    {.name = "l07-forked",
     .summary = "yardstick: lesson 07's version 5 on the cascade's forked cache",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .custom = &kDraft},
    {.name = "draft-wgmma",
     .summary = "version 4: version 1's unit of 64 rows as one warpgroup, S and P V by wgmma "
                "(sm_90a)",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .varlen = 1,
     .custom = &kDraft},
};

/* A CPU model's O and log-sum-exp (@p o, @p lse: @p rows rows of @p dim) against the reference's
 * (@p ro, @p rl): prints "cpu model of WHAT: PASS" (or FAIL) and both verdicts, and returns 0 when
 * both pass. */
static int model_verdict(const char *what, const float *o, const float *lse, const float *ro,
                         const float *rl, size_t rows, int dim) {
  attn_verdict vo, vl;
  attn_verdict_init(&vo, ATTN_F32);
  attn_verdict_init_lse(&vl, ATTN_F32);
  for (size_t i = 0; i < rows * dim; ++i) attn_verdict_add(&vo, o[i], ro[i]);
  for (size_t i = 0; i < rows; ++i) attn_verdict_add(&vl, lse[i], rl[i]);
  attn_verdict_finish(&vo);
  attn_verdict_finish(&vl);
  const int status = !(vo.pass && vl.pass);
  printf("cpu model of %s: %s\n  O:   ", what, status ? "FAIL" : "PASS");
  attn_verdict_print(&vo, stdout);
  printf("\n  LSE: ");
  attn_verdict_print(&vl, stdout);
  printf("\n");
  return status;
}

/* Version 2 on the CPU: the pools @p k and @p v quantised row by row as the append does (codes'
 * values and a scale per key row), the model with those scales against the reference on the
 * cache's values (code x scale), and that reference against @p ref (the one on the values before
 * rounding): the rounding's own error. @p pool_blocks: the pool's pages. Returns 0 when the model
 * passes. */
static int cpu_model_fp8(const l10_step *st, int chunk, const float *q, const int *qs,
                         const int *ql, const uint32_t *tree, const float *k, const float *v,
                         int pool_blocks, const int *table, const int *lens, const float *ref) {
  const int D = st->dim, KVH = st->kv_heads, BS = st->block_size;
  const size_t rows = (size_t)pool_blocks * BS * KVH; /* key rows of the pool */
  const size_t on = (size_t)(qs[st->batch - 1] + ql[st->batch - 1]) * st->heads * D;
  const size_t ln = on / D;
  float *kc = (float *)malloc(rows * D * 4), *vc = (float *)malloc(rows * D * 4);
  float *kd = (float *)malloc(rows * D * 4), *vd = (float *)malloc(rows * D * 4);
  float *ks = (float *)malloc(rows * 4), *vs = (float *)malloc(rows * 4);
  float *o3 = (float *)malloc(on * 4), *l3 = (float *)malloc(ln * 4);
  float *o4 = (float *)malloc(on * 4), *l4 = (float *)malloc(ln * 4);
  int status = 1;
  if (kc && vc && kd && vd && ks && vs && o3 && l3 && o4 && l4 &&
      l10_fp8_quantise_pool(k, pool_blocks, BS, KVH, D, kc, ks, kd) == 0 &&
      l10_fp8_quantise_pool(v, pool_blocks, BS, KVH, D, vc, vs, vd) == 0) {
    l10_reference(st, q, qs, ql, tree, kd, vd, table, lens, NULL, o3, l3);
    l10_step st8 = *st;
    st8.k_scale = ks, st8.v_scale = vs;
    if (l10_cpu_model(&st8, chunk, q, qs, ql, tree, kc, vc, table, lens, o4, l4) == 0) {
      status = model_verdict(
          "version 2 (the same step over an FP8 copy of the pool: K scales on "
          "the scores, V scales in P over a running maximum)",
          o4, l4, o3, l3, ln, D);
      attn_verdict vr;
      attn_verdict_init(&vr, ATTN_BF16);
      for (size_t i = 0; i < on; ++i) attn_verdict_add(&vr, o3[i], ref[i]);
      attn_verdict_finish(&vr);
      printf(
          "the FP8 rounding alone (the reference on the cache's values against the one before "
          "rounding): O max_abs %.2e  rel_l2 %.2e\n",
          vr.max_abs, vr.rel_l2);
    }
  }
  free(kc), free(vc), free(kd), free(vd), free(ks), free(vs), free(o3), free(l3), free(o4);
  free(l4);
  return status;
}

/* Version 3 on the CPU: four sequences, the first three forked from one prompt (the second and
 * third rows of the table start with the first row's 32 pages), the fourth on its own, causal;
 * the cascade's model (the plan, both passes, the merge) against the reference. Returns 0 when it
 * passes. */
static int cpu_model_cascade(uint64_t seed) {
  enum { B = 4, H = 8, KVH = 2, D = 64, BS = 16, MAXB = 60, SHARED = 32 };
  static const int lens[B] = {700, 650, 900, 129}, ql[B] = {3, 1, 5, 2}, qs[B] = {0, 3, 4, 9};
  const int total_q = 11, pool_blocks = B * MAXB + 3;
  const size_t pool = (size_t)pool_blocks * BS * KVH * D, on = (size_t)total_q * H * D;
  float *q = (float *)malloc(sizeof(float) * on), *k = (float *)malloc(sizeof(float) * pool);
  float *v = (float *)malloc(sizeof(float) * pool), *o1 = (float *)malloc(sizeof(float) * on);
  float *o2 = (float *)malloc(sizeof(float) * on), *l1 = (float *)malloc(sizeof(float) * on / D);
  float *l2 = (float *)malloc(sizeof(float) * on / D);
  int *table = (int *)malloc(sizeof(int) * B * MAXB);
  int status = 1;
  if (q && k && v && o1 && o2 && l1 && l2 && table) {
    attn_fill_attention_input(q, on, seed, 1);
    attn_fill_attention_input(k, pool, seed, 2);
    attn_fill_attention_input(v, pool, seed, 3);
    for (int j = 0; j < B * MAXB; ++j) table[j] = (j * 7 + 3) % pool_blocks; /* scattered */
    for (int b = 1; b < 3; ++b) /* forked: the first SHARED pages are sequence 0's */
      for (int j = 0; j < SHARED; ++j) table[b * MAXB + j] = table[j];
    const l10_step st = {.batch = B,
                         .heads = H,
                         .kv_heads = KVH,
                         .dim = D,
                         .max_q = 5,
                         .max_seq_kv = 900,
                         .max_blocks = MAXB,
                         .block_size = BS,
                         .mask = L10_MASK_CAUSAL,
                         .scale = 0.125f};
    l10_reference(&st, q, qs, ql, NULL, k, v, table, lens, NULL, o1, l1);
    l10_cascade_plan plan;
    if (l10_cascade_plan_make(B, MAXB, BS, qs, ql, lens, table, &plan) == 0) {
      char what[320];
      snprintf(what, sizeof what,
               "version 3 (lengths 700, 650, 900, 129; the first three forked from one prompt; "
               "causal): the plan reads %d shared keys once for %d draft tokens (%d prefix pass "
               "sequence%s), then %d keys at most per sequence",
               plan.max_prefix_keys, plan.max_prefix_q, plan.n_prefix,
               plan.n_prefix == 1 ? "" : "s", plan.max_suffix_keys);
      if (l10_cascade_cpu(&st, 256, q, qs, ql, NULL, k, v, table, lens, total_q, o2, l2) == 0)
        status = model_verdict(what, o2, l2, o1, l1, on / D, D);
      l10_cascade_plan_free(&plan);
    }
  }
  free(q), free(k), free(v), free(o1), free(o2), free(l1), free(l2), free(table);
  return status;
}

/* The CPU part: the mask rule on a small tree, and version 1's CPU model against the reference on
 * an awkward step (GQA 4:1, lengths 700, 5 and 129, 3, 1 and 5 draft tokens, a tree), then
 * versions 2 and 3's models. */
static int cpu_part(const attn_options *o) {
  printf("a binary tree of 7 draft tokens after 4 keys: what each token sees (x) of keys 0..10\n");
  for (int i = 0; i < 7; ++i) {
    printf("  token %d: ", i);
    for (int key = 0; key < 11; ++key)
      putchar(l10_sees(L10_MASK_TREE, tree_word(i), i, 7, 11, key) ? 'x' : '.');
    putchar('\n');
  }
  enum { B = 3, H = 8, KVH = 2, D = 64, BS = 16, MAXB = 44 };
  static const int lens[B] = {700, 5, 129}, ql[B] = {3, 1, 5}, qs[B] = {0, 3, 4};
  const int total_q = 9, pool_blocks = B * MAXB + 3;
  const size_t pool = (size_t)pool_blocks * BS * KVH * D;
  float *q = (float *)malloc(sizeof(float) * total_q * H * D);
  float *k = (float *)malloc(sizeof(float) * pool), *v = (float *)malloc(sizeof(float) * pool);
  float *o1 = (float *)malloc(sizeof(float) * total_q * H * D);
  float *o2 = (float *)malloc(sizeof(float) * total_q * H * D);
  float *l1 = (float *)malloc(sizeof(float) * total_q * H);
  float *l2 = (float *)malloc(sizeof(float) * total_q * H);
  int *table = (int *)malloc(sizeof(int) * B * MAXB);
  uint32_t tree[9];
  int status = 1;
  if (q && k && v && o1 && o2 && l1 && l2 && table) {
    attn_fill_attention_input(q, (size_t)total_q * H * D, o->seed, 1);
    attn_fill_attention_input(k, pool, o->seed, 2);
    attn_fill_attention_input(v, pool, o->seed, 3);
    for (int j = 0; j < B * MAXB; ++j) table[j] = (j * 7 + 3) % pool_blocks; /* scattered */
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < ql[b]; ++i) tree[qs[b] + i] = tree_word(i);
    const l10_step st = {.batch = B,
                         .heads = H,
                         .kv_heads = KVH,
                         .dim = D,
                         .max_q = 5,
                         .max_seq_kv = 700,
                         .max_blocks = MAXB,
                         .block_size = BS,
                         .mask = L10_MASK_TREE,
                         .scale = 0.125f};
    l10_reference(&st, q, qs, ql, tree, k, v, table, lens, NULL, o1, l1);
    /* The chunk the kernels' split takes on the device for a grid of 3 chunks a sequence at the
     * limit (T = 9, 12 items): the even share of 834 keys over 9, raised to the minimum. */
    const int chunk = l10_split_chunk(B * (3 + 1), B, lens, st.max_seq_kv);
    if (l10_cpu_model(&st, chunk, q, qs, ql, tree, k, v, table, lens, o2, l2) == 0) {
      char what[160];
      snprintf(what, sizeof what,
               "version 1 (lengths 700, 5, 129; 3, 1, 5 draft tokens in a tree; GQA 4:1; chunks "
               "of %d keys)",
               chunk);
      status = model_verdict(what, o2, l2, o1, l1, (size_t)total_q * H, D);
    }
    if (status == 0)
      status = cpu_model_fp8(&st, chunk, q, qs, ql, tree, k, v, pool_blocks, table, lens, o1);
  }
  if (status == 0) { /* the split on the device, modelled on a step whose lengths differ */
    static const int mixed[8] = {32768, 1024, 1024, 1024, 1024, 1024, 1024, 1024};
    const int items =
        8 * (4 + 1); /* 4 chunks a sequence at the limit fill the GPU, one more each */
    const int c = l10_split_chunk(items, 8, mixed, 32768);
    printf(
        "the split on the device (split_device.cuh), modelled: 32k + 7 x 1k keys over %d items "
        "(4 chunks a sequence at the limit, one more each): chunks of %d keys, the long sequence "
        "in %d of them, %d items used; cut by the limits alone it would be 4 chunks of 8192\n",
        items, c, l10_split_count(c, 1, mixed), l10_split_count(c, 8, mixed));
  }
  if (status == 0) status = cpu_model_cascade(o->seed);
  free(q), free(k), free(v), free(o1), free(o2), free(l1), free(l2), free(table);
  return status;
}

/* One serving loop for the report: its line of the table, 0 when it ran and passed. */
static int serve_line(const char *what, const l10_serve_config *cfg, l10_serve_result *res) {
  char err[200];
  if (l10_serve_gpu(cfg, res, err, sizeof err) != 0) {
    printf("  %-44s %s\n", what, err);
    return 1;
  }
  const int ok = res->verdict.pass && res->free_at_end == cfg->num_blocks &&
                 res->checked_rows > 0 && (!cfg->graph || res->replays == res->decode_steps);
  printf("  %-44s %7ld %7ld %9.2f %10.0f %8.1f / %-8.1f %s (max |diff| %.2g, %ld rows)\n", what,
         res->tokens, res->rows, res->decode_ms,
         res->decode_ms > 0 ? res->tokens / (res->decode_ms * 1e-3) : 0.0, res->bytes_mean / 1e6,
         res->bytes_peak / 1e6, ok ? "PASS" : "FAIL", res->verdict.max_abs, res->checked_rows);
  return !ok;
}

/* The serving loop on the program's heads, dimension and pages: lesson 07's plain loop (bf16, one
 * token a step, no forks, a launch a step) and the loop as a server runs it (FP8, four tokens a
 * step of which each guess is kept with probability 0.7, forks sharing pages, the decode replayed
 * from a CUDA graph); where version 4 runs, the served loop again over the bf16 cache on it. */
static int serve_report(const attn_options *o, const attn_device *dev) {
  const attn_problem *p = &o->problem;
  l10_serve_config plain;
  memset(&plain, 0, sizeof plain);
  plain.max_live = 16, plain.steps = 64, plain.prompt_min = 256, plain.prompt_max = 1024;
  plain.output_min = 32, plain.output_max = 256, plain.draft = 1, plain.accept = 0.0;
  plain.heads = p->heads, plain.kv_heads = p->kv_heads, plain.dim = p->dim;
  plain.block_size = p->block_size < L10_FP8_MIN_BLOCK ? L10_FP8_MIN_BLOCK : p->block_size;
  plain.seed = o->seed;
  l10_serve_config served = plain;
  served.draft = 4, served.accept = 0.7, served.fork_every = 8, served.graph = 1;
  served.fp8 = attn_device_sm(dev) >= 89; /* the e4m3 conversions */
  /* every sequence slot (forks included) at its longest: the loop never waits for pages */
  const int longest = plain.prompt_max + plain.output_max + served.draft;
  plain.num_blocks = served.num_blocks =
      2 * plain.max_live * ((longest + plain.block_size - 1) / plain.block_size);
  printf(
      "\nserving loop on the GPU (%d/%d heads, dim %d, pages of %d; %d sequences in flight, "
      "prompts %d-%d, outputs %d-%d tokens; %d steps; tokens per second of the decode's GPU "
      "time):\n  %-44s %7s %7s %9s %10s %19s\n",
      plain.heads, plain.kv_heads, plain.dim, plain.block_size, plain.max_live, plain.prompt_min,
      plain.prompt_max, plain.output_min, plain.output_max, plain.steps, "loop", "tokens", "rows",
      "decode ms", "tokens/s", "MB held mean/peak");
  l10_serve_result a, b;
  char what[96];
  int bad = serve_line("plain: bf16, 1 token a step, no forks", &plain, &a);
  snprintf(what, sizeof what, "served: %s, %d tokens (kept %.1f), forks, graph",
           served.fp8 ? "FP8" : "bf16", served.draft, served.accept);
  bad |= serve_line(what, &served, &b);
  if (!bad && a.decode_ms > 0 && b.decode_ms > 0 && a.bytes_mean > 0)
    printf(
        "  served over plain: %.2fx the tokens per second, %.2fx the memory held (mean); %.2f "
        "tokens kept per sequence and step, %ld copy-on-write copies, %ld graph replays\n",
        (b.tokens / b.decode_ms) / (a.tokens / a.decode_ms), b.bytes_mean / a.bytes_mean,
        b.rows ? (double)b.tokens * served.draft / b.rows : 0.0, b.copies, b.replays);
  if (l10_wg_per_sm(plain.dim) > 0) {
    l10_serve_config wg = served;
    wg.fp8 = 0, wg.wgmma = 1;
    l10_serve_result w;
    snprintf(what, sizeof what, "served: bf16 on version 4, %d tokens (kept %.1f), forks, graph",
             wg.draft, wg.accept);
    const int bad_w = serve_line(what, &wg, &w);
    bad |= bad_w;
    if (!bad_w && w.decode_ms > 0 && a.decode_ms > 0 && a.bytes_mean > 0)
      printf("  version 4's loop over plain: %.2fx the tokens per second, %.2fx the memory held\n",
             (w.tokens / w.decode_ms) / (a.tokens / a.decode_ms), w.bytes_mean / a.bytes_mean);
  }
  return bad;
}

/* What version 1 bought over lesson 07's kernel on the same step, and version 2 over version 1
 * with the error each cache leaves; then the serving loop. */
static int report(const attn_options *o, const attn_device *dev, const attn_result *r, int n) {
  if (!dev || n < L10_VERSIONS) return 0;
  const attn_result *a = &r[ROW_DRAFT - 1], *y = &r[ROW_L07 - 1], *f8 = &r[ROW_FP8 - 1];
  if (a->timed && y->timed && a->timing.median_ms > 0.0)
    printf("\ndraft-tiles vs lesson 07's version 5 on the same step: %.2fx\n",
           y->timing.median_ms / a->timing.median_ms);
  const attn_result *cc = &r[ROW_CASCADE - 1], *yf = &r[ROW_L07_FORK - 1];
  if (cc->timed && yf->timed && cc->timing.median_ms > 0.0)
    printf("cascade vs lesson 07's version 5 on the same forked cache: %.2fx\n",
           yf->timing.median_ms / cc->timing.median_ms);
  if (a->timed && f8->timed && f8->timing.median_ms > 0.0)
    printf("fp8-cache vs draft-tiles (tokens per second on the same step): %.2fx\n",
           a->timing.median_ms / f8->timing.median_ms);
  if (g_fp8_err.have && g_fp8_err.have_bf16)
    printf(
        "error of O against the fp64 reference on the values before rounding (sampled rows):\n"
        "  bf16 cache (draft-tiles): max_abs %.3e  rel_l2 %.3e\n"
        "  FP8 cache (fp8-cache):    max_abs %.3e  rel_l2 %.3e\n"
        "  the FP8 rounding alone (the reference on the cache's values): max_abs %.3e  "
        "rel_l2 %.3e\n",
        g_fp8_err.bf16_max_abs, g_fp8_err.bf16_rel_l2, g_fp8_err.got_max_abs, g_fp8_err.got_rel_l2,
        g_fp8_err.cache_max_abs, g_fp8_err.cache_rel_l2);
  /* the serving loop at the default step only (it takes a few seconds, and the runs of
   * gpu-runs.txt are about the kernels) */
  const attn_problem *p = &o->problem, *d = &l10_lesson.defaults;
  if (p->batch == d->batch && p->heads == d->heads && p->kv_heads == d->kv_heads &&
      p->seq_q == d->seq_q && p->seq_kv == d->seq_kv && p->dim == d->dim &&
      p->causal == d->causal && p->block_size == d->block_size && !p->kv_lens)
    return serve_report(o, dev);
  return 0;
}

static const int kDims[3] = {64, 128, 256};

const attn_lesson l10_lesson = {
    .number = 10,
    .title = "Decode as a server runs it: draft tokens over a paged cache",
    .versions = kVersions,
    .n_versions = L10_VERSIONS,
    .defaults = {.batch = 1,
                 .heads = 32,
                 .kv_heads = 8,
                 .seq_q = 8,
                 .seq_kv = 32768,
                 .dim = 128,
                 .causal = 0,
                 .block_size = 16,
                 .scale = 0.0f,
                 .kv_lens = NULL},
    .dims = kDims,
    .n_dims = 3,
    .cpu_part = cpu_part,
    .report = report,
};
