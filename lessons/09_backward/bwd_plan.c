/* Lesson 09's plan (bwd_plan.h): the softmax backward of one row, the D term, the Q tiles a K/V
 * tile visits, and the shared-memory passes of a warp's access. These are the answers the checklist
 * holds `make drill-9` to; the kernels and the reference compute the same quantities. */
#include "bwd_plan.h"

float l09_d_term(const float *d_o, const float *o, int dim) {
  /* sum_k P_k dP_k = sum_k P_k (dO . V_k) = dO . (sum_k P_k V_k) = dO . O: one dot product of two
   * rows that exist anyway, instead of a pass over the whole row of P. */
  double acc = 0.0;
  for (int d = 0; d < dim; ++d) acc += (double)d_o[d] * (double)o[d];
  return (float)acc;
}

void l09_softmax_grad_row(const float *p, const float *dp, float d, int n, float *ds) {
  /* The Jacobian of softmax is diag(P) - P P^T; applied to dP it is P o dP - P (P . dP), and
   * P . dP is D. A masked entry has p = 0 and gets ds = 0. */
  for (int j = 0; j < n; ++j) ds[j] = p[j] * (dp[j] - d);
}

/* Q tiles of br rows over seq_q rows. */
static int l09_q_tiles(int br, int seq_q) {
  return (int)(((long)seq_q + br - 1) / br);
}

int l09_first_q_tile(int j0, int br, int seq_q, int seq_kv, int causal) {
  if (!causal) return 0;
  /* Row i sees key j0 when i >= j0 - (seq_kv - seq_q). Whoever sees a key of the tile sees its
   * first key (a row sees a prefix of the keys), so the first such row decides. */
  const long row = (long)j0 - seq_kv + seq_q;
  if (row <= 0) return 0;
  if (row >= seq_q) return l09_q_tiles(br, seq_q); /* no row sees the tile */
  return (int)(row / br);                          /* the tile holding that row */
}

int l09_first_unmasked_q_tile(int j0, int bc, int br, int seq_q, int seq_kv, int causal) {
  if (!causal) return 0;
  /* A row that sees the tile's last key sees all of it, and so do the rows after it: the first
   * tile that starts at or after the first such row needs no mask. */
  const long last = (long)j0 + bc < seq_kv ? (long)j0 + bc - 1 : (long)seq_kv - 1;
  const long row = last - seq_kv + seq_q;
  if (row <= 0) return 0;
  const long tile = (row + br - 1) / br; /* rounded up: the tile must start at that row or later */
  const int n_tiles = l09_q_tiles(br, seq_q);
  return tile < n_tiles ? (int)tile : n_tiles;
}

int l09_shared_passes(const unsigned offsets[32], int bytes) {
  if (bytes != 4 && bytes != 8 && bytes != 16) return 0;
  /* 128 bytes a pass: the lanes are served in groups of 128 / bytes. */
  const int group = 128 / bytes, words = bytes / 4;
  int total = 0;
  for (int g0 = 0; g0 < 32; g0 += group) {
    /* The distinct words of the group, and per bank how many of them it holds. */
    unsigned seen[32];
    int n_seen = 0, per_bank[32] = {0}, passes = 0;
    for (int l = g0; l < g0 + group; ++l)
      for (int k = 0; k < words; ++k) {
        const unsigned w = offsets[l] / 4 + (unsigned)k;
        int dup = 0;
        for (int i = 0; i < n_seen && !dup; ++i) dup = seen[i] == w;
        if (dup) continue; /* the same word: one read or write serves both lanes */
        seen[n_seen++] = w;
        if (++per_bank[w % 32] > passes) passes = per_bank[w % 32];
      }
    total += passes;
  }
  return total;
}

long l09_step_shared_bytes(int br, int bc, int dim, int dq_row_parts, int dq_col_parts) {
  if (bc <= 0 || bc % 64 != 0 || br <= 0 || dim <= 0 || dq_row_parts <= 0 || dq_col_parts <= 0 ||
      br % dq_row_parts != 0 || dim % dq_col_parts != 0)
    return 0;
  const long warpgroups = bc / 64, q = br, k = bc, d = dim;
  const long s_dp = 2 * warpgroups * (64 + q) * d * 2;                 /* S^T and dP^T: A and B */
  const long dv_dk = 2 * warpgroups * q * d * 2;                       /* dV and dK: B only */
  const long ds = q * k * 2;                                           /* dS stored for dQ */
  const long dq = dq_col_parts * q * k * 2 + dq_row_parts * k * d * 2; /* dQ's A and B */
  const long staging = 2 * q * d * 4; /* the fp32 dQ block, written and read back */
  const long landing = 2 * q * d * 2; /* Q and dO from global memory */
  return s_dp + dv_dk + ds + dq + staging + landing;
}
