/* Lesson 04, GPU: every version against the reference on awkward shapes (one token, lengths that
 * are not tile multiples, causal with q_len != kv_len both ways, head dimensions 64 and 128, GQA
 * 4:1 and 8:1), each required to PASS with its log-sum-exp checked. Under compute-sanitizer
 * (ATTN_TEST_SANITIZER=1, attn_test.h) each case runs its sanitizer-sized shape: 300 tokens instead
 * of 1000 are still 3 query tiles of 128 and 5 key tiles of 64, each with a partial last one.
 * Exits 77 (skipped) without a GPU. */
#include <string.h>

#include "attn_test.h"
#include "fa2_warps.h"

static attn_device g_dev;

/* Each case twice, in attn_test_problem()'s order (batch, heads, kv_heads, seq_q, seq_kv, dim,
 * causal): the full shape, then the sanitizer-sized one. */
static const struct {
  int full[7], small[7];
} kShapes[] = {
    /* seq 1, GQA 4:1 */
    {{1, 4, 1, 1, 1, 64, 0}, {1, 4, 1, 1, 1, 64, 0}},
    /* seq 1, GQA 8:1, causal */
    {{1, 8, 1, 1, 1, 128, 1}, {1, 8, 1, 1, 1, 128, 1}},
    /* seq 17, GQA 8:1 */
    {{2, 8, 1, 17, 17, 128, 1}, {2, 8, 1, 17, 17, 128, 1}},
    /* seq 1000 (sanitizer-sized 300): many tiles, causal */
    {{1, 2, 2, 1000, 1000, 64, 1}, {1, 2, 2, 300, 300, 64, 1}},
    /* many tiles, dim 128 */
    {{1, 2, 2, 1000, 1000, 128, 0}, {1, 2, 2, 300, 300, 128, 0}},
    /* one past a multiple of every tile */
    {{2, 4, 1, 129, 129, 128, 0}, {1, 4, 1, 129, 129, 128, 0}},
    /* the same at dim 64, causal */
    {{1, 4, 1, 129, 129, 64, 1}, {1, 4, 1, 129, 129, 64, 1}},
    /* causal, q_len < kv_len (bottom-right) */
    {{1, 4, 2, 40, 300, 64, 1}, {1, 4, 2, 40, 300, 64, 1}},
    /* causal, q_len > kv_len: rows that see no key */
    {{1, 4, 4, 300, 70, 128, 1}, {1, 4, 4, 300, 70, 128, 1}},
    /* almost every row sees no key */
    {{1, 2, 2, 200, 1, 64, 1}, {1, 2, 2, 200, 1, 64, 1}},
    /* one query row sees every key */
    {{1, 2, 2, 1, 1000, 128, 1}, {1, 2, 2, 1, 300, 128, 1}},
    /* exact multiples, GQA 4:1 */
    {{1, 8, 2, 256, 256, 64, 0}, {1, 4, 1, 256, 256, 64, 0}},
};
enum { N_SHAPES = sizeof kShapes / sizeof kShapes[0] };

START_TEST(every_version_passes_awkward_shapes) {
  attn_options o;
  memset(&o, 0, sizeof o);
  const int *x = attn_test_sanitizer_sized() ? kShapes[_i].small : kShapes[_i].full;
  o.problem = attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
  o.seed = 11 + (uint64_t)_i;
  o.iters = 1;
  o.check_only = 1;
  attn_result r[L04_VERSIONS];
  int failed = attn_run_versions(&l04_lesson, &o, &g_dev, r, stdout);
  ck_assert_int_eq(failed, 0);
  for (int v = 0; v < L04_VERSIONS; ++v) {
    if (r[v].status == ATTN_SKIPPED) {
      /* The only documented skip: a GPU older than sm_80. */
      ck_assert_msg(attn_device_sm(&g_dev) < 80, "%s skipped: %s", r[v].version->name, r[v].note);
      continue;
    }
    ck_assert_msg(r[v].status == ATTN_PASS, "%s: %s", r[v].version->name, r[v].note);
    ck_assert_uint_gt(r[v].verdict.compared, 0);
    ck_assert_uint_gt(r[v].verdict_lse.compared, 0);
    ck_assert_uint_eq(r[v].verdict.unwritten, 0);
  }
}
END_TEST

/* The flat entry point (what bench/lesson04_peers.py calls through ctypes) reports a bad shape as
 * an error, with no launch. */
START_TEST(flat_entry_point_refuses_bad_shapes) {
  ck_assert_int_eq(l04_forward(6, 128, NULL, NULL, NULL, NULL, NULL, 1, 4, 3, 16, 16, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  ck_assert_int_eq(l04_forward(6, 128, NULL, NULL, NULL, NULL, NULL, 1, 4, 4, 0, 16, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  Suite *s = suite_create("lesson04_gpu");
  TCase *tc = tcase_create("gpu");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, every_version_passes_awkward_shapes, 0, N_SHAPES);
  tcase_add_test(tc, flat_entry_point_refuses_bad_shapes);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 1);
}
