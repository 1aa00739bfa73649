/* Lesson 01, GPU suite (exits 77, skipped, without a usable GPU):
 *  - the naive attention through the harness (inputs, reference, check) on awkward shapes: one
 *    token, 17 and 1000 tokens, causal with seq_q < seq_kv and seq_q > seq_kv (rows that see no
 *    key), head dimensions 64, 128 and two that are not multiples of the tile, GQA 4:1 and MQA;
 *  - every probe at a small, awkward size (tails that are not whole vectors or tiles), each of
 *    which must PASS its own exact check, then the lesson's report on those results;
 *  - supports(): a shape whose S cannot fit is skipped with the size it needs.
 * Sanitizer-sized (ATTN_TEST_SANITIZER=1, attn_test.h): 1000 tokens become 300, the probes shrink
 * to the smallest sizes that keep their tails (the shared-memory probe, whose every load racecheck
 * tracks, makes one trip instead of seven), and each version is timed on one run, no warm-up.
 */
#include <string.h>

#include "attn_test.h"
#include "memory_hierarchy.h"

static attn_device g_dev;

static attn_options options_for(attn_problem p, int version, uint64_t seed) {
  attn_options o;
  memset(&o, 0, sizeof o);
  o.problem = p;
  o.seed = seed;
  o.iters = attn_test_sanitizer_sized() ? 1 : 2; /* sanitizer-sized: still timed, once */
  o.warmup = attn_test_sanitizer_sized() ? 0 : 1;
  o.version = version;
  return o;
}

/* Each case twice, in attn_test_problem()'s order (batch, heads, kv_heads, seq_q, seq_kv, dim,
 * causal): the full shape, then the sanitizer-sized one. */
static const struct {
  int full[7], small[7];
} kShapes[] = {
    /* one token */
    {{1, 2, 2, 1, 1, 64, 0}, {1, 2, 2, 1, 1, 64, 0}},
    /* not a tile multiple */
    {{2, 4, 4, 17, 17, 64, 0}, {2, 4, 4, 17, 17, 64, 0}},
    /* dim 128, 1000 tokens (sanitizer-sized 300: still 5 tiles of 64 each way) */
    {{1, 4, 4, 1000, 1000, 128, 0}, {1, 2, 2, 300, 300, 128, 0}},
    /* causal, square */
    {{1, 4, 4, 1000, 1000, 64, 1}, {1, 2, 2, 300, 300, 64, 1}},
    /* causal, seq_q < seq_kv (a decode-like prefix) */
    {{1, 4, 4, 17, 1000, 64, 1}, {1, 2, 2, 17, 300, 64, 1}},
    /* causal, seq_q > seq_kv: 983 rows see no key (283 sanitizer-sized) */
    {{1, 4, 4, 1000, 17, 128, 1}, {1, 2, 2, 300, 17, 128, 1}},
    /* GQA 4:1, odd lengths */
    {{2, 8, 2, 257, 513, 128, 1}, {1, 4, 1, 129, 257, 128, 1}},
    /* GQA 4:1, one query (decode) */
    {{1, 8, 2, 1, 1000, 64, 0}, {1, 8, 2, 1, 300, 64, 0}},
    /* MQA, dim below one reduction chunk */
    {{3, 6, 1, 5, 7, 24, 1}, {3, 6, 1, 5, 7, 24, 1}},
    /* dim 72: a partial reduction chunk */
    {{1, 2, 1, 33, 65, 72, 0}, {1, 2, 1, 33, 65, 72, 0}},
};
#define N_SHAPES ((int)(sizeof kShapes / sizeof kShapes[0]))

START_TEST(naive_awkward_shapes) {
  const int i = _i;
  const int *x = attn_test_sanitizer_sized() ? kShapes[i].small : kShapes[i].full;
  attn_options o = options_for(attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], x[6]),
                               L01_V_NAIVE, 1000 + (uint64_t)i);
  attn_result res[L01_N_VERSIONS];
  printf("\nnaive: ");
  attn_problem_print(&o.problem, stdout);
  printf("\n");
  const int failures = attn_run_versions(&l01_lesson, &o, &g_dev, res, stdout);
  const attn_result *r = &res[L01_V_NAIVE - 1];
  ck_assert_msg(failures == 0, "naive failed on shape %d: %s", i, r->note);
  ck_assert_msg(r->status == ATTN_PASS, "naive on shape %d: %s (%s)", i,
                attn_status_name(r->status), r->note);
  ck_assert(r->verdict.compared > 0);
  ck_assert(r->verdict_lse.compared > 0);
}
END_TEST

START_TEST(probes_small_and_report) {
  l01_probe_config c;
  memset(&c, 0, sizeof c);
  if (!attn_test_sanitizer_sized()) {
    c.link_bytes = (1 << 20) + 12;    /* 262147 floats */
    c.hbm_bytes = 3 * (1 << 20) + 20; /* read: 786437 floats = whole vectors + 1; copy: half */
    c.l2_bytes = (1 << 20) + 4 * 1024 + 12; /* a partial tile and a 3-float tail */
    c.l2_passes = 3;
    c.smem_iters = 7;
    c.fma_iters = 33;
  } else { /* the same tails on fewer whole tiles (a 16 KiB tile of the 16-byte reads) */
    c.link_bytes = 4096 + 12;               /* 1027 floats */
    c.hbm_bytes = 64 * 1024 + 20;           /* read: 16389 floats = whole vectors + 1; copy: half */
    c.l2_bytes = 64 * 1024 + 4 * 1024 + 12; /* four tiles, a partial one and a 3-float tail */
    c.l2_passes = 2;
    c.smem_iters = 1; /* the grid fills every SM whatever the size: one trip of 32 loads */
    c.fma_iters = 5;  /* one trip past the unrolled four */
  }
  l01_probe_configure(&c);
  attn_options o = options_for(attn_test_problem(1, 2, 2, 40, 40, 64, 1), 0, 7);
  attn_result res[L01_N_VERSIONS];
  const int failures = attn_run_versions(&l01_lesson, &o, &g_dev, res, stdout);
  for (int v = 0; v < L01_N_VERSIONS; ++v) {
    ck_assert_msg(res[v].status == ATTN_PASS, "version %d (%s): %s %s", v + 1,
                  l01_lesson.versions[v].name, attn_status_name(res[v].status), res[v].note);
    ck_assert_msg(res[v].timed && res[v].timing.median_ms > 0.0, "version %d was not timed", v + 1);
  }
  ck_assert_int_eq(failures, 0);
  /* The report reads these results, times the three naive kernels and must not fail. */
  ck_assert_int_eq(l01_report(&o, &g_dev, res, L01_N_VERSIONS), 0);
  l01_probe_configure(NULL);
}
END_TEST

START_TEST(naive_skips_what_cannot_fit) {
  /* S = 64 * 64 * 65536^2 * 4 bytes = 64 PiB. */
  const attn_problem huge = attn_test_problem(64, 64, 8, 65536, 65536, 64, 0);
  const char *why = l01_naive_supports(&huge);
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strstr(why, "S needs") != NULL, "reason: %s", why);
  const attn_problem small = attn_test_problem(1, 16, 16, 4096, 4096, 64, 0);
  ck_assert_ptr_null(l01_naive_supports(&small));
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  Suite *s = suite_create("lesson01-gpu");
  TCase *tc = tcase_create("gpu");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, naive_awkward_shapes, 0, N_SHAPES);
  tcase_add_test(tc, probes_small_and_report);
  tcase_add_test(tc, naive_skips_what_cannot_fit);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 1);
}
