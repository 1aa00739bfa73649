/* Lesson 07's decode loop on the GPU (paged_attention.h): the cache manager schedules each step,
 * the copy and append kernels write the pool, a paged decode version reads it, and every step is
 * checked against a dense copy of each sequence on the host. The launcher and its workspace come
 * from launch_plan.c (l07_launcher(), l07_paged_workspace_bytes()); versions.c runs this loop in
 * its report, and nothing here calls back into versions.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_bf16.h"
#include "attn_rng.h"
#include "paged_attention.h"

typedef struct gseq { /* one sequence's K and V on the host, dense, as the bf16 the pool holds */
  uint16_t *k, *v;
  int cap;    /* tokens the arrays hold */
  int target; /* the length at which it finishes; -1: no live sequence has this id */
} gseq;

typedef struct gloop {
  const l07_loop_config *cfg;
  int version;
  l07_cache cache;
  gseq *sq;
  int max_seqs, max_blocks;
  size_t row; /* elements per token: kv_heads * dim */
  attn_rng rng;
  /* this step's new tokens, staged on the host; the first n_done are on the GPU */
  uint16_t *new_k, *new_v; /* [cap_new, row] rows of the new tokens */
  int *new_slots;          /* [cap_new] their slots */
  int n_new, n_done, cap_new;
  /* the device side */
  void *kpool, *vpool, *d_new_k, *d_new_v, *d_q, *d_o;
  int *d_slots, *d_table, *d_lens;
  l07_copy *d_copies;
  float *d_lse, *d_ws;
  size_t ws_bytes;
} gloop;

static int grow(gseq *s, int need, size_t row) {
  if (need <= s->cap) return 0;
  int cap = s->cap ? s->cap : 64;
  while (cap < need) cap *= 2;
  uint16_t *k = realloc(s->k, sizeof(uint16_t) * row * cap), *v;
  if (!k) return -1;
  s->k = k;
  if (!(v = realloc(s->v, sizeof(uint16_t) * row * cap))) return -1;
  s->v = v, s->cap = cap;
  return 0;
}

/* The staged tokens not yet on the GPU: their rows and slots up, then one append launch. */
static cudaError_t flush(gloop *L) {
  const int n = L->n_new - L->n_done;
  if (n <= 0) return cudaSuccess;
  const size_t at = (size_t)L->n_done * L->row, bytes = (size_t)n * L->row * 2;
  cudaError_t e =
      cudaMemcpy((uint16_t *)L->d_new_k + at, L->new_k + at, bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = cudaMemcpy((uint16_t *)L->d_new_v + at, L->new_v + at, bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = cudaMemcpy(L->d_slots + L->n_done, L->new_slots + L->n_done, sizeof(int) * n,
                   cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = l07_append((uint16_t *)L->d_new_k + at, (uint16_t *)L->d_new_v + at, L->d_slots + L->n_done,
                   n, L->cfg->kv_heads, L->cfg->dim, L->kpool, L->vpool, 0);
  L->n_done = L->n_new;
  return e;
}

/* n new tokens for sequence s: slots from the manager, values into the shadow and the step's
 * staging. A copy-on-write copy is enqueued at once, after the tokens staged before it: its
 * source block may hold tokens of this very step (a prompt, then a fork of that sequence).
 * 0, 1 when refused, -1 out of memory, -2 a CUDA error (in *e). */
static int append(gloop *L, int s, int n, l07_loop_result *out, cudaError_t *e) {
  if (L->n_new + n > L->cap_new) return -1; /* cannot happen: cap_new bounds a step */
  const int len = l07_seq_len(&L->cache, s);
  l07_copy cp;
  const l07_status st = l07_seq_append(&L->cache, s, n, L->new_slots + L->n_new, &cp);
  if (st != L07_OK) {
    out->refused++;
    return 1;
  }
  if (cp.tokens) {
    out->copies++;
    if ((*e = flush(L)) != cudaSuccess ||
        (*e = cudaMemcpy(L->d_copies, &cp, sizeof cp, cudaMemcpyHostToDevice)) != cudaSuccess ||
        (*e = l07_copy_blocks(L->d_copies, 1, L->cfg->block_size, L->cfg->kv_heads, L->cfg->dim,
                              L->kpool, L->vpool, 0)) != cudaSuccess)
      return -2;
  }
  if (grow(&L->sq[s], len + n, L->row) != 0) return -1;
  for (size_t e = 0; e < (size_t)n * L->row; ++e) {
    const uint16_t kx = attn_f32_to_bf16(attn_rng_uniform(&L->rng) * 2.0f - 1.0f);
    const uint16_t vx = attn_f32_to_bf16(attn_rng_uniform(&L->rng) * 2.0f - 1.0f);
    L->new_k[(size_t)L->n_new * L->row + e] = L->sq[s].k[(size_t)len * L->row + e] = kx;
    L->new_v[(size_t)L->n_new * L->row + e] = L->sq[s].v[(size_t)len * L->row + e] = vx;
  }
  L->n_new += n;
  return 0;
}

/* One query row (head h of sequence s, q in fp32) in fp64 from the shadow: O into o[dim]. */
static void reference_row(const gloop *L, int s, int h, const float *q, double *o, double *sc) {
  const l07_loop_config *c = L->cfg;
  const int len = l07_seq_len(&L->cache, s), g = h / (c->heads / c->kv_heads), D = c->dim;
  const double scale = 1.0 / sqrt((double)D);
  double m = -INFINITY, l = 0.0;
  for (int j = 0; j < len; ++j) {
    const uint16_t *kj = L->sq[s].k + ((size_t)j * c->kv_heads + g) * D;
    double dot = 0.0;
    for (int d = 0; d < D; ++d) dot += (double)q[d] * attn_bf16_to_f32(kj[d]);
    sc[j] = dot * scale;
    if (sc[j] > m) m = sc[j];
  }
  for (int d = 0; d < D; ++d) o[d] = 0.0;
  for (int j = 0; j < len; ++j) {
    const uint16_t *vj = L->sq[s].v + ((size_t)j * c->kv_heads + g) * D;
    const double e = exp(sc[j] - m);
    l += e;
    for (int d = 0; d < D; ++d) o[d] += e * attn_bf16_to_f32(vj[d]);
  }
  for (int d = 0; d < D; ++d) o[d] /= l;
}

/* A CUDA call, or to `fail` with its error and its text. */
#define GL_TRY(call)                   \
  do {                                 \
    if ((e = (call)) != cudaSuccess) { \
      where = #call;                   \
      goto fail;                       \
    }                                  \
  } while (0)

int l07_decode_loop_gpu(const l07_loop_config *cfg, int version, l07_loop_gpu_result *out,
                        char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  l07_loop_result *r = &out->loop;
  const l07_paged_fn decode = l07_launcher(version, cfg->dim);
  if (!decode || cfg->max_live < 1 || cfg->steps < 1 || cfg->prompt_min < 1 ||
      cfg->prompt_max < cfg->prompt_min || cfg->output_min < 1 ||
      cfg->output_max < cfg->output_min || cfg->kv_heads < 1 || cfg->heads % cfg->kv_heads ||
      cfg->block_size < 1 || cfg->num_blocks < 1) {
    snprintf(err, err_len, "decode loop: bad configuration");
    return -1;
  }
  gloop L;
  memset(&L, 0, sizeof L);
  L.cfg = cfg, L.version = version;
  L.row = (size_t)cfg->kv_heads * cfg->dim;
  const int longest = cfg->prompt_max + cfg->output_max + 1, H = cfg->heads, D = cfg->dim;
  const int G = cfg->heads / cfg->kv_heads;
  L.max_seqs = 2 * cfg->max_live; /* room for forks */
  L.max_blocks = (longest + cfg->block_size - 1) / cfg->block_size;
  /* a step's new tokens: every open place takes a prompt, every sequence one token */
  L.cap_new = cfg->max_live * cfg->prompt_max + L.max_seqs;
  const size_t pool = (size_t)cfg->num_blocks * cfg->block_size * L.row;
  cudaError_t e = cudaSuccess;
  const char *where = "";
  int rc = -1;
  float *q = malloc(sizeof(float) * (size_t)L.max_seqs * H * D);
  uint16_t *qb = malloc(sizeof(uint16_t) * (size_t)L.max_seqs * H * D);
  uint16_t *ob = malloc(sizeof(uint16_t) * (size_t)L.max_seqs * H * D);
  int *table = malloc(sizeof(int) * (size_t)L.max_seqs * L.max_blocks);
  int *lens = malloc(sizeof(int) * L.max_seqs), *ids = malloc(sizeof(int) * L.max_seqs);
  double *sc = malloc(sizeof(double) * longest), *ref = malloc(sizeof(double) * D);
  L.sq = calloc((size_t)L.max_seqs, sizeof(gseq));
  L.new_k = malloc(sizeof(uint16_t) * L.row * L.cap_new);
  L.new_v = malloc(sizeof(uint16_t) * L.row * L.cap_new);
  L.new_slots = malloc(sizeof(int) * L.cap_new);
  cudaEvent_t ev[2] = {NULL, NULL};
  if (!q || !qb || !ob || !table || !lens || !ids || !sc || !ref || !L.sq || !L.new_k || !L.new_v ||
      !L.new_slots ||
      l07_cache_init(&L.cache, cfg->num_blocks, cfg->block_size, L.max_seqs, L.max_blocks) !=
          L07_OK) {
    snprintf(err, err_len, "decode loop: out of host memory");
    goto done;
  }
  for (int s = 0; s < L.max_seqs; ++s) L.sq[s].target = -1;
  GL_TRY(cudaMalloc(&L.kpool, pool * 2));
  GL_TRY(cudaMalloc(&L.vpool, pool * 2));
  GL_TRY(cudaMemset(L.kpool, 0xff, pool * 2)); /* NaN in every slot: a stray read shows */
  GL_TRY(cudaMemset(L.vpool, 0xff, pool * 2));
  GL_TRY(cudaMalloc(&L.d_new_k, L.row * L.cap_new * 2));
  GL_TRY(cudaMalloc(&L.d_new_v, L.row * L.cap_new * 2));
  GL_TRY(cudaMalloc((void **)&L.d_slots, sizeof(int) * L.cap_new));
  GL_TRY(cudaMalloc((void **)&L.d_copies, sizeof(l07_copy)));
  GL_TRY(cudaMalloc(&L.d_q, (size_t)L.max_seqs * H * D * 2));
  GL_TRY(cudaMalloc(&L.d_o, (size_t)L.max_seqs * H * D * 2));
  GL_TRY(cudaMalloc((void **)&L.d_lse, sizeof(float) * L.max_seqs * H));
  GL_TRY(cudaMalloc((void **)&L.d_table, sizeof(int) * L.max_seqs * L.max_blocks));
  GL_TRY(cudaMalloc((void **)&L.d_lens, sizeof(int) * L.max_seqs));
  GL_TRY(cudaEventCreate(&ev[0]));
  GL_TRY(cudaEventCreate(&ev[1]));
  attn_rng_seed(&L.rng, cfg->seed, 12);
  attn_verdict_init(&out->verdict, ATTN_BF16);

  for (int step = 0; step < cfg->steps; ++step, r->steps++) {
    L.n_new = L.n_done = 0;
    /* arrivals: the free places take new sequences and their prompts */
    int live = 0;
    for (int s = 0; s < L.max_seqs; ++s) live += L.sq[s].target >= 0;
    while (live < cfg->max_live) {
      int s;
      if (l07_seq_open(&L.cache, &s) != L07_OK) break;
      const int p = cfg->prompt_min +
                    (int)attn_rng_below(&L.rng, (uint32_t)(cfg->prompt_max - cfg->prompt_min + 1));
      const int a = append(&L, s, p, r, &e);
      if (a == -2) goto cuda;
      if (a < 0) goto oom;
      if (a > 0) { /* no room for the prompt now: try again next step */
        l07_seq_close(&L.cache, s);
        break;
      }
      L.sq[s].target =
          p + cfg->output_min +
          (int)attn_rng_below(&L.rng, (uint32_t)(cfg->output_max - cfg->output_min + 1));
      r->started++, live++;
    }
    /* parallel sampling: now and then the first live sequence forks */
    if (cfg->fork_every > 0 && step % cfg->fork_every == cfg->fork_every - 1)
      for (int s = 0; s < L.max_seqs; ++s)
        if (L.sq[s].target >= 0) {
          int child;
          if (l07_seq_fork(&L.cache, s, &child) == L07_OK) {
            const int len = l07_seq_len(&L.cache, s);
            if (grow(&L.sq[child], len, L.row) != 0) goto oom;
            memcpy(L.sq[child].k, L.sq[s].k, sizeof(uint16_t) * L.row * len);
            memcpy(L.sq[child].v, L.sq[s].v, sizeof(uint16_t) * L.row * len);
            L.sq[child].target = L.sq[s].target;
            r->started++;
          }
          break;
        }
    /* one generated token per live sequence; those that got a slot decode this step */
    int n = 0, seq_kv = 1;
    for (int s = 0; s < L.max_seqs; ++s) {
      if (L.sq[s].target < 0) continue;
      const int a = append(&L, s, 1, r, &e);
      if (a == -2) goto cuda;
      if (a < 0) goto oom;
      if (a > 0) continue; /* the pool is full: this sequence waits a step */
      ids[n] = s, lens[n] = l07_seq_len(&L.cache, s);
      if (lens[n] > seq_kv) seq_kv = lens[n];
      memcpy(table + (size_t)n * L.max_blocks, l07_seq_table(&L.cache, s),
             sizeof(int) * L.max_blocks);
      ++n;
    }
    /* the GPU: the tokens not yet appended (copies went out in order as they came), then the
     * decode */
    if ((e = flush(&L)) != cudaSuccess) goto cuda;
    if (cfg->check_pool) { /* every live token's K and V, read back through the table */
      uint16_t *hk = malloc(pool * 2), *hv = malloc(pool * 2);
      if (!hk || !hv) {
        free(hk), free(hv);
        goto oom;
      }
      e = cudaMemcpy(hk, L.kpool, pool * 2, cudaMemcpyDeviceToHost);
      if (e == cudaSuccess) e = cudaMemcpy(hv, L.vpool, pool * 2, cudaMemcpyDeviceToHost);
      for (int s = 0; e == cudaSuccess && s < L.max_seqs; ++s) {
        const int len = L.sq[s].target >= 0 ? l07_seq_len(&L.cache, s) : 0;
        const int *t = l07_seq_table(&L.cache, s);
        for (int j = 0; j < len; ++j) {
          const size_t at =
              ((size_t)t[j / cfg->block_size] * cfg->block_size + j % cfg->block_size) * L.row;
          out->pool_mismatches += memcmp(hk + at, L.sq[s].k + (size_t)j * L.row, L.row * 2) != 0 ||
                                  memcmp(hv + at, L.sq[s].v + (size_t)j * L.row, L.row * 2) != 0;
        }
      }
      free(hk), free(hv);
      GL_TRY(e);
    }
    if (n > 0) {
      for (size_t e2 = 0; e2 < (size_t)n * H * D; ++e2) {
        qb[e2] = attn_f32_to_bf16(attn_rng_uniform(&L.rng) * 2.0f - 1.0f);
        q[e2] = attn_bf16_to_f32(qb[e2]);
      }
      GL_TRY(cudaMemcpy(L.d_q, qb, (size_t)n * H * D * 2, cudaMemcpyHostToDevice));
      GL_TRY(cudaMemcpy(L.d_table, table, sizeof(int) * n * L.max_blocks, cudaMemcpyHostToDevice));
      GL_TRY(cudaMemcpy(L.d_lens, lens, sizeof(int) * n, cudaMemcpyHostToDevice));
      const size_t need =
          l07_paged_workspace_bytes(version, n, H, cfg->kv_heads, 1, seq_kv, lens, D);
      if (need > L.ws_bytes) { /* grown, and zeroed once (the kernel keeps counters there) */
        GL_TRY(cudaFree(L.d_ws));
        L.d_ws = NULL, L.ws_bytes = 0;
        GL_TRY(cudaMalloc((void **)&L.d_ws, need));
        GL_TRY(cudaMemset(L.d_ws, 0, need));
        L.ws_bytes = need;
      }
      /* The counters lead the workspace, sized by this batch; a larger batch's counters may
       * cover bytes where a smaller one kept partial states, so they are zeroed for each call. */
      if (L.ws_bytes)
        GL_TRY(cudaMemset(L.d_ws, 0, l06_counter_bytes(l06_units(6, n, H, cfg->kv_heads, 1))));
      GL_TRY(cudaMemset(L.d_o, 0xff, (size_t)n * H * D * 2)); /* poison: an unwritten row shows */
      GL_TRY(cudaEventRecord(ev[0], 0));
      GL_TRY(decode(L.d_q, L.kpool, L.vpool, L.d_table, L.d_lens, lens, L.d_o, L.d_lse, L.d_ws,
                    L.ws_bytes, n, H, cfg->kv_heads, 1, seq_kv, L.max_blocks, cfg->block_size, 0,
                    1.0f / sqrtf((float)D), 0));
      GL_TRY(cudaEventRecord(ev[1], 0));
      GL_TRY(cudaMemcpy(ob, L.d_o, (size_t)n * H * D * 2, cudaMemcpyDeviceToHost));
      float ms = 0.0f;
      GL_TRY(cudaEventElapsedTime(&ms, ev[0], ev[1]));
      out->decode_ms += ms;
      for (int i = 0; i < n; ++i) out->kv_bytes += 2.0 * lens[i] * L.row * 2;
      r->tokens += n;
      /* the check: every row written and finite; the heads of one KV group per sequence (a
       * different group each step) against the reference */
      attn_verdict_scan(&out->verdict, ATTN_BF16, ob, (size_t)n * H * D, 0);
      for (int i = 0; i < n; ++i) {
        const int g = (step + ids[i]) % cfg->kv_heads;
        for (int h = g * G; h < (g + 1) * G; ++h) {
          const size_t at = ((size_t)i * H + h) * D;
          reference_row(&L, ids[i], h, q + at, ref, sc);
          for (int d = 0; d < D; ++d)
            attn_verdict_add(&out->verdict, attn_bf16_to_f32(ob[at + d]), ref[d]);
          out->checked_rows++;
        }
      }
    }
    /* finishes, after the step's GPU work was enqueued: the next step's writes come after it */
    for (int i = 0; i < n; ++i)
      if (l07_seq_len(&L.cache, ids[i]) >= L.sq[ids[i]].target) {
        l07_seq_close(&L.cache, ids[i]);
        L.sq[ids[i]].target = -1;
        r->finished++;
      }
  }
  for (int s = 0; s < L.max_seqs; ++s)
    if (L.sq[s].target >= 0) {
      l07_seq_close(&L.cache, s);
      L.sq[s].target = -1;
      r->finished++;
    }
  r->free_at_end = l07_cache_free_blocks(&L.cache);
  attn_verdict_finish(&out->verdict);
  r->max_abs = out->verdict.max_abs;
  rc = 0;
  goto done;
oom:
  snprintf(err, err_len, "decode loop: out of host memory");
  goto done;
cuda:
  where = "appending or copying";
fail:
  snprintf(err, err_len, "decode loop: %s: %s", where, cudaGetErrorString(e));
  (void)cudaGetLastError();
  rc = -2;
done:
  if (L.sq)
    for (int s = 0; s < L.max_seqs; ++s) free(L.sq[s].k), free(L.sq[s].v);
  free(L.sq), free(L.new_k), free(L.new_v), free(L.new_slots);
  free(q), free(qb), free(ob), free(table), free(lens), free(ids), free(sc), free(ref);
  cudaFree(L.kpool), cudaFree(L.vpool), cudaFree(L.d_new_k), cudaFree(L.d_new_v);
  cudaFree(L.d_slots), cudaFree(L.d_copies), cudaFree(L.d_q), cudaFree(L.d_o), cudaFree(L.d_lse);
  cudaFree(L.d_table), cudaFree(L.d_lens), cudaFree(L.d_ws);
  if (ev[0]) cudaEventDestroy(ev[0]);
  if (ev[1]) cudaEventDestroy(ev[1]);
  l07_cache_destroy(&L.cache);
  return rc;
}
