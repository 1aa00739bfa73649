/* The CPU model of Algorithm 1: the same tiles and loops as the FA1 kernel, written plainly, with
 * every element that crosses the "HBM" boundary counted; and the lesson's CPU part, which prints
 * the counts beside the paper's formula and standard attention's. See fa1_tiling.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_progress.h"
#include "fa1_tiling.h"
#include "tile_loops.h"

/* ---- "HBM" access: every element that moves between an HBM array and the chip goes through here
 */

typedef struct hbm {
  l03_traffic *t;
  int dry; /* count only: no data moves (and every HBM pointer is NULL) */
} hbm;

/* n rows of len floats: row x of the HBM array at src + x * stride, packed on chip at chip + x *
 * len. */
static void hbm_read_rows(hbm *m, l03_array a, float *chip, const float *src, size_t stride, int n,
                          int len) {
  m->t->reads[a] += (double)n * len;
  if (m->dry) return;
  for (int x = 0; x < n; ++x) memcpy(chip + (size_t)x * len, src + x * stride, sizeof(float) * len);
}

static void hbm_write_rows(hbm *m, l03_array a, float *dst, size_t stride, const float *chip, int n,
                           int len) {
  m->t->writes[a] += (double)n * len;
  if (m->dry) return;
  for (int x = 0; x < n; ++x) memcpy(dst + x * stride, chip + (size_t)x * len, sizeof(float) * len);
}

/* p + off, or NULL in a dry run (no arithmetic on NULL). */
static float *at(float *p, size_t off) {
  return p ? p + off : NULL;
}
static const float *cat(const float *p, size_t off) {
  return p ? p + off : NULL;
}

double l03_traffic_reads(const l03_traffic *t) {
  double s = 0;
  for (int a = 0; a < L03_N_ARRAYS; ++a) s += t->reads[a];
  return s;
}

double l03_traffic_writes(const l03_traffic *t) {
  double s = 0;
  for (int a = 0; a < L03_N_ARRAYS; ++a) s += t->writes[a];
  return s;
}

/* ---- The chip's side: one (i, j) step of Algorithm 1 on tiles already in "SRAM"
 * ------------------- */

typedef struct sram {
  float *kj, *vj; /* [bc][d] */
  float *qi, *oi; /* [br][d], qi pre-scaled */
  float *li, *mi; /* [br] */
  float *s;       /* [br][bc]: S_ij, then P~_ij */
} sram;

/* Rows 0..nr-1 of Q_i against keys 0..nc-1 of K_j. Tile-local row r is query r0 + r, key c is c0 +
 * c. */
static void step(const sram *t, int nr, int nc, int d, int bc, int r0, int c0, int offset,
                 l03_tile_class cls) {
  for (int r = 0; r < nr; ++r) {
    float *s = t->s + (size_t)r * bc;
    const float *q = t->qi + (size_t)r * d;
    float mt = -INFINITY; /* m~_ij: the row's maximum over this tile */
    for (int c = 0; c < nc; ++c) {
      const float *kc = t->kj + (size_t)c * d;
      float dot = 0.f;
      for (int x = 0; x < d; ++x) dot += q[x] * kc[x];
      if (cls == L03_TILE_PARTIAL && c0 + c > r0 + r + offset) dot = -INFINITY;
      s[c] = dot;
      if (dot > mt) mt = dot;
    }
    float lt = 0.f; /* l~_ij */
    for (int c = 0; c < nc; ++c) {
      s[c] = mt == -INFINITY ? 0.f : expf(s[c] - mt);
      lt += s[c];
    }
    const float m_old = t->mi[r], l_old = t->li[r];
    const float m_new = fmaxf(m_old, mt);
    if (m_new == -INFINITY) continue; /* nothing visible yet: O_i, l_i, m_i stay (0, 0, -inf) */
    const float e_old = expf(m_old - m_new), e_new = expf(mt - m_new);
    const float l_new = e_old * l_old + e_new * lt;
    float *orow = t->oi + (size_t)r * d;
    for (int x = 0; x < d; ++x) {
      float pv = 0.f; /* (P~_ij V_j)[r][x] */
      for (int c = 0; c < nc; ++c) pv += s[c] * t->vj[(size_t)c * d + x];
      /* O_i = diag(l_new)^-1 (diag(l_i) e^(m_i - m_new) O_i + e^(m~ - m_new) P~ V_j) */
      orow[x] = (l_old * e_old * orow[x] + e_new * pv) / l_new;
    }
    t->mi[r] = m_new;
    t->li[r] = l_new;
  }
}

/* ---- Algorithm 1
 * --------------------------------------------------------------------------------- */

static void sram_free(sram *s) {
  free(s->kj);
  free(s->vj);
  free(s->qi);
  free(s->oi);
  free(s->li);
  free(s->mi);
  free(s->s);
}

int l03_fa1_model(const attn_problem *p, const l03_fa1_plan *plan, const float *q, const float *k,
                  const float *v, float *o, float *lse, l03_traffic *t) {
  memset(t, 0, sizeof *t);
  const int d = p->dim, br = plan->br, bc = plan->bc, G = plan->q_groups > 0 ? plan->q_groups : 1;
  const int tr = l03_num_tiles(p->seq_q, br), tc = l03_num_tiles(p->seq_kv, bc);
  const int offset = p->seq_kv - p->seq_q;
  const float scale = attn_scale(p);
  const size_t q_tok = (size_t)p->heads * d, kv_tok = (size_t)p->kv_heads * d; /* token strides */
  hbm mem = {t, q == NULL};
  if (mem.dry) { /* nothing but counting: no pointer into the caller's arrays is formed */
    k = NULL;
    v = NULL;
    o = NULL;
    lse = NULL;
  }

  /* HBM besides the inputs and outputs: m and l, [batch, heads, seq_q]. SRAM: one tile of each. */
  float *m_hbm = NULL, *l_hbm = NULL;
  sram s;
  memset(&s, 0, sizeof s);
  if (!mem.dry) {
    m_hbm = (float *)malloc(sizeof(float) * attn_rows(p));
    l_hbm = (float *)malloc(sizeof(float) * attn_rows(p));
    s.kj = (float *)malloc(sizeof(float) * (size_t)bc * d);
    s.vj = (float *)malloc(sizeof(float) * (size_t)bc * d);
    s.qi = (float *)malloc(sizeof(float) * (size_t)br * d);
    s.oi = (float *)malloc(sizeof(float) * (size_t)br * d);
    s.li = (float *)malloc(sizeof(float) * (size_t)br);
    s.mi = (float *)malloc(sizeof(float) * (size_t)br);
    s.s = (float *)malloc(sizeof(float) * (size_t)br * bc);
    if (!m_hbm || !l_hbm || !s.kj || !s.vj || !s.qi || !s.oi || !s.li || !s.mi || !s.s) {
      free(m_hbm);
      free(l_hbm);
      sram_free(&s);
      return -1;
    }
  }

  /* A large shape can keep this loop busy for minutes: a progress line (on a terminal) says so. */
  attn_progress pr;
  attn_progress_begin(&pr, mem.dry ? "FA1 model, counting" : "FA1 model", "key tiles",
                      (double)p->batch * p->heads * G * tc);
  double tiles_done = 0.0;
  for (int b = 0; b < p->batch; ++b)
    for (int h = 0; h < p->heads; ++h) {
      const int g = h / (p->heads / p->kv_heads); /* GQA: the KV head of query head h */
      const size_t qo0 = ((size_t)b * p->seq_q * p->heads + h) * d;     /* Q, O row 0 of (b, h) */
      const size_t kv0 = ((size_t)b * p->seq_kv * p->kv_heads + g) * d; /* K, V row 0 of (b, g) */
      const size_t st0 = ((size_t)b * p->heads + h) * p->seq_q;         /* m, l, lse of row 0 */

      for (int grp = 0; grp < G; ++grp) { /* one thread block of the kernel */
        /* Step 2: O = 0, l = 0, m = -inf in HBM, for this block's query tiles. */
        for (int i = grp; i < tr; i += G) {
          const int r0 = l03_tile_start(i, br), nr = l03_tile_end(i, br, p->seq_q) - r0;
          if (!mem.dry)
            for (int r = 0; r < nr; ++r) {
              memset(s.oi + (size_t)r * d, 0, sizeof(float) * d);
              s.li[r] = 0.f;
              s.mi[r] = -INFINITY;
            }
          hbm_write_rows(&mem, L03_ARR_O, at(o, qo0 + r0 * q_tok), q_tok, s.oi, nr, d);
          hbm_write_rows(&mem, L03_ARR_L, at(l_hbm, st0 + r0), 1, s.li, nr, 1);
          hbm_write_rows(&mem, L03_ARR_M, at(m_hbm, st0 + r0), 1, s.mi, nr, 1);
        }

        for (int j = 0; j < tc; ++j) { /* step 5: key/value tiles, outer */
          const int c0 = l03_tile_start(j, bc), nc = l03_tile_end(j, bc, p->seq_kv) - c0;
          attn_progress_update(&pr, ++tiles_done);
          /* Step 6: K_j, V_j to SRAM, once per j. */
          hbm_read_rows(&mem, L03_ARR_K, s.kj, cat(k, kv0 + c0 * kv_tok), kv_tok, nc, d);
          hbm_read_rows(&mem, L03_ARR_V, s.vj, cat(v, kv0 + c0 * kv_tok), kv_tok, nc, d);

          for (int i = grp; i < tr; i += G) { /* step 7: query tiles, inner */
            const int r0 = l03_tile_start(i, br), nr = l03_tile_end(i, br, p->seq_q) - r0;
            const l03_tile_class cls =
                p->causal ? l03_causal_tile_class(i, j, br, bc, p->seq_q, p->seq_kv)
                          : L03_TILE_VISIBLE;
            if (cls == L03_TILE_MASKED) { /* no query of Q_i sees any key of K_j */
              t->tiles_skipped++;
              continue;
            }
            t->tiles_visited++;
            /* Step 8: Q_i, O_i, l_i, m_i to SRAM. */
            hbm_read_rows(&mem, L03_ARR_Q, s.qi, cat(q, qo0 + r0 * q_tok), q_tok, nr, d);
            hbm_read_rows(&mem, L03_ARR_O, s.oi, cat(o, qo0 + r0 * q_tok), q_tok, nr, d);
            hbm_read_rows(&mem, L03_ARR_L, s.li, cat(l_hbm, st0 + r0), 1, nr, 1);
            hbm_read_rows(&mem, L03_ARR_M, s.mi, cat(m_hbm, st0 + r0), 1, nr, 1);
            if (!mem.dry) { /* steps 9-12, on chip */
              for (size_t x = 0; x < (size_t)nr * d; ++x) s.qi[x] *= scale;
              step(&s, nr, nc, d, bc, r0, c0, offset, cls);
            }
            /* Step 13: O_i, l_i, m_i back to HBM. */
            hbm_write_rows(&mem, L03_ARR_O, at(o, qo0 + r0 * q_tok), q_tok, s.oi, nr, d);
            hbm_write_rows(&mem, L03_ARR_L, at(l_hbm, st0 + r0), 1, s.li, nr, 1);
            hbm_write_rows(&mem, L03_ARR_M, at(m_hbm, st0 + r0), 1, s.mi, nr, 1);
          }
        }

        /* After the loops: LSE = m + log l (-inf for a row that saw no key), this block's rows. */
        for (int i = grp; i < tr; i += G) {
          const int r0 = l03_tile_start(i, br), nr = l03_tile_end(i, br, p->seq_q) - r0;
          hbm_read_rows(&mem, L03_ARR_L, s.li, cat(l_hbm, st0 + r0), 1, nr, 1);
          hbm_read_rows(&mem, L03_ARR_M, s.mi, cat(m_hbm, st0 + r0), 1, nr, 1);
          if (!mem.dry)
            for (int r = 0; r < nr; ++r)
              s.s[r] = s.li[r] > 0.f ? s.mi[r] + logf(s.li[r]) : -INFINITY;
          hbm_write_rows(&mem, L03_ARR_LSE, at(lse, st0 + r0), 1, s.s, nr, 1);
        }
      }
    }
  attn_progress_end(&pr);
  free(m_hbm);
  free(l_hbm);
  sram_free(&s);
  return 0;
}

/* ---- Closed forms
 * ---------------------------------------------------------------------------------- */

void l03_fa1_formula(const attn_problem *p, const l03_fa1_plan *plan, double *reads,
                     double *writes) {
  const double nq = p->seq_q, nkv = p->seq_kv, d = p->dim, bh = (double)p->batch * p->heads;
  const double G = plan->q_groups > 0 ? plan->q_groups : 1;
  const double tc = l03_num_tiles(p->seq_kv, plan->bc);
  /* K_j, V_j once per block; Q_i, O_i, l_i, m_i in and O_i, l_i, m_i out at each of the Tc visits
   * of every query row; step 2's initialisation; the final read of l, m and write of the LSE. */
  *reads = bh * (2.0 * G * nkv * d + tc * nq * (2.0 * d + 2.0) + 2.0 * nq);
  *writes = bh * (nq * (d + 2.0) + tc * nq * (d + 2.0) + nq);
}

double l03_standard_elems(const attn_problem *p) {
  const double nq = p->seq_q, nkv = p->seq_kv, d = p->dim, bh = (double)p->batch * p->heads;
  return bh * (2.0 * nq * d + 2.0 * nkv * d + 4.0 * nq * nkv);
}

double l03_fused_row_elems(const attn_problem *p) {
  const double d = p->dim;
  /* per row: q and o (d each) and one lse; 2d per visible key */
  return (double)attn_rows(p) * (2.0 * d + 1.0) + 2.0 * d * attn_visible_pairs(p);
}

/* ---- The lesson's CPU part
 * ------------------------------------------------------------------------- */

static const char *const kArrayNames[L03_N_ARRAYS] = {"Q", "K", "V", "O", "l", "m", "lse"};

/* Run the model on @p p with data and judge it against the reference, all rows. 0 when it passes.
 */
int l03_fa1_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx) {
  l03_fa1_run *run = (l03_fa1_run *)ctx;
  return l03_fa1_model(p, run->plan, q, k, v, o, lse, &run->traffic);
}

static int model_check(const attn_problem *p, const l03_fa1_plan *plan, uint64_t seed,
                       int verbose) {
  l03_fa1_run run = {.plan = plan};
  l03_traffic dry;
  attn_verdict vo, vl;
  const int rc = attn_cpu_check(p, seed, l03_fa1_attention, &run, &vo, &vl);
  if (rc < 0 || l03_fa1_model(p, plan, NULL, NULL, NULL, NULL, NULL, &dry) != 0) return 1;
  const int same_counts = l03_traffic_reads(&run.traffic) == l03_traffic_reads(&dry) &&
                          l03_traffic_writes(&run.traffic) == l03_traffic_writes(&dry);
  if (verbose) {
    printf("  model vs attn_reference on ");
    attn_problem_print(p, stdout);
    printf(" (every row):\n    O:   ");
    attn_verdict_print(&vo, stdout);
    printf("  %s\n    LSE: ", vo.pass ? "PASS" : "FAIL");
    attn_verdict_print(&vl, stdout);
    printf("  %s\n    counting without data gives the same counts: %s\n", vl.pass ? "PASS" : "FAIL",
           same_counts ? "yes" : "NO");
  }
  return rc == 0 && same_counts ? 0 : 1;
}

int l03_cpu_part(const attn_options *opt) {
  const attn_problem *p = &opt->problem;
  long m_floats = L03_H200_SMEM_FLOATS, dev_m = 0;
  const char *m_from = "the H200's 227 KB opt-in limit; no GPU consulted";
  if (!opt->cpu_only && l03_device_smem_floats(&dev_m) == 0) {
    m_floats = dev_m;
    m_from = "this GPU's opt-in shared memory per block";
  }
  l03_fa1_plan plan;
  printf("\nCPU model of FlashAttention-1 (Algorithm 1), M = %ld floats (%s)\n", m_floats, m_from);
  if (l03_fa1_plan_make(p, m_floats, &plan) != 0) {
    printf("  M is too small for a 32-key tile at dim %d\n", p->dim);
    return 1;
  }
  printf(
      "  tiles: the paper's Bc = ceil(M/4d) = %d, Br = min(Bc, d) = %d; the kernel's Bc = %d, "
      "Br = %d\n         (Bc a multiple of 32 for its warp tiles, padded tiles within M: %zu of "
      "%ld bytes)\n",
      plan.bc_paper, plan.br_paper, plan.bc, plan.br, plan.smem_bytes, m_floats * 4);
  printf("  loops: Tc = %d key tiles (outer) x Tr = %d query tiles (inner) per (batch, head)\n",
         plan.tc, plan.tr);

  l03_traffic t;
  if (l03_fa1_model(p, &plan, NULL, NULL, NULL, NULL, NULL, &t) != 0) return 1;
  const double reads = l03_traffic_reads(&t), writes = l03_traffic_writes(&t);
  printf("  HBM traffic of Algorithm 1 at this shape, counted by the model (elements, fp32):\n");
  printf("    %-5s %16s %16s\n", "array", "read", "written");
  for (int a = 0; a < L03_N_ARRAYS; ++a)
    printf("    %-5s %16.0f %16.0f\n", kArrayNames[a], t.reads[a], t.writes[a]);
  printf("    %-5s %16.0f %16.0f   = %.3f GB; %ld tile pairs computed, %ld skipped (causal)\n",
         "total", reads, writes, 4e-9 * (reads + writes), t.tiles_visited, t.tiles_skipped);

  int rc = 0;
  if (!p->causal) {
    double fr, fw;
    l03_fa1_formula(p, &plan, &fr, &fw);
    const int eq = fr == reads && fw == writes;
    printf(
        "  closed form, per (batch, head) 2Nkv*d + Tc*Nq*(2d+2) + 2Nq read and "
        "Nq*(d+2) + Tc*Nq*(d+2) + Nq written:\n    %.0f read, %.0f written: %s\n",
        fr, fw, eq ? "equal" : "DIFFERENT");
    if (!eq) rc = 1;
  } else {
    printf(
        "  closed form: not printed for a causal mask (skipped tiles); the count above is exact\n");
  }
  const double bh = (double)p->batch * p->heads, d = p->dim;
  const double paper = bh * (double)p->seq_q * p->seq_kv * d * d / (double)m_floats;
  const double std_e = l03_standard_elems(p), fused = l03_fused_row_elems(p);
  printf(
      "  the paper's order N^2 d^2 / M (times batch*heads): %.4g elements; the count is %.2f x "
      "that\n",
      paper, (reads + writes) / paper);
  printf(
      "  standard attention (S and P through HBM, the paper's count 4Nd + 4N^2): %.4g elements = "
      "%.3f GB, %.1f x Algorithm 1's\n",
      std_e, 4e-9 * std_e, std_e / (reads + writes));
  printf(
      "  version 1 (fused, not tiled): its threads load %.4g elements = %.3f GB, Theta(N^2 d);\n",
      fused, 4e-9 * fused);
  printf("    the 32 rows of a warp share each load, and L1/L2 serve nearly all of them\n");
  printf(
      "  memory beyond Q, K, V, O: standard attention's S alone %.3f GB; Algorithm 1's m and l "
      "%.3f MB\n",
      4e-9 * bh * (double)p->seq_q * p->seq_kv, 4e-6 * 2.0 * (double)attn_rows(p));

  /* The model against the reference on a small problem of the same kind: one KV head with its
   * query heads, the longer side cut to 300 tokens and the other in proportion, same dim, mask and
   * tiles (so the reference costs milliseconds whatever the shape). */
  attn_problem small = *p;
  const int longest = p->seq_q > p->seq_kv ? p->seq_q : p->seq_kv;
  small.batch = 1;
  small.heads = p->heads / p->kv_heads;
  small.kv_heads = 1;
  if (longest > 300) {
    small.seq_q = (int)((double)p->seq_q * 300 / longest + 0.5);
    small.seq_kv = (int)((double)p->seq_kv * 300 / longest + 0.5);
    if (small.seq_q < 1) small.seq_q = 1;
    if (small.seq_kv < 1) small.seq_kv = 1;
  }
  l03_fa1_plan sp;
  if (l03_fa1_plan_make(&small, m_floats, &sp) != 0 || model_check(&small, &sp, opt->seed, 1) != 0)
    rc = 1;
  return rc;
}
