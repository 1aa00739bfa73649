/* Lesson 05's CPU model: FA3's tile loop, in the order its two-stage pipeline runs it, in fp32.
 *
 * Per (batch, head), per block of br query rows, per warpgroup of wg_rows rows: S for KV tile 0 is
 * formed before the loop; in iteration j, S for tile j + 1 is formed before the softmax of tile j
 * (the tensor cores get the next QK^T while the special-function units do this one's exponentials),
 * then O += P_j V_j. The result must not depend on that order: the softmax of tile j reads only
 * S_j. The counters make the order visible: a warpgroup holds two S tiles at once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fa3_hopper.h"

#define LOG2E 1.4426950408889634
#define LN2 0.6931471805599453

/* S = Q K^T (raw scores) of rows [r0, r1) against keys [k0, k1), masked with -inf. */
static void scores(const attn_problem *p, const float *q, const float *k, int b, int h, int kvh,
                   int r0, int r1, int k0, int k1, int bc, float *s) {
  const int d = p->dim, diag = p->seq_kv - p->seq_q;
  for (int r = r0; r < r1; ++r)
    for (int c = 0; c < bc; ++c) {
      const int key = k0 + c;
      float x = -INFINITY;
      if (key < k1 && !(p->causal && key > r + diag)) {
        const float *qr = q + (((size_t)b * p->seq_q + r) * p->heads + h) * d;
        const float *kr = k + (((size_t)b * p->seq_kv + key) * p->kv_heads + kvh) * d;
        float acc = 0.f;
        for (int i = 0; i < d; ++i) acc += qr[i] * kr[i];
        x = acc;
      }
      s[(size_t)(r - r0) * bc + c] = x;
    }
}

int l05_cpu_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx) {
  l05_cpu_tiles *t = (l05_cpu_tiles *)ctx;
  const int d = p->dim, br = t->br, wr = t->wg_rows, bc = t->bc;
  const float scale_log2 = (float)(attn_scale(p) * LOG2E);
  const int n_kv = (p->seq_kv + bc - 1) / bc, diag = p->seq_kv - p->seq_q;
  float *s_cur = malloc(sizeof(float) * wr * bc), *s_next = malloc(sizeof(float) * wr * bc);
  float *acc = malloc(sizeof(float) * wr * d), *m = malloc(sizeof(float) * wr);
  float *l = malloc(sizeof(float) * wr);
  if (!s_cur || !s_next || !acc || !m || !l) {
    free(s_cur), free(s_next), free(acc), free(m), free(l);
    return -1;
  }
  t->s_products = 0;
  t->max_early = 0;
  for (int b = 0; b < p->batch; ++b)
    for (int h = 0; h < p->heads; ++h) {
      const int kvh = h / (p->heads / p->kv_heads);
      for (int q0 = 0; q0 < p->seq_q; q0 += br) {
        /* the KV tiles this block visits: every one, or up to the diagonal of its last row */
        int visit = n_kv;
        if (p->causal) {
          const long last = (long)(q0 + br < p->seq_q ? q0 + br : p->seq_q) - 1 + diag;
          visit = last < 0 ? 0 : (int)((last + 1 < p->seq_kv ? last + 1 : p->seq_kv) + bc - 1) / bc;
        }
        for (int w0 = q0; w0 < q0 + br && w0 < p->seq_q; w0 += wr) {
          const int w1 = w0 + wr < p->seq_q ? w0 + wr : p->seq_q, rows = w1 - w0;
          memset(acc, 0, sizeof(float) * wr * d);
          for (int r = 0; r < rows; ++r) m[r] = -INFINITY, l[r] = 0.f;
          long held = 0;
          if (visit > 0) {
            scores(p, q, k, b, h, kvh, w0, w1, 0, p->seq_kv, bc, s_next);
            t->s_products++;
            held = 1;
          }
          for (int j = 0; j < visit; ++j) {
            float *sw = s_cur; /* this tile's S becomes current; the buffer is reused */
            s_cur = s_next;
            s_next = sw;
            held = 1;
            if (j + 1 < visit) { /* the next tile's S, before this tile's softmax */
              scores(p, q, k, b, h, kvh, w0, w1, (j + 1) * bc, p->seq_kv, bc, s_next);
              t->s_products++;
              held = 2;
            }
            if (held > t->max_early) t->max_early = held;
            for (int r = 0; r < rows; ++r) {
              float *sr = s_cur + (size_t)r * bc;
              float mx = -INFINITY;
              for (int c = 0; c < bc; ++c) mx = fmaxf(mx, sr[c]);
              const float m_new = fmaxf(m[r], mx * scale_log2);
              const float m_use = m_new == -INFINITY ? 0.f : m_new;
              const float alpha = exp2f(m[r] - m_use);
              float sum = 0.f;
              for (int c = 0; c < bc; ++c) {
                sr[c] = exp2f(sr[c] * scale_log2 - m_use);
                sum += sr[c];
              }
              m[r] = m_new;
              l[r] = l[r] * alpha + sum;
              float *ar = acc + (size_t)r * d;
              for (int i = 0; i < d; ++i) ar[i] *= alpha;
              for (int c = 0; c < bc; ++c) {
                const int key = j * bc + c;
                if (key >= p->seq_kv || sr[c] == 0.f) continue;
                const float *vr = v + (((size_t)b * p->seq_kv + key) * p->kv_heads + kvh) * d;
                for (int i = 0; i < d; ++i) ar[i] += sr[c] * vr[i];
              }
            }
          }
          for (int r = 0; r < rows; ++r) {
            const int row = w0 + r;
            float *orow = o + (((size_t)b * p->seq_q + row) * p->heads + h) * d;
            const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
            for (int i = 0; i < d; ++i) orow[i] = acc[(size_t)r * d + i] * inv;
            lse[((size_t)b * p->heads + h) * p->seq_q + row] =
                l[r] > 0.f ? (float)((m[r] + log2(l[r])) * LN2) : -INFINITY;
          }
        }
      }
    }
  free(s_cur), free(s_next), free(acc), free(m), free(l);
  return 0;
}
