/* Lesson 07's decode loop on the CPU (decode_loop.h). */
#include "decode_loop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_rng.h"
#include "cache.h"

typedef struct shadow { /* one sequence's K and V, dense, to check against */
  float *k, *v;
  int cap;
} shadow;

typedef struct loop {
  const l07_loop_config *cfg;
  l07_cache cache;
  float *kp, *vp; /* pools [num_blocks, block_size, kv_heads, dim] */
  shadow *sh;     /* per sequence id */
  int *target;    /* per sequence id: the length at which it finishes; -1: none */
  attn_rng rng;
  size_t row; /* floats per token: kv_heads * dim */
} loop;

static int grow(shadow *s, int need, size_t row) {
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

/* n new tokens for sequence s: the manager's slots, the pool and the shadow; 1 when refused. */
static int append(loop *L, int s, int n, l07_loop_result *out) {
  int *slots = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  l07_copy cp;
  if (!slots) return -1;
  const int len = l07_seq_len(&L->cache, s);
  const l07_status st = l07_seq_append(&L->cache, s, n, slots, &cp);
  if (st != L07_OK) {
    free(slots);
    out->refused++;
    return 1;
  }
  const size_t row = L->row, bs = (size_t)L->cfg->block_size;
  if (cp.tokens) { /* copy-on-write: the shared block's filled slots into the fresh one */
    memcpy(L->kp + (size_t)cp.dst * bs * row, L->kp + (size_t)cp.src * bs * row,
           sizeof(float) * row * cp.tokens);
    memcpy(L->vp + (size_t)cp.dst * bs * row, L->vp + (size_t)cp.src * bs * row,
           sizeof(float) * row * cp.tokens);
    out->copies++;
  }
  if (grow(&L->sh[s], len + n, row) != 0) {
    free(slots);
    return -1;
  }
  for (int i = 0; i < n; ++i)
    for (size_t e = 0; e < row; ++e) {
      const float kx = attn_rng_uniform(&L->rng) * 2.0f - 1.0f;
      const float vx = attn_rng_uniform(&L->rng) * 2.0f - 1.0f;
      L->kp[(size_t)slots[i] * row + e] = L->sh[s].k[(size_t)(len + i) * row + e] = kx;
      L->vp[(size_t)slots[i] * row + e] = L->sh[s].v[(size_t)(len + i) * row + e] = vx;
    }
  free(slots);
  return 0;
}

/* Decode one query row of head h for sequence s through the table, and the same from the shadow;
 * returns |difference| at most. */
static double decode_row(loop *L, int s, const float *q, int h, float *sc) {
  const l07_loop_config *c = L->cfg;
  const int len = l07_seq_len(&L->cache, s), g = h / (c->heads / c->kv_heads), D = c->dim;
  const int *table = l07_seq_table(&L->cache, s);
  const float scale = 1.0f / sqrtf((float)D);
  double worst = 0.0;
  float first[256];                      /* pass 0's O */
  for (int pass = 0; pass < 2; ++pass) { /* 0: through the pool, 1: the shadow */
    float m = -INFINITY, l = 0.0f, o[256];
    for (int j = 0; j < len; ++j) {
      const float *kj = pass == 0
                            ? L->kp + l07_kv_offset(table, c->block_size, c->kv_heads, D, j, g, 0)
                            : L->sh[s].k + ((size_t)j * c->kv_heads + g) * D;
      float dot = 0.0f;
      for (int d = 0; d < D; ++d) dot += q[d] * kj[d];
      sc[j] = dot * scale;
      m = fmaxf(m, sc[j]);
    }
    for (int d = 0; d < D; ++d) o[d] = 0.0f;
    for (int j = 0; j < len; ++j) {
      const float *vj = pass == 0
                            ? L->vp + l07_kv_offset(table, c->block_size, c->kv_heads, D, j, g, 0)
                            : L->sh[s].v + ((size_t)j * c->kv_heads + g) * D;
      const float e = expf(sc[j] - m);
      l += e;
      for (int d = 0; d < D; ++d) o[d] += e * vj[d];
    }
    for (int d = 0; d < D; ++d) {
      o[d] /= l;
      if (pass == 0)
        first[d] = o[d];
      else {
        const double diff = fabs((double)o[d] - first[d]);
        if (!(diff <= worst)) worst = isnan(diff) ? INFINITY : diff; /* NaN is the worst */
      }
    }
  }
  return worst;
}

static void finish(loop *L, int s, l07_loop_result *out) {
  l07_seq_close(&L->cache, s);
  L->target[s] = -1;
  out->finished++;
}

int l07_decode_loop_cpu(const l07_loop_config *cfg, l07_loop_result *out) {
  memset(out, 0, sizeof *out);
  if (cfg->max_live < 1 || cfg->steps < 1 || cfg->prompt_min < 1 ||
      cfg->prompt_max < cfg->prompt_min || cfg->output_min < 1 ||
      cfg->output_max < cfg->output_min || cfg->kv_heads < 1 || cfg->heads % cfg->kv_heads ||
      cfg->dim < 1 || cfg->dim > 256 || cfg->block_size < 1 || cfg->num_blocks < 1)
    return -1;
  loop L;
  memset(&L, 0, sizeof L);
  L.cfg = cfg;
  L.row = (size_t)cfg->kv_heads * cfg->dim;
  const int longest = cfg->prompt_max + cfg->output_max + 1;
  const int max_seqs = 2 * cfg->max_live; /* room for forks */
  const size_t pool = (size_t)cfg->num_blocks * cfg->block_size * L.row;
  int rc = -1;
  float *q = malloc(sizeof(float) * cfg->dim), *sc = malloc(sizeof(float) * longest);
  L.kp = malloc(sizeof(float) * pool);
  L.vp = malloc(sizeof(float) * pool);
  L.sh = calloc((size_t)max_seqs, sizeof(shadow));
  L.target = malloc(sizeof(int) * (size_t)max_seqs);
  if (!q || !sc || !L.kp || !L.vp || !L.sh || !L.target ||
      l07_cache_init(&L.cache, cfg->num_blocks, cfg->block_size, max_seqs,
                     (longest + cfg->block_size - 1) / cfg->block_size) != L07_OK)
    goto done;
  for (size_t e = 0; e < pool; ++e) L.kp[e] = L.vp[e] = NAN; /* a stray read shows */
  for (int s = 0; s < max_seqs; ++s) L.target[s] = -1;
  attn_rng_seed(&L.rng, cfg->seed, 11);
  for (int step = 0; step < cfg->steps; ++step, out->steps++) {
    /* arrivals: fill the free places with new sequences and their prompts */
    int live = 0;
    for (int s = 0; s < max_seqs; ++s) live += L.target[s] >= 0;
    while (live < cfg->max_live) {
      int s;
      if (l07_seq_open(&L.cache, &s) != L07_OK) break;
      const int p = cfg->prompt_min +
                    (int)attn_rng_below(&L.rng, (uint32_t)(cfg->prompt_max - cfg->prompt_min + 1));
      const int r = append(&L, s, p, out);
      if (r < 0) goto done;
      if (r > 0) { /* no room for the prompt now: try again next step */
        l07_seq_close(&L.cache, s);
        break;
      }
      L.target[s] = p + cfg->output_min +
                    (int)attn_rng_below(&L.rng, (uint32_t)(cfg->output_max - cfg->output_min + 1));
      out->started++, live++;
    }
    /* parallel sampling: now and then a sequence forks and both go on */
    if (cfg->fork_every > 0 && step % cfg->fork_every == cfg->fork_every - 1)
      for (int s = 0; s < max_seqs; ++s)
        if (L.target[s] >= 0) {
          int child;
          if (l07_seq_fork(&L.cache, s, &child) == L07_OK) {
            L.target[child] = L.target[s];
            if (grow(&L.sh[child], L.sh[s].cap, L.row) != 0) goto done;
            memcpy(L.sh[child].k, L.sh[s].k, sizeof(float) * L.row * l07_seq_len(&L.cache, s));
            memcpy(L.sh[child].v, L.sh[s].v, sizeof(float) * L.row * l07_seq_len(&L.cache, s));
            out->started++;
          }
          break;
        }
    /* one generated token per live sequence, then its attention for every head */
    for (int s = 0; s < max_seqs; ++s) {
      if (L.target[s] < 0) continue;
      const int r = append(&L, s, 1, out);
      if (r < 0) goto done;
      if (r > 0) continue; /* the pool is full: this sequence waits a step */
      for (int h = 0; h < cfg->heads; ++h) {
        for (int d = 0; d < cfg->dim; ++d) q[d] = attn_rng_uniform(&L.rng) * 2.0f - 1.0f;
        out->max_abs = fmax(out->max_abs, decode_row(&L, s, q, h, sc));
      }
      out->tokens++;
      if (l07_seq_len(&L.cache, s) >= L.target[s]) finish(&L, s, out);
    }
  }
  for (int s = 0; s < max_seqs; ++s)
    if (L.target[s] >= 0) finish(&L, s, out);
  out->free_at_end = l07_cache_free_blocks(&L.cache);
  rc = 0;
done:
  if (L.sh)
    for (int s = 0; s < max_seqs; ++s) free(L.sh[s].k), free(L.sh[s].v);
  free(L.sh), free(L.target), free(L.kp), free(L.vp), free(q), free(sc);
  l07_cache_destroy(&L.cache);
  return rc;
}
