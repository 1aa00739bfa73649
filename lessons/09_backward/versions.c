/* Lesson 09's table of versions, the flat entry points l09_backward() and l09_backward_flat() (for
 * ctypes), the custom setup the harness runs for each version (inputs, lesson 04's forward for O
 * and the log-sum-exp, the fp64 reference of dQ, dK and dV, the check of all three and a second run
 * that says whether dQ is bitwise reproducible), the CPU part (the memory each backward needs, the
 * causal walk of the shape) and the report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_bf16.h"
#include "attn_device.h"
#include "attn_reference.h"
#include "attn_rng.h"
#include "backward.h"
#include "bwd_plan.h"
#include "fa2_warps.h"
#include "reference_bwd.h"

#ifndef L09_HAVE_SM90A
/** 1 when CMake built versions 6 and 7 (sm_90a, with lesson 05). */
#define L09_HAVE_SM90A 0
#endif
/** Query rows and key rows sampled per (batch, head) on problems too big to check whole. */
#define L09_SAMPLE_PER_HEAD 8
/** The forward whose O and log-sum-exp the backward differentiates: lesson 04's version 7. */
#define L09_FORWARD_VERSION 7
/** The tolerances, earned, not guessed. On the harness's inputs (uniform in [-0.75, 1.25): not
 * centred) PyTorch's flash and cuDNN backwards miss the fp64 dQ by 1.1e-2 at seq 1024 and 2.1e-2
 * at seq 4096 in relative L2, and dK and dV by under 2e-3 (bench/lesson09_peers.py
 * --accuracy-only, archived in docs/results/h200-l09c-2026-11-25). The dQ error comes from
 * D = dO . O computed from the bf16-rounded O, as versions 2-5 also do: each row's error in D
 * multiplies sum_j P_j K_j, the row's average key, which does not cancel, while the true dQ shrinks
 * like 1 / sqrt(seq_kv) as the row averages more keys. So the relative error grows like
 * sqrt(seq_kv) (x2 from 1024 to 4096, as measured). dQ is held to twice flash's error at 4096 keys,
 * 4.2e-2, scaled by sqrt(seq_kv / 4096) beyond; dK and dV to bf16's 1e-2. The bench holds every
 * version to 2x flash's own error on the same inputs, gradient by gradient. */
#define L09_TOL_DQ_4K 4.2e-2
/** dK and dV: relative L2 error. */
#define L09_TOL_DKV ATTN_TOL_BF16_REL_L2
/** Every gradient: max-abs error as a share of the largest |reference| element (gradients have
 * no natural unit scale: dK and dV sum over every query). */
#define L09_TOL_MAX_REL 3e-2
/** An absolute floor under both: a gradient whose reference is (almost) zero everywhere, as when
 * every row sees one key (P = 1, so dS = dP - D = 0 in exact arithmetic and dQ = dK = 0), has no
 * relative error to speak of. Below a root mean square of this it is judged by its largest
 * absolute error alone, and that against this floor: a quarter of bf16's step at 1.0. */
#define L09_TOL_ABS_FLOOR 1e-3

#if !L09_HAVE_SM90A
/* Versions 6 and 7 are sm_90a code, built with lesson 05 (CMake's ATTN_ARCHS_HOPPER holds 90a). A
 * build without it keeps the launchers, which refuse; the setup below says why. */
cudaError_t l09_wgmma_d64(const l09_grad_args *a, cudaStream_t stream) {
  (void)a, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l09_wgmma_d128(const l09_grad_args *a, cudaStream_t stream) {
  (void)a, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l09_bulkdq_d64(const l09_grad_args *a, cudaStream_t stream) {
  (void)a, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l09_bulkdq_d128(const l09_grad_args *a, cudaStream_t stream) {
  (void)a, (void)stream;
  return cudaErrorNotSupported;
}
#endif

/* [version - 1][dim 64, dim 128] */
static const l09_launch_fn kLaunch[L09_VERSIONS][2] = {
    {l09_naive_d64, l09_naive_d128},   {l09_recompute_d64, l09_recompute_d128},
    {l09_mma_d64, l09_mma_d128},       {l09_causal_d64, l09_causal_d128},
    {l09_determ_d64, l09_determ_d128}, {l09_wgmma_d64, l09_wgmma_d128},
    {l09_bulkdq_d64, l09_bulkdq_d128},
};

static size_t pad256(size_t x) {
  return (x + 255) / 256 * 256;
}

size_t l09_workspace_bytes(int version, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                           int dim) {
  (void)kv_heads;
  if (batch < 1 || heads < 1 || seq_q < 1 || seq_kv < 1 || dim < 1) return 0;
  const size_t rows = (size_t)batch * heads * seq_q, d_term = pad256(rows * sizeof(float));
  switch (version) {
    case 1:
      return d_term + 2 * pad256(rows * (size_t)seq_kv * sizeof(float));
    case 2:
    case 3:
    case 4:
    case 6:
    case 7:
      return d_term + pad256(rows * (size_t)dim * sizeof(float));
    case 5:
      return d_term;
    default:
      return 0;
  }
}

cudaError_t l09_backward(int version, int dim, const l09_grad_args *a, cudaStream_t stream) {
  if (version < 1 || version > L09_VERSIONS || (dim != 64 && dim != 128) || !a)
    return cudaErrorInvalidValue;
  l09_grad_args x = *a;
  if (x.scale == 0.0f) x.scale = 1.0f / sqrtf((float)dim);
  return kLaunch[version - 1][dim == 128](&x, stream);
}

cudaError_t l09_backward_flat(int version, int dim, const void *q, const void *k, const void *v,
                              const void *o, const void *d_o, const float *lse, void *dq, void *dk,
                              void *dv, void *workspace, size_t workspace_bytes, int batch,
                              int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                              float scale, cudaStream_t stream) {
  const l09_grad_args a = {.q = q,
                           .k = k,
                           .v = v,
                           .o = o,
                           .d_o = d_o,
                           .lse = lse,
                           .dq = dq,
                           .dk = dk,
                           .dv = dv,
                           .workspace = workspace,
                           .workspace_bytes = workspace_bytes,
                           .batch = batch,
                           .heads = heads,
                           .kv_heads = kv_heads,
                           .seq_q = seq_q,
                           .seq_kv = seq_kv,
                           .causal = causal,
                           .scale = scale};
  return l09_backward(version, dim, &a, stream);
}

/* ---- What the check found, kept for the report ------------------------------------------------
 */

/** Per version: the three gradients' verdicts and whether a second run reproduced dQ bit for bit.
 */
typedef struct grad_record {
  int checked;
  attn_verdict dq, dk, dv;
  long long dq_bits_differ; /* elements of dQ that differ between two runs; -1: not compared */
  double ws_bytes;          /* the workspace the version asked for */
} grad_record;

static grad_record g_record[L09_VERSIONS];

/* ---- Inputs and reference, shared by the versions of one run ----------------------------------
 */

/** Host inputs and the reference for one (problem, seed): the versions of a run share them, and the
 * reference (the expensive part) is computed once. */
typedef struct shared_ref {
  int valid;
  attn_problem p;
  uint64_t seed;
  float *q, *k, *v, *d_o; /* fp32, exact in bf16 */
  size_t *rows_q, n_q, *rows_kv, n_kv;
  double *dq, *dk, *dv; /* NULL until a checked run asks for them */
} shared_ref;

static shared_ref g_ref;

static void ref_free(void) {
  free(g_ref.q), free(g_ref.k), free(g_ref.v), free(g_ref.d_o);
  free(g_ref.rows_q), free(g_ref.rows_kv), free(g_ref.dq), free(g_ref.dk), free(g_ref.dv);
  memset(&g_ref, 0, sizeof g_ref);
}

static int same_problem(const attn_problem *a, const attn_problem *b) {
  return a->batch == b->batch && a->heads == b->heads && a->kv_heads == b->kv_heads &&
         a->seq_q == b->seq_q && a->seq_kv == b->seq_kv && a->dim == b->dim &&
         a->causal == b->causal && a->scale == b->scale;
}

/* Inputs for @p p (Q, K, V on the harness's streams 1-3, dO on stream 4) and, when @p reference,
 * the fp64 gradients of the sampled rows. 0, or -1 when memory ran out. */
static int ref_get(const attn_problem *p, uint64_t seed, int reference) {
  if (!(g_ref.valid && g_ref.seed == seed && same_problem(&g_ref.p, p))) {
    ref_free();
    const size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p);
    g_ref.q = malloc(nq * sizeof(float));
    g_ref.d_o = malloc(nq * sizeof(float));
    g_ref.k = malloc(nkv * sizeof(float));
    g_ref.v = malloc(nkv * sizeof(float));
    if (!g_ref.q || !g_ref.d_o || !g_ref.k || !g_ref.v) return ref_free(), -1;
    attn_fill_attention_input(g_ref.q, nq, seed, 1);
    attn_fill_attention_input(g_ref.k, nkv, seed, 2);
    attn_fill_attention_input(g_ref.v, nkv, seed, 3);
    attn_fill_attention_input(g_ref.d_o, nq, seed, 4);
    g_ref.p = *p;
    g_ref.p.kv_lens = NULL;
    g_ref.seed = seed;
    g_ref.valid = 1;
  }
  if (!reference || g_ref.dq) return 0;
  g_ref.rows_q = attn_sample_rows(p, L09_SAMPLE_PER_HEAD, seed, &g_ref.n_q);
  g_ref.rows_kv = l09_sample_kv_rows(p, L09_SAMPLE_PER_HEAD, seed, &g_ref.n_kv);
  if (!g_ref.rows_q || !g_ref.rows_kv) return ref_free(), -1;
  g_ref.dq = malloc((g_ref.n_q * p->dim + 1) * sizeof(double));
  g_ref.dk = malloc((g_ref.n_kv * p->dim + 1) * sizeof(double));
  g_ref.dv = malloc((g_ref.n_kv * p->dim + 1) * sizeof(double));
  if (!g_ref.dq || !g_ref.dk || !g_ref.dv) return ref_free(), -1;
  l09_reference_dq(p, g_ref.q, g_ref.k, g_ref.v, g_ref.d_o, g_ref.rows_q, g_ref.n_q, g_ref.dq);
  if (l09_reference_dkv(p, g_ref.q, g_ref.k, g_ref.v, g_ref.d_o, g_ref.rows_kv, g_ref.n_kv,
                        g_ref.dk, g_ref.dv) != 0)
    return ref_free(), -1;
  return 0;
}

/* ---- One version, as an attn_custom ------------------------------------------------------------
 */

typedef struct bw_state {
  attn_problem p;
  int version;
  l09_grad_args a;
  void *q, *k, *v, *o, *d_o, *dq, *dk, *dv, *ws;
  float *lse;
  cudaStream_t stream; /* the harness's, remembered by launch() for the second run of check() */
} bw_state;

static size_t q_bytes(const attn_problem *p) {
  return attn_q_elems(p) * 2;
}
static size_t kv_bytes(const attn_problem *p) {
  return attn_kv_elems(p) * 2;
}

static cudaError_t upload_bf16(void **dst, const float *src, size_t n) {
  uint16_t *tmp = malloc(n * 2 + 2);
  if (!tmp) return cudaErrorMemoryAllocation;
  attn_f32_to_bf16_array(src, tmp, n);
  cudaError_t e = cudaMalloc(dst, n * 2 + 2);
  if (e == cudaSuccess) e = cudaMemcpy(*dst, tmp, n * 2, cudaMemcpyHostToDevice);
  free(tmp);
  return e;
}

static void bw_teardown(void *state) {
  bw_state *s = state;
  if (!s) return;
  cudaFree(s->q), cudaFree(s->k), cudaFree(s->v), cudaFree(s->o), cudaFree(s->d_o);
  cudaFree(s->dq), cudaFree(s->dk), cudaFree(s->dv), cudaFree(s->ws), cudaFree(s->lse);
  free(s);
}

static void bw_footprint(const attn_problem *p, double *device_bytes, double *host_bytes) {
  /* What every version but 1 needs (versions 2-4's workspace is the largest of those): version 1's
   * O(N^2) workspace is checked in its own setup, which refuses it with its own line. */
  const double ws =
      (double)l09_workspace_bytes(4, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim);
  *device_bytes = 4.0 * q_bytes(p) + 4.0 * kv_bytes(p) + 4.0 * attn_rows(p) + ws;
  *host_bytes = 2.0 * attn_q_elems(p) * 4 + 2.0 * attn_kv_elems(p) * 4 + 3.0 * attn_q_elems(p);
}

static cudaError_t bw_setup(void **state, const attn_setup_ctx *ctx, const char **skip) {
  const attn_problem *p = ctx->problem;
  static char why[192];
  *state = NULL;
  if (p->dim != 64 && p->dim != 128)
    return *skip = "built for head dimensions 64 and 128", cudaSuccess;
  if (p->kv_lens)
    return *skip = "lengths per sequence (--kv-lens) are not in this lesson", cudaSuccess;
  if (ctx->version >= 6 && !L09_HAVE_SM90A)
    return *skip = "not built: sm_90a code, built with lesson 05 (ATTN_ARCHS_HOPPER=90a)",
           cudaSuccess;
  if (ctx->version >= 6 && attn_device_sm(ctx->device) != 90)
    return *skip = "sm_90a code (wgmma, TMA): runs on sm_90 GPUs (H100, H200) only", cudaSuccess;
  const size_t ws = l09_workspace_bytes(ctx->version, p->batch, p->heads, p->kv_heads, p->seq_q,
                                        p->seq_kv, p->dim);
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    const double need = (double)ws + 4.0 * q_bytes(p) + 4.0 * kv_bytes(p) + 4.0 * attn_rows(p);
    if (need > 0.95 * (double)free_b) {
      snprintf(why, sizeof why,
               "refused: needs %.1f GB (workspace %.1f GB%s), %.1f GB of device memory free",
               need / 1e9, ws / 1e9,
               ctx->version == 1 ? ": P and dS, 8 bytes per (query, key)" : "", free_b / 1e9);
      *skip = why;
      return cudaSuccess;
    }
  }
  if (ref_get(p, ctx->options->seed, !ctx->options->no_check) != 0)
    return *skip = "not enough host memory for the inputs and the reference", cudaSuccess;
  bw_state *s = calloc(1, sizeof *s);
  if (!s) return cudaErrorMemoryAllocation;
  *state = s;
  s->p = *p;
  s->version = ctx->version;
  ATTN_TRY(upload_bf16(&s->q, g_ref.q, attn_q_elems(p)));
  ATTN_TRY(upload_bf16(&s->k, g_ref.k, attn_kv_elems(p)));
  ATTN_TRY(upload_bf16(&s->v, g_ref.v, attn_kv_elems(p)));
  ATTN_TRY(upload_bf16(&s->d_o, g_ref.d_o, attn_q_elems(p)));
  ATTN_TRY(cudaMalloc(&s->o, q_bytes(p)));
  ATTN_TRY(cudaMalloc((void **)&s->lse, attn_rows(p) * sizeof(float)));
  ATTN_TRY(cudaMalloc(&s->dq, q_bytes(p)));
  ATTN_TRY(cudaMalloc(&s->dk, kv_bytes(p)));
  ATTN_TRY(cudaMalloc(&s->dv, kv_bytes(p)));
  ATTN_TRY(cudaMalloc(&s->ws, ws ? ws : 1));
  /* The forward: lesson 04's O and log-sum-exp, as a training step would have kept them. */
  ATTN_TRY(l04_forward(L09_FORWARD_VERSION, p->dim, s->q, s->k, s->v, s->o, s->lse, p->batch,
                       p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->causal, attn_scale(p), 0));
  ATTN_TRY(cudaDeviceSynchronize());
  s->a = (l09_grad_args){.q = s->q,
                         .k = s->k,
                         .v = s->v,
                         .o = s->o,
                         .d_o = s->d_o,
                         .lse = s->lse,
                         .dq = s->dq,
                         .dk = s->dk,
                         .dv = s->dv,
                         .workspace = s->ws,
                         .workspace_bytes = ws,
                         .batch = p->batch,
                         .heads = p->heads,
                         .kv_heads = p->kv_heads,
                         .seq_q = p->seq_q,
                         .seq_kv = p->seq_kv,
                         .causal = p->causal,
                         .scale = attn_scale(p)};
  g_record[ctx->version - 1].ws_bytes = (double)ws;
  return cudaSuccess;
}

static cudaError_t bw_poison(void *state, cudaStream_t stream) {
  bw_state *s = state;
  ATTN_TRY(attn_poison(s->dq, q_bytes(&s->p), stream));
  ATTN_TRY(attn_poison(s->dk, kv_bytes(&s->p), stream));
  ATTN_TRY(attn_poison(s->dv, kv_bytes(&s->p), stream));
  return cudaSuccess;
}

static cudaError_t bw_launch(void *state, cudaStream_t stream) {
  bw_state *s = state;
  s->stream = stream;
  return l09_backward(s->version, s->p.dim, &s->a, stream);
}

/* One gradient against its reference rows: rows[t] * dim is where row t starts in @p got. */
static void judge(attn_verdict *v, const uint16_t *got, size_t n, const size_t *rows, size_t n_rows,
                  const double *ref, int dim, double tol_rel_l2) {
  double ref_max = 0.0;
  for (size_t e = 0; e < n_rows * (size_t)dim; ++e) ref_max = fmax(ref_max, fabs(ref[e]));
  attn_verdict_init(v, ATTN_BF16);
  v->tol_rel_l2 = tol_rel_l2;
  v->tol_max_abs = fmax(L09_TOL_MAX_REL * ref_max, L09_TOL_ABS_FLOOR);
  attn_verdict_scan(v, ATTN_BF16, got, n, 0);
  for (size_t t = 0; t < n_rows; ++t)
    for (int d = 0; d < dim; ++d)
      attn_verdict_add(v, attn_bf16_to_f32(got[rows[t] * dim + d]), ref[t * dim + d]);
  if (v->compared > 0 && sqrt(v->ref_sq / (double)v->compared) < L09_TOL_ABS_FLOOR)
    v->tol_rel_l2 = INFINITY; /* a zero gradient: judged by max_abs alone */
  attn_verdict_finish(v);
}

static cudaError_t bw_check(void *state, attn_verdict *out) {
  bw_state *s = state;
  const attn_problem *p = &s->p;
  grad_record *r = &g_record[s->version - 1];
  const size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p);
  uint16_t *hq = malloc(nq * 2 + 2), *hk = malloc(nkv * 2 + 2), *hv = malloc(nkv * 2 + 2);
  uint16_t *hq2 = malloc(nq * 2 + 2);
  cudaError_t e = cudaErrorMemoryAllocation;
  if (!hq || !hk || !hv || !hq2) goto done;
  if ((e = cudaMemcpy(hq, s->dq, nq * 2, cudaMemcpyDeviceToHost)) != cudaSuccess ||
      (e = cudaMemcpy(hk, s->dk, nkv * 2, cudaMemcpyDeviceToHost)) != cudaSuccess ||
      (e = cudaMemcpy(hv, s->dv, nkv * 2, cudaMemcpyDeviceToHost)) != cudaSuccess)
    goto done;
  judge(&r->dq, hq, nq, g_ref.rows_q, g_ref.n_q, g_ref.dq, p->dim,
        L09_TOL_DQ_4K * sqrt(fmax(1.0, p->seq_kv / 4096.0)));
  judge(&r->dk, hk, nkv, g_ref.rows_kv, g_ref.n_kv, g_ref.dk, p->dim, L09_TOL_DKV);
  judge(&r->dv, hv, nkv, g_ref.rows_kv, g_ref.n_kv, g_ref.dv, p->dim, L09_TOL_DKV);
  r->checked = 1;
  /* The harness's verdict is the gradient closest to failing; the report prints all three. */
  const attn_verdict *worst = &r->dq;
  if (attn_verdict_margin(&r->dk) > attn_verdict_margin(worst)) worst = &r->dk;
  if (attn_verdict_margin(&r->dv) > attn_verdict_margin(worst)) worst = &r->dv;
  *out = *worst;
  out->unwritten = r->dq.unwritten + r->dk.unwritten + r->dv.unwritten;
  out->nonfinite = r->dq.nonfinite + r->dk.nonfinite + r->dv.nonfinite;
  /* A second run: does dQ come out bit for bit the same? (Atomics add in no fixed order.) */
  if ((e = l09_backward(s->version, p->dim, &s->a, s->stream)) != cudaSuccess ||
      (e = cudaStreamSynchronize(s->stream)) != cudaSuccess ||
      (e = cudaMemcpy(hq2, s->dq, nq * 2, cudaMemcpyDeviceToHost)) != cudaSuccess)
    goto done;
  r->dq_bits_differ = 0;
  for (size_t i = 0; i < nq; ++i) r->dq_bits_differ += hq[i] != hq2[i];
  /* Version 5 promises reproducible dQ: a difference fails it. */
  if (s->version == 5 && r->dq_bits_differ) out->nonfinite += (size_t)r->dq_bits_differ;
  e = cudaSuccess;
done:
  free(hq), free(hk), free(hv), free(hq2);
  return e;
}

static void bw_work(void *state, attn_work *w) {
  const bw_state *s = state;
  const attn_problem *p = &s->p;
  /* The backward's flops are counted as 2.5x the forward's (five products to the forward's two),
   * the convention of the FlashAttention papers, whatever a version actually computes. */
  w->flops = 2.5 * attn_flops(p);
  /* The bytes that must move: Q, K, V, O, dO and L read, dQ, dK, dV written, once. */
  w->bytes =
      3.0 * q_bytes(p) + 2.0 * kv_bytes(p) + 4.0 * attn_rows(p) + q_bytes(p) + 2.0 * kv_bytes(p);
  w->peak_gbs = 0.0;
  w->peak_label = NULL;
}

static const attn_custom kBackward = {.setup = bw_setup,
                                      .poison = bw_poison,
                                      .launch = bw_launch,
                                      .check = bw_check,
                                      .work = bw_work,
                                      .teardown = bw_teardown,
                                      .footprint = bw_footprint};

static const attn_version kVersions[L09_VERSIONS] = {
    {.name = "naive-f32",
     .summary = "P and dS in HBM (fp32 N x N), one kernel per product",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .custom = &kBackward},
    {.name = "recompute-f32",
     .summary = "KV-outer, P rebuilt from Q K^T and L, dQ by atomics; CUDA cores",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .custom = &kBackward},
    {.name = "mma-bf16",
     .summary = "mma.sync + ldmatrix for all five products, dS via smem for dQ",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .custom = &kBackward},
    {.name = "causal-bf16",
     .summary = "+ causal tile skip, mask on diagonal tiles only, cp.async Q/dO",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .custom = &kBackward},
    {.name = "determ-bf16",
     .summary = "dQ by a Q-outer pass, no atomics: bitwise reproducible",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .custom = &kBackward},
    {.name = "wgmma-bf16",
     .summary = "version 4's walk on wgmma + TMA (sm_90a): operands from shared memory",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .custom = &kBackward},
    {.name = "bulkdq-bf16",
     .summary = "+ dQ blocks added by TMA reductions from shared memory, not atomics",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .custom = &kBackward},
};

const char *l09_version_name(int version) {
  return version >= 1 && version <= L09_VERSIONS ? kVersions[version - 1].name : NULL;
}

/* ---- CPU part and report -----------------------------------------------------------------------
 */

/* The memory each backward needs beyond its inputs and outputs, at this shape's batch, heads and
 * dim over sequence lengths; the causal walk of version 4 at this shape. */
static int cpu_part(const attn_options *o) {
  const attn_problem *p = &o->problem;
#if L09_ABLATE_RECOMPUTE
  printf(
      "EXPERIMENT BUILD (ATTN_L09_ABLATE): version 4 skips Q K^T and the exponential; its "
      "results are wrong, only its time means something (run it with --no-check)\n");
#endif
  printf(
      "extra device memory of the backward (batch %d, %d heads, dim %d; inputs and outputs "
      "not counted):\n  %8s %14s %19s %14s\n",
      p->batch, p->heads, p->dim, "seq", "v1 (P, dS)", "v2-4, 6-7 (D, dQ32)", "v5 (D)");
  for (int n = 1024; n <= 65536; n *= 2)
    printf("  %8d %11.3f GB %16.3f GB %11.3f GB\n", n,
           l09_workspace_bytes(1, p->batch, p->heads, p->kv_heads, n, n, p->dim) / 1e9,
           l09_workspace_bytes(4, p->batch, p->heads, p->kv_heads, n, n, p->dim) / 1e9,
           l09_workspace_bytes(5, p->batch, p->heads, p->kv_heads, n, n, p->dim) / 1e9);
  const int br = 64, bc = 64, n_q = (p->seq_q + br - 1) / br, n_kv = (p->seq_kv + bc - 1) / bc;
  long every = 0, visited = 0, masked = 0;
  for (int t = 0; t < n_kv; ++t) {
    const int first = l09_first_q_tile(t * bc, br, p->seq_q, p->seq_kv, p->causal);
    const int unmasked = l09_first_unmasked_q_tile(t * bc, bc, br, p->seq_q, p->seq_kv, p->causal);
    every += n_q;
    visited += n_q - first;
    masked += unmasked - first;
  }
  printf(
      "KV-outer walk (64 keys x 64 queries per step), per (batch, query head): %ld Q-tile "
      "steps without the skip (versions 2-3 visit all), %ld with it (version 4), %ld of them "
      "masked%s\n",
      every, visited, masked, p->causal ? "" : " (no --causal: nothing to skip)");
  return 0;
}

static int report(const attn_options *o, const attn_device *dev, const attn_result *r, int n) {
  (void)o;
  if (!dev) return 0;
  printf(
      "\neach gradient against the fp64 reference (rel_l2 / max_abs), dQ reproducibility, "
      "workspace:\n");
  for (int i = 0; i < n; ++i) {
    const grad_record *g = &g_record[i];
    if (r[i].status == ATTN_SKIPPED || !g->checked) continue;
    printf("  %d %-14s dQ %.2e / %.2e  dK %.2e / %.2e  dV %.2e / %.2e  ", i + 1, r[i].version->name,
           g->dq.rel_l2, g->dq.max_abs, g->dk.rel_l2, g->dk.max_abs, g->dv.rel_l2, g->dv.max_abs);
    if (g->dq_bits_differ == 0)
      printf("dQ bitwise equal over 2 runs  ");
    else
      printf("dQ differs in %lld elements over 2 runs  ", g->dq_bits_differ);
    printf("workspace %.3f GB\n", g->ws_bytes / 1e9);
  }
  printf("\nwhat each version bought (median time of the previous / this one):\n");
  for (int i = 1; i < n; ++i) {
    if (!r[i].timed || !r[i - 1].timed || r[i].timing.median_ms <= 0.0) continue;
    printf("  %d %-14s vs %d %-14s %7.2fx\n", i + 1, r[i].version->name, i, r[i - 1].version->name,
           r[i - 1].timing.median_ms / r[i].timing.median_ms);
  }
  if (n >= 5 && r[3].timed && r[4].timed && r[4].timing.median_ms > 0.0)
    printf("  deterministic dQ (5) costs %.1f%% over atomics (4)\n",
           100.0 * (r[4].timing.median_ms / r[3].timing.median_ms - 1.0));
  return 0;
}

static const int kDims[2] = {64, 128};

const attn_lesson l09_lesson = {
    .number = 9,
    .title =
        "The backward pass: recompute P from the log-sum-exp, tensor cores, atomic or "
        "deterministic dQ",
    .versions = kVersions,
    .n_versions = L09_VERSIONS,
    .defaults = {.batch = 4,
                 .heads = 16,
                 .kv_heads = 0,
                 .seq_q = 4096,
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
