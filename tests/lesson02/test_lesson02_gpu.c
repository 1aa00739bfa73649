/* Lesson 02, GPU suite (exits 77, skipped, without a usable GPU).
 *  - every version of the lesson through the harness (attn_run_versions) on awkward shapes: rows of
 *    length 1, not a multiple of 32 or of 4, at and past the register limits, causal with fully
 *    masked rows, GQA, decode (seq 1), odd head dims. A version must PASS, or be skipped
 *    exactly when its supports function (a softmax version's: l02_softmax_variant_supports())
 *    gives a reason.
 *  - every softmax launcher directly on the tests' wild data: +-1e4 entries, -inf entries, fully
 *    masked rows.
 *  - naive softmax: right on small scores, and the documented failure on large ones.
 * The shapes are already sanitizer-sized (rows of at most 65536 floats, the longest being the
 * register limits under test), so ATTN_TEST_SANITIZER (attn_test.h) changes nothing here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_test.h"
#include "online_softmax.h"

static attn_device g_dev;

typedef struct shape {
  int batch, heads, kv_heads, seq_q, seq_kv, dim, causal;
} shape;

static const shape kShapes[] = {
    {1, 1, 1, 1, 1, 64, 0},     /* one row of one key */
    {1, 2, 1, 3, 33, 32, 0},    /* 33 columns, GQA 2:1 */
    {2, 3, 3, 5, 100, 64, 1},   /* causal, 100 columns (a multiple of 4, not of 32) */
    {1, 4, 2, 7, 1000, 128, 0}, /* 1000 columns, head dim 128 */
    {1, 2, 2, 3, 4097, 64, 0},  /* not a multiple of 4: versions 6 and 7 skip */
    {1, 1, 1, 3, 32768, 16, 0}, /* the longest row version 6 holds */
    {1, 1, 1, 2, 32772, 16, 0}, /* version 6 skips, version 7 runs */
    {1, 1, 1, 2, 65536, 8, 1},  /* the longest row version 7 holds; causal */
    {1, 2, 2, 8, 3, 64, 1},     /* seq > kv-seq, causal: the first 5 queries see no key */
    {4, 8, 2, 1, 4096, 128, 0}, /* decode, GQA 4:1 */
    {3, 32, 8, 1, 1000, 64, 1}, /* decode, causal (sees everything), odd length */
    {1, 2, 2, 1, 300, 256, 0},  /* the largest head dim version 8 holds */
    {1, 3, 1, 4, 77, 33, 0},    /* head dim 33: one lane column past a warp */
    {1, 2, 2, 2, 50, 300, 0},   /* head dim 300: version 8 skips */
};
#define N_SHAPES ((int)(sizeof kShapes / sizeof kShapes[0]))

START_TEST(every_version_on_awkward_shapes) {
  const attn_lesson *L = &l02_lesson;
  attn_result *res = (attn_result *)calloc((size_t)L->n_versions, sizeof(attn_result));
  ck_assert_ptr_nonnull(res);
  for (int s = 0; s < N_SHAPES; ++s) {
    const shape *sh = &kShapes[s];
    attn_options o;
    memset(&o, 0, sizeof o);
    o.problem = attn_test_problem(sh->batch, sh->heads, sh->kv_heads, sh->seq_q, sh->seq_kv,
                                  sh->dim, sh->causal);
    o.seed = 100 + s;
    o.iters = 1;
    o.check_only = 1;
    printf("\nshape %d: ", s);
    attn_problem_print(&o.problem, stdout);
    printf("\n");
    int failures = attn_run_versions(L, &o, &g_dev, res, stdout);
    ck_assert_int_eq(failures, 0);
    for (int i = 0; i < L->n_versions; ++i) {
      const attn_version *v = &L->versions[i];
      const l02_softmax_variant *var = (const l02_softmax_variant *)v->user; /* NULL: version 8 */
      const char *why = v->supports ? v->supports(&o.problem) : NULL;
      if (!why && var) why = l02_softmax_variant_supports(var, &o.problem);
      /* version 7 also skips when this GPU allows less shared memory per block than it needs */
      const size_t smem7 = (size_t)L02_SMEM_VECS * l02_softmax_v7_threads(sh->seq_kv) * 16;
      if (!why && var && var->launch == l02_softmax_v7_regs_smem &&
          smem7 > g_dev.smem_per_block_optin)
        why = "shared memory";
      if (why)
        ck_assert_msg(res[i].status == ATTN_SKIPPED, "shape %d: %s should skip (%s)", s, v->name,
                      why);
      else
        ck_assert_msg(res[i].status == ATTN_PASS, "shape %d: %s: %s %s", s, v->name,
                      attn_status_name(res[i].status), res[i].note);
    }
  }
  free(res);
}
END_TEST

/* Run @p var on x (rows x cols, host) and judge every row. Returns the finished verdict. */
static attn_verdict run_direct(const l02_softmax_variant *var, const float *x, int rows, int cols) {
  const size_t n = (size_t)rows * cols, bytes = n * sizeof(float);
  float *dx = NULL, *dy = NULL, *y = (float *)malloc(bytes);
  size_t *all = (size_t *)malloc(sizeof(size_t) * rows);
  ck_assert(y && all);
  for (int r = 0; r < rows; ++r) all[r] = (size_t)r;
  ATTN_CHECK(cudaMalloc((void **)&dx, bytes));
  ATTN_CHECK(cudaMalloc((void **)&dy, bytes));
  ATTN_CHECK(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice));
  ATTN_CHECK(attn_poison(dy, bytes, 0));
  ATTN_CHECK(var->launch(dx, dy, rows, cols, 0));
  ATTN_CHECK(cudaDeviceSynchronize());
  ATTN_CHECK(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost));
  attn_verdict v;
  attn_verdict_init(&v, ATTN_F32);
  ck_assert_int_eq(l02_softmax_judge(&v, x, y, rows, cols, all, rows), 0);
  attn_verdict_finish(&v);
  cudaFree(dx);
  cudaFree(dy);
  free(y);
  free(all);
  return v;
}

START_TEST(every_launcher_on_wild_data) {
  static const int lens[] = {1, 7, 32, 33, 100, 1000, 4096, 4097, 32768, 65536};
  for (int li = 0; li < (int)(sizeof lens / sizeof lens[0]); ++li) {
    const int cols = lens[li], rows = cols >= 32768 ? 5 : 11; /* rows 4 (and 9) fully masked */
    float *x = (float *)malloc(sizeof(float) * (size_t)rows * cols);
    ck_assert_ptr_nonnull(x);
    l02_softmax_fill(x, rows, cols, L02_DATA_WILD, 40 + li);
    for (int i = 1; i < L02_N_VARIANTS; ++i) { /* naive: see the next test */
      const l02_softmax_variant *var = &l02_softmax_variants[i];
      if (var->supports && var->supports(cols)) continue;
      attn_verdict v = run_direct(var, x, rows, cols);
      ck_assert_msg(
          v.pass, "%s, %d x %d wild data: max_abs %g rel_l2 %g unwritten %zu nonfinite %zu",
          l02_lesson.versions[i].name, rows, cols, v.max_abs, v.rel_l2, v.unwritten, v.nonfinite);
    }
    free(x);
  }
}
END_TEST

START_TEST(naive_overflows_as_documented) {
  enum { ROWS = 3, COLS = 200 };
  float x[ROWS * COLS];
  l02_softmax_fill(x, ROWS, COLS, L02_DATA_SMALL, 8);
  attn_verdict v = run_direct(&l02_softmax_variants[0], x, ROWS, COLS);
  ck_assert_msg(v.pass, "naive on small scores: max_abs %g", v.max_abs);

  /* row 1: one score where exp overflows; row 2: scores where every exp underflows */
  x[COLS + 17] = 100.0f;
  for (int j = 0; j < COLS; ++j) x[2 * COLS + j] = -150.0f + (float)(j % 9);
  float *dx = NULL, *dy = NULL, y[ROWS * COLS];
  ATTN_CHECK(cudaMalloc((void **)&dx, sizeof x));
  ATTN_CHECK(cudaMalloc((void **)&dy, sizeof x));
  ATTN_CHECK(cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice));
  ATTN_CHECK(l02_softmax_v1_naive(dx, dy, ROWS, COLS, 0));
  ATTN_CHECK(cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost));
  ck_assert_msg(isnan(y[COLS + 17]), "exp(100) should overflow to inf and inf / inf be NaN");
  float sum = 0.0f;
  for (int j = 0; j < COLS; ++j) sum += y[2 * COLS + j];
  ck_assert_msg(sum == 0.0f, "a row of scores below -104 should come out all zeros, sum %g", sum);
  /* the safe versions get both rows right */
  ATTN_CHECK(l02_softmax_v5_online_block(dx, dy, ROWS, COLS, 0));
  ATTN_CHECK(cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost));
  size_t rows[2] = {1, 2};
  attn_verdict_init(&v, ATTN_F32);
  l02_softmax_judge(&v, x, y, ROWS, COLS, rows, 2);
  attn_verdict_finish(&v);
  ck_assert(v.pass);
  cudaFree(dx);
  cudaFree(dy);
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  Suite *s = suite_create("lesson02 gpu");
  TCase *t = tcase_create("versions");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, every_version_on_awkward_shapes);
  tcase_add_test(t, every_launcher_on_wild_data);
  tcase_add_test(t, naive_overflows_as_documented);
  suite_add_tcase(s, t);
  return attn_test_run(s, 1);
}
