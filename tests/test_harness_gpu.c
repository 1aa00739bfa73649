/* GPU tests of the harness itself: the device figures, the timer, and the runner driving small test
 * kernels (harness_kernels.cu): correct ones must PASS on awkward shapes, broken ones must FAIL
 * with the right diagnosis, and versions the GPU or shape cannot run must be skipped with a reason.
 * The shapes are already sanitizer-sized, so ATTN_TEST_SANITIZER (attn_test.h) changes nothing
 * here. Exits 77 (skipped) without a usable GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_test.h"
#include "harness_kernels.h"

static attn_device g_dev;

/* ---- A custom version: y = 2x + 1, checked element by element. ---- */

typedef struct affine_state {
  size_t n;
  float *x, *y, *hx, *hy;
} affine_state;

static cudaError_t affine_setup(void **state, const attn_setup_ctx *ctx, const char **skip) {
  (void)skip;
  affine_state *s = (affine_state *)calloc(1, sizeof *s);
  *state = s;
  s->n = attn_q_elems(ctx->problem);
  s->hx = (float *)malloc(sizeof(float) * s->n);
  s->hy = (float *)malloc(sizeof(float) * s->n);
  attn_fill_uniform(s->hx, s->n, -1.0f, 1.0f, ctx->options->seed, 7);
  ATTN_TRY(cudaMalloc((void **)&s->x, sizeof(float) * s->n));
  ATTN_TRY(cudaMalloc((void **)&s->y, sizeof(float) * s->n));
  ATTN_TRY(cudaMemcpy(s->x, s->hx, sizeof(float) * s->n, cudaMemcpyHostToDevice));
  return cudaSuccess;
}
static cudaError_t affine_poison(void *state, cudaStream_t st) {
  affine_state *s = (affine_state *)state;
  return attn_poison(s->y, sizeof(float) * s->n, st);
}
static cudaError_t affine_launch(void *state, cudaStream_t st) {
  affine_state *s = (affine_state *)state;
  return th_affine(s->x, s->y, s->n, st);
}
static cudaError_t affine_check(void *state, attn_verdict *v) {
  affine_state *s = (affine_state *)state;
  ATTN_TRY(cudaMemcpy(s->hy, s->y, sizeof(float) * s->n, cudaMemcpyDeviceToHost));
  attn_verdict_scan(v, ATTN_F32, s->hy, s->n, 0);
  for (size_t i = 0; i < s->n; ++i) attn_verdict_add(v, s->hy[i], 2.0 * s->hx[i] + 1.0);
  return cudaSuccess;
}
static void affine_work(void *state, attn_work *w) {
  affine_state *s = (affine_state *)state;
  w->bytes = 8.0 * s->n;
  w->flops = 2.0 * s->n;
}
static void affine_teardown(void *state) {
  affine_state *s = (affine_state *)state;
  if (!s) return;
  cudaFree(s->x);
  cudaFree(s->y);
  free(s->hx);
  free(s->hy);
  free(s);
}
static const attn_custom kAffine = {.setup = affine_setup,
                                    .poison = affine_poison,
                                    .launch = affine_launch,
                                    .check = affine_check,
                                    .work = affine_work,
                                    .teardown = affine_teardown};

static const char *dim_le_128(const attn_problem *p) {
  return p->dim > TH_MAX_DIM ? "test kernels take dim <= 128" : NULL;
}
static const char *never(const attn_problem *p) {
  (void)p;
  return "this version never runs";
}

static const attn_version kGood[] = {
    {.name = "rows-f32",
     .summary = "fp32",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .writes_lse = 1,
     .supports = dim_le_128,
     .launch = th_attention_f32},
    {.name = "rows-bf16",
     .summary = "bf16",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = dim_le_128,
     .launch = th_attention_bf16},
    {.name = "rows-paged",
     .summary = "paged",
     .kind = ATTN_PAGED,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = dim_le_128,
     .launch = th_attention_paged_bf16},
    {.name = "affine",
     .summary = "custom",
     .kind = ATTN_CUSTOM,
     .dtype = ATTN_F32,
     .custom = &kAffine},
};
static const attn_lesson kGoodLesson = {0, "harness", kGood, 4, {0}, NULL, 0, NULL, NULL, 0};

static attn_options options(attn_problem p, int check_only) {
  attn_options o;
  memset(&o, 0, sizeof o);
  o.problem = p;
  o.seed = 3;
  o.iters = 3;
  o.warmup = 1;
  o.check_only = check_only;
  return o;
}

START_TEST(device_figures_are_sane) {
  ck_assert_int_gt(g_dev.sm_count, 0);
  ck_assert(g_dev.mem_bw_gbs > 100.0);
  ck_assert_uint_gt(g_dev.l2_bytes, 0);
  ck_assert_uint_gt(g_dev.smem_per_sm_bytes, 0);
  ck_assert_int_ge(g_dev.driver_version, g_dev.runtime_version / 1000 * 1000);
  attn_device_print(&g_dev, stdout);
}
END_TEST

/* Awkward shapes: one token, not a multiple of anything, GQA, causal with q_len != kv_len both
 * ways. */
static const attn_problem kShapes[] = {
    {1, 4, 1, 1, 1, 64, 0, 16, 0.0f, NULL},    {2, 8, 2, 17, 33, 64, 1, 16, 0.0f, NULL},
    {1, 4, 4, 40, 23, 128, 1, 16, 0.0f, NULL}, {1, 2, 2, 1, 1000, 64, 0, 16, 0.0f, NULL},
    {3, 8, 1, 5, 77, 128, 0, 7, 0.0f, NULL},   {1, 4, 2, 64, 64, 64, 1, 32, 0.0f, NULL},
};
enum { N_SHAPES = sizeof kShapes / sizeof kShapes[0] };

START_TEST(good_versions_pass_on_awkward_shapes) {
  attn_options o = options(kShapes[_i], 1);
  attn_result r[4];
  int failed = attn_run_versions(&kGoodLesson, &o, &g_dev, r, stdout);
  ck_assert_int_eq(failed, 0);
  for (int v = 0; v < 4; ++v) {
    if (r[v].status == ATTN_SKIPPED) {
      /* Only the bf16 versions on a pre-sm_80 GPU may be skipped. */
      ck_assert(attn_device_sm(&g_dev) < 80 && r[v].version->min_sm == 80);
      continue;
    }
    ck_assert_msg(r[v].status == ATTN_PASS, "%s: %s", r[v].version->name, r[v].note);
    ck_assert_uint_gt(r[v].verdict.compared, 0);
    if (r[v].version->writes_lse) ck_assert_uint_gt(r[v].verdict_lse.compared, 0);
  }
}
END_TEST

START_TEST(timing_produces_rates) {
  attn_problem p = {2, 8, 8, 256, 256, 64, 0, 16, 0.0f, NULL};
  attn_options o = options(p, 0);
  attn_result r[4];
  ck_assert_int_eq(attn_run_versions(&kGoodLesson, &o, &g_dev, r, stdout), 0);
  for (int v = 0; v < 4; ++v) {
    if (r[v].status == ATTN_SKIPPED) continue;
    ck_assert(r[v].timed);
    ck_assert(r[v].timing.median_ms > 0.0);
    ck_assert(r[v].timing.min_ms <= r[v].timing.median_ms);
    ck_assert(r[v].timing.median_ms <= r[v].timing.max_ms);
    ck_assert(r[v].gbs > 0.0);
    ck_assert(r[v].tflops > 0.0);
  }
}
END_TEST

START_TEST(runner_catches_broken_versions) {
  const attn_version bad[] = {
      {.name = "skips-row",
       .summary = "leaves the last row unwritten",
       .kind = ATTN_DENSE,
       .dtype = ATTN_F32,
       .writes_lse = 1,
       .launch = th_attention_skips_last_row},
      {.name = "wrong-scale",
       .summary = "softmax scale 1% off",
       .kind = ATTN_DENSE,
       .dtype = ATTN_F32,
       .writes_lse = 1,
       .launch = th_attention_wrong_scale},
      {.name = "future-gpu",
       .summary = "needs a GPU that does not exist",
       .kind = ATTN_DENSE,
       .dtype = ATTN_F32,
       .min_sm = 1000,
       .launch = th_attention_f32},
      {.name = "unsupported",
       .summary = "supports() refuses",
       .kind = ATTN_DENSE,
       .dtype = ATTN_F32,
       .supports = never,
       .launch = th_attention_f32},
  };
  const attn_lesson lesson = {0, "broken", bad, 4, {0}, NULL, 0, NULL, NULL, 0};
  attn_problem p = {2, 4, 2, 33, 33, 64, 1, 16, 0.0f, NULL};
  attn_options o = options(p, 1);
  attn_result r[4];
  ck_assert_int_eq(attn_run_versions(&lesson, &o, &g_dev, r, stdout), 2);
  ck_assert_int_eq(r[0].status, ATTN_FAIL);
  ck_assert_uint_eq(r[0].verdict.unwritten, 64); /* exactly one row of dim 64 */
  ck_assert_int_eq(r[1].status, ATTN_FAIL);
  ck_assert_uint_eq(r[1].verdict.unwritten, 0);
  ck_assert_uint_eq(r[1].verdict.nonfinite, 0);
  ck_assert(r[1].verdict.max_abs > ATTN_TOL_F32_MAX_ABS && isfinite(r[1].verdict.max_abs));
  ck_assert_int_eq(r[2].status, ATTN_SKIPPED);
  ck_assert_ptr_nonnull(strstr(r[2].note, "needs sm_1000"));
  ck_assert_int_eq(r[3].status, ATTN_SKIPPED);
  ck_assert_str_eq(r[3].note, "this version never runs");
}
END_TEST

static cudaError_t noop_thunk(void *ctx, cudaStream_t s) {
  float *buf = (float *)ctx;
  return th_affine(buf, buf + 1024, 1024, s);
}

/* A lesson whose kernels run on one architecture only (lesson 05: sm_90a) skips every version, with
 * the reason, on any other GPU: here an architecture no GPU has. */
START_TEST(only_sm_skips_every_version_elsewhere) {
  attn_lesson other = kGoodLesson;
  other.only_sm = 10;
  attn_options o = options(kShapes[1], 1);
  attn_result r[4];
  ck_assert_int_eq(attn_run_versions(&other, &o, &g_dev, r, stdout), 0);
  for (int i = 0; i < 4; ++i) {
    ck_assert_int_eq(r[i].status, ATTN_SKIPPED);
    ck_assert_msg(strstr(r[i].note, "runs on sm_10 only") != NULL, "note: %s", r[i].note);
  }
}
END_TEST

START_TEST(timer_median_and_flush) {
  float *buf = NULL;
  ATTN_CHECK(cudaMalloc((void **)&buf, 2048 * sizeof(float)));
  attn_timing t;
  ck_assert_int_eq(attn_time(noop_thunk, buf, 0, 2, 9, 1, &t), cudaSuccess);
  ck_assert_int_eq(t.iters, 9);
  ck_assert(t.min_ms > 0.0 && t.min_ms <= t.median_ms && t.median_ms <= t.max_ms);
  ck_assert_int_eq(attn_flush_l2(0), cudaSuccess);
  ATTN_CHECK(cudaFree(buf));
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  Suite *s = suite_create("harness_gpu");
  TCase *tc = tcase_create("gpu");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, device_figures_are_sane);
  tcase_add_loop_test(tc, good_versions_pass_on_awkward_shapes, 0, N_SHAPES);
  tcase_add_test(tc, timing_produces_rates);
  tcase_add_test(tc, runner_catches_broken_versions);
  tcase_add_test(tc, only_sm_skips_every_version_elsewhere);
  tcase_add_test(tc, timer_median_and_flush);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 1);
}
