/* Lesson 10's serving loop on the GPU (serving_decode.h, l10_serve_gpu()): lesson 07's decode loop
 * with what a server adds. Sequences arrive with a prompt and fork now and then over lesson 07's
 * cache manager, as there; each step every live sequence verifies `draft` tokens (the token it
 * generated and draft - 1 guesses) under the causal mask, a set share of the guesses is accepted,
 * and the rejected ones are dropped from the cache (l07_seq_truncate()). The cache is bf16
 * (version 1 reads it) or FP8 (version 2; the append quantises each row), and the decode is
 * launched directly or replayed from a CUDA graph captured once: its grid comes from the limits
 * alone, and every step only rewrites the lengths, counts and tables the graph's kernels read.
 * Every step is checked against an fp64 reference over a host copy of what the cache holds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_bf16.h"
#include "attn_rng.h"
#include "serving_decode.h"

typedef struct sseq { /* one sequence's K and V on the host, as the cache holds them (dequantised)
                       */
  float *k, *v;
  int cap;    /* tokens the arrays hold */
  int target; /* the length at which it finishes; -1: no live sequence has this id */
} sseq;

typedef struct sloop {
  const l10_serve_config *cfg;
  l07_cache cache;
  sseq *sq;
  int max_seqs, max_blocks, longest;
  size_t row; /* values per token: kv_heads * dim */
  attn_rng rng;
  cudaStream_t stream;
  /* this step's new tokens, staged on the host; the first n_done are on the GPU */
  uint16_t *new_k, *new_v;
  int *new_slots;
  int n_new, n_done, cap_new;
  float *xrow;            /* [dim] one row's values, for the host's quantisation */
  uint8_t *codes;         /* [dim] its codes */
  void *kpool, *vpool;    /* bf16, or e4m3 codes */
  float *kscale, *vscale; /* FP8: [num_blocks, kv_heads, block_size] */
  void *d_new_k, *d_new_v;
  int *d_slots;
  l07_copy *d_copies;
} sloop;

static int grow(sseq *s, int need, size_t row) {
  if (need <= s->cap) return 0;
  int cap = s->cap ? s->cap : 64;
  while (cap < need) cap *= 2;
  float *k = realloc(s->k, sizeof(float) * row * cap), *v;
  if (!k) return -1;
  s->k = k;
  if (!(v = realloc(s->v, sizeof(float) * row * cap))) return -1;
  s->v = v, s->cap = cap;
  return 0;
}

/* The staged tokens not yet on the GPU: their rows and slots up, then one append launch (the FP8
 * append quantises each row on the way). */
static cudaError_t flush(sloop *L) {
  const int n = L->n_new - L->n_done;
  if (n <= 0) return cudaSuccess;
  const l10_serve_config *c = L->cfg;
  const size_t at = (size_t)L->n_done * L->row, bytes = (size_t)n * L->row * 2;
  uint16_t *dk = (uint16_t *)L->d_new_k + at, *dv = (uint16_t *)L->d_new_v + at;
  cudaError_t e = cudaMemcpyAsync(dk, L->new_k + at, bytes, cudaMemcpyHostToDevice, L->stream);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(dv, L->new_v + at, bytes, cudaMemcpyHostToDevice, L->stream);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(L->d_slots + L->n_done, L->new_slots + L->n_done, sizeof(int) * n,
                        cudaMemcpyHostToDevice, L->stream);
  if (e == cudaSuccess)
    e = c->fp8 ? l10_fp8_append(dk, dv, L->d_slots + L->n_done, n, c->kv_heads, c->dim,
                                c->block_size, L->kpool, L->vpool, L->kscale, L->vscale, L->stream)
               : l07_append(dk, dv, L->d_slots + L->n_done, n, c->kv_heads, c->dim, L->kpool,
                            L->vpool, L->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(L->stream); /* the staging is reused */
  L->n_done = L->n_new;
  return e;
}

/* A copy-on-write copy: the first cp->tokens slots of block src into block dst. The bf16 pools
 * take lesson 07's copy kernel; the FP8 pools are bytes, copied as they lie: the codes of those
 * slots and the block's scales. */
static cudaError_t copy_block(sloop *L, const l07_copy *cp) {
  const l10_serve_config *c = L->cfg;
  if (!c->fp8) {
    cudaError_t e = cudaMemcpyAsync(L->d_copies, cp, sizeof *cp, cudaMemcpyHostToDevice, L->stream);
    if (e == cudaSuccess)
      e = l07_copy_blocks(L->d_copies, 1, c->block_size, c->kv_heads, c->dim, L->kpool, L->vpool,
                          L->stream);
    return e;
  }
  const size_t slot_bytes = L->row, block_bytes = (size_t)c->block_size * slot_bytes;
  const size_t scales = (size_t)c->kv_heads * c->block_size; /* a block's, K or V */
  cudaError_t e = cudaSuccess;
  for (int kv = 0; kv < 2 && e == cudaSuccess; ++kv) {
    uint8_t *pool = (uint8_t *)(kv ? L->vpool : L->kpool);
    float *sc = kv ? L->vscale : L->kscale;
    e = cudaMemcpyAsync(pool + cp->dst * block_bytes, pool + cp->src * block_bytes,
                        (size_t)cp->tokens * slot_bytes, cudaMemcpyDeviceToDevice, L->stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(sc + cp->dst * scales, sc + cp->src * scales, scales * sizeof(float),
                          cudaMemcpyDeviceToDevice, L->stream);
  }
  return e;
}

/* One drawn value, bf16: staged as it is, kept on the host as the cache will hold it. */
static uint16_t draw(sloop *L) {
  return attn_f32_to_bf16(attn_rng_uniform(&L->rng) * 2.0f - 1.0f);
}

/* n new tokens for sequence s: slots from the manager, values into the staging and the host copy
 * (the FP8 cache's as l10_fp8_quantise_row() rounds them). A copy-on-write copy is enqueued at
 * once, after the tokens staged before it (its source may hold tokens of this very step).
 * 0, 1 when refused, -1 out of memory, -2 a CUDA error (in *e). */
static int append(sloop *L, int s, int n, l10_serve_result *out, cudaError_t *e) {
  if (L->n_new + n > L->cap_new) return -1; /* cannot happen: cap_new bounds a step */
  const l10_serve_config *c = L->cfg;
  const int len = l07_seq_len(&L->cache, s), D = c->dim;
  l07_copy cp;
  const l07_status st = l07_seq_append(&L->cache, s, n, L->new_slots + L->n_new, &cp);
  if (st != L07_OK) {
    out->refused++;
    return 1;
  }
  if (cp.tokens) {
    out->copies++;
    if ((*e = flush(L)) != cudaSuccess || (*e = copy_block(L, &cp)) != cudaSuccess) return -2;
  }
  if (grow(&L->sq[s], len + n, L->row) != 0) return -1;
  for (int kv = 0; kv < 2; ++kv) {
    uint16_t *stage = (kv ? L->new_v : L->new_k) + (size_t)L->n_new * L->row;
    float *keep = (kv ? L->sq[s].v : L->sq[s].k) + (size_t)len * L->row;
    for (size_t r = 0; r < (size_t)n * c->kv_heads; ++r) { /* a row: one token, one KV head */
      for (int d = 0; d < D; ++d) {
        stage[r * D + d] = draw(L);
        L->xrow[d] = attn_bf16_to_f32(stage[r * D + d]);
      }
      if (c->fp8) {
        const float sc = l10_fp8_quantise_row(L->xrow, D, L->codes);
        for (int d = 0; d < D; ++d) keep[r * D + d] = l10_e4m3_decode(L->codes[d]) * sc;
      } else {
        memcpy(keep + r * D, L->xrow, sizeof(float) * D);
      }
    }
  }
  L->n_new += n;
  return 0;
}

/* Scratch for the check: the lesson's reference (l10_reference()) run on one sequence and one KV
 * group, over copies of the group's Q rows and of its KV head's keys. */
typedef struct scheck {
  float *q, *k, *v; /* [T, G, dim]; [longest, 1, dim] twice */
  float *o, *lse;   /* [T, G, dim], [T, G] */
  int *pages;       /* [max_blocks]: page j is page j (a dense copy is a pool in order) */
} scheck;

/* O of every draft token of sequence s (its `len` keys include them), the heads of KV group g, by
 * l10_reference() on a step of one sequence, G query heads and one KV head, the causal mask;
 * @p q the sequence's rows of Q ([T, heads, dim]). Into x->o. */
static void reference_group(const sloop *L, scheck *x, int s, int len, int T, int g,
                            const float *q) {
  const l10_serve_config *c = L->cfg;
  const int D = c->dim, G = c->heads / c->kv_heads;
  for (int i = 0; i < T; ++i)
    memcpy(x->q + (size_t)i * G * D, q + ((size_t)i * c->heads + (size_t)g * G) * D,
           sizeof(float) * G * D);
  for (int j = 0; j < len; ++j) {
    memcpy(x->k + (size_t)j * D, L->sq[s].k + ((size_t)j * c->kv_heads + g) * D, sizeof(float) * D);
    memcpy(x->v + (size_t)j * D, L->sq[s].v + ((size_t)j * c->kv_heads + g) * D, sizeof(float) * D);
  }
  const int zero = 0;
  l10_step st;
  memset(&st, 0, sizeof st);
  st.batch = 1, st.heads = G, st.kv_heads = 1, st.dim = D, st.max_q = T, st.max_seq_kv = len;
  st.max_blocks = (len + c->block_size - 1) / c->block_size, st.block_size = c->block_size;
  st.mask = L10_MASK_CAUSAL, st.scale = 1.0f / sqrtf((float)D);
  l10_reference(&st, x->q, &zero, &T, NULL, x->k, x->v, x->pages, &len, NULL, x->o, x->lse);
}

/* Tokens of a verification: the generated one, and each guess after it while they are accepted
 * (each with probability `accept`, given the ones before it were). */
static int accepted(sloop *L, int T) {
  int g = 1;
  while (g < T && attn_rng_uniform(&L->rng) < L->cfg->accept) ++g;
  return g;
}

/* A CUDA call, or to `fail` with its error and its text. */
#define SV_TRY(call)                   \
  do {                                 \
    if ((e = (call)) != cudaSuccess) { \
      where = #call;                   \
      goto fail;                       \
    }                                  \
  } while (0)

int l10_serve_gpu(const l10_serve_config *cfg, l10_serve_result *out, char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  const int T = cfg->draft;
  if (cfg->max_live < 1 || cfg->steps < 1 || cfg->prompt_min < 1 ||
      cfg->prompt_max < cfg->prompt_min || cfg->output_min < 1 ||
      cfg->output_max < cfg->output_min || T < 1 || T > L10_MAX_DRAFT || !(cfg->accept >= 0.0) ||
      cfg->accept > 1.0 || cfg->kv_heads < 1 || cfg->heads % cfg->kv_heads ||
      (cfg->dim != 64 && cfg->dim != 128 && cfg->dim != 256) || cfg->block_size < 1 ||
      (cfg->block_size & (cfg->block_size - 1)) || cfg->num_blocks < 1 ||
      (cfg->fp8 && cfg->block_size < L10_FP8_MIN_BLOCK)) {
    snprintf(err, err_len, "serving loop: bad configuration");
    return -1;
  }
  if (cfg->wgmma && (cfg->fp8 || l10_wg_per_sm(cfg->dim) <= 0)) {
    snprintf(err, err_len,
             "serving loop: version 4 reads a bf16 cache only, and runs only where "
             "it was built (sm_90a) on an sm_90 GPU");
    return -1;
  }
  /* The decode of every step: version 2 over the FP8 cache, version 4 or version 1 over bf16. */
  cudaError_t (*const decode)(const l10_step *, void *, float *, void *, size_t, cudaStream_t) =
      cfg->fp8     ? l10_fp8
      : cfg->wgmma ? l10_wg
                   : l10_draft;
  sloop L;
  memset(&L, 0, sizeof L);
  L.cfg = cfg;
  L.row = (size_t)cfg->kv_heads * cfg->dim;
  const int H = cfg->heads, D = cfg->dim, G = cfg->heads / cfg->kv_heads;
  /* a sequence ends at its target, at most T - 1 tokens before it when it appends its drafts */
  L.longest = cfg->prompt_max + cfg->output_max + T;
  L.max_seqs = 2 * cfg->max_live; /* room for forks */
  L.max_blocks = (L.longest + cfg->block_size - 1) / cfg->block_size;
  L.cap_new = cfg->max_live * cfg->prompt_max + L.max_seqs * T;
  const int B = L.max_seqs; /* the decode's batch: one place per sequence slot */
  const size_t rows = (size_t)B * T, pool = (size_t)cfg->num_blocks * cfg->block_size * L.row;
  const size_t vbytes = cfg->fp8 ? 1 : 2;
  const size_t n_scales = (size_t)cfg->num_blocks * cfg->kv_heads * cfg->block_size;
  const double block_bytes =
      2.0 * cfg->block_size * ((double)L.row * vbytes + (cfg->fp8 ? 4.0 * cfg->kv_heads : 0.0));
  cudaError_t e = cudaSuccess;
  const char *where = "";
  int rc = -1;
  float *q = malloc(sizeof(float) * rows * H * D);
  uint16_t *qb = calloc(rows * H * D, sizeof(uint16_t)),
           *ob = malloc(sizeof(uint16_t) * rows * H * D);
  int *table = malloc(sizeof(int) * (size_t)B * L.max_blocks);
  int *lens = malloc(sizeof(int) * B), *qlens = malloc(sizeof(int) * B);
  int *qstart = malloc(sizeof(int) * B), *in_step = malloc(sizeof(int) * B);
  scheck chk;
  chk.q = malloc(sizeof(float) * (size_t)T * G * D),
  chk.o = malloc(sizeof(float) * (size_t)T * G * D);
  chk.k = malloc(sizeof(float) * (size_t)L.longest * D), chk.lse = malloc(sizeof(float) * T * G);
  chk.v = malloc(sizeof(float) * (size_t)L.longest * D),
  chk.pages = malloc(sizeof(int) * L.max_blocks);
  L.sq = calloc((size_t)L.max_seqs, sizeof(sseq));
  L.new_k = malloc(sizeof(uint16_t) * L.row * L.cap_new);
  L.new_v = malloc(sizeof(uint16_t) * L.row * L.cap_new);
  L.new_slots = malloc(sizeof(int) * L.cap_new);
  L.xrow = malloc(sizeof(float) * D);
  L.codes = malloc((size_t)D);
  void *d_q = NULL, *d_o = NULL, *d_ws = NULL;
  float *d_lse = NULL;
  int *d_table = NULL, *d_lens = NULL, *d_qlens = NULL, *d_qstart = NULL;
  cudaEvent_t ev[2] = {NULL, NULL};
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  if (!q || !qb || !ob || !table || !lens || !qlens || !qstart || !in_step || !chk.q || !chk.o ||
      !chk.k || !chk.v || !chk.lse || !chk.pages || !L.sq || !L.new_k || !L.new_v || !L.new_slots ||
      !L.xrow || !L.codes ||
      l07_cache_init(&L.cache, cfg->num_blocks, cfg->block_size, L.max_seqs, L.max_blocks) !=
          L07_OK) {
    snprintf(err, err_len, "serving loop: out of host memory");
    goto done;
  }
  for (int s = 0; s < L.max_seqs; ++s) L.sq[s].target = -1;
  for (int j = 0; j < L.max_blocks; ++j) chk.pages[j] = j;
  SV_TRY(cudaStreamCreateWithFlags(&L.stream, cudaStreamNonBlocking));
  SV_TRY(cudaMalloc(&L.kpool, pool * vbytes));
  SV_TRY(cudaMalloc(&L.vpool, pool * vbytes));
  SV_TRY(cudaMemset(L.kpool, 0xff, pool * vbytes)); /* NaN in every slot: a stray read shows */
  SV_TRY(cudaMemset(L.vpool, 0xff, pool * vbytes));
  if (cfg->fp8) {
    SV_TRY(cudaMalloc((void **)&L.kscale, n_scales * sizeof(float)));
    SV_TRY(cudaMalloc((void **)&L.vscale, n_scales * sizeof(float)));
    SV_TRY(cudaMemset(L.kscale, 0xff, n_scales * sizeof(float)));
    SV_TRY(cudaMemset(L.vscale, 0xff, n_scales * sizeof(float)));
  }
  SV_TRY(cudaMalloc(&L.d_new_k, L.row * L.cap_new * 2));
  SV_TRY(cudaMalloc(&L.d_new_v, L.row * L.cap_new * 2));
  SV_TRY(cudaMalloc((void **)&L.d_slots, sizeof(int) * L.cap_new));
  SV_TRY(cudaMalloc((void **)&L.d_copies, sizeof(l07_copy)));
  SV_TRY(cudaMalloc(&d_q, rows * H * D * 2));
  SV_TRY(cudaMalloc(&d_o, rows * H * D * 2));
  SV_TRY(cudaMalloc((void **)&d_lse, sizeof(float) * rows * H));
  SV_TRY(cudaMalloc((void **)&d_table, sizeof(int) * (size_t)B * L.max_blocks));
  SV_TRY(cudaMalloc((void **)&d_lens, sizeof(int) * B));
  SV_TRY(cudaMalloc((void **)&d_qlens, sizeof(int) * B));
  SV_TRY(cudaMalloc((void **)&d_qstart, sizeof(int) * B));
  SV_TRY(cudaEventCreate(&ev[0]));
  SV_TRY(cudaEventCreate(&ev[1]));
  attn_rng_seed(&L.rng, cfg->seed, 13);
  attn_verdict_init(&out->verdict, ATTN_BF16);

  /* The step the decode reads: a place per sequence slot, the limits fixed for the whole loop. A
   * place with no sequence this step decodes one row over one key of block 0 (any block exists),
   * and its rows are not read. */
  l10_step st;
  memset(&st, 0, sizeof st);
  st.q = d_q, st.q_start = d_qstart, st.q_lens = d_qlens, st.tree = NULL;
  st.k_cache = L.kpool, st.v_cache = L.vpool, st.block_table = d_table, st.seq_lens = d_lens;
  st.batch = B, st.heads = H, st.kv_heads = cfg->kv_heads, st.dim = D, st.max_q = T;
  st.max_seq_kv = L.longest, st.max_blocks = L.max_blocks, st.block_size = cfg->block_size;
  st.mask = L10_MASK_CAUSAL, st.scale = 1.0f / sqrtf((float)D);
  st.k_scale = L.kscale, st.v_scale = L.vscale;
  if (l10_step_check(&st, err, err_len) != 0) goto done;
  const size_t ws_bytes = cfg->wgmma ? l10_wg_workspace_bytes(&st) : l10_draft_workspace_bytes(&st);
  if (ws_bytes) { /* zeroed once: the merge's counters start at 0 */
    SV_TRY(cudaMalloc(&d_ws, ws_bytes));
    SV_TRY(cudaMemset(d_ws, 0, ws_bytes));
  }
  for (int b = 0; b < B; ++b) qstart[b] = b * T, qlens[b] = 1, lens[b] = 1;
  for (size_t x = 0; x < (size_t)B * L.max_blocks; ++x) table[x] = 0;
  SV_TRY(cudaMemcpy(d_qstart, qstart, sizeof(int) * B, cudaMemcpyHostToDevice));
  SV_TRY(cudaMemcpy(d_qlens, qlens, sizeof(int) * B, cudaMemcpyHostToDevice));
  SV_TRY(cudaMemcpy(d_lens, lens, sizeof(int) * B, cudaMemcpyHostToDevice));
  SV_TRY(
      cudaMemcpy(d_table, table, sizeof(int) * (size_t)B * L.max_blocks, cudaMemcpyHostToDevice));
  SV_TRY(cudaMemset(d_q, 0, rows * H * D * 2));
  SV_TRY(cudaDeviceSynchronize()); /* the setup's memsets, before the loop's own stream */
  /* One launch on that empty step before anything is captured: the launcher's one-time setup
   * (the kernel's shared-memory limit, the occupancy query) is not a launch a graph could hold. */
  SV_TRY(decode(&st, d_o, d_lse, d_ws, ws_bytes, L.stream));
  SV_TRY(cudaStreamSynchronize(L.stream));
  if (cfg->graph) {
    SV_TRY(cudaStreamBeginCapture(L.stream, cudaStreamCaptureModeGlobal));
    e = decode(&st, d_o, d_lse, d_ws, ws_bytes, L.stream);
    const cudaError_t e2 = cudaStreamEndCapture(L.stream, &graph);
    SV_TRY(e);
    SV_TRY(e2);
    SV_TRY(cudaGraphInstantiate(&exec, graph, 0));
  }

  double held_sum = 0.0;
  for (int step = 0; step < cfg->steps; ++step, out->steps++) {
    L.n_new = L.n_done = 0;
    /* arrivals: the free places take new sequences and their prompts */
    int live = 0;
    for (int s = 0; s < L.max_seqs; ++s) live += L.sq[s].target >= 0;
    while (live < cfg->max_live) {
      int s;
      if (l07_seq_open(&L.cache, &s) != L07_OK) break;
      const int p = cfg->prompt_min +
                    (int)attn_rng_below(&L.rng, (uint32_t)(cfg->prompt_max - cfg->prompt_min + 1));
      const int a = append(&L, s, p, out, &e);
      if (a == -2) goto cuda;
      if (a < 0) goto oom;
      if (a > 0) { /* no room for the prompt now: try again next step */
        l07_seq_close(&L.cache, s);
        break;
      }
      L.sq[s].target =
          p + cfg->output_min +
          (int)attn_rng_below(&L.rng, (uint32_t)(cfg->output_max - cfg->output_min + 1));
      out->started++, live++;
    }
    /* parallel sampling: now and then the first live sequence forks, sharing its pages */
    if (cfg->fork_every > 0 && step % cfg->fork_every == cfg->fork_every - 1)
      for (int s = 0; s < L.max_seqs; ++s)
        if (L.sq[s].target >= 0) {
          int child;
          if (l07_seq_fork(&L.cache, s, &child) == L07_OK) {
            const int len = l07_seq_len(&L.cache, s);
            if (grow(&L.sq[child], len, L.row) != 0) goto oom;
            memcpy(L.sq[child].k, L.sq[s].k, sizeof(float) * L.row * len);
            memcpy(L.sq[child].v, L.sq[s].v, sizeof(float) * L.row * len);
            L.sq[child].target = L.sq[s].target;
            out->started++;
          }
          break;
        }
    /* T tokens per live sequence (its generated token and T - 1 guesses); one that gets no
     * blocks waits a step */
    int n = 0;
    for (int s = 0; s < L.max_seqs; ++s) {
      in_step[s] = 0;
      qlens[s] = 1, lens[s] = 1;
      for (int b = 0; b < L.max_blocks; ++b) table[(size_t)s * L.max_blocks + b] = 0;
      if (L.sq[s].target < 0) continue;
      const int a = append(&L, s, T, out, &e);
      if (a == -2) goto cuda;
      if (a < 0) goto oom;
      if (a > 0) continue;
      in_step[s] = 1, ++n;
      qlens[s] = T, lens[s] = l07_seq_len(&L.cache, s);
      const int *t = l07_seq_table(&L.cache, s);
      for (int b = 0; b < (lens[s] + cfg->block_size - 1) / cfg->block_size; ++b)
        table[(size_t)s * L.max_blocks + b] = t[b];
    }
    if ((e = flush(&L)) != cudaSuccess) goto cuda;
    const double held = (double)(cfg->num_blocks - l07_cache_free_blocks(&L.cache)) * block_bytes;
    held_sum += held;
    if (held > out->bytes_peak) out->bytes_peak = held;
    if (n > 0) {
      for (int s = 0; s < B; ++s)
        for (size_t x = (size_t)s * T * H * D; x < (size_t)(s + 1) * T * H * D; ++x) {
          qb[x] = in_step[s] ? draw(&L) : 0;
          q[x] = attn_bf16_to_f32(qb[x]);
        }
      SV_TRY(cudaMemcpyAsync(d_q, qb, rows * H * D * 2, cudaMemcpyHostToDevice, L.stream));
      SV_TRY(cudaMemcpyAsync(d_table, table, sizeof(int) * (size_t)B * L.max_blocks,
                             cudaMemcpyHostToDevice, L.stream));
      SV_TRY(cudaMemcpyAsync(d_lens, lens, sizeof(int) * B, cudaMemcpyHostToDevice, L.stream));
      SV_TRY(cudaMemcpyAsync(d_qlens, qlens, sizeof(int) * B, cudaMemcpyHostToDevice, L.stream));
      SV_TRY(cudaMemsetAsync(d_o, 0xff, rows * H * D * 2, L.stream)); /* poison */
      SV_TRY(cudaEventRecord(ev[0], L.stream));
      out->decode_steps++;
      if (exec) {
        SV_TRY(cudaGraphLaunch(exec, L.stream));
        out->replays++;
      } else {
        SV_TRY(decode(&st, d_o, d_lse, d_ws, ws_bytes, L.stream));
      }
      SV_TRY(cudaEventRecord(ev[1], L.stream));
      SV_TRY(cudaMemcpyAsync(ob, d_o, rows * H * D * 2, cudaMemcpyDeviceToHost, L.stream));
      SV_TRY(cudaStreamSynchronize(L.stream));
      float ms = 0.0f;
      SV_TRY(cudaEventElapsedTime(&ms, ev[0], ev[1]));
      out->decode_ms += ms;
      /* the check: every row of the step's sequences written and finite; one sequence a step (in
       * turn), the heads of one KV group, every draft token, against the reference */
      int pick = -1;
      for (int k = 0; k < B && pick < 0; ++k)
        if (in_step[(step + k) % B]) pick = (step + k) % B;
      for (int s = 0; s < B; ++s) {
        if (!in_step[s]) continue;
        attn_verdict_scan(&out->verdict, ATTN_BF16, ob + (size_t)s * T * H * D, (size_t)T * H * D,
                          0);
        out->rows += T;
        if (s != pick) continue;
        const int g = step % cfg->kv_heads;
        reference_group(&L, &chk, s, lens[s], T, g, q + (size_t)s * T * H * D);
        for (int i = 0; i < T; ++i)
          for (int h = g * G; h < (g + 1) * G; ++h) {
            const size_t at = (((size_t)s * T + i) * H + h) * D;
            const float *r = chk.o + ((size_t)i * G + (h - g * G)) * D;
            for (int d = 0; d < D; ++d)
              attn_verdict_add(&out->verdict, attn_bf16_to_f32(ob[at + d]), r[d]);
            out->checked_rows++;
          }
      }
    }
    /* the verification: each sequence keeps its generated token and the guesses accepted (no
     * more than its target), the rest leave the cache; then the finished close */
    for (int s = 0; s < B; ++s) {
      if (!in_step[s]) continue;
      const int before = lens[s] - T;
      int g = accepted(&L, T);
      if (before + g > L.sq[s].target)
        g = L.sq[s].target - before > 1 ? L.sq[s].target - before : 1;
      if (l07_seq_truncate(&L.cache, s, T - g) != L07_OK) {
        snprintf(err, err_len, "serving loop: the cache refused to drop rejected tokens");
        goto done;
      }
      out->tokens += g;
      if (before + g >= L.sq[s].target) {
        l07_seq_close(&L.cache, s);
        L.sq[s].target = -1;
        out->finished++;
      }
    }
  }
  for (int s = 0; s < L.max_seqs; ++s)
    if (L.sq[s].target >= 0) {
      l07_seq_close(&L.cache, s);
      L.sq[s].target = -1;
      out->finished++;
    }
  out->free_at_end = l07_cache_free_blocks(&L.cache);
  out->bytes_mean = out->steps ? held_sum / out->steps : 0.0;
  attn_verdict_finish(&out->verdict);
  rc = 0;
  goto done;
oom:
  snprintf(err, err_len, "serving loop: out of host memory");
  goto done;
cuda:
  where = "appending or copying";
fail:
  snprintf(err, err_len, "serving loop: %s: %s", where, cudaGetErrorString(e));
  (void)cudaGetLastError();
  rc = -2;
done:
  if (L.sq)
    for (int s = 0; s < L.max_seqs; ++s) free(L.sq[s].k), free(L.sq[s].v);
  free(L.sq), free(L.new_k), free(L.new_v), free(L.new_slots), free(L.xrow), free(L.codes);
  free(q), free(qb), free(ob), free(table), free(lens), free(qlens), free(qstart), free(in_step);
  free(chk.q), free(chk.k), free(chk.v), free(chk.o), free(chk.lse), free(chk.pages);
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  cudaFree(L.kpool), cudaFree(L.vpool), cudaFree(L.kscale), cudaFree(L.vscale);
  cudaFree(L.d_new_k), cudaFree(L.d_new_v), cudaFree(L.d_slots), cudaFree(L.d_copies);
  cudaFree(d_q), cudaFree(d_o), cudaFree(d_lse), cudaFree(d_ws);
  cudaFree(d_table), cudaFree(d_lens), cudaFree(d_qlens), cudaFree(d_qstart);
  if (ev[0]) cudaEventDestroy(ev[0]);
  if (ev[1]) cudaEventDestroy(ev[1]);
  if (L.stream) cudaStreamDestroy(L.stream);
  l07_cache_destroy(&L.cache);
  return rc;
}
