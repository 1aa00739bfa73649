/* The runner: check, time and tabulate a lesson's versions. See attn_runner.h. */
#include "attn_runner.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn_bf16.h"
#include "attn_paged.h"
#include "attn_reference.h"
#include "attn_rng.h"
#include "attn_timer.h"

/* Rows sampled per (batch, head) beyond the first and last, when a problem is too big to check
 * whole. */
#define SAMPLE_ROWS_PER_HEAD 8

const char *attn_status_name(attn_status s) {
  switch (s) {
    case ATTN_PASS:
      return "PASS";
    case ATTN_FAIL:
      return "FAIL";
    case ATTN_SKIPPED:
      return "skipped";
    case ATTN_ERROR:
      return "ERROR";
    case ATTN_UNCHECKED:
      return "unchecked";
  }
  return "?";
}

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- Inputs shared by the attention versions of one run ---------------------------------------
 */

typedef struct dense_inputs {
  const attn_problem *p;
  uint64_t seed;
  float *hq, *hk, *hv; /* host, fp32 values that are exact in bf16 */
  size_t *rows;        /* rows the reference covers */
  size_t n_rows;
  double *ref_o, *ref_lse;     /* [n_rows, dim], [n_rows] */
  void *dq[2], *dk[2], *dv[2]; /* device copies per dtype (index attn_dtype) */
  attn_paged paged;            /* host paged cache, built on first use */
  int paged_built;
  void *dkc[2], *dvc[2]; /* device caches per dtype */
  int *d_table, *d_lens;
} dense_inputs;

cudaError_t attn_upload(void **dst, const float *src, size_t n, attn_dtype t) {
  size_t bytes = n * attn_dtype_size(t);
  ATTN_TRY(cudaMalloc(dst, bytes ? bytes : 1));
  if (t == ATTN_F32) {
    ATTN_TRY(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
    return cudaSuccess;
  }
  uint16_t *tmp = (uint16_t *)malloc(bytes ? bytes : 1);
  if (!tmp) return cudaErrorMemoryAllocation;
  attn_f32_to_bf16_array(src, tmp, n);
  cudaError_t e = cudaMemcpy(*dst, tmp, bytes, cudaMemcpyHostToDevice);
  free(tmp);
  ATTN_TRY(e);
  return cudaSuccess;
}

static int inputs_host(dense_inputs *in, int need_reference, FILE *out) {
  const attn_problem *p = in->p;
  size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p);
  in->hq = (float *)malloc(sizeof(float) * (nq ? nq : 1));
  in->hk = (float *)malloc(sizeof(float) * (nkv ? nkv : 1));
  in->hv = (float *)malloc(sizeof(float) * (nkv ? nkv : 1));
  if (!in->hq || !in->hk || !in->hv) return -1;
  attn_fill_attention_input(in->hq, nq, in->seed, 1);
  attn_fill_attention_input(in->hk, nkv, in->seed, 2);
  attn_fill_attention_input(in->hv, nkv, in->seed, 3);
  if (p->kv_lens) { /* keys past a sequence's length belong to nobody: a kernel that reads one
                       poisons its output */
    const size_t token = (size_t)p->kv_heads * p->dim;
    for (int b = 0; b < p->batch; ++b)
      for (size_t e = (size_t)attn_kv_len(p, b) * token; e < (size_t)p->seq_kv * token; ++e) {
        const size_t at = (size_t)b * p->seq_kv * token + e;
        in->hk[at] = in->hv[at] = NAN;
      }
  }
  if (!need_reference) return 0;
  in->rows = attn_sample_rows(p, SAMPLE_ROWS_PER_HEAD, in->seed, &in->n_rows);
  if (!in->rows) return -1;
  in->ref_o = (double *)malloc(sizeof(double) * in->n_rows * p->dim + 1);
  in->ref_lse = (double *)malloc(sizeof(double) * in->n_rows + 1);
  if (!in->ref_o || !in->ref_lse) return -1;
  double t0 = now_s();
  attn_reference(p, in->hq, in->hk, in->hv, in->rows, in->n_rows, in->ref_o, in->ref_lse);
  if (out)
    fprintf(out, "reference: %zu of %zu rows (%s) in double on the CPU, %.2f s\n", in->n_rows,
            attn_rows(p), in->n_rows == attn_rows(p) ? "all" : "sampled", now_s() - t0);
  return 0;
}

static cudaError_t inputs_device(dense_inputs *in, attn_dtype t, int paged) {
  const attn_problem *p = in->p;
  if (!in->dq[t]) ATTN_TRY(attn_upload(&in->dq[t], in->hq, attn_q_elems(p), t));
  if (!paged) {
    if (!in->dk[t]) ATTN_TRY(attn_upload(&in->dk[t], in->hk, attn_kv_elems(p), t));
    if (!in->dv[t]) ATTN_TRY(attn_upload(&in->dv[t], in->hv, attn_kv_elems(p), t));
    if (p->kv_lens && !in->d_lens) {
      ATTN_TRY(cudaMalloc((void **)&in->d_lens, sizeof(int) * (size_t)p->batch));
      ATTN_TRY(cudaMemcpy(in->d_lens, p->kv_lens, sizeof(int) * (size_t)p->batch,
                          cudaMemcpyHostToDevice));
    }
    return cudaSuccess;
  }
  if (!in->paged_built) {
    if (attn_paged_build(p, in->hk, in->hv, in->seed, &in->paged) != 0)
      return cudaErrorMemoryAllocation;
    in->paged_built = 1;
  }
  attn_paged *c = &in->paged;
  size_t elems = (size_t)c->num_blocks * c->block_size * c->kv_heads * c->dim;
  if (!in->dkc[t]) ATTN_TRY(attn_upload(&in->dkc[t], c->k_cache, elems, t));
  if (!in->dvc[t]) ATTN_TRY(attn_upload(&in->dvc[t], c->v_cache, elems, t));
  if (!in->d_table) {
    size_t tb = sizeof(int) * (size_t)p->batch * c->max_blocks;
    ATTN_TRY(cudaMalloc((void **)&in->d_table, tb));
    ATTN_TRY(cudaMemcpy(in->d_table, c->block_table, tb, cudaMemcpyHostToDevice));
    if (!in->d_lens) {
      ATTN_TRY(cudaMalloc((void **)&in->d_lens, sizeof(int) * (size_t)p->batch));
      ATTN_TRY(cudaMemcpy(in->d_lens, c->seq_lens, sizeof(int) * (size_t)p->batch,
                          cudaMemcpyHostToDevice));
    }
  }
  return cudaSuccess;
}

static void inputs_free(dense_inputs *in) {
  free(in->hq);
  free(in->hk);
  free(in->hv);
  free(in->rows);
  free(in->ref_o);
  free(in->ref_lse);
  for (int t = 0; t < 2; ++t) {
    cudaFree(in->dq[t]);
    cudaFree(in->dk[t]);
    cudaFree(in->dv[t]);
    cudaFree(in->dkc[t]);
    cudaFree(in->dvc[t]);
  }
  cudaFree(in->d_table);
  cudaFree(in->d_lens);
  if (in->paged_built) attn_paged_free(&in->paged);
}

/* ---- One attention version ----------------------------------------------------------------------
 */

typedef struct dense_launch {
  const attn_version *v;
  const attn_problem *p;
  attn_args args;
} dense_launch;

static cudaError_t dense_thunk(void *ctx, cudaStream_t s) {
  dense_launch *d = (dense_launch *)ctx;
  return d->v->launch(d->p, &d->args, s);
}

typedef struct custom_launch {
  const attn_custom *c;
  void *state;
} custom_launch;

static cudaError_t custom_thunk(void *ctx, cudaStream_t s) {
  custom_launch *c = (custom_launch *)ctx;
  return c->c->launch(c->state, s);
}

/* A CUDA error that poisons the context (illegal address, launch failure, ...) ends the run. */
static int sticky(cudaError_t e) {
  return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure ||
         e == cudaErrorHardwareStackError || e == cudaErrorIllegalInstruction ||
         e == cudaErrorMisalignedAddress || e == cudaErrorInvalidAddressSpace ||
         e == cudaErrorInvalidPc || e == cudaErrorAssert || e == cudaErrorLaunchTimeout ||
         e == cudaErrorUnknown;
}

/* Record a CUDA failure in the result and report it on stderr with the file and line that saw it.
 */
#define set_error(r, e, where) set_error_at((r), (e), (where), __FILE__, __LINE__)
static void set_error_at(attn_result *r, cudaError_t e, const char *where, const char *file,
                         int line) {
  r->status = ATTN_ERROR;
  attn_cuda_report(e, where, file, line);
  snprintf(r->note, sizeof r->note, "%s: %s (%s) at %s:%d", where, cudaGetErrorName(e),
           cudaGetErrorString(e), file, line);
}

static void set_skip(attn_result *r, const char *why) {
  r->status = ATTN_SKIPPED;
  snprintf(r->note, sizeof r->note, "%s", why);
}

/* Out-of-memory on allocation is a skip, not an error: the shape is too big for this GPU. */
static int alloc_or_skip(attn_result *r, void **ptr, size_t bytes, const char *what) {
  cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1);
  if (e == cudaSuccess) return 0;
  (void)cudaGetLastError();
  *ptr = NULL;
  if (e == cudaErrorMemoryAllocation) {
    char why[160];
    snprintf(why, sizeof why, "not enough device memory for %s (%.2f GB)", what, bytes / 1e9);
    set_skip(r, why);
  } else {
    set_error(r, e, "cudaMalloc");
  }
  return -1;
}

static void run_dense(const attn_version *v, const attn_options *o, dense_inputs *in,
                      cudaStream_t stream, attn_result *r) {
  const attn_problem *p = &o->problem;
  const int paged = v->kind == ATTN_PAGED;
  dense_launch dl;
  memset(&dl, 0, sizeof dl);
  dl.v = v;
  dl.p = p;
  void *o_buf = NULL, *lse_buf = NULL, *ws = NULL;
  size_t o_bytes = attn_q_elems(p) * attn_dtype_size(v->dtype);
  size_t lse_bytes = attn_rows(p) * sizeof(float);
  size_t ws_bytes = v->workspace ? v->workspace(p) : 0;
  void *host_o = NULL;
  float *host_lse = NULL;

  cudaError_t e = inputs_device(in, v->dtype, paged);
  if (e != cudaSuccess) {
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      set_skip(r, "not enough device memory for the inputs");
    } else {
      set_error(r, e, "inputs");
    }
    return;
  }
  if (alloc_or_skip(r, &o_buf, o_bytes, "O") || alloc_or_skip(r, &lse_buf, lse_bytes, "LSE") ||
      (ws_bytes && alloc_or_skip(r, &ws, ws_bytes, "the workspace")))
    goto done;
  /* Zeroed once: a version may keep state in it across calls (counters) if it leaves it so. */
  if (ws_bytes && (e = cudaMemset(ws, 0, ws_bytes)) != cudaSuccess) {
    set_error(r, e, "zeroing the workspace");
    goto done;
  }

  dl.args.q = in->dq[v->dtype];
  dl.args.o = o_buf;
  dl.args.lse = (float *)lse_buf;
  dl.args.workspace = ws;
  dl.args.workspace_bytes = ws_bytes;
  dl.args.version = r->index;
  dl.args.user = v->user;
  if (paged) {
    dl.args.k_cache = in->dkc[v->dtype];
    dl.args.v_cache = in->dvc[v->dtype];
    dl.args.block_table = in->d_table;
    dl.args.seq_lens = in->d_lens;
    dl.args.num_blocks = in->paged.num_blocks;
    dl.args.max_blocks = in->paged.max_blocks;
  } else {
    dl.args.k = in->dk[v->dtype];
    dl.args.v = in->dv[v->dtype];
    dl.args.seq_lens = in->d_lens; /* NULL without lengths */
  }

  if (!o->no_check) {
    if ((e = attn_poison(o_buf, o_bytes, stream)) != cudaSuccess ||
        (e = attn_poison(lse_buf, lse_bytes, stream)) != cudaSuccess) {
      set_error(r, e, "poison");
      goto done;
    }
    if ((e = dense_thunk(&dl, stream)) != cudaSuccess ||
        (e = cudaStreamSynchronize(stream)) != cudaSuccess) {
      set_error(r, e, "launch");
      goto done;
    }
    host_o = malloc(o_bytes ? o_bytes : 1);
    host_lse = (float *)malloc(lse_bytes ? lse_bytes : 1);
    if (!host_o || !host_lse) {
      set_error(r, cudaErrorMemoryAllocation, "host copy");
      goto done;
    }
    if ((e = cudaMemcpy(host_o, o_buf, o_bytes, cudaMemcpyDeviceToHost)) != cudaSuccess ||
        (e = cudaMemcpy(host_lse, lse_buf, lse_bytes, cudaMemcpyDeviceToHost)) != cudaSuccess) {
      set_error(r, e, "copy back");
      goto done;
    }
    attn_verdict_init(&r->verdict, v->dtype);
    if (v->fp8) {
      r->verdict.tol_max_abs = ATTN_TOL_FP8_MAX_ABS;
      r->verdict.tol_rel_l2 = ATTN_TOL_FP8_REL_L2;
    }
    attn_verdict_scan(&r->verdict, v->dtype, host_o, attn_q_elems(p), 0);
    for (size_t t = 0; t < in->n_rows; ++t) {
      size_t row = in->rows[t];
      for (int d = 0; d < p->dim; ++d)
        attn_verdict_add(&r->verdict, attn_load(v->dtype, host_o, row * p->dim + d),
                         in->ref_o[t * p->dim + d]);
    }
    attn_verdict_finish(&r->verdict);
    int pass = r->verdict.pass;
    if (v->writes_lse) {
      /* fp32 log-sum-exp of unit-scale scores: judged with fp32 absolute tolerance scaled by its
       * magnitude (|lse| grows like log(seq_kv)). */
      attn_verdict_init_lse(&r->verdict_lse, v->dtype);
      if (v->fp8) {
        r->verdict_lse.tol_max_abs = ATTN_TOL_FP8_MAX_ABS;
        r->verdict_lse.tol_rel_l2 = ATTN_TOL_FP8_REL_L2;
      }
      attn_verdict_scan(&r->verdict_lse, ATTN_F32, host_lse, attn_rows(p), 1);
      for (size_t t = 0; t < in->n_rows; ++t)
        attn_verdict_add(&r->verdict_lse, host_lse[attn_row_lse_index(p, in->rows[t])],
                         in->ref_lse[t]);
      attn_verdict_finish(&r->verdict_lse);
      pass = pass && r->verdict_lse.pass;
    }
    r->status = pass ? ATTN_PASS : ATTN_FAIL;
  } else {
    r->status = ATTN_UNCHECKED;
  }

  r->work.flops = attn_flops(p);
  r->work.bytes = attn_min_bytes(p, v->dtype, v->writes_lse);
  if (!o->check_only) {
    e = attn_time(dense_thunk, &dl, stream, o->warmup, o->iters, 1, &r->timing);
    if (e != cudaSuccess) {
      set_error(r, e, "timing");
      goto done;
    }
    r->timed = 1;
  }
done:
  free(host_o);
  free(host_lse);
  cudaFree(o_buf);
  cudaFree(lse_buf);
  cudaFree(ws);
}

static void run_custom(const attn_version *v, const attn_options *o, const attn_device *dev,
                       cudaStream_t stream, attn_result *r) {
  const attn_custom *c = v->custom;
  custom_launch cl = {c, NULL};
  attn_setup_ctx ctx = {&o->problem, o, dev, r->index, v->user};
  const char *skip = NULL;
  cudaError_t e = c->setup(&cl.state, &ctx, &skip);
  if (e != cudaSuccess || skip) {
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      set_skip(r, "not enough device memory");
    } else if (e != cudaSuccess) {
      set_error(r, e, "setup");
    } else {
      set_skip(r, skip);
    }
    if (c->teardown) c->teardown(cl.state);
    return;
  }
  if (!o->no_check) {
    if ((e = c->poison(cl.state, stream)) != cudaSuccess) {
      set_error(r, e, "poison");
      goto done;
    }
    if ((e = c->launch(cl.state, stream)) != cudaSuccess ||
        (e = cudaStreamSynchronize(stream)) != cudaSuccess) {
      set_error(r, e, "launch");
      goto done;
    }
    attn_verdict_init(&r->verdict, v->dtype);
    if ((e = c->check(cl.state, &r->verdict)) != cudaSuccess) {
      set_error(r, e, "check");
      goto done;
    }
    attn_verdict_finish(&r->verdict);
    r->status = r->verdict.pass ? ATTN_PASS : ATTN_FAIL;
  } else {
    r->status = ATTN_UNCHECKED;
  }
  c->work(cl.state, &r->work);
  if (!o->check_only) {
    e = attn_time(custom_thunk, &cl, stream, o->warmup, o->iters, 1, &r->timing);
    if (e != cudaSuccess) {
      set_error(r, e, "timing");
      goto done;
    }
    r->timed = 1;
  }
done:
  c->teardown(cl.state);
}

/* ---- Table
 * ---------------------------------------------------------------------------------------- */

static void table_header(FILE *out) {
  fprintf(out, "\n%2s  %-22s %-5s %-9s %9s %9s %10s %9s %6s %9s %6s\n", "#", "version", "dtype",
          "check", "max_abs", "rel_l2", "ms", "TFLOP/s", "%peak", "GB/s", "%peak");
}

static void table_row(FILE *out, const attn_result *r) {
  const attn_version *v = r->version;
  fprintf(out, "%2d  %-22s %-5s ", r->index, v->name, attn_dtype_name(v->dtype));
  if (r->status == ATTN_SKIPPED || r->status == ATTN_ERROR) {
    fprintf(out, "%s: %s\n", attn_status_name(r->status), r->note);
    return;
  }
  fprintf(out, "%-9s ", attn_status_name(r->status));
  if (r->status == ATTN_UNCHECKED)
    fprintf(out, "%9s %9s ", "-", "-");
  else
    fprintf(out, "%9.2e %9.2e ", r->verdict.max_abs, r->verdict.rel_l2);
  if (!r->timed) {
    fprintf(out, "%10s\n", "-");
  } else {
    fprintf(out, "%10.4f ", r->timing.median_ms);
    if (r->work.flops > 0 && r->pct_flops >= 0)
      fprintf(out, "%9.2f %5.1f%% ", r->tflops, r->pct_flops);
    else if (r->work.flops > 0)
      fprintf(out, "%9.2f %6s ", r->tflops, "?");
    else
      fprintf(out, "%9s %6s ", "-", "-");
    if (r->work.bytes > 0)
      fprintf(out, "%9.1f %5.1f%% %s\n", r->gbs, r->pct_bw,
              r->work.peak_label ? r->work.peak_label : "HBM");
    else
      fprintf(out, "%9s %6s\n", "-", "-");
  }
  if (r->status == ATTN_FAIL) {
    fprintf(out, "    O:   ");
    attn_verdict_print(&r->verdict, out);
    fprintf(out, "\n");
  }
  if (r->verdict_lse.compared > 0 && (r->status == ATTN_FAIL || !r->verdict_lse.pass)) {
    fprintf(out, "    LSE: ");
    attn_verdict_print(&r->verdict_lse, out);
    fprintf(out, "\n");
  }
}

static void rates(const attn_device *dev, attn_result *r) {
  if (!r->timed || r->timing.median_ms <= 0) return;
  double s = r->timing.median_ms * 1e-3;
  r->tflops = r->work.flops / s / 1e12;
  double peak = r->version->dtype == ATTN_BF16 ? dev->bf16_tensor_tflops : dev->fp32_tflops;
  if (r->version->fp8) peak = 2.0 * dev->bf16_tensor_tflops; /* e4m3: twice bf16's rate */
  r->pct_flops = peak > 0 ? 100.0 * r->tflops / peak : -1.0; /* -1: no datasheet peak known */
  r->gbs = r->work.bytes / s / 1e9;
  double bw = r->work.peak_gbs > 0 ? r->work.peak_gbs : dev->mem_bw_gbs;
  r->pct_bw = bw > 0 ? 100.0 * r->gbs / bw : 0.0;
}

/* Whether version i (0-based) is selected: all, or the one VERSION given. */
static int selected(const attn_options *o, int i) {
  return o->version == 0 || o->version == i + 1;
}

int attn_run_versions(const attn_lesson *L, const attn_options *o, const attn_device *dev,
                      attn_result *results, FILE *out) {
  int failures = 0, dead = 0, need_ref = 0, any_dense = 0;
  const int sm = attn_device_sm(dev);
  for (int i = 0; i < L->n_versions; ++i) {
    const attn_version *v = &L->versions[i];
    if (selected(o, i) && v->kind != ATTN_CUSTOM) {
      any_dense = 1;
      need_ref |= !o->no_check;
    }
  }
  dense_inputs in;
  memset(&in, 0, sizeof in);
  in.p = &o->problem;
  in.seed = o->seed;
  if (any_dense && inputs_host(&in, need_ref, out) != 0) {
    if (out) fprintf(out, "out of host memory for the inputs and the reference\n");
    inputs_free(&in);
    return L->n_versions;
  }
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess) {
    if (out) fprintf(out, "cannot create a CUDA stream\n");
    inputs_free(&in);
    return L->n_versions;
  }
  if (out) table_header(out);
  for (int i = 0; i < L->n_versions; ++i) {
    const attn_version *v = &L->versions[i];
    attn_result *r = &results[i];
    memset(r, 0, sizeof *r);
    r->version = v;
    r->index = i + 1;
    const char *why = NULL;
    char buf[96];
    if (!selected(o, i)) {
      set_skip(r, "not selected");
      continue; /* not printed */
    }
    if (dead) {
      why = "not run: an earlier version left the GPU in an error state";
    } else if (L->only_sm > 0 && sm != L->only_sm) {
      snprintf(buf, sizeof buf, "built for sm_%da: runs on sm_%d only, this GPU is sm_%d",
               L->only_sm, L->only_sm, sm);
      why = buf;
    } else if (v->min_sm > 0 && sm < v->min_sm) {
      snprintf(buf, sizeof buf, "needs sm_%d or newer, this GPU is sm_%d", v->min_sm, sm);
      why = buf;
    } else if (o->problem.kv_lens && !v->varlen) {
      why = "takes one length for every sequence, not --kv-lens";
    } else if (v->supports) {
      why = v->supports(&o->problem);
    }
    if (why) {
      set_skip(r, why);
    } else if (v->kind == ATTN_CUSTOM) {
      run_custom(v, o, dev, stream, r);
    } else {
      run_dense(v, o, &in, stream, r);
    }
    if (r->status == ATTN_ERROR) {
      cudaError_t e = cudaDeviceSynchronize();
      if (e == cudaSuccess) e = cudaGetLastError();
      if (sticky(e)) dead = 1;
    }
    rates(dev, r);
    if (r->status == ATTN_FAIL || r->status == ATTN_ERROR) failures++;
    if (out) {
      table_row(out, r);
      fflush(out);
    }
  }
  cudaStreamDestroy(stream);
  inputs_free(&in);
  return failures;
}

/* ---- Will it fit?
 * --------------------------------------------------------------------------------- */

void attn_footprint(const attn_lesson *L, const attn_options *o, double *device_bytes,
                    double *host_bytes) {
  const attn_problem *p = &o->problem;
  int dtype_used[2] = {0, 0}, any_dense = 0;
  double dev = 0.0, host = 0.0, custom_dev = 0.0, custom_host = 0.0, out_max = 0.0;
  for (int i = 0; i < L->n_versions; ++i) {
    const attn_version *v = &L->versions[i];
    if (!selected(o, i)) continue;
    if (v->kind == ATTN_CUSTOM) {
      double d = 0.0, h = 0.0;
      if (v->custom && v->custom->footprint) v->custom->footprint(p, &d, &h);
      if (d > custom_dev) custom_dev = d;
      if (h > custom_host) custom_host = h;
      continue;
    }
    any_dense = 1;
    dtype_used[v->dtype] = 1;
    /* O and LSE of the version on the GPU, and their copies on the host for the check. */
    double out = (double)attn_q_elems(p) * attn_dtype_size(v->dtype) + 4.0 * (double)attn_rows(p);
    if (out > out_max) out_max = out;
  }
  if (any_dense) {
    const double nq = (double)attn_q_elems(p), nkv = (double)attn_kv_elems(p);
    for (int t = 0; t < 2; ++t)
      if (dtype_used[t]) dev += (nq + 2.0 * nkv) * attn_dtype_size((attn_dtype)t);
    dev += out_max;
    host += 4.0 * (nq + 2.0 * nkv) + out_max; /* fp32 inputs, one output copy */
    if (!o->no_check) {
      /* Reference rows in double: at most every row. */
      double rows = (double)attn_rows(p);
      const double macs = 2.0 * attn_visible_pairs(p) * p->dim;
      if (macs > ATTN_FULL_CHECK_MACS)
        rows = (double)p->batch * p->heads * (SAMPLE_ROWS_PER_HEAD + 2); /* attn_sample_rows() */
      host += rows * (8.0 * p->dim + 8.0 + 8.0);
    }
  }
  *device_bytes = dev + custom_dev;
  *host_bytes = host + custom_host;
}

static int fits_at(const attn_lesson *L, const attn_options *o, double dev_free, double host_free) {
  double d = 0.0, h = 0.0;
  attn_footprint(L, o, &d, &h);
  return (dev_free <= 0.0 || d <= dev_free) && (host_free <= 0.0 || h <= host_free);
}

double attn_host_available_bytes(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0.0;
  char line[256];
  double kb = 0.0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "MemAvailable:", 13) == 0) {
      kb = strtod(line + 13, NULL);
      break;
    }
  }
  fclose(f);
  return kb * 1024.0;
}

int attn_fits(const attn_lesson *L, const attn_options *o, double dev_free, double host_free,
              char *why, size_t why_len) {
  if (fits_at(L, o, dev_free, host_free)) return 0;
  double d = 0.0, h = 0.0;
  attn_footprint(L, o, &d, &h);
  /* The longest sequence axis is the one to shrink: --kv-seq for long rows, else --seq (both when
   * they are equal, as for self-attention). */
  attn_options t = *o;
  const int both = o->problem.seq_q == o->problem.seq_kv;
  const int kv = !both && o->problem.seq_kv > o->problem.seq_q;
  const char *axis = kv ? "--kv-seq" : "--seq";
  int lo = 0,
      hi = kv ? o->problem.seq_kv : o->problem.seq_q; /* lo fits (0: none yet), hi does not */
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    if (kv || both) t.problem.seq_kv = mid;
    if (!kv) t.problem.seq_q = mid;
    if (fits_at(L, &t, dev_free, host_free))
      lo = mid;
    else
      hi = mid;
  }
  char tail[96];
  if (lo > 0)
    snprintf(tail, sizeof tail, "the largest %s that fits is %d", axis, lo);
  else
    snprintf(tail, sizeof tail, "no %s fits: lower --batch or --heads", axis);
  snprintf(
      why, why_len,
      "problem too large: it needs %.2f GB on the GPU (%.2f GB free) and %.2f GB of host memory "
      "(%.2f GB available); %s",
      d / 1e9, dev_free / 1e9, h / 1e9, host_free / 1e9, tail);
  return -1;
}

/* ---- The program
 * ---------------------------------------------------------------------------------- */

static void csv_header(FILE *f) {
  fprintf(f,
          "lesson,version,name,dtype,batch,heads,kv_heads,seq_q,seq_kv,dim,causal,status,max_abs,"
          "rel_l2,ms,tflops,pct_flops,gbs,pct_bw,peak,device,note,kv_lens\n");
}

/* One row per selected version; returns the number of rows. */
static int csv_rows(FILE *f, const attn_lesson *L, const attn_options *o, const attn_device *dev,
                    const attn_result *rs) {
  const attn_problem *p = &o->problem;
  int rows = 0;
  for (int i = 0; i < L->n_versions; ++i) {
    const attn_result *r = &rs[i];
    if (!selected(o, i)) continue;
    fprintf(f, "%d,%d,%s,%s,%d,%d,%d,%d,%d,%d,%d,%s,", L->number, r->index, r->version->name,
            attn_dtype_name(r->version->dtype), p->batch, p->heads, p->kv_heads, p->seq_q,
            p->seq_kv, p->dim, p->causal, attn_status_name(r->status));
    if (r->status == ATTN_PASS || r->status == ATTN_FAIL)
      fprintf(f, "%.3e,%.3e,", r->verdict.max_abs, r->verdict.rel_l2);
    else
      fprintf(f, ",,");
    if (r->timed && r->pct_flops >= 0)
      fprintf(f, "%.5f,%.3f,%.2f,%.2f,%.2f,%s,", r->timing.median_ms, r->tflops, r->pct_flops,
              r->gbs, r->pct_bw, r->work.peak_label ? r->work.peak_label : "HBM");
    else if (r->timed)
      fprintf(f, "%.5f,%.3f,,%.2f,%.2f,%s,", r->timing.median_ms, r->tflops, r->gbs, r->pct_bw,
              r->work.peak_label ? r->work.peak_label : "HBM");
    else
      fprintf(f, ",,,,,,");
    /* Notes and lengths may hold commas: quote them. */
    char lens[512];
    fprintf(f, "%s,\"%s\",\"%s\"\n", dev ? dev->name : "", r->note,
            attn_kv_lens_str(p, lens, sizeof lens));
    rows++;
  }
  return rows;
}

/* Close @p f (the CSV file or stdout) and report a write that failed; returns 0 or 1. */
static int close_checked(FILE *f, const char *prog, const char *name, int is_stdout) {
  int bad = fflush(f) != 0 || ferror(f);
  int e = errno;
  if (!is_stdout) {
    if (fclose(f) != 0 && !bad) {
      bad = 1;
      e = errno;
    }
  }
  if (bad) fprintf(stderr, "%s: writing %s failed: %s\n", prog, name, strerror(e ? e : EIO));
  return bad;
}

/* What the program ends with: the status, or 1 when stdout or the CSV could not be written. */
static int finish(int status, FILE *csv, const char *csv_path, int csv_rows, const char *prog) {
  if (csv) {
    if (csv_rows == 0) printf("--csv %s: header only, no GPU rows were written\n", csv_path);
    if (close_checked(csv, prog, csv_path, 0)) status = status ? status : 1;
  }
  if (close_checked(stdout, prog, "standard output", 1)) status = status ? status : 1;
  return status;
}

int attn_main(int argc, char **argv, const attn_lesson *L) {
  char prog[32], err[256];
  snprintf(prog, sizeof prog, "lesson-%d", L->number);
  const char *names[64];
  int n = L->n_versions < 64 ? L->n_versions : 64;
  for (int i = 0; i < n; ++i) names[i] = L->versions[i].name;
  attn_cli_spec spec = {prog, L->title, L->defaults, L->dims, L->n_dims, n, names};
  attn_options o;
  int rc = attn_cli_parse(argc, argv, &spec, &o, err, sizeof err, stdout);
  if (rc == ATTN_CLI_HELP) return close_checked(stdout, prog, "standard output", 1);
  if (rc != ATTN_CLI_OK) {
    fprintf(stderr, "%s: %s\n", prog, err);
    return 2;
  }
  FILE *csv = NULL;
  if (o.csv_path && !(csv = fopen(o.csv_path, "w"))) {
    fprintf(stderr, "%s: --csv: cannot write '%s': %s\n", prog, o.csv_path, strerror(errno));
    return 2;
  }
  if (csv) csv_header(csv);

  printf("lesson %d: %s\n", L->number, L->title);
  printf("problem  ");
  attn_problem_print(&o.problem, stdout);
  printf("  seed %llu\n", (unsigned long long)o.seed);

  int status = 0;
  if (L->cpu_part && L->cpu_part(&o) != 0) status = 1;
  const char *cpu_ran = L->cpu_part ? "the CPU part above ran" : "this lesson has no CPU part";

  attn_device dev;
  char why[320];
  if (o.cpu_only) {
    printf("--cpu: %s; the GPU part was not run\n", cpu_ran);
    return finish(status, csv, o.csv_path, 0, prog);
  }
  if (attn_device_query(&dev, why, sizeof why) != 0) {
    printf("%s\n%s; the GPU part was not run (exit code %d: %s)\n", why, cpu_ran, status,
           status ? "the CPU part failed" : "nothing failed");
    return finish(status, csv, o.csv_path, 0, prog);
  }
  attn_device_print(&dev, stdout);
  if (L->only_sm > 0 && attn_device_sm(&dev) != L->only_sm) {
    printf(
        "lesson %d needs an sm_%d GPU: its kernels are built for sm_%da, which runs on no other "
        "architecture; this GPU (%s) is sm_%d\n%s; the GPU part was not run (exit code %d: %s)\n",
        L->number, L->only_sm, L->only_sm, dev.name, attn_device_sm(&dev), cpu_ran, status,
        status ? "the CPU part failed" : "nothing failed");
    return finish(status, csv, o.csv_path, 0, prog);
  }

  size_t dev_free = 0, dev_total = 0;
  if (cudaMemGetInfo(&dev_free, &dev_total) != cudaSuccess) {
    (void)cudaGetLastError();
    dev_free = 0;
  }
  if (attn_fits(L, &o, (double)dev_free, attn_host_available_bytes(), why, sizeof why) != 0) {
    fprintf(stderr, "%s: %s\n", prog, why);
    finish(status, csv, o.csv_path, 0, prog);
    return 2;
  }

  attn_result *results = (attn_result *)calloc((size_t)L->n_versions, sizeof(attn_result));
  if (!results) {
    fprintf(stderr, "%s: out of memory\n", prog);
    finish(status, csv, o.csv_path, 0, prog);
    return 1;
  }
  int failures = attn_run_versions(L, &o, &dev, results, stdout);
  if (failures) status = 1;
  if (L->report && L->report(&o, &dev, results, L->n_versions) != 0) status = 1;
  int rows = 0;
  if (csv) rows = csv_rows(csv, L, &o, &dev, results);
  printf("\n%s: %d version(s) failed or hit an error\n", failures ? "FAILED" : "ok", failures);
  free(results);
  return finish(status, csv, o.csv_path, rows, prog);
}
