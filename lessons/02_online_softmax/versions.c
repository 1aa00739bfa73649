/* Lesson 02's table: seven row-softmax versions (ATTN_CUSTOM: they bring their own matrix, launch
 * and check) and the attention form (ATTN_DENSE: the harness checks it like any attention kernel).
 *
 * The softmax matrix is the attention problem's score matrix: rows = batch * heads * seq (one per
 * query row), cols = kv-seq (one per key), fp32; --causal writes -inf over hidden keys. Every
 * version gets its own input and output on the GPU; the check copies the whole output back, scans
 * it for unwritten and non-finite values, and compares sampled rows with a double-precision
 * reference (every row for small matrices).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "online_softmax.h"

/* The softmax versions' launchers and data; their names and summaries are in kVersions below. */
const l02_softmax_variant l02_softmax_variants[L02_N_VARIANTS] = {
    {.launch = l02_softmax_v1_naive, .data = L02_DATA_SMALL, .reads = 2},
    {.launch = l02_softmax_v2_safe_thread, .data = L02_DATA_SCORES, .reads = 3},
    {.launch = l02_softmax_v3_safe_warp, .data = L02_DATA_SCORES, .reads = 3},
    {.launch = l02_softmax_v4_safe_block, .data = L02_DATA_SCORES, .reads = 3},
    {.launch = l02_softmax_v5_online_block, .data = L02_DATA_SCORES, .reads = 2},
    {.launch = l02_softmax_v6_online_regs,
     .supports = l02_softmax_v6_supports,
     .data = L02_DATA_SCORES,
     .reads = 1},
    {.launch = l02_softmax_v7_regs_smem,
     .supports = l02_softmax_v7_supports,
     .data = L02_DATA_SCORES,
     .reads = 1},
};

/* What one softmax version holds between setup and teardown. */
typedef struct softmax_state {
  const l02_softmax_variant *var;
  size_t rows;
  int cols;
  uint64_t seed;
  float *hx;      /* host input, kept for the check */
  float *dx, *dy; /* device input and output */
} softmax_state;

const char *l02_softmax_variant_supports(const l02_softmax_variant *var, const attn_problem *p) {
  const char *why = l02_softmax_shape_supports(p);
  if (!why && var->supports) why = var->supports(l02_softmax_cols(p));
  return why;
}

static void softmax_teardown(void *state) {
  softmax_state *s = (softmax_state *)state;
  if (!s) return;
  free(s->hx);
  cudaFree(s->dx);
  cudaFree(s->dy);
  free(s);
}

/* Every softmax version's setup: ctx->user is the version's entry of l02_softmax_variants. A shape
 * the variant cannot run is skipped here, with the reason l02_softmax_variant_supports() gives. */
static cudaError_t softmax_setup(void **state, const attn_setup_ctx *ctx, const char **skip) {
  static char why[192]; /* a skip reason must outlive the call */
  *state = NULL;
  const attn_problem *p = ctx->problem;
  const l02_softmax_variant *var = (const l02_softmax_variant *)ctx->user;
  const char *unsupported = l02_softmax_variant_supports(var, p);
  if (unsupported) {
    *skip = unsupported;
    return cudaSuccess;
  }
  const size_t rows = l02_softmax_rows(p);
  const int cols = l02_softmax_cols(p);
  const size_t bytes = rows * (size_t)cols * sizeof(float);

  if (var->launch == l02_softmax_v7_regs_smem) {
    const size_t smem = (size_t)L02_SMEM_VECS * l02_softmax_v7_threads(cols) * 16;
    if (smem > ctx->device->smem_per_block_optin) {
      snprintf(why, sizeof why, "needs %zu KiB of shared memory per block, this GPU allows %zu KiB",
               smem / 1024, ctx->device->smem_per_block_optin / 1024);
      *skip = why;
      return cudaSuccess;
    }
  }
  size_t free_b = 0, total_b = 0;
  ATTN_TRY(cudaMemGetInfo(&free_b, &total_b));
  if (2 * bytes + ((size_t)256 << 20) > free_b) {
    snprintf(why, sizeof why, "not enough device memory for input and output (2 x %.2f GB)",
             bytes / 1e9);
    *skip = why;
    return cudaSuccess;
  }

  softmax_state *s = (softmax_state *)calloc(1, sizeof *s);
  if (!s) return cudaErrorMemoryAllocation;
  *state = s;
  s->var = var;
  s->rows = rows;
  s->cols = cols;
  s->seed = ctx->options->seed;
  s->hx = (float *)malloc(bytes ? bytes : 1);
  if (!s->hx) return cudaErrorMemoryAllocation;
  l02_softmax_fill(s->hx, rows, cols, s->var->data, s->seed);
  l02_softmax_mask_causal(s->hx, p);
  ATTN_TRY(cudaMalloc((void **)&s->dx, bytes ? bytes : 1));
  ATTN_TRY(cudaMalloc((void **)&s->dy, bytes ? bytes : 1));
  ATTN_TRY(cudaMemcpy(s->dx, s->hx, bytes, cudaMemcpyHostToDevice));
  return cudaSuccess;
}

/* A softmax version holds its input and output on the GPU, and its input plus the copied-back
 * output on the host for the check. */
static void softmax_footprint(const attn_problem *p, double *device_bytes, double *host_bytes) {
  const double bytes = (double)l02_softmax_rows(p) * l02_softmax_cols(p) * sizeof(float);
  *device_bytes = 2.0 * bytes;
  *host_bytes = 2.0 * bytes;
}

static cudaError_t softmax_poison(void *state, cudaStream_t stream) {
  softmax_state *s = (softmax_state *)state;
  return attn_poison(s->dy, s->rows * (size_t)s->cols * sizeof(float), stream);
}

static cudaError_t softmax_launch(void *state, cudaStream_t stream) {
  softmax_state *s = (softmax_state *)state;
  return s->var->launch(s->dx, s->dy, (int)s->rows, s->cols, stream);
}

static cudaError_t softmax_check(void *state, attn_verdict *v) {
  softmax_state *s = (softmax_state *)state;
  const size_t n = s->rows * (size_t)s->cols;
  float *hy = (float *)malloc(n * sizeof(float) + 1);
  size_t n_check = 0;
  size_t *check = l02_softmax_check_rows(s->rows, s->cols, s->seed, &n_check);
  cudaError_t e = (hy && check) ? cudaSuccess : cudaErrorMemoryAllocation;
  if (e == cudaSuccess) e = cudaMemcpy(hy, s->dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) {
    attn_verdict_init(v, ATTN_F32);
    if (l02_softmax_judge(v, s->hx, hy, s->rows, s->cols, check, n_check) != 0)
      e = cudaErrorMemoryAllocation;
  }
  free(hy);
  free(check);
  return e;
}

static void softmax_work(void *state, attn_work *w) {
  softmax_state *s = (softmax_state *)state;
  memset(w, 0, sizeof *w);
  /* The harness's GB/s and % of HBM count the bytes every version must move, one read and one
   * write of the matrix, and say so on each row: the bytes a version requests (its reads in
   * l02_softmax_variants) can exceed what HBM moves in the time, because re-reads of a row may hit
   * the L2. l02_report() prints those requested bytes beside, with no % of HBM. */
  w->bytes = l02_softmax_model_bytes(1, s->rows, s->cols);
  w->peak_label = "HBM 1R+1W";
}

/* One set of callbacks serves all seven softmax versions. */
static const attn_custom kSoftmax = {.setup = softmax_setup,
                                     .poison = softmax_poison,
                                     .launch = softmax_launch,
                                     .check = softmax_check,
                                     .work = softmax_work,
                                     .teardown = softmax_teardown,
                                     .footprint = softmax_footprint};

static const attn_version kVersions[] = {
    {.name = "naive (|x|<4 data)",
     .summary = "one thread per row, exp/sum/divide, no max: right only on small scores (the table "
                "gives it x in [-4,4); the report shows it overflow)",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_F32,
     .custom = &kSoftmax,
     .user = &l02_softmax_variants[0]},
    {.name = "safe-thread",
     .summary = "one thread per row, three passes: max, sum of exp(x - max), normalise",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_F32,
     .custom = &kSoftmax,
     .user = &l02_softmax_variants[1]},
    {.name = "safe-warp",
     .summary = "one warp per row, three passes, __shfl_xor_sync reductions",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_F32,
     .custom = &kSoftmax,
     .user = &l02_softmax_variants[2]},
    {.name = "safe-block",
     .summary = "one block per row, three passes, warp shuffles then shared memory",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_F32,
     .custom = &kSoftmax,
     .user = &l02_softmax_variants[3]},
    {.name = "online-block",
     .summary = "one block per row, running (max, sum) in one pass, then normalise",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_F32,
     .custom = &kSoftmax,
     .user = &l02_softmax_variants[4]},
    {.name = "online-regs",
     .summary = "row in registers, float4 loads, one (m, l) merge: one read, one write",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_F32,
     .custom = &kSoftmax,
     .user = &l02_softmax_variants[5]},
    {.name = "online-regs+smem",
     .summary = "as online-regs, half of it in shared memory by cp.async: 2 long rows/SM",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .custom = &kSoftmax,
     .user = &l02_softmax_variants[6]},
    {.name = "attn-split-warps",
     .summary = "attention, one block per query row, keys split over 8 warps, (m, l, O) merged",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .writes_lse = 1,
     .supports = l02_attn_v8_supports,
     .launch = l02_attn_v8_decode_split},
};

_Static_assert(sizeof kVersions / sizeof kVersions[0] == L02_N_VARIANTS + 1,
               "kVersions: the softmax versions, then the attention version");

const attn_lesson l02_lesson = {
    .number = 2,
    .title =
        "online softmax and warp-shuffle reductions; softmax rows = batch*heads*seq, cols = "
        "kv-seq (default 16384 x 4096)",
    .versions = kVersions,
    .n_versions = (int)(sizeof kVersions / sizeof kVersions[0]),
    .defaults = {.batch = 1,
                 .heads = 16,
                 .kv_heads = 0, /* same as --heads */
                 .seq_q = 1024,
                 .seq_kv = 4096,
                 .dim = 64,
                 .causal = 0,
                 .block_size = 16,
                 .scale = 0.0f},
    .dims = NULL,
    .n_dims = 0,
    .cpu_part = l02_cpu_part,
    .report = l02_report,
};
