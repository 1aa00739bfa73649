/* Lesson 08's table of versions, the ring versions' setup, check and timeline (as attn_custom),
 * the CPU part (the load balance of both layouts and the CPU model of the ring against the
 * reference) and the report (the speed-up over one GPU, the balance measured against the model,
 * the link against the compute, and each ring's timeline). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_bf16.h"
#include "attn_reference.h"
#include "attn_rng.h"
#include "ring_attention.h"

/** Sampled reference rows per (batch, head) on big problems. */
#define L08_SAMPLE_PER_HEAD 8
/** Width of the printed timeline, in characters. */
#define L08_TIMELINE_WIDTH 72

/* ---- Ranks and GPUs (main.c sets them) ----------------------------------------------------------
 */

static int g_ranks = 2;
static int g_gpus = 0; /* 0: one per rank when there are enough, else 1 */

void l08_set_ranks(int ranks, int gpus) {
  g_ranks = ranks;
  g_gpus = gpus;
}

/* The GPUs the ring uses: g_gpus, or, when 0, one per rank if that many are visible, else 1. */
static int ring_gpus(void) {
  if (g_gpus > 0) return g_gpus;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  return g_ranks > 1 && count >= g_ranks ? g_ranks : 1;
}

/* ---- What each version measured, for the report -------------------------------------------------
 */

typedef struct ring_record {
  int checked, timed_steps, ranks, gpus;
  l08_transport transport;
  attn_verdict o_ref, lse_ref, o_one, lse_one;
  l08_step_times t[L08_MAX_RANKS][L08_MAX_RANKS];
  float exchange_ms;
  double block_bytes;
} ring_record;

static ring_record g_record[L08_VERSIONS];

/* ---- Inputs, reference and the one-GPU output, shared by the versions of a run ------------------
 */

typedef struct shared_ref {
  int valid;
  attn_problem p;
  uint64_t seed;
  float *q, *k, *v;        /* fp32, exact in bf16 */
  uint16_t *qb, *kb, *vb;  /* the same in bf16 */
  size_t *rows, n_rows;    /* reference rows (NULL until a checked run asks) */
  double *ref_o, *ref_lse; /* [n_rows, dim], [n_rows] */
  uint16_t *one_o;         /* version 1's output on the whole problem (NULL until asked) */
  float *one_lse;
} shared_ref;

static shared_ref g_ref;

static void ref_free(void) {
  free(g_ref.q), free(g_ref.k), free(g_ref.v), free(g_ref.qb), free(g_ref.kb), free(g_ref.vb);
  free(g_ref.rows), free(g_ref.ref_o), free(g_ref.ref_lse), free(g_ref.one_o), free(g_ref.one_lse);
  memset(&g_ref, 0, sizeof g_ref);
}

static int same_problem(const attn_problem *a, const attn_problem *b) {
  return a->batch == b->batch && a->heads == b->heads && a->kv_heads == b->kv_heads &&
         a->seq_q == b->seq_q && a->seq_kv == b->seq_kv && a->dim == b->dim &&
         a->causal == b->causal && a->scale == b->scale;
}

/* Inputs for @p p (the harness's streams 1-3), and with @p check the reference rows and version
 * 1's output on device @p device. 0; -1 when host memory ran out; a CUDA error code (> 0). */
static int ref_get(const attn_problem *p, uint64_t seed, int check, int device) {
  const size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p);
  if (!(g_ref.valid && g_ref.seed == seed && same_problem(&g_ref.p, p))) {
    ref_free();
    g_ref.q = malloc(nq * 4 + 4), g_ref.k = malloc(nkv * 4 + 4), g_ref.v = malloc(nkv * 4 + 4);
    g_ref.qb = malloc(nq * 2 + 2), g_ref.kb = malloc(nkv * 2 + 2), g_ref.vb = malloc(nkv * 2 + 2);
    if (!g_ref.q || !g_ref.k || !g_ref.v || !g_ref.qb || !g_ref.kb || !g_ref.vb)
      return ref_free(), -1;
    attn_fill_attention_input(g_ref.q, nq, seed, 1);
    attn_fill_attention_input(g_ref.k, nkv, seed, 2);
    attn_fill_attention_input(g_ref.v, nkv, seed, 3);
    attn_f32_to_bf16_array(g_ref.q, g_ref.qb, nq);
    attn_f32_to_bf16_array(g_ref.k, g_ref.kb, nkv);
    attn_f32_to_bf16_array(g_ref.v, g_ref.vb, nkv);
    g_ref.p = *p;
    g_ref.seed = seed;
    g_ref.valid = 1;
  }
  if (!check || g_ref.one_o) return 0;
  g_ref.rows = attn_sample_rows(p, L08_SAMPLE_PER_HEAD, seed, &g_ref.n_rows);
  g_ref.ref_o = malloc((g_ref.n_rows * p->dim + 1) * sizeof(double));
  g_ref.ref_lse = malloc((g_ref.n_rows + 1) * sizeof(double));
  g_ref.one_o = malloc(nq * 2 + 2);
  g_ref.one_lse = malloc(attn_rows(p) * 4 + 4);
  if (!g_ref.rows || !g_ref.ref_o || !g_ref.ref_lse || !g_ref.one_o || !g_ref.one_lse) {
    free(g_ref.one_o), g_ref.one_o = NULL;
    return -1;
  }
  attn_reference(p, g_ref.q, g_ref.k, g_ref.v, g_ref.rows, g_ref.n_rows, g_ref.ref_o,
                 g_ref.ref_lse);
  /* Version 1 on the whole problem, on the ring's first device. */
  void *q = NULL, *k = NULL, *v = NULL, *o = NULL;
  float *lse = NULL;
  int prev = 0;
  cudaError_t e = cudaGetDevice(&prev);
  if (e == cudaSuccess) e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaMalloc(&q, nq * 2 + 2);
  if (e == cudaSuccess) e = cudaMalloc(&k, nkv * 2 + 2);
  if (e == cudaSuccess) e = cudaMalloc(&v, nkv * 2 + 2);
  if (e == cudaSuccess) e = cudaMalloc(&o, nq * 2 + 2);
  if (e == cudaSuccess) e = cudaMalloc((void **)&lse, attn_rows(p) * 4 + 4);
  if (e == cudaSuccess) e = cudaMemcpy(q, g_ref.qb, nq * 2, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(k, g_ref.kb, nkv * 2, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(v, g_ref.vb, nkv * 2, cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = l08_forward(q, k, v, o, lse, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim,
                    p->causal, attn_scale(p), 0);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(g_ref.one_o, o, nq * 2, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess)
    e = cudaMemcpy(g_ref.one_lse, lse, attn_rows(p) * 4, cudaMemcpyDeviceToHost);
  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse);
  cudaSetDevice(prev);
  if (e != cudaSuccess) {
    free(g_ref.one_o), g_ref.one_o = NULL;
    return (int)e;
  }
  return 0;
}

/* ---- Versions 2-4, as an attn_custom ------------------------------------------------------------
 */

/** What distinguishes the ring versions: the schedule and the layout. */
typedef struct ring_kind {
  l08_schedule schedule;
  l08_layout layout;
} ring_kind;

static const ring_kind kSerial = {L08_SERIAL, L08_CONTIGUOUS};
static const ring_kind kOverlap = {L08_OVERLAP, L08_CONTIGUOUS};
static const ring_kind kZigzag = {L08_OVERLAP, L08_ZIGZAG};

typedef struct ring_state {
  attn_problem p;
  int version, check;
  l08_ring *ring;
  uint16_t *o;
  float *lse;
} ring_state;

static void ring_teardown(void *state) {
  ring_state *s = state;
  if (!s) return;
  if (s->ring) {
    ring_record *rec = &g_record[s->version - 1];
    const int p = l08_ring_get_config(s->ring)->ranks;
    /* The timeline of the last run (a timed one when the harness timed the version). */
    if (l08_ring_gather(s->ring, s->o, NULL) == cudaSuccess) {
      rec->timed_steps = p;
      for (int i = 0; i < p; ++i)
        for (int st = 0; st < p; ++st) rec->t[i][st] = l08_ring_step_times(s->ring, i, st);
    }
    /* What the link costs per step on its own, at this block size. */
    float ms = -1.0f;
    if (l08_ring_time_exchange(s->ring, 5, &ms) == cudaSuccess) rec->exchange_ms = ms;
    rec->block_bytes = l08_ring_block_bytes(s->ring);
    l08_ring_destroy(s->ring);
  }
  free(s->o), free(s->lse);
  free(s);
}

static void ring_footprint(const attn_problem *p, double *device_bytes, double *host_bytes) {
  const double q2 = 2.0 * attn_q_elems(p), kv2 = 2.0 * attn_kv_elems(p);
  /* All ranks on one GPU: Q, O (bf16 and the fp32 running O), the own K/V, two block buffers
   * (each at most two blocks' worth: zig-zag's rounding), a pair's partial output; and version
   * 1's run on the whole problem for the check. */
  *device_bytes = q2 * 4 + kv2 * 2 + 4.0 * kv2 + q2 + (2 * q2 + 2 * kv2) + 16.0 * attn_rows(p);
  *host_bytes = 3.0 * q2 + 3.0 * kv2 + 2 * q2 + 16.0 * attn_rows(p);
}

static cudaError_t ring_setup(void **state, const attn_setup_ctx *ctx, const char **skip) {
  const attn_problem *p = ctx->problem;
  const ring_kind *kind = ctx->user;
  static char why[256];
  *state = NULL;
  if (p->dim != 64 && p->dim != 128)
    return *skip = "the forward kernels are built for head dimensions 64 and 128", cudaSuccess;
  if (p->kv_lens)
    return *skip = "lengths per sequence (--kv-lens) are not in this lesson", cudaSuccess;
  if (p->seq_q != p->seq_kv)
    return *skip = "ring attention shards one sequence: --kv-seq must equal --seq", cudaSuccess;
  int device = 0;
  ATTN_TRY(cudaGetDevice(&device));
  const l08_ring_config cfg = {.batch = p->batch,
                               .heads = p->heads,
                               .kv_heads = p->kv_heads,
                               .seq = p->seq_q,
                               .dim = p->dim,
                               .causal = p->causal,
                               .scale = attn_scale(p),
                               .ranks = g_ranks,
                               .gpus = ring_gpus(),
                               .first_device = device,
                               .layout = kind->layout,
                               .schedule = kind->schedule,
                               .transport = L08_TRANSPORT_AUTO};
  const int got = ref_get(p, ctx->options->seed, !ctx->options->no_check, device);
  if (got < 0)
    return *skip = "not enough host memory for the inputs and the reference", cudaSuccess;
  if (got > 0) return (cudaError_t)got;
  ring_state *s = calloc(1, sizeof *s);
  if (!s) return cudaErrorMemoryAllocation;
  *state = s;
  s->p = *p;
  s->version = ctx->version;
  s->check = !ctx->options->no_check;
  s->o = malloc(attn_q_elems(p) * 2 + 2);
  s->lse = malloc(attn_rows(p) * 4 + 4);
  if (!s->o || !s->lse) return cudaErrorMemoryAllocation;
  const cudaError_t e = l08_ring_create(&s->ring, &cfg, why, sizeof why);
  if (e == cudaErrorInvalidValue) return *skip = why, cudaSuccess;
  ATTN_TRY(e);
  ATTN_TRY(l08_ring_scatter(s->ring, g_ref.qb, g_ref.kb, g_ref.vb));
  ring_record *rec = &g_record[ctx->version - 1];
  memset(rec, 0, sizeof *rec);
  rec->ranks = cfg.ranks;
  rec->gpus = cfg.gpus;
  rec->transport = l08_ring_get_config(s->ring)->transport;
  rec->exchange_ms = -1.0f;
  return cudaSuccess;
}

static cudaError_t ring_poison(void *state, cudaStream_t stream) {
  (void)stream;
  return l08_ring_poison(((ring_state *)state)->ring);
}

static cudaError_t ring_launch(void *state, cudaStream_t stream) {
  return l08_ring_run(((ring_state *)state)->ring, stream);
}

static cudaError_t ring_check(void *state, attn_verdict *out) {
  ring_state *s = state;
  const attn_problem *p = &s->p;
  ring_record *rec = &g_record[s->version - 1];
  const size_t nq = attn_q_elems(p), rows = attn_rows(p);
  ATTN_TRY(l08_ring_gather(s->ring, s->o, s->lse));
  /* Against the fp64 reference, on the sampled rows. */
  attn_verdict_init(&rec->o_ref, ATTN_BF16);
  attn_verdict_scan(&rec->o_ref, ATTN_BF16, s->o, nq, 0);
  attn_verdict_init_lse(&rec->lse_ref, ATTN_BF16);
  attn_verdict_scan(&rec->lse_ref, ATTN_F32, s->lse, rows, 1);
  for (size_t t = 0; t < g_ref.n_rows; ++t) {
    const size_t r = g_ref.rows[t];
    for (int d = 0; d < p->dim; ++d)
      attn_verdict_add(&rec->o_ref, attn_bf16_to_f32(s->o[r * p->dim + d]),
                       g_ref.ref_o[t * p->dim + d]);
    attn_verdict_add(&rec->lse_ref, s->lse[attn_row_lse_index(p, r)], g_ref.ref_lse[t]);
  }
  /* Against version 1 on one GPU, every element: the same tolerances. */
  attn_verdict_init(&rec->o_one, ATTN_BF16);
  attn_verdict_scan(&rec->o_one, ATTN_BF16, s->o, nq, 0);
  for (size_t i = 0; i < nq; ++i)
    attn_verdict_add(&rec->o_one, attn_bf16_to_f32(s->o[i]), attn_bf16_to_f32(g_ref.one_o[i]));
  attn_verdict_init_lse(&rec->lse_one, ATTN_BF16);
  attn_verdict_scan(&rec->lse_one, ATTN_F32, s->lse, rows, 1);
  for (size_t i = 0; i < rows; ++i) attn_verdict_add(&rec->lse_one, s->lse[i], g_ref.one_lse[i]);
  attn_verdict_finish(&rec->o_ref);
  attn_verdict_finish(&rec->lse_ref);
  attn_verdict_finish(&rec->o_one);
  attn_verdict_finish(&rec->lse_one);
  rec->checked = 1;
  /* The harness's verdict is the one closest to failing; the report prints all four. */
  const attn_verdict *worst = &rec->o_ref;
  if (attn_verdict_margin(&rec->lse_ref) > attn_verdict_margin(worst)) worst = &rec->lse_ref;
  if (attn_verdict_margin(&rec->o_one) > attn_verdict_margin(worst)) worst = &rec->o_one;
  if (attn_verdict_margin(&rec->lse_one) > attn_verdict_margin(worst)) worst = &rec->lse_one;
  *out = *worst;
  return cudaSuccess;
}

static void ring_work(void *state, attn_work *w) {
  const ring_state *s = state;
  /* The whole problem's work, as version 1's: the rates compare directly. */
  w->flops = attn_flops(&s->p);
  w->bytes = attn_min_bytes(&s->p, ATTN_BF16, 1);
  w->peak_gbs = 0.0;
  w->peak_label = NULL;
}

static const attn_custom kRing = {.setup = ring_setup,
                                  .poison = ring_poison,
                                  .launch = ring_launch,
                                  .check = ring_check,
                                  .work = ring_work,
                                  .teardown = ring_teardown,
                                  .footprint = ring_footprint};

/* ---- Version 1 ----------------------------------------------------------------------------------
 */

static const char *one_gpu_supports(const attn_problem *p) {
  if (p->seq_q != p->seq_kv) return "ring attention shards one sequence: --kv-seq must equal --seq";
  return NULL;
}

static const attn_version kVersions[L08_VERSIONS] = {
    {.name = "one-gpu",
     .summary = "the whole sequence on one GPU (lesson 05 v5 on sm_90, else lesson 04 v7)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = one_gpu_supports,
     .launch = l08_one_gpu},
    {.name = "ring-serial",
     .summary = "contiguous shards; compute, then send/receive, on one stream",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .custom = &kRing,
     .user = &kSerial},
    {.name = "ring-overlap",
     .summary = "send/receive on a second stream, into a second buffer, under the compute",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .custom = &kRing,
     .user = &kOverlap},
    {.name = "ring-zigzag",
     .summary = "version 3 on zig-zag shards: the same causal work on every rank",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .custom = &kRing,
     .user = &kZigzag},
};

/* ---- CPU part -----------------------------------------------------------------------------------
 */

static const char *layout_name(l08_layout l) {
  return l == L08_ZIGZAG ? "zig-zag" : "contiguous";
}

static int cpu_part(const attn_options *o) {
  const attn_problem *p = &o->problem;
  const int n = p->seq_q, ranks = g_ranks;
  printf("ring: %d ranks, sequence of %d tokens%s; NCCL %s in this build\n", ranks, n,
         p->causal ? ", causal" : "",
         l08_have_nccl() ? "is" : "is not (virtual ranks and copies only)");
  printf("load balance (pairs computed per rank, from ring_plan.c):\n");
  printf("  %-11s %10s %14s %16s\n", "layout", "imbalance", "ideal speed-up", "lock-step speed-up");
  for (int l = 0; l < 2; ++l) {
    l08_balance b;
    if (l08_balance_of(n, ranks, (l08_layout)l, p->causal, &b) != 0) continue;
    printf("  %-11s %10.3f %13.2fx %15.2fx\n", layout_name((l08_layout)l), b.imbalance,
           b.ideal_speedup, b.critical_speedup);
  }
  /* The CPU model of the ring against the reference, on a small problem with this run's ranks,
   * head dimension, mask and query heads per KV head. */
  const int group = p->heads / p->kv_heads > 8 ? 8 : p->heads / p->kv_heads;
  attn_problem small = {.batch = 2,
                        .heads = 2 * group,
                        .kv_heads = 2,
                        .seq_q = 61,
                        .seq_kv = 61,
                        .dim = p->dim,
                        .causal = p->causal,
                        .block_size = p->block_size,
                        .scale = 0.0f,
                        .kv_lens = NULL};
  int bad = 0;
  for (int l = 0; l < 2; ++l) {
    l08_cpu_ring ctx = {.ranks = ranks, .layout = (l08_layout)l};
    attn_verdict vo, vl;
    const int rc = attn_cpu_check(&small, o->seed, l08_cpu_attention, &ctx, &vo, &vl);
    printf(
        "CPU model of the ring (%d ranks, %s, batch 2, heads %d/2, seq 61, dim %d%s): %s, "
        "chunk pairs %ld whole, %ld diagonal, %ld skipped\n  ",
        ranks, layout_name((l08_layout)l), small.heads, small.dim, small.causal ? ", causal" : "",
        rc == 0  ? "PASS"
        : rc > 0 ? "FAIL"
                 : "ERROR",
        ctx.pairs_full, ctx.pairs_diag, ctx.pairs_skip);
    if (rc >= 0) attn_verdict_print(&vo, stdout);
    printf("\n");
    bad |= rc != 0;
  }
  return bad;
}

/* ---- Report -------------------------------------------------------------------------------------
 */

static const char *transport_name(l08_transport t) {
  return t == L08_TRANSPORT_NCCL ? "NCCL" : "copies";
}

/* One lane of the timeline: each column is WIDTH/span of the run; a column shows the step whose
 * interval covers it (its digit), or ' '. */
static void lane(const ring_record *g, int rank, int compute, float span) {
  char line[L08_TIMELINE_WIDTH + 1];
  memset(line, ' ', L08_TIMELINE_WIDTH);
  line[L08_TIMELINE_WIDTH] = '\0';
  for (int st = 0; st < g->ranks; ++st) {
    const l08_step_times *t = &g->t[rank][st];
    const float a = compute ? t->compute_start : t->exchange_start;
    const float b = compute ? t->compute_end : t->exchange_end;
    if (a < 0.0f || b < a) continue;
    int c0 = (int)(a / span * L08_TIMELINE_WIDTH), c1 = (int)ceilf(b / span * L08_TIMELINE_WIDTH);
    if (c1 <= c0) c1 = c0 + 1;
    for (int c = c0; c < c1 && c < L08_TIMELINE_WIDTH; ++c)
      line[c] = compute ? (char)('0' + st % 10) : '~';
  }
  printf("    rank %d %-8s |%s|\n", rank, compute ? "compute" : "transfer", line);
}

static int report(const attn_options *o, const attn_device *dev, const attn_result *r, int n) {
  const attn_problem *p = &o->problem;
  if (!dev) {
    printf("\nno GPU: the rings did not run; the CPU model above checked the algorithm\n");
    return 0;
  }
  const char *kernel = l08_kernel_name(dev->id, p->dim);
  printf("\nforward kernel: %s\n", kernel ? kernel : "none for this GPU");
  const double t1 = n > 0 && r[0].timed ? r[0].timing.median_ms : 0.0;
  for (int i = 1; i < n; ++i) {
    const ring_record *g = &g_record[i];
    if (r[i].status == ATTN_SKIPPED || (!g->checked && !r[i].timed)) continue;
    printf("\n%d %s: %d ranks on %d GPU%s (%s), %s layout\n", i + 1, r[i].version->name, g->ranks,
           g->gpus, g->gpus == 1 ? "" : "s",
           g->gpus == 1 && g->ranks > 1 ? "virtual ranks" : transport_name(g->transport),
           layout_name(((const ring_kind *)r[i].version->user)->layout));
    if (g->checked)
      printf(
          "  check: O vs fp64 %.2e / %.2e, vs one-gpu %.2e / %.2e; lse vs fp64 max %.2e, vs "
          "one-gpu %.2e (rel_l2 / max_abs)\n",
          g->o_ref.rel_l2, g->o_ref.max_abs, g->o_one.rel_l2, g->o_one.max_abs, g->lse_ref.max_abs,
          g->lse_one.max_abs);
    const l08_layout layout = ((const ring_kind *)r[i].version->user)->layout;
    l08_balance b;
    const int have_b = l08_balance_of(p->seq_q, g->ranks, layout, p->causal, &b) == 0;
    const int virtual_ranks = g->gpus == 1 && g->ranks > 1;
    if (t1 > 0.0 && r[i].timed && r[i].timing.median_ms > 0.0) {
      const double sp = t1 / r[i].timing.median_ms;
      printf("  speed-up over one GPU: %.2fx (%.3f ms vs %.3f ms)", sp, r[i].timing.median_ms, t1);
      if (g->gpus > 1) printf(", %.0f%% of %d GPUs", 100.0 * sp / g->gpus, g->gpus);
      printf("\n");
      /* Virtual ranks do all the ranks' work on one GPU; a GPU per rank would do the busiest
       * rank's share of it, in about the same time per pair, with the transfers hidden. */
      if (virtual_ranks && have_b)
        printf(
            "  a GPU per rank (not run here): %.2fx predicted = one-gpu time / (this time x "
            "busiest "
            "rank's share of the work, %.3f)\n",
            t1 / (r[i].timing.median_ms * b.max_rank / b.total), b.max_rank / b.total);
    }
    if (g->timed_steps < 1) continue;
    /* Balance, measured from the timeline against the model. */
    double busiest = 0.0, sum = 0.0;
    float span = 0.0f;
    for (int k = 0; k < g->ranks; ++k) {
      double c = 0.0;
      for (int st = 0; st < g->ranks; ++st) {
        const l08_step_times *t = &g->t[k][st];
        if (t->compute_start >= 0.0f && t->compute_end >= t->compute_start)
          c += t->compute_end - t->compute_start;
        span = fmaxf(span, fmaxf(t->compute_end, t->exchange_end));
      }
      busiest = fmax(busiest, c);
      sum += c;
    }
    if (have_b && sum > 0.0)
      printf(
          "  balance%s: busiest rank computes %.3f ms of %.3f ms per rank on average (%.3f; model "
          "%.3f); run %.3f ms, of which %.3f ms not covered by the busiest rank's compute\n",
          virtual_ranks ? " (ranks share one GPU: their computes overlap and stretch)" : "",
          busiest, sum / g->ranks, busiest / (sum / g->ranks), b.imbalance, span, span - busiest);
    if (g->ranks > 1 && g->exchange_ms > 0.0f && t1 > 0.0) {
      const double link = g->block_bytes / (g->exchange_ms * 1e-3);
      const double rate = r[0].work.flops / (t1 * 1e-3);
      const double lstar = l08_compute_bound_len(p->heads, p->kv_heads,
                                                 layout == L08_ZIGZAG && p->causal, rate, link);
      const double shard = (double)p->seq_q / g->ranks;
      printf(
          "  %s: a block of %.1f MB moves in %.3f ms alone (%.1f GB/s); the kernel runs at %.1f "
          "TFLOP/s, so a step is compute-bound above %.0f tokens per shard: this shard (%.0f) is "
          "%s\n",
          virtual_ranks ? "copy on one GPU" : "link", g->block_bytes / 1e6, g->exchange_ms,
          link / 1e9, rate / 1e12, lstar, shard,
          shard > lstar ? "compute-bound" : "transfer-bound");
    }
    if (span > 0.0f) {
      printf(
          "  timeline of the last run (%.3f ms across; digits: the step computing, ~: transfer)\n",
          span);
      for (int k = 0; k < g->ranks; ++k) {
        lane(g, k, 1, span);
        if (g->ranks > 1) lane(g, k, 0, span);
      }
    }
  }
  return 0;
}

static const int kDims[2] = {64, 128};

const attn_lesson l08_lesson = {
    .number = 8,
    .title =
        "Ring attention: one sequence over several GPUs, K/V blocks around a ring, partial states "
        "merged by their log-sum-exp",
    .versions = kVersions,
    .n_versions = L08_VERSIONS,
    .defaults = {.batch = 1,
                 .heads = 16,
                 .kv_heads = 0,
                 .seq_q = 32768,
                 .seq_kv = 0,
                 .dim = 128,
                 .causal = 0,
                 .block_size = 16,
                 .scale = 0.0f},
    .dims = kDims,
    .n_dims = 2,
    .cpu_part = cpu_part,
    .report = report,
};
