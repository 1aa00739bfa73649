/* Lesson 09's checklist (bwd_plan.h): the softmax backward of one row against its Jacobian and
 * against finite differences, why D = rowsum(dO o O) equals rowsum(P o dP), the Q tiles a K/V
 * tile visits under the bottom-right causal mask, against a brute-force scan of rows and keys,
 * shared-memory passes, and the bytes one step moves through shared memory against a listing.
 * Built against the lesson's bwd_plan.c (checklist-9, must pass) and against drills/09_backward.c
 * (drill-9, fails until the reader fills it in). Expected values are computed here, in double,
 * from the definitions. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "bwd_plan.h"
#include "dq_staging.h"

enum { MAX_N = 64, MAX_DIM = 128 };

static double uniform(uint32_t *r, double lo, double hi) {
  *r ^= *r << 13;
  *r ^= *r >> 17;
  *r ^= *r << 5;
  return lo + (hi - lo) * (double)(*r >> 8) / 16777216.0;
}

/* softmax(s) over the first n_visible of n entries (the rest masked: 0), in double. */
static void softmax(const double *s, int n, int n_visible, double *p) {
  double m = -INFINITY, l = 0.0;
  for (int j = 0; j < n_visible; ++j) m = fmax(m, s[j]);
  for (int j = 0; j < n; ++j) p[j] = j < n_visible ? exp(s[j] - m) : 0.0;
  for (int j = 0; j < n_visible; ++j) l += p[j];
  for (int j = 0; j < n; ++j) p[j] /= l;
}

/* ---- The softmax backward of one row ---- */

/* One row: scores, the probabilities rounded to float as a kernel holds them, dP. */
typedef struct grad_row {
  int n, n_visible;
  double s[MAX_N];
  float p[MAX_N], dp[MAX_N];
} grad_row;

enum { ROW_PLAIN, ROW_MASKED, ROW_ONE_KEY, ROW_DOMINANT, ROW_LONG, N_ROWS };

static grad_row make_grad_row(int kind) {
  grad_row g;
  uint32_t r = 2463534242u + 97u * (uint32_t)kind;
  g.n = kind == ROW_ONE_KEY ? 1 : kind == ROW_LONG ? MAX_N : 9;
  g.n_visible = kind == ROW_MASKED ? 5 : g.n;
  for (int j = 0; j < g.n; ++j) g.s[j] = uniform(&r, -2.0, 3.0);
  if (kind == ROW_DOMINANT) { /* one probability near 1, the others near e^-30: exp(s) overflows */
    for (int j = 0; j < g.n; ++j) g.s[j] += 90.0;
    g.s[4] = 125.0;
  }
  double p[MAX_N];
  softmax(g.s, g.n, g.n_visible, p);
  for (int j = 0; j < g.n; ++j) {
    g.p[j] = (float)p[j];
    g.dp[j] = (float)uniform(&r, -1.5, 2.5); /* not centred: D is far from 0 */
  }
  return g;
}

/* D = sum_j P_j dP_j of the row's float values, in double. */
static double row_d(const grad_row *g) {
  double d = 0.0;
  for (int j = 0; j < g->n; ++j) d += (double)g->p[j] * g->dp[j];
  return d;
}

/* The row's ds, with NaN in every entry first, so one the function does not write fails. */
static void run_grad(const grad_row *g, float d, float *ds) {
  for (int j = 0; j < MAX_N; ++j) ds[j] = NAN;
  l09_softmax_grad_row(g->p, g->dp, d, g->n, ds);
}

static void assert_close(const char *what, int kind, const float *got, const double *want, int n,
                         double tol) {
  double big = 0.0;
  for (int j = 0; j < n; ++j) big = fmax(big, fabs(want[j]));
  for (int j = 0; j < n; ++j)
    ck_assert_msg(fabs(got[j] - want[j]) <= tol * (1.0 + big), "row %d: %s[%d] = %.8g, want %.8g",
                  kind, what, j, got[j], want[j]);
}

/* dS = J^T dP with the softmax Jacobian J[j][i] = dP_j / dS_i = P_j (delta_ji - P_i) formed in
 * full, in double: what the one-line formula must equal. */
START_TEST(softmax_grad_matches_the_jacobian) {
  for (int kind = 0; kind < N_ROWS; ++kind) {
    const grad_row g = make_grad_row(kind);
    double want[MAX_N];
    for (int i = 0; i < g.n; ++i) {
      want[i] = 0.0;
      for (int j = 0; j < g.n; ++j)
        want[i] += (double)g.p[j] * ((i == j ? 1.0 : 0.0) - (double)g.p[i]) * g.dp[j];
    }
    float ds[MAX_N];
    run_grad(&g, (float)row_d(&g), ds);
    assert_close("ds", kind, ds, want, g.n, 1e-6);
    for (int j = g.n_visible; j < g.n; ++j)
      ck_assert_msg(ds[j] == 0.0f, "row %d: masked entry %d has ds %g", kind, j, ds[j]);
    /* Softmax ignores a shift of every score, so the gradient has no component along (1, ..., 1).
     * (All zeros passes this one; not the test above.) */
    double sum = 0.0, mag = 0.0;
    for (int j = 0; j < g.n; ++j) sum += ds[j], mag += fabs(ds[j]);
    ck_assert_msg(fabs(sum) <= 1e-6 * (1.0 + mag), "row %d: the ds sum to %g, not 0", kind, sum);
  }
}
END_TEST

/* f(s) = sum_j softmax(s)_j dP_j: its gradient with respect to the scores is dS. Central
 * differences in double against the function. */
START_TEST(softmax_grad_matches_finite_differences) {
  for (int kind = 0; kind < N_ROWS; ++kind) {
    const grad_row g = make_grad_row(kind);
    double s[MAX_N], pr[MAX_N], want[MAX_N];
    for (int j = 0; j < g.n; ++j) s[j] = g.s[j];
    for (int i = 0; i < g.n_visible; ++i) {
      const double h = 1e-5, keep = s[i];
      double up = 0.0, down = 0.0;
      s[i] = keep + h;
      softmax(s, g.n, g.n_visible, pr);
      for (int j = 0; j < g.n; ++j) up += pr[j] * g.dp[j];
      s[i] = keep - h;
      softmax(s, g.n, g.n_visible, pr);
      for (int j = 0; j < g.n; ++j) down += pr[j] * g.dp[j];
      s[i] = keep;
      want[i] = (up - down) / (2.0 * h);
    }
    float ds[MAX_N];
    run_grad(&g, (float)row_d(&g), ds);
    assert_close("ds", kind, ds, want, g.n_visible, 2e-6);
  }
}
END_TEST

/* The contract is the formula with the D it is given: the caller computed D once for the row
 * (from dO and O), and every tile of the row uses that one number. */
START_TEST(softmax_grad_uses_the_d_it_is_given) {
  const grad_row g = make_grad_row(ROW_PLAIN);
  const float ds_d[3] = {0.0f, -0.75f, 3.5f};
  for (int c = 0; c < 3; ++c) {
    double want[MAX_N];
    for (int j = 0; j < g.n; ++j) want[j] = (double)g.p[j] * ((double)g.dp[j] - ds_d[c]);
    float ds[MAX_N];
    run_grad(&g, ds_d[c], ds);
    assert_close("ds with a given D", c, ds, want, g.n, 1e-6);
  }
}
END_TEST

/* ---- The D term: rowsum(dO o O) = rowsum(P o dP) ---- */

/* A row of n keys and head dimension dim: P from scores, V, O = P V, dO, dP = dO V^T. D computed
 * from P and dP (the definition) must equal l09_d_term(dO, O), which never sees P. */
START_TEST(d_term_equals_rowsum_p_dp) {
  const int shapes[][3] = {/* n, visible, dim */
                           {1, 1, 8},   {7, 7, 8},   {MAX_N, MAX_N, 64}, {40, 23, 128},
                           {5, 5, 128}, {64, 1, 64}, {33, 33, 1}};
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; ++c) {
    const int n = shapes[c][0], nv = shapes[c][1], dim = shapes[c][2];
    static double v[MAX_N][MAX_DIM];
    double s[MAX_N], p[MAX_N], o[MAX_DIM], dp[MAX_N];
    float of[MAX_DIM], dof[MAX_DIM];
    uint32_t r = 1013904223u + 31u * (uint32_t)c;
    for (int j = 0; j < n; ++j) s[j] = uniform(&r, -3.0, 3.0);
    softmax(s, n, nv, p);
    for (int j = 0; j < n; ++j)
      for (int d = 0; d < dim; ++d) v[j][d] = (float)uniform(&r, -0.75, 1.25);
    for (int d = 0; d < dim; ++d) dof[d] = (float)uniform(&r, -0.5, 1.5);
    for (int d = 0; d < dim; ++d) {
      o[d] = 0.0;
      for (int j = 0; j < n; ++j) o[d] += p[j] * v[j][d];
      of[d] = (float)o[d]; /* the forward writes O in its own precision */
    }
    double want = 0.0, mag = 0.0; /* sum_j P_j dP_j, dP_j = dO . V_j */
    for (int j = 0; j < n; ++j) {
      dp[j] = 0.0;
      for (int d = 0; d < dim; ++d) dp[j] += (double)dof[d] * v[j][d];
      want += p[j] * dp[j];
    }
    for (int d = 0; d < dim; ++d) mag += fabs((double)dof[d] * o[d]);
    const float got = l09_d_term(dof, of, dim);
    ck_assert_msg(fabs(got - want) <= 1e-6 * (1.0 + mag),
                  "n %d (%d visible), dim %d: l09_d_term = %.9g, sum_j P_j dP_j = %.9g", n, nv, dim,
                  got, want);
  }
}
END_TEST

/* The contract accumulates in double: in a float accumulator 2^24 + 1 rounds back to 2^24, and
 * every 1 below is lost. The exact answer is 1000. */
START_TEST(d_term_accumulates_in_double) {
  enum { DIM = 1002 };
  static float d_o[DIM], o[DIM];
  d_o[0] = 16777216.0f;
  for (int d = 1; d < DIM - 1; ++d) d_o[d] = 1.0f;
  d_o[DIM - 1] = -16777216.0f;
  for (int d = 0; d < DIM; ++d) o[d] = 1.0f;
  ck_assert_msg(l09_d_term(d_o, o, DIM) == 1000.0f, "l09_d_term = %.9g, want 1000",
                l09_d_term(d_o, o, DIM));
  ck_assert_msg(l09_d_term(o, d_o, 1) == 16777216.0f, "dim 1: %.9g", l09_d_term(o, d_o, 1));
}
END_TEST

/* ---- The Q tiles a K/V tile visits ---- */

/* Query r sees key c under the mask in force. */
static int sees(int r, int c, int seq_q, int seq_kv, int causal) {
  return !causal || c <= r + seq_kv - seq_q;
}

/* How the rows of Q tile t (rows [t br, min((t + 1) br, seq_q))) meet the keys [j0, j1): 0 none
 * of the rows sees any key, 1 some pair is seen, 2 every row sees every key. */
static int tile_meets(int t, int br, int j0, int j1, int seq_q, int seq_kv, int causal) {
  int seen = 0, hidden = 0;
  for (int r = t * br; r < (t + 1) * br && r < seq_q; ++r)
    for (int c = j0; c < j1; ++c) sees(r, c, seq_q, seq_kv, causal) ? ++seen : ++hidden;
  return hidden == 0 ? 2 : seen > 0;
}

/* seq_q, seq_kv: equal, fewer queries, more queries (rows that see no key), one query, one key,
 * lengths that are multiples of nothing. */
static const int kLens[][2] = {{1, 1},    {1, 300},   {5, 9},    {9, 5},     {64, 64},  {100, 37},
                               {37, 100}, {128, 128}, {129, 64}, {70, 200},  {200, 70}, {3, 129},
                               {130, 2},  {256, 64},  {64, 256}, {255, 257}, {257, 255}};
static const int kBr[] = {1, 3, 16, 64, 128}, kBc[] = {1, 7, 32, 64, 96};
enum { N_LENS = sizeof kLens / sizeof kLens[0], N_BR = 5, N_BC = 5 };

/* The first Q tile with a row that sees a key of the tile, scanning every row and key; the
 * function has no tile length, and every K/V tile start j0 and tile length must give its answer. */
START_TEST(first_q_tile_matches_a_scan) {
  for (int s = 0; s < N_LENS; ++s)
    for (int causal = 0; causal < 2; ++causal)
      for (int a = 0; a < N_BR; ++a)
        for (int c = 0; c < N_BC; ++c) {
          const int sq = kLens[s][0], skv = kLens[s][1], br = kBr[a], bc = kBc[c];
          const int n_tiles = (sq + br - 1) / br;
          for (int j0 = 0; j0 < skv; ++j0) {
            const int j1 = j0 + bc < skv ? j0 + bc : skv;
            int want = n_tiles;
            for (int t = 0; t < n_tiles && want == n_tiles; ++t)
              if (tile_meets(t, br, j0, j1, sq, skv, causal) > 0) want = t;
            const int got = l09_first_q_tile(j0, br, sq, skv, causal);
            ck_assert_msg(got == want,
                          "seq_q %d seq_kv %d causal %d, Q tiles of %d, K/V tile at %d (of %d): "
                          "first Q tile %d, want %d",
                          sq, skv, causal, br, j0, bc, got, want);
          }
        }
}
END_TEST

/* The first Q tile from which every tile sees every key of the K/V tile, scanning from the last
 * Q tile back while that holds; K/V tiles start at multiples of bc, the last one maybe short. */
START_TEST(first_unmasked_q_tile_matches_a_scan) {
  for (int s = 0; s < N_LENS; ++s)
    for (int causal = 0; causal < 2; ++causal)
      for (int a = 0; a < N_BR; ++a)
        for (int c = 0; c < N_BC; ++c) {
          const int sq = kLens[s][0], skv = kLens[s][1], br = kBr[a], bc = kBc[c];
          const int n_tiles = (sq + br - 1) / br;
          for (int j0 = 0; j0 < skv; j0 += bc) {
            const int j1 = j0 + bc < skv ? j0 + bc : skv;
            int want = n_tiles;
            while (want > 0 && tile_meets(want - 1, br, j0, j1, sq, skv, causal) == 2) --want;
            const int got = l09_first_unmasked_q_tile(j0, bc, br, sq, skv, causal);
            ck_assert_msg(got == want,
                          "seq_q %d seq_kv %d causal %d, Q tiles of %d, K/V tile [%d, %d): first "
                          "unmasked Q tile %d, want %d",
                          sq, skv, causal, br, j0, j1, got, want);
            const int first = l09_first_q_tile(j0, br, sq, skv, causal);
            ck_assert_msg(got >= first, "K/V tile [%d, %d): unmasked from %d, before the first %d",
                          j0, j1, got, first);
          }
        }
}
END_TEST

/* Worked by hand, as on a whiteboard. */
START_TEST(q_tiles_by_hand) {
  /* 256 x 256, 64 x 64 tiles: keys 128..191 are first seen by row 128 (tile 2, where the diagonal
   * crosses), and row 191 sees them all: tile 3 on needs no mask. */
  ck_assert_int_eq(l09_first_q_tile(128, 64, 256, 256, 1), 2);
  ck_assert_int_eq(l09_first_unmasked_q_tile(128, 64, 64, 256, 256, 1), 3);
  ck_assert_int_eq(l09_first_q_tile(0, 64, 256, 256, 1), 0);
  ck_assert_int_eq(l09_first_unmasked_q_tile(0, 64, 64, 256, 256, 1), 1);
  /* Without the mask every Q tile sees every key. */
  ck_assert_int_eq(l09_first_q_tile(128, 64, 256, 256, 0), 0);
  ck_assert_int_eq(l09_first_unmasked_q_tile(128, 64, 64, 256, 256, 0), 0);
  /* 64 queries, 256 keys (offset +192): row 0 sees keys 0..192. Keys 0..63: no mask from tile 0;
   * keys 192..255: tile 0 sees them, but only row 63 sees key 255, so every tile is masked. */
  ck_assert_int_eq(l09_first_q_tile(0, 64, 64, 256, 1), 0);
  ck_assert_int_eq(l09_first_unmasked_q_tile(0, 64, 64, 64, 256, 1), 0);
  ck_assert_int_eq(l09_first_q_tile(192, 64, 64, 256, 1), 0);
  ck_assert_int_eq(l09_first_unmasked_q_tile(192, 64, 64, 64, 256, 1), 1);
  /* 256 queries, 64 keys (offset -192): rows 0..191 see nothing; key 0 is first seen by row 192
   * (tile 3), key 63 by row 255 alone. */
  ck_assert_int_eq(l09_first_q_tile(0, 64, 256, 64, 1), 3);
  ck_assert_int_eq(l09_first_unmasked_q_tile(0, 64, 64, 256, 64, 1), 4);
  /* 100 queries, 37 keys, tiles 32 x 32 (offset -63): key 32 is first seen by row 95 (tile 2);
   * the short tile of keys 32..36 is seen whole from row 99, so only the short Q tile 3 (rows
   * 96..99) would qualify, and row 96 does not see key 36: none. */
  ck_assert_int_eq(l09_first_q_tile(32, 32, 100, 37, 1), 2);
  ck_assert_int_eq(l09_first_unmasked_q_tile(32, 32, 32, 100, 37, 1), 4);
  /* Bottom-right, the last query sees every key, so every K/V tile of real keys is seen by some
   * row. Only a tile past the last key (a grid rounded up) is seen by none: all 4 tiles skipped. */
  ck_assert_int_eq(l09_first_q_tile(37, 32, 100, 37, 1), 4);
  ck_assert_int_eq(l09_first_q_tile(64, 32, 100, 37, 1), 4);
}
END_TEST

/* ---- Shared-memory passes (l09_shared_passes) --------------------------------------------------
 * Lesson 01's 4-byte patterns first, then wider accesses, then version 7's dQ staging. */

START_TEST(shared_passes_by_hand) {
  unsigned off[32];
  for (int l = 0; l < 32; ++l) off[l] = 4u * (unsigned)l; /* one word a lane, each bank once */
  ck_assert_int_eq(l09_shared_passes(off, 4), 1);
  for (int l = 0; l < 32; ++l) off[l] = 8u * (unsigned)l; /* a stride of 2 words: 2 per bank */
  ck_assert_int_eq(l09_shared_passes(off, 4), 2);
  for (int l = 0; l < 32; ++l) off[l] = 128u * (unsigned)l; /* a stride of 32: all in bank 0 */
  ck_assert_int_eq(l09_shared_passes(off, 4), 32);
  for (int l = 0; l < 32; ++l) off[l] = 132u * (unsigned)l; /* rows of 33 words: padded */
  ck_assert_int_eq(l09_shared_passes(off, 4), 1);
  for (int l = 0; l < 32; ++l) off[l] = 0; /* one word for every lane: a broadcast */
  ck_assert_int_eq(l09_shared_passes(off, 4), 1);
  /* 8 bytes a lane, contiguous: each half-warp 128 bytes, one pass each. */
  for (int l = 0; l < 32; ++l) off[l] = 8u * (unsigned)l;
  ck_assert_int_eq(l09_shared_passes(off, 8), 2);
  /* 8 bytes at a 16-byte stride: a half-warp spans 256 bytes, so each bank it uses twice. */
  for (int l = 0; l < 32; ++l) off[l] = 16u * (unsigned)l;
  ck_assert_int_eq(l09_shared_passes(off, 8), 4);
  /* 16 bytes a lane, contiguous: four quarter-warps of 128 bytes. */
  ck_assert_int_eq(l09_shared_passes(off, 16), 4);
  /* 16 bytes at a 32-byte stride: each quarter-warp spans 256 bytes. */
  for (int l = 0; l < 32; ++l) off[l] = 32u * (unsigned)l;
  ck_assert_int_eq(l09_shared_passes(off, 16), 8);
  /* Widths the banks do not serve in one access. */
  ck_assert_int_eq(l09_shared_passes(off, 2), 0);
  ck_assert_int_eq(l09_shared_passes(off, 32), 0);
}
END_TEST

/* The byte offsets of one warp's 8-byte stores of dQ in turn nt, row half hf: lane (g, t4) stores
 * row 16 warp + g + 8 hf, columns 2 t4 and 2 t4 + 1 of column block nt, or of the block
 * l09_dq_staging_block() gives when @p reordered (version 7 as it is). */
static void staging_stores(unsigned off[32], int warp, int nt, int hf, int reordered) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t4 = lane & 3;
    const int block = reordered ? l09_dq_staging_block(nt, t4) : nt;
    off[lane] = l09_dq_staging_offset(16 * warp + g + 8 * hf, 8 * block + 2 * t4);
  }
}

/* Every store of a warpgroup's staging, in the first order or reordered, takes @p want passes. */
static void staging_passes_are(int reordered, int want) {
  unsigned off[32];
  for (int warp = 0; warp < 4; ++warp)
    for (int nt = 0; nt < 8; ++nt)
      for (int hf = 0; hf < 2; ++hf) {
        staging_stores(off, warp, nt, hf, reordered);
        const int got = l09_shared_passes(off, 8);
        ck_assert_msg(got == want, "%s: warp %d, turn %d, half %d: %d passes, want %d",
                      reordered ? "reordered" : "first order", warp, nt, hf, got, want);
      }
}

/* Version 7's first order: a half-warp writes four chunks, each from two rows, so every store of
 * the staging takes two passes a half-warp where 256 bytes need two in all. Nsight Compute counted
 * the same: half of the staging's wavefronts excess. */
START_TEST(dq_staging_in_block_order_takes_two_passes_a_half_warp) {
  staging_passes_are(0, 4);
}
END_TEST

/* Reordered, a half-warp writes eight different chunks: one pass each. */
START_TEST(dq_staging_reordered_takes_one_pass_a_half_warp) {
  staging_passes_are(1, 2);
}
END_TEST

/* ---- The bytes a step moves through shared memory ---- */

/* One operand of one product: rows x cols elements of `bytes` each, and whether it is read from
 * shared memory (A from registers is not). */
typedef struct operand {
  long rows, cols, bytes;
  int shared;
} operand;

/* The step listed operand by operand, product by product and warpgroup by warpgroup, independently
 * of the formula in the contract: the bytes of every operand read from or written to shared
 * memory. */
static long step_bytes_by_listing(int br, int bc, int dim, int rp, int cp) {
  operand list[64];
  int n = 0;
  for (int w = 0; w < bc / 64; ++w) {
    list[n++] = (operand){64, dim, 2, 1}; /* S^T: K_w */
    list[n++] = (operand){br, dim, 2, 1}; /* S^T: Q */
    list[n++] = (operand){64, dim, 2, 1}; /* dP^T: V_w */
    list[n++] = (operand){br, dim, 2, 1}; /* dP^T: dO */
    list[n++] = (operand){64, br, 2, 0};  /* dV: P^T from registers */
    list[n++] = (operand){br, dim, 2, 1}; /* dV: dO */
    list[n++] = (operand){64, br, 2, 0};  /* dK: dS^T from registers */
    list[n++] = (operand){br, dim, 2, 1}; /* dK: Q */
  }
  list[n++] = (operand){br, bc, 2, 1}; /* dS stored for dQ */
  for (int r = 0; r < rp; ++r)
    for (int c = 0; c < cp; ++c) {
      list[n++] = (operand){br / rp, bc, 2, 1};  /* dQ: its rows of dS */
      list[n++] = (operand){bc, dim / cp, 2, 1}; /* dQ: its columns of K */
    }
  list[n++] = (operand){br, dim, 4, 1}; /* dQ block into the staging tile */
  list[n++] = (operand){br, dim, 4, 1}; /* read back by the reduction */
  list[n++] = (operand){br, dim, 2, 1}; /* Q lands */
  list[n++] = (operand){br, dim, 2, 1}; /* dO lands */
  long total = 0;
  for (int i = 0; i < n; ++i)
    if (list[i].shared) total += list[i].rows * list[i].cols * list[i].bytes;
  return total;
}

/* Version 7 at dim 128 (64 queries, 128 keys, dQ in two column halves): 128 KB for S^T and dP^T,
 * 64 KB for dV and dK, 16 KB of dS, 64 KB for dQ, 64 KB of staging, 32 KB landing: 368 KB. One
 * m64n128 dQ product reads 16 KB less. Version 7 at dim 64 (128 queries, dQ in two row halves). */
START_TEST(step_shared_bytes_by_hand) {
  ck_assert_int_eq(l09_step_shared_bytes(64, 128, 128, 1, 2), 376832);
  ck_assert_int_eq(l09_step_shared_bytes(64, 128, 128, 1, 1), 360448);
  ck_assert_int_eq(l09_step_shared_bytes(128, 128, 64, 2, 1), 360448);
}
END_TEST

START_TEST(step_shared_bytes_matches_a_listing) {
  const int brs[] = {16, 64, 80, 128}, bcs[] = {64, 128, 192}, dims[] = {64, 128, 256};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k)
        for (int rp = 1; rp <= 2; ++rp)
          for (int cp = 1; cp <= 4; cp *= 2) {
            const long want = step_bytes_by_listing(brs[i], bcs[j], dims[k], rp, cp);
            const long got = l09_step_shared_bytes(brs[i], bcs[j], dims[k], rp, cp);
            ck_assert_msg(got == want, "br %d, bc %d, dim %d, dQ %d x %d: %ld bytes, want %ld",
                          brs[i], bcs[j], dims[k], rp, cp, got, want);
          }
}
END_TEST

START_TEST(step_shared_bytes_refuses_what_it_cannot_count) {
  ck_assert_int_eq(l09_step_shared_bytes(64, 96, 128, 1, 1), 0); /* keys not whole warpgroups */
  ck_assert_int_eq(l09_step_shared_bytes(64, 0, 128, 1, 1), 0);
  ck_assert_int_eq(l09_step_shared_bytes(0, 128, 128, 1, 1), 0);
  ck_assert_int_eq(l09_step_shared_bytes(64, 128, 0, 1, 1), 0);
  ck_assert_int_eq(l09_step_shared_bytes(64, 128, 128, 3, 1), 0); /* 3 does not divide 64 rows */
  ck_assert_int_eq(l09_step_shared_bytes(64, 128, 96, 1, 64), 0); /* nor 64 the 96 columns */
  ck_assert_int_eq(l09_step_shared_bytes(64, 128, 128, 0, 1), 0);
  ck_assert_int_gt(l09_step_shared_bytes(64, 64, 64, 1, 1), 0); /* and counts what it can */
}
END_TEST

int main(void) {
  Suite *s = suite_create("checklist-9");
  TCase *g = tcase_create("softmax backward");
  tcase_add_test(g, softmax_grad_matches_the_jacobian);
  tcase_add_test(g, softmax_grad_matches_finite_differences);
  tcase_add_test(g, softmax_grad_uses_the_d_it_is_given);
  suite_add_tcase(s, g);
  TCase *d = tcase_create("the D term");
  tcase_add_test(d, d_term_equals_rowsum_p_dp);
  tcase_add_test(d, d_term_accumulates_in_double);
  suite_add_tcase(s, d);
  TCase *t = tcase_create("Q tiles of a K/V tile");
  tcase_add_test(t, first_q_tile_matches_a_scan);
  tcase_add_test(t, first_unmasked_q_tile_matches_a_scan);
  tcase_add_test(t, q_tiles_by_hand);
  suite_add_tcase(s, t);
  TCase *b = tcase_create("shared-memory passes");
  tcase_add_test(b, shared_passes_by_hand);
  tcase_add_test(b, dq_staging_in_block_order_takes_two_passes_a_half_warp);
  tcase_add_test(b, dq_staging_reordered_takes_one_pass_a_half_warp);
  suite_add_tcase(s, b);
  TCase *y = tcase_create("bytes a step");
  tcase_add_test(y, step_shared_bytes_by_hand);
  tcase_add_test(y, step_shared_bytes_matches_a_listing);
  tcase_add_test(y, step_shared_bytes_refuses_what_it_cannot_count);
  suite_add_tcase(s, y);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
