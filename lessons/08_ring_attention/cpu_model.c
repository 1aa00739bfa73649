/* The ring on the CPU, in fp32: the same shards, the same ring order, the same pair kinds and the
 * same merge as the GPU versions, with the ranks taken one after the other. It proves the plan
 * (ring_plan.c) and the merge against the reference without a GPU; see l08_cpu_attention() in
 * ring_attention.h. */
#include <math.h>
#include <stdlib.h>

#include "ring_attention.h"
#include "split_plan.h"

/* One rank's running state, in the layouts a rank keeps on its GPU: O `[batch, tokens, heads,
 * dim]` and the log-sum-exp `[batch, heads, tokens]`, where the rank's local token t runs over its
 * chunks one after the other (zig-zag: chunk r, then chunk 2p - 1 - r). */
typedef struct rank_state {
  float *o;
  float *lse;
  int tokens;
} rank_state;

/* The partial state of one query row against keys [k0, k0 + n_keys) of the whole sequence: the
 * row's log-sum-exp over those keys, and into o_part (dim floats) its output already divided by
 * its own sum. s holds n_keys scores. (-inf, 0) when the row sees no key. */
static float row_state(const attn_problem *p, const float *qi, const float *k, const float *v,
                       int b, int g, int k0, int n_keys, float scale, float *s, float *o_part) {
  const int dim = p->dim;
  for (int d = 0; d < dim; ++d) o_part[d] = 0.0f;
  if (n_keys <= 0) return -INFINITY;
  float m = -INFINITY;
  for (int j = 0; j < n_keys; ++j) {
    const float *kj = k + (((size_t)b * p->seq_kv + k0 + j) * p->kv_heads + g) * dim;
    float dot = 0.0f;
    for (int d = 0; d < dim; ++d) dot += qi[d] * kj[d];
    s[j] = dot * scale;
    m = fmaxf(m, s[j]);
  }
  float l = 0.0f;
  for (int j = 0; j < n_keys; ++j) {
    const float e = expf(s[j] - m);
    const float *vj = v + (((size_t)b * p->seq_kv + k0 + j) * p->kv_heads + g) * dim;
    l += e;
    for (int d = 0; d < dim; ++d) o_part[d] += e * vj[d];
  }
  for (int d = 0; d < dim; ++d) o_part[d] /= l;
  return m + logf(l);
}

/* One (query chunk, key chunk) pair of kind FULL or DIAG: for every (batch, head, query) of the
 * chunk, the partial state over the keys it sees, merged into the rank's running state. The
 * queries are tokens [q_start, q_start + q_len), stored from local token q_local on; the keys are
 * [k_start, k_start + k_len). */
static void compute_pair(const attn_problem *p, const float *q, const float *k, const float *v,
                         int kind, int q_start, int q_len, int q_local, int k_start, int k_len,
                         rank_state *st, float *s, float *o_part) {
  const int dim = p->dim, group = p->heads / p->kv_heads;
  const float scale = attn_scale(p);
  for (int b = 0; b < p->batch; ++b)
    for (int a = 0; a < q_len; ++a) {
      /* FULL: every key. DIAG: the bottom-right mask, query a sees keys b' <= a + (k_len - q_len),
       * which is the global rule key <= query once both chunks end on the same token. */
      int n_keys = k_len;
      if (kind == L08_PAIR_DIAG) {
        n_keys = a + (k_len - q_len) + 1;
        if (n_keys > k_len) n_keys = k_len;
        if (n_keys < 0) n_keys = 0;
      }
      const int i = q_start + a, t = q_local + a; /* global and local token of the query */
      for (int h = 0; h < p->heads; ++h) {
        const float *qi = q + (((size_t)b * p->seq_q + i) * p->heads + h) * dim;
        const float lse_part =
            row_state(p, qi, k, v, b, h / group, k_start, n_keys, scale, s, o_part);
        /* The merge of lessons 02 and 06: a weighted average of the two normalised outputs with
         * weights e^(lse_acc - lse) and e^(lse_part - lse). */
        l06_merge(&st->lse[((size_t)b * p->heads + h) * st->tokens + t],
                  &st->o[(((size_t)b * st->tokens + t) * p->heads + h) * dim], lse_part, o_part,
                  dim);
      }
    }
}

int l08_cpu_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx) {
  l08_cpu_ring *ring = (l08_cpu_ring *)ctx;
  if (!ring || !p || p->seq_q != p->seq_kv || p->kv_lens || p->seq_q < 1 || p->batch < 1 ||
      p->dim < 1 || p->heads < 1 || p->kv_heads < 1 || p->heads % p->kv_heads != 0)
    return -2;
  const int n = p->seq_q, nr = ring->ranks, dim = p->dim;
  l08_shard shard[L08_MAX_RANKS];
  if (nr < 1 || nr > L08_MAX_RANKS) return -2;
  for (int r = 0; r < nr; ++r)
    if (l08_shard_of(n, nr, ring->layout, r, &shard[r]) != 0) return -2;
  ring->pairs_full = ring->pairs_diag = ring->pairs_skip = 0;

  int rc = 0;
  float *s = malloc(sizeof(float) * n), *o_part = malloc(sizeof(float) * dim);
  rank_state st = {NULL, NULL, 0};
  if (!s || !o_part) {
    rc = -1;
    goto done;
  }
  for (int r = 0; r < nr; ++r) {
    const l08_shard *mine = &shard[r];
    const size_t rows = (size_t)p->batch * p->heads * mine->tokens;
    st.tokens = mine->tokens;
    st.o = malloc(sizeof(float) * (rows ? rows * dim : 1));
    st.lse = malloc(sizeof(float) * (rows ? rows : 1));
    if (!st.o || !st.lse) {
      rc = -1;
      goto done;
    }
    /* The empty state: any merge replaces it. */
    for (size_t x = 0; x < rows * dim; ++x) st.o[x] = 0.0f;
    for (size_t x = 0; x < rows; ++x) st.lse[x] = -INFINITY;

    /* The ring order: at step s rank r holds the block rank (r - s) mod p started with (step 0:
     * its own), then passes it on to rank r + 1. With reverse_merge the steps are taken (and so
     * merged) last to first: the merge is associative and commutative, so only rounding may
     * change. */
    for (int step = 0; step < nr; ++step) {
      const int s_now = ring->reverse_merge ? nr - 1 - step : step;
      const l08_shard *held = &shard[l08_block_origin(r, s_now, nr)];
      int q_local = 0; /* the query chunk's first local token */
      for (int qc = 0; qc < mine->n_chunks; ++qc) {
        for (int kc = 0; kc < held->n_chunks; ++kc) {
          const int kind = l08_pair_kind(mine->start[qc], mine->len[qc], held->start[kc],
                                         held->len[kc], p->causal);
          if (kind == L08_PAIR_SKIP) {
            ++ring->pairs_skip;
            continue;
          }
          if (kind != L08_PAIR_FULL && kind != L08_PAIR_DIAG) { /* no layout makes one */
            rc = -2;
            goto done;
          }
          ++*(kind == L08_PAIR_FULL ? &ring->pairs_full : &ring->pairs_diag);
          compute_pair(p, q, k, v, kind, mine->start[qc], mine->len[qc], q_local, held->start[kc],
                       held->len[kc], &st, s, o_part);
        }
        q_local += mine->len[qc];
      }
    }

    /* The rank's output back into the whole sequence's layout (the GPU versions' gather). */
    int t = 0;
    for (int c = 0; c < mine->n_chunks; ++c)
      for (int a = 0; a < mine->len[c]; ++a, ++t) {
        const int i = mine->start[c] + a;
        for (int b = 0; b < p->batch; ++b)
          for (int h = 0; h < p->heads; ++h) {
            const float *src = st.o + (((size_t)b * st.tokens + t) * p->heads + h) * dim;
            float *dst = o + (((size_t)b * n + i) * p->heads + h) * dim;
            for (int d = 0; d < dim; ++d) dst[d] = src[d];
            lse[((size_t)b * p->heads + h) * n + i] =
                st.lse[((size_t)b * p->heads + h) * st.tokens + t];
          }
      }
    free(st.o);
    free(st.lse);
    st.o = st.lse = NULL;
  }
done:
  free(st.o);
  free(st.lse);
  free(s);
  free(o_part);
  return rc;
}
