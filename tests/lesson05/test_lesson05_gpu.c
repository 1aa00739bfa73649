/* Lesson 05, GPU: every version against the reference on awkward shapes (one token, lengths that
 * are not tile multiples, causal with q_len != kv_len both ways, head dimensions 64 and 128, GQA
 * 4:1 and 8:1), each required to PASS with its log-sum-exp checked (the FP8 version against the
 * FP8 tolerances, and at dim 128 only), outputs poisoned with NaN before each run (the harness
 * does). Under compute-sanitizer (ATTN_TEST_SANITIZER=1, attn_test.h) each case runs its
 * sanitizer-sized shape (tiles are 128 query rows x 128 keys: 400 tokens are still 4 of each, the
 * last partial), and the two grids of several waves are left out. Exits 77 (skipped) without a
 * GPU, and on a GPU other than sm_90: the kernels are built for sm_90a, which no other GPU runs. */
#include <string.h>

#include "attn_test.h"
#include "fa3_hopper.h"

static attn_device g_dev;

/* Each case twice, in attn_test_problem()'s order (batch, heads, kv_heads, seq_q, seq_kv, dim,
 * causal): the full shape, then the sanitizer-sized one; a sanitizer-sized shape of all zeros
 * leaves the case out of a sanitizer-sized run, and `left_out` says what only the full run checks.
 */
static const struct {
  int full[7], small[7];
  const char *left_out;
} kShapes[] = {
    /* seq 1, GQA 4:1 */
    {{1, 4, 1, 1, 1, 64, 0}, {1, 4, 1, 1, 1, 64, 0}, NULL},
    /* seq 1, GQA 8:1, causal */
    {{1, 8, 1, 1, 1, 128, 1}, {1, 8, 1, 1, 1, 128, 1}, NULL},
    /* seq 17, GQA 8:1 */
    {{2, 8, 1, 17, 17, 128, 1}, {2, 8, 1, 17, 17, 128, 1}, NULL},
    /* many tiles, causal */
    {{1, 2, 2, 1000, 1000, 64, 1}, {1, 2, 2, 400, 400, 64, 1}, NULL},
    /* many tiles, dim 128 */
    {{1, 2, 2, 1000, 1000, 128, 0}, {1, 2, 2, 400, 400, 128, 0}, NULL},
    /* one past a multiple of every tile */
    {{2, 4, 1, 129, 129, 128, 0}, {2, 4, 1, 129, 129, 128, 0}, NULL},
    /* the same at dim 64, causal */
    {{1, 4, 1, 129, 129, 64, 1}, {1, 4, 1, 129, 129, 64, 1}, NULL},
    /* causal, q_len < kv_len (bottom-right) */
    {{1, 4, 2, 40, 300, 64, 1}, {1, 4, 2, 40, 300, 64, 1}, NULL},
    /* causal, q_len > kv_len: rows that see no key */
    {{1, 4, 4, 300, 70, 128, 1}, {1, 4, 4, 300, 70, 128, 1}, NULL},
    /* almost every row sees no key */
    {{1, 2, 2, 200, 1, 64, 1}, {1, 2, 2, 200, 1, 64, 1}, NULL},
    /* one query row sees every key */
    {{1, 2, 2, 1, 1000, 128, 1}, {1, 2, 2, 1, 400, 128, 1}, NULL},
    /* exact multiples, GQA 4:1 */
    {{1, 8, 2, 256, 256, 64, 0}, {1, 4, 1, 256, 256, 64, 0}, NULL},
    /* exact multiples, five KV tiles: the ring wraps twice (one Q tile sanitizer-sized) */
    {{2, 2, 1, 384, 640, 128, 0}, {2, 2, 1, 128, 640, 128, 0}, NULL},
    /* causal, q_len < kv_len, nothing a multiple (sanitizer-sized: 2 Q tiles, each sees 5 KV) */
    {{1, 2, 2, 333, 777, 128, 1}, {1, 2, 2, 150, 555, 128, 1}, NULL},
    /* version 10's tiles of 256 keys: the second tile holds one key, its second half none */
    {{1, 2, 1, 300, 257, 128, 0}, {1, 2, 1, 300, 257, 128, 0}, NULL},
    /* versions 11 and 12's blocks take several items each from their counters (560 items at full
     * size, 280 sanitizer-sized, causal) */
    {{2, 70, 10, 400, 383, 128, 0}, {1, 140, 140, 200, 130, 128, 1}, NULL},
    /* more work items (Q tile, head, sequence) than an H200 has SMs: blocks in several waves
     * (version 15: several items a block, in pairs under the mask), some with no key to see
     * (causal, q_len > kv_len); the size is the case */
    {{2, 16, 4, 1100, 700, 128, 1}, {0}, "a grid of 288 blocks, some that see no key"},
    {{1, 48, 8, 700, 1300, 64, 0}, {0}, "a grid of 288 blocks"},
    /* version 9's blocks take several items each from its counter (Q tiles of 192 rows: 1152
     * items at full size, 300 sanitizer-sized), causal with q_len > kv_len at full size */
    {{3, 64, 8, 1100, 700, 64, 1}, {1, 300, 60, 70, 90, 64, 1}, NULL},
};
enum { N_SHAPES = sizeof kShapes / sizeof kShapes[0] };

START_TEST(every_version_passes_awkward_shapes) {
  attn_options o;
  memset(&o, 0, sizeof o);
  const int *x = attn_test_sanitizer_sized() ? kShapes[_i].small : kShapes[_i].full;
  if (x[0] == 0) {
    attn_test_left_out("every_version_passes_awkward_shapes", _i, kShapes[_i].left_out);
    return;
  }
  o.problem = attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
  o.seed = 11 + (uint64_t)_i;
  o.iters = 1;
  o.check_only = 1;
  attn_result r[L05_VERSIONS + 1];
  const int failed = attn_run_versions(&l05_lesson, &o, &g_dev, r, stdout);
  ck_assert_int_eq(failed, 0);
  for (int v = 0; v < l05_lesson.n_versions; ++v) {
    if (r[v].status == ATTN_SKIPPED) {
      /* The documented skips: the FP8 versions at a head dimension other than 128, versions 8
       * and 9 (three consumers) at one other than 64. */
      ck_assert_msg((r[v].version->fp8 && x[5] != 128) ||
                        ((strcmp(r[v].version->name, "three-bf16") == 0 ||
                          strcmp(r[v].version->name, "persistent-bf16") == 0) &&
                         x[5] != 64),
                    "%s skipped: %s", r[v].version->name, r[v].note);
      continue;
    }
    ck_assert_msg(r[v].status == ATTN_PASS, "%s: %s", r[v].version->name, r[v].note);
    ck_assert_uint_gt(r[v].verdict.compared, 0);
    ck_assert_uint_gt(r[v].verdict_lse.compared, 0);
    ck_assert_uint_eq(r[v].verdict.unwritten, 0);
  }
}
END_TEST

/* The flat entry point reports a bad shape as an error, with no launch. */
START_TEST(flat_entry_point_refuses_bad_shapes) {
  for (int v = 1; v <= L05_VERSIONS; ++v) {
    ck_assert_int_eq(l05_forward(v, 128, NULL, NULL, NULL, NULL, NULL, 1, 4, 3, 16, 16, 0, 0.f, 0),
                     cudaErrorInvalidValue);
    ck_assert_int_eq(l05_forward(v, 128, NULL, NULL, NULL, NULL, NULL, 1, 4, 4, 0, 16, 0, 0.f, 0),
                     cudaErrorInvalidValue);
  }
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  if (attn_device_sm(&g_dev) != l05_lesson.only_sm) {
    printf("skipped: lesson 05's kernels are built for sm_%da; this GPU is sm_%d\n",
           l05_lesson.only_sm, attn_device_sm(&g_dev));
    return ATTN_TEST_SKIP;
  }
  Suite *s = suite_create("lesson05_gpu");
  TCase *tc = tcase_create("gpu");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, every_version_passes_awkward_shapes, 0, N_SHAPES);
  tcase_add_test(tc, flat_entry_point_refuses_bad_shapes);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 1);
}
