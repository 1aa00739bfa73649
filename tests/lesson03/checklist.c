/* Checklist tests of lesson 3 (drill 3): tile sizes, tile-loop bounds, the causal tile class, the
 * HBM traffic of Algorithm 1 in closed form, and the backward of one row from its log-sum-exp.
 * Built against the lesson's tile_loops.c and backward_row.c (checklist-3, must pass) and against
 * drills/03_tile_loops.c (drill-3, fails until the reader fills it in). The traffic tests count
 * with the lesson's CPU model (cpu_model.c), which runs on the tile functions under test; the
 * backward tests compute their expected values here, in double, from the definitions. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backward_row.h"
#include "fa1_tiling.h"
#include "tile_loops.h"

START_TEST(paper_tile_sizes) {
  int br = -1, bc = -1;
  /* H200: 227 KB = 58112 floats. d 64: 58112 / 256 = 227 exactly. */
  l03_paper_tile_sizes(58112, 64, &br, &bc);
  ck_assert_int_eq(bc, 227);
  ck_assert_int_eq(br, 64);
  /* d 128: 58112 / 512 = 113.5, rounded up; Br = min(114, 128). */
  l03_paper_tile_sizes(58112, 128, &br, &bc);
  ck_assert_int_eq(bc, 114);
  ck_assert_int_eq(br, 114);
  /* A100: 163 KB = 41728 floats, d 64: 163. */
  l03_paper_tile_sizes(41728, 64, &br, &bc);
  ck_assert_int_eq(bc, 163);
  ck_assert_int_eq(br, 64);
  /* Tiny memory: the tiles shrink below d. */
  l03_paper_tile_sizes(1000, 64, &br, &bc);
  ck_assert_int_eq(bc, 4);
  ck_assert_int_eq(br, 4);
}
END_TEST

START_TEST(tile_counts) {
  ck_assert_int_eq(l03_num_tiles(0, 64), 0);
  ck_assert_int_eq(l03_num_tiles(1, 64), 1);
  ck_assert_int_eq(l03_num_tiles(63, 64), 1);
  ck_assert_int_eq(l03_num_tiles(64, 64), 1);
  ck_assert_int_eq(l03_num_tiles(65, 64), 2);
  ck_assert_int_eq(l03_num_tiles(4096, 224), 19);
  ck_assert_int_eq(l03_num_tiles(65536, 224), 293);
  ck_assert_int_eq(l03_num_tiles(4096, 64), 64);
}
END_TEST

START_TEST(tile_bounds_last_tile_is_short) {
  /* 300 keys in tiles of 64: 0-64, 64-128, ..., 256-300. */
  ck_assert_int_eq(l03_tile_start(0, 64), 0);
  ck_assert_int_eq(l03_tile_end(0, 64, 300), 64);
  ck_assert_int_eq(l03_tile_start(3, 64), 192);
  ck_assert_int_eq(l03_tile_end(3, 64, 300), 256);
  ck_assert_int_eq(l03_tile_start(4, 64), 256);
  ck_assert_int_eq(l03_tile_end(4, 64, 300), 300);
  /* One token: one tile of one. */
  ck_assert_int_eq(l03_tile_end(0, 224, 1), 1);
}
END_TEST

START_TEST(tiles_cover_every_index_once) {
  const int tiles[] = {1, 3, 16, 32, 64, 224};
  for (size_t a = 0; a < sizeof tiles / sizeof tiles[0]; ++a)
    for (int len = 1; len <= 700; len += 7) {
      const int t = tiles[a], n = l03_num_tiles(len, t);
      ck_assert_int_ge(n, 1);
      int next = 0;
      for (int i = 0; i < n; ++i) {
        ck_assert_int_eq(l03_tile_start(i, t), next); /* no gap, no overlap */
        const int end = l03_tile_end(i, t, len);
        ck_assert_int_gt(end, l03_tile_start(i, t)); /* never empty */
        ck_assert_int_le(end - l03_tile_start(i, t), t);
        next = end;
      }
      ck_assert_int_eq(next, len); /* the last tile stops exactly at len */
    }
}
END_TEST

START_TEST(causal_square) {
  /* 256 x 256, tiles 64 x 64: the diagonal is partial, above it masked, below it visible. */
  ck_assert_int_eq(l03_causal_tile_class(0, 0, 64, 64, 256, 256), L03_TILE_PARTIAL);
  ck_assert_int_eq(l03_causal_tile_class(0, 1, 64, 64, 256, 256), L03_TILE_MASKED);
  ck_assert_int_eq(l03_causal_tile_class(1, 0, 64, 64, 256, 256), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(3, 3, 64, 64, 256, 256), L03_TILE_PARTIAL);
  ck_assert_int_eq(l03_causal_tile_class(2, 3, 64, 64, 256, 256), L03_TILE_MASKED);
  /* Br 64, Bc 224 (the H200's d 64 tiles): query tile 3 (rows 192..255) and key tile 0 (0..223). */
  ck_assert_int_eq(l03_causal_tile_class(3, 0, 64, 224, 4096, 4096), L03_TILE_PARTIAL);
  ck_assert_int_eq(l03_causal_tile_class(4, 0, 64, 224, 4096, 4096), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(0, 1, 64, 224, 4096, 4096), L03_TILE_MASKED);
}
END_TEST

START_TEST(causal_bottom_right_fewer_queries) {
  /* 64 queries, 256 keys: offset 192, query 0 sees keys 0..192. */
  ck_assert_int_eq(l03_causal_tile_class(0, 0, 64, 64, 64, 256), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(0, 2, 64, 64, 64, 256), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(0, 3, 64, 64, 64, 256), L03_TILE_PARTIAL);
  /* Decode: one query sees every key. */
  ck_assert_int_eq(l03_causal_tile_class(0, 5, 1, 64, 1, 1000), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(0, 15, 1, 64, 1, 1000), L03_TILE_VISIBLE);
}
END_TEST

START_TEST(causal_bottom_right_more_queries) {
  /* 256 queries, 64 keys: offset -192; queries 0..191 see nothing. */
  ck_assert_int_eq(l03_causal_tile_class(0, 0, 64, 64, 256, 64), L03_TILE_MASKED);
  ck_assert_int_eq(l03_causal_tile_class(2, 0, 64, 64, 256, 64), L03_TILE_MASKED);
  ck_assert_int_eq(l03_causal_tile_class(3, 0, 64, 64, 256, 64), L03_TILE_PARTIAL);
  /* 100 queries, 37 keys, tiles 32 x 32: row r sees keys <= r - 63, so rows 0..62 see nothing. */
  ck_assert_int_eq(l03_causal_tile_class(0, 0, 32, 32, 100, 37), L03_TILE_MASKED); /* rows 0-31 */
  ck_assert_int_eq(l03_causal_tile_class(1, 0, 32, 32, 100, 37),
                   L03_TILE_PARTIAL); /* row 63: key 0 */
  ck_assert_int_eq(l03_causal_tile_class(2, 0, 32, 32, 100, 37), L03_TILE_PARTIAL); /* rows 64-95 */
  ck_assert_int_eq(l03_causal_tile_class(3, 0, 32, 32, 100, 37), L03_TILE_VISIBLE); /* rows 96-99 */
  ck_assert_int_eq(l03_causal_tile_class(3, 1, 32, 32, 100, 37), L03_TILE_PARTIAL); /* keys 32-36 */
}
END_TEST

/* The class against the definition, pair by pair, on many shapes including short last tiles. */
START_TEST(causal_class_matches_every_pair) {
  const int shapes[][4] = {{1, 1, 1, 1},     {5, 9, 2, 4},     {37, 100, 16, 32}, {100, 37, 16, 32},
                           {64, 64, 64, 64}, {70, 70, 32, 64}, {3, 200, 4, 8},    {200, 3, 8, 4}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    const int sq = shapes[s][0], skv = shapes[s][1], br = shapes[s][2], bc = shapes[s][3];
    for (int i = 0; i * br < sq; ++i)
      for (int j = 0; j * bc < skv; ++j) {
        int seen = 0, hidden = 0;
        for (int r = i * br; r < (i + 1) * br && r < sq; ++r)
          for (int c = j * bc; c < (j + 1) * bc && c < skv; ++c) {
            if (c <= r + skv - sq)
              seen++;
            else
              hidden++;
          }
        const l03_tile_class want =
            seen == 0 ? L03_TILE_MASKED : (hidden == 0 ? L03_TILE_VISIBLE : L03_TILE_PARTIAL);
        ck_assert_msg(l03_causal_tile_class(i, j, br, bc, sq, skv) == want,
                      "seq %d/%d, tiles %dx%d, tile (%d, %d): want %d", sq, skv, br, bc, i, j,
                      (int)want);
      }
  }
}
END_TEST

/* ---- Algorithm 1's HBM traffic in closed form (checklist item 7) ---- */

/* The bytes the lesson's CPU model of Algorithm 1 counts for one head of n queries and n keys, on
 * the paper's tiles for smem_bytes of shared memory (Bc = ceil(M / 4d), Br = min(Bc, d), M in
 * elements): Q, K, V and O at elem_bytes each, m, l and the LSE at 4. */
static double model_bytes(int n, int d, int elem_bytes, long smem_bytes) {
  const long m = smem_bytes / elem_bytes;
  l03_fa1_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.bc = (int)((m + 4L * d - 1) / (4L * d));
  plan.br = plan.bc < d ? plan.bc : d;
  plan.q_groups = 1;
  const attn_problem p = {.batch = 1, .heads = 1, .kv_heads = 1, .seq_q = n, .seq_kv = n, .dim = d};
  l03_traffic t;
  ck_assert_int_eq(l03_fa1_model(&p, &plan, NULL, NULL, NULL, NULL, NULL, &t), 0);
  double tensors = 0.0, stats = 0.0;
  for (int a = 0; a < L03_N_ARRAYS; ++a) {
    const int big = a == L03_ARR_Q || a == L03_ARR_K || a == L03_ARR_V || a == L03_ARR_O;
    *(big ? &tensors : &stats) += t.reads[a] + t.writes[a];
  }
  /* Any attention reads Q, K and V and writes O at least once. */
  ck_assert_msg(tensors >= 4.0 * n * d,
                "n %d d %d: the model moved %.0f elements of Q, K, V and O, fewer than 4nd: it "
                "walked no tiles (write l03_num_tiles, l03_tile_start and l03_tile_end first)",
                n, d, tensors);
  return elem_bytes * tensors + 4.0 * stats;
}

START_TEST(hbm_bytes_by_hand) {
  /* n 256, d 64, fp32, 64 KB: M = 16384 floats, Bc = 16384 / 256 = 64, Tc = 4.
   *   Q, K, V, O: K and V 2 x 256 x 64, O zeroed 256 x 64, then 4 x 3 x 256 x 64: 245760 elements
   *   m, l, LSE:  2 x 256 + 4 x 4 x 256 + 3 x 256 = 5376 elements
   * 4 x (245760 + 5376) = 1004544 bytes. */
  ck_assert_double_eq(l03_fa1_hbm_bytes(256, 64, 4, 65536), 1004544.0);
  /* bf16 on the same memory: M = 32768 elements, Bc = 128, Tc = 2.
   *   2 x 3 x 256 x 64 x (2 + 1) + 4 x 256 x (4 x 2 + 5) = 294912 + 13312 */
  ck_assert_double_eq(l03_fa1_hbm_bytes(256, 64, 2, 65536), 308224.0);
}
END_TEST

START_TEST(hbm_bytes_equal_the_model) {
  const struct {
    int n, d, elem_bytes;
    long smem_bytes;
  } shapes[] = {
      {1, 64, 4, 232448},     /* one token; the H200's 227 KB: Bc 227 */
      {256, 64, 4, 65536},    /* Bc 64 divides n */
      {300, 64, 4, 232448},   /* Bc 227: the last key tile holds 73 keys */
      {1000, 128, 4, 166912}, /* the A100's 163 KB: Bc ceil(81.5) = 82, Br 82 */
      {4096, 64, 2, 232448},  /* bf16: Bc 454, Tc 10 */
      {777, 32, 4, 4000},     /* a tiny memory: Bc 8, Br 8, Tc 98 */
      {512, 128, 2, 49152},   /* 48 KB in bf16: Bc 48 */
      {64, 64, 4, 1L << 20},  /* one key tile bigger than n */
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
    const int n = shapes[i].n, d = shapes[i].d, e = shapes[i].elem_bytes;
    const long smem = shapes[i].smem_bytes;
    const double want = model_bytes(n, d, e, smem), got = l03_fa1_hbm_bytes(n, d, e, smem);
    ck_assert_msg(got == want, "n %d d %d elem %d smem %ld: closed form %.0f bytes, model %.0f", n,
                  d, e, smem, got, want);
  }
}
END_TEST

/* The bytes beyond one visit of each query tile (Tc = 1, a memory that holds all the keys): the
 * re-reads of Q_i and O_i (and l_i, m_i) that the tiling costs. */
static double rereads(int n, int d, int e, long smem_bytes) {
  return l03_fa1_hbm_bytes(n, d, e, smem_bytes) - l03_fa1_hbm_bytes(n, d, e, 4L * d * n * e);
}

START_TEST(hbm_bytes_scale_as_n2_d2_over_m) {
  /* Tc = ceil(n / Bc) with Bc = ceil(M / 4d): doubling M halves the number of key tiles, so the
   * re-read term halves (up to the one visit every row needs). */
  const int n = 4096, d = 64;
  for (long smem = 32768; smem <= 131072; smem *= 2) {
    const double ratio = rereads(n, d, 4, smem) / rereads(n, d, 4, 2 * smem);
    ck_assert_msg(ratio >= 1.95 && ratio <= 2.1,
                  "M %ld -> %ld bytes: re-reads shrink %.3f x, not 2", smem, 2 * smem, ratio);
  }
  /* Doubling d at the same M halves Bc and doubles the row: four times the re-reads. */
  const double by_d = rereads(n, 2 * d, 4, 32768) / rereads(n, d, 4, 32768);
  ck_assert_msg(by_d >= 3.8 && by_d <= 4.2, "d %d -> %d: re-reads grow %.3f x, not 4", d, 2 * d,
                by_d);
  /* Doubling n doubles the rows and the key tiles: four times. */
  const double by_n = rereads(2 * n, d, 4, 32768) / rereads(n, d, 4, 32768);
  ck_assert_msg(by_n >= 3.9 && by_n <= 4.1, "n %d -> %d: re-reads grow %.3f x, not 4", n, 2 * n,
                by_n);
  /* The constant: 3nd bytes per key tile and Tc about 4nd / M give 12 n^2 d^2 / M elements. */
  const int big_n = 16384;
  const long m_elems = 32768 / 4;
  const double order = 4.0 * (double)big_n * big_n * d * d / m_elems;
  const double c = l03_fa1_hbm_bytes(big_n, d, 4, 32768) / order;
  ck_assert_msg(c >= 12.0 && c <= 13.0, "n %d d %d M %ld: %.3f x n^2 d^2 / M elements, not ~12",
                big_n, d, m_elems, c);
}
END_TEST

/* ---- The backward of one row from its log-sum-exp (checklist item 8) ---- */

#define BN 7 /* keys */
#define BD 8 /* head dimension */

/* One row's inputs; everything but q, K, V and dO is derived from them. */
typedef struct row_case {
  float q[BD], k[BN * BD], v[BN * BD], d_o[BD];
  float scale;
  int n_visible;
} row_case;

enum { ROW_PLAIN, ROW_MASKED, ROW_DOMINANT, ROW_ALL_MASKED, N_ROW_CASES };

static float uniform(uint32_t *r, float lo, float hi) {
  *r ^= *r << 13;
  *r ^= *r >> 17;
  *r ^= *r << 5;
  return lo + (hi - lo) * (float)(*r >> 8) / 16777216.0f;
}

static row_case make_row(int kind) {
  row_case c;
  uint32_t r = 88172645u + 7919u * (uint32_t)kind;
  for (int x = 0; x < BD; ++x) c.q[x] = uniform(&r, -1.0f, 1.5f);
  for (int x = 0; x < BN * BD; ++x) c.k[x] = uniform(&r, -1.0f, 1.5f);
  for (int x = 0; x < BN * BD; ++x) c.v[x] = uniform(&r, -0.5f, 2.0f);
  for (int x = 0; x < BD; ++x) c.d_o[x] = uniform(&r, -1.0f, 1.0f);
  c.scale = 1.0f / sqrtf((float)BD);
  c.n_visible = kind == ROW_MASKED ? 4 : kind == ROW_ALL_MASKED ? 0 : BN;
  if (kind == ROW_DOMINANT) {
    /* Keys 2 and 5 along q, with scores of 100 and 98.5: p_2 is about 0.82, p_5 0.18, the rest
     * below e^-90. exp(100) overflows a float: only exp(s - L) stays in range. */
    double qq = 0.0;
    for (int x = 0; x < BD; ++x) qq += (double)c.q[x] * c.q[x];
    for (int x = 0; x < BD; ++x) {
      c.k[2 * BD + x] = (float)(100.0 / (c.scale * qq) * c.q[x]);
      c.k[5 * BD + x] = (float)(98.5 / (c.scale * qq) * c.q[x]);
    }
  }
  return c;
}

/* The forward pass in double from the definition: probabilities, output and log-sum-exp. */
static void forward_ref(const double *q, const double *k, const double *v, double scale,
                        int n_visible, double *p, double *o, double *lse) {
  double s[BN], m = -INFINITY, l = 0.0;
  for (int j = 0; j < BN; ++j) {
    s[j] = -INFINITY;
    if (j >= n_visible) continue;
    s[j] = 0.0;
    for (int x = 0; x < BD; ++x) s[j] += q[x] * k[j * BD + x];
    s[j] *= scale;
    if (s[j] > m) m = s[j];
  }
  for (int j = 0; j < n_visible; ++j) l += exp(s[j] - m);
  for (int j = 0; j < BN; ++j) p[j] = j < n_visible ? exp(s[j] - m) / l : 0.0;
  for (int x = 0; x < BD; ++x) {
    o[x] = 0.0;
    for (int j = 0; j < BN; ++j) o[x] += p[j] * v[j * BD + x];
  }
  *lse = n_visible > 0 ? m + log(l) : -INFINITY;
}

/* The case's inputs in double: q, then K, then V, then dO, one array. */
enum {
  IN_Q = 0,
  IN_K = BD,
  IN_V = BD + BN * BD,
  IN_DO = BD + 2 * BN * BD,
  N_IN = 2 * BD + 2 * BN * BD
};

static void inputs(const row_case *c, double *in) {
  for (int x = 0; x < BD; ++x) in[IN_Q + x] = c->q[x];
  for (int x = 0; x < BN * BD; ++x) in[IN_K + x] = c->k[x];
  for (int x = 0; x < BN * BD; ++x) in[IN_V + x] = c->v[x];
  for (int x = 0; x < BD; ++x) in[IN_DO + x] = c->d_o[x];
}

/* The loss L = dO . o(q, K, V), dO held fixed: its gradients are what the backward computes. */
static double loss(const double *in, double scale, int n_visible) {
  double p[BN], o[BD], lse, sum = 0.0;
  forward_ref(in + IN_Q, in + IN_K, in + IN_V, scale, n_visible, p, o, &lse);
  for (int x = 0; x < BD; ++x) sum += in[IN_DO + x] * o[x];
  return sum;
}

/* The gradients in double through the explicit softmax Jacobian J[j][i] = dp_j / ds_i =
 * p_j (delta_ji - p_i), formed in full: dS = J^T dP. */
static void backward_ref(const row_case *c, double *dq, double *dk, double *dv) {
  double in[N_IN], p[BN], o[BD], lse, dp[BN], ds[BN], jac[BN][BN];
  inputs(c, in);
  forward_ref(in + IN_Q, in + IN_K, in + IN_V, c->scale, c->n_visible, p, o, &lse);
  for (int j = 0; j < BN; ++j) {
    dp[j] = 0.0;
    for (int x = 0; x < BD; ++x) dp[j] += in[IN_DO + x] * in[IN_V + j * BD + x];
  }
  for (int j = 0; j < BN; ++j)
    for (int i = 0; i < BN; ++i) jac[j][i] = p[j] * ((j == i ? 1.0 : 0.0) - p[i]);
  for (int i = 0; i < BN; ++i) {
    ds[i] = 0.0;
    for (int j = 0; j < BN; ++j) ds[i] += jac[j][i] * dp[j];
  }
  for (int x = 0; x < BD; ++x) {
    dq[x] = 0.0;
    for (int j = 0; j < BN; ++j) dq[x] += c->scale * ds[j] * in[IN_K + j * BD + x];
  }
  for (int j = 0; j < BN; ++j)
    for (int x = 0; x < BD; ++x) {
      dk[j * BD + x] = c->scale * ds[j] * in[IN_Q + x];
      dv[j * BD + x] = p[j] * in[IN_DO + x];
    }
}

/* The function under test, given the forward's o and LSE rounded to float as a kernel writes them;
 * its outputs start as NaN so that an element it does not write fails. */
static void backward_run(const row_case *c, float *dq, float *dk, float *dv) {
  double in[N_IN], p[BN], o[BD], lse;
  inputs(c, in);
  forward_ref(in + IN_Q, in + IN_K, in + IN_V, c->scale, c->n_visible, p, o, &lse);
  float of[BD];
  for (int x = 0; x < BD; ++x) of[x] = (float)o[x];
  for (int x = 0; x < BD; ++x) dq[x] = NAN;
  for (int x = 0; x < BN * BD; ++x) dk[x] = dv[x] = NAN;
  l03_row_backward(c->q, c->k, c->v, of, c->d_o, (float)lse, c->scale, BN, c->n_visible, BD, dq, dk,
                   dv);
}

/* got within tol x (1 + the largest |want|) of want, element by element. */
static void assert_close(const char *what, int kind, const float *got, const double *want, int len,
                         double tol) {
  double big = 0.0;
  for (int x = 0; x < len; ++x) big = fmax(big, fabs(want[x]));
  for (int x = 0; x < len; ++x)
    ck_assert_msg(fabs(got[x] - want[x]) <= tol * (1.0 + big),
                  "row %d, %s[%d] = %.8g, expected %.8g", kind, what, x, got[x], want[x]);
}

START_TEST(row_backward_matches_the_jacobian) {
  for (int kind = 0; kind < N_ROW_CASES; ++kind) {
    const row_case c = make_row(kind);
    double dq[BD], dk[BN * BD], dv[BN * BD];
    float gq[BD], gk[BN * BD], gv[BN * BD];
    backward_ref(&c, dq, dk, dv);
    backward_run(&c, gq, gk, gv);
    /* fp32 tolerance: in the dominant row a score near 100 is good to about 1e-5, and p with it. */
    assert_close("dq", kind, gq, dq, BD, 4e-5);
    assert_close("dk", kind, gk, dk, BN * BD, 4e-5);
    assert_close("dv", kind, gv, dv, BN * BD, 4e-5);
    /* A masked key gets nothing, exactly. */
    for (int j = c.n_visible; j < BN; ++j)
      for (int x = 0; x < BD; ++x)
        ck_assert_msg(gk[j * BD + x] == 0.0f && gv[j * BD + x] == 0.0f,
                      "row %d: masked key %d has dk %g, dv %g", kind, j, gk[j * BD + x],
                      gv[j * BD + x]);
    /* Softmax ignores a shift of every score, so the dS_j sum to zero and so do the dk_j. */
    for (int x = 0; x < BD; ++x) {
      double sum = 0.0, mag = 0.0;
      for (int j = 0; j < BN; ++j) {
        sum += gk[j * BD + x];
        mag += fabs(gk[j * BD + x]);
      }
      ck_assert_msg(fabs(sum) <= 4e-5 * (1.0 + mag), "row %d: sum over keys of dk[.][%d] = %g",
                    kind, x, sum);
    }
  }
}
END_TEST

/* Central differences of L = dO . o in double against the function's gradients, a few coordinates
 * of q, of a visible key and value, of the dominant key and of a masked key and value. */
START_TEST(row_backward_matches_finite_differences) {
  const struct {
    int offset;
    const char *what;
  } coords[] = {{IN_Q + 0, "q[0]"},
                {IN_Q + 5, "q[5]"},
                {IN_K + 1 * BD + 3, "k[1][3]"},
                {IN_K + 2 * BD + 0, "k[2][0]"},
                {IN_K + 5 * BD + 7, "k[5][7]"},
                {IN_K + 6 * BD + 2, "k[6][2]"},
                {IN_V + 0 * BD + 4, "v[0][4]"},
                {IN_V + 2 * BD + 1, "v[2][1]"},
                {IN_V + 6 * BD + 6, "v[6][6]"}};
  const int kinds[] = {ROW_PLAIN, ROW_MASKED, ROW_DOMINANT};
  for (size_t a = 0; a < sizeof kinds / sizeof kinds[0]; ++a) {
    const row_case c = make_row(kinds[a]);
    float gq[BD], gk[BN * BD], gv[BN * BD];
    backward_run(&c, gq, gk, gv);
    double in[N_IN];
    inputs(&c, in);
    for (size_t i = 0; i < sizeof coords / sizeof coords[0]; ++i) {
      const int at = coords[i].offset;
      const double h = 1e-5 * fmax(1.0, fabs(in[at])), keep = in[at];
      in[at] = keep + h;
      const double up = loss(in, c.scale, c.n_visible);
      in[at] = keep - h;
      const double down = loss(in, c.scale, c.n_visible);
      in[at] = keep;
      const double fd = (up - down) / (2.0 * h);
      const float got = at < IN_K ? gq[at - IN_Q] : at < IN_V ? gk[at - IN_K] : gv[at - IN_V];
      ck_assert_msg(fabs(got - fd) <= 1e-4 * (1.0 + fabs(fd)),
                    "row %d, dL/d%s: backward %.8g, central difference %.8g", kinds[a],
                    coords[i].what, got, fd);
    }
  }
}
END_TEST

START_TEST(row_backward_fully_masked_row) {
  /* No key visible: the forward wrote o = 0 and lse = -inf; nothing has a gradient. */
  const row_case c = make_row(ROW_ALL_MASKED);
  float gq[BD], gk[BN * BD], gv[BN * BD];
  backward_run(&c, gq, gk, gv);
  for (int x = 0; x < BD; ++x) ck_assert_msg(gq[x] == 0.0f, "dq[%d] = %g", x, gq[x]);
  for (int x = 0; x < BN * BD; ++x)
    ck_assert_msg(gk[x] == 0.0f && gv[x] == 0.0f, "dk %g, dv %g at %d", gk[x], gv[x], x);
}
END_TEST

int main(void) {
  Suite *s = suite_create("checklist-3");
  TCase *t = tcase_create("tile loops");
  tcase_add_test(t, paper_tile_sizes);
  tcase_add_test(t, tile_counts);
  tcase_add_test(t, tile_bounds_last_tile_is_short);
  tcase_add_test(t, tiles_cover_every_index_once);
  tcase_add_test(t, causal_square);
  tcase_add_test(t, causal_bottom_right_fewer_queries);
  tcase_add_test(t, causal_bottom_right_more_queries);
  tcase_add_test(t, causal_class_matches_every_pair);
  suite_add_tcase(s, t);
  TCase *h = tcase_create("HBM traffic");
  tcase_add_test(h, hbm_bytes_by_hand);
  tcase_add_test(h, hbm_bytes_equal_the_model);
  tcase_add_test(h, hbm_bytes_scale_as_n2_d2_over_m);
  suite_add_tcase(s, h);
  TCase *b = tcase_create("backward by recomputation");
  tcase_add_test(b, row_backward_matches_the_jacobian);
  tcase_add_test(b, row_backward_matches_finite_differences);
  tcase_add_test(b, row_backward_fully_masked_row);
  suite_add_tcase(s, b);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
