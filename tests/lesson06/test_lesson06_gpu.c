/* Lesson 06, GPU: every version through the harness (outputs poisoned, O and the log-sum-exp
 * checked against the reference) on awkward shapes: one key, lengths that are multiples of
 * nothing, GQA 8:1 and MQA, causal with 2 to 8 query rows, rows that see no key, 131072 keys,
 * groups of 9, 32 and 256 rows (one, two and sixteen row tiles of versions 3-4). Then versions 2-5
 * with forced chunk counts against version 1, so empty chunks are exercised whatever the SM
 * count. Under compute-sanitizer (ATTN_TEST_SANITIZER=1, attn_test.h) each case runs its
 * sanitizer-sized shape: a few hundred keys, enough for 2 or more chunks of at least 256
 * (split_plan.h), where the case is about the split (2305 keys, the most chunks) the length it
 * needs; the 131072-key shapes are left out. Exits 77 (skipped) without a GPU. */
#include <math.h>
#include <string.h>

#include "attn_test.h"
#include "flash_decoding.h"

static attn_device g_dev;

/* Each case twice, in attn_test_problem()'s order (batch, heads, kv_heads, seq_q, seq_kv, dim,
 * causal): the full shape, then the sanitizer-sized one; a sanitizer-sized shape of all zeros
 * leaves the case out of a sanitizer-sized run, and `left_out` says what only the full run checks.
 */
static const struct {
  int full[7], small[7];
  const char *left_out;
} kShapes[] = {
    /* one key, MQA */
    {{1, 4, 1, 1, 1, 64, 0}, {1, 4, 1, 1, 1, 64, 0}, NULL},
    /* one key, GQA 8:1, causal */
    {{1, 8, 1, 1, 1, 128, 1}, {1, 8, 1, 1, 1, 128, 1}, NULL},
    /* 17 keys, GQA 8:1 */
    {{2, 8, 1, 1, 17, 128, 0}, {2, 8, 1, 1, 17, 128, 0}, NULL},
    /* 4 chunks of 64 minus one key */
    {{1, 4, 4, 1, 255, 64, 0}, {1, 4, 4, 1, 255, 64, 0}, NULL},
    /* a multiple of nothing (sanitizer-sized: 2 chunks) */
    {{1, 2, 2, 1, 1237, 128, 0}, {1, 2, 2, 1, 613, 128, 0}, NULL},
    /* MQA */
    {{1, 8, 1, 1, 300, 64, 0}, {1, 8, 1, 1, 300, 64, 0}, NULL},
    /* causal, seq_q 4, kv 37 */
    {{1, 8, 2, 4, 37, 128, 1}, {1, 8, 2, 4, 37, 128, 1}, NULL},
    /* seq_q 8, causal */
    {{1, 4, 2, 8, 1000, 64, 1}, {1, 4, 2, 8, 1000, 64, 1}, NULL},
    /* causal, seq_q > seq_kv: rows that see no key */
    {{1, 2, 1, 8, 5, 128, 1}, {1, 2, 1, 8, 5, 128, 1}, NULL},
    /* 9 chunks would round to 320 keys: the rule takes 8 */
    {{1, 4, 1, 1, 2305, 128, 0}, {1, 4, 1, 1, 2305, 128, 0}, NULL},
    /* the lesson's default shape (sanitizer-sized: GQA 4:1 on one KV head, the most chunks the
     * rule cuts, 128 of 256 keys) */
    {{1, 32, 8, 1, 32768, 128, 0}, {1, 4, 1, 1, 32768, 128, 0}, NULL},
    /* 131072 keys */
    {{1, 32, 8, 1, 131072, 128, 0}, {0}, "131072 keys, chunks of about 4096 keys"},
    {{1, 16, 2, 2, 131072, 64, 1}, {0}, "131072 keys at dim 64, causal with 2 query rows"},
    /* 32 group rows: two row tiles of versions 3-4 */
    {{1, 8, 1, 4, 777, 128, 1}, {1, 8, 1, 4, 777, 128, 1}, NULL},
    /* groups of 3 heads x 3 tokens: 9 of 16 tile rows */
    {{2, 12, 4, 3, 1500, 128, 1}, {2, 6, 2, 3, 600, 128, 1}, NULL},
    /* batch 3 */
    {{3, 32, 8, 1, 8192, 64, 0}, {3, 8, 2, 1, 700, 64, 0}, NULL},
    /* MQA, 256 group rows: 16 row tiles */
    {{1, 32, 1, 8, 4099, 64, 1}, {1, 32, 1, 8, 517, 64, 1}, NULL},
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
  o.seed = 21 + (uint64_t)_i;
  o.iters = 1;
  o.check_only = 1;
  attn_result r[L06_VERSIONS];
  int failed = attn_run_versions(&l06_lesson, &o, &g_dev, r, stdout);
  ck_assert_int_eq(failed, 0);
  for (int v = 0; v < L06_VERSIONS; ++v) {
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

/* Lengths per sequence: version 6 runs and passes (keys past each length are NaN in memory: a
 * kernel that reads one fails), every other version is skipped with the reason. Each case twice:
 * the full one, then the sanitizer-sized one. */
static const int kLens0[] = {1, 17, 300, 4099};      /* one key, awkward ones */
static const int kLens0Small[] = {1, 17, 300, 1029}; /* 1029: 4 chunks of 256 and 5 keys */
static const int kLens1[] = {131072, 1024, 1024, 1024, 1024, 1024, 1024, 1024,
                             1024,   1024, 1024, 1024, 1024, 1024, 1024, 1024}; /* one long */
static const int kLens1Small[] = {3001, 300, 300, 300, 300, 300, 300, 300}; /* 12 chunks, 2 each */
static const int kLens2[] = {5, 2, 9, 64, 65, 3}; /* causal rows with none */
typedef struct varlen_case {
  const int *lens;
  int batch, heads, kv_heads, seq_q, dim, causal;
} varlen_case;
static const struct {
  varlen_case full, small;
} kVarlen[] = {
    {{kLens0, 4, 8, 2, 1, 128, 0}, {kLens0Small, 4, 8, 2, 1, 128, 0}},
    {{kLens0, 4, 8, 1, 4, 64, 1}, {kLens0Small, 4, 8, 1, 4, 64, 1}},
    {{kLens1, 16, 32, 8, 1, 128, 0}, {kLens1Small, 8, 8, 2, 1, 128, 0}},
    {{kLens2, 6, 4, 2, 8, 128, 1}, {kLens2, 6, 4, 2, 8, 128, 1}},
};
enum { N_VARLEN = sizeof kVarlen / sizeof kVarlen[0] };

START_TEST(varlen_passes_and_others_skip) {
  attn_options o;
  memset(&o, 0, sizeof o);
  const varlen_case *c = attn_test_sanitizer_sized() ? &kVarlen[_i].small : &kVarlen[_i].full;
  int longest = 0;
  for (int b = 0; b < c->batch; ++b) longest = c->lens[b] > longest ? c->lens[b] : longest;
  o.problem =
      attn_test_problem(c->batch, c->heads, c->kv_heads, c->seq_q, longest, c->dim, c->causal);
  o.problem.kv_lens = c->lens;
  o.seed = 40 + (uint64_t)_i;
  o.iters = 2; /* the second call runs on the counters the first left behind */
  o.warmup = 1;
  attn_result r[L06_VERSIONS];
  ck_assert_int_eq(attn_run_versions(&l06_lesson, &o, &g_dev, r, stdout), 0);
  if (attn_device_sm(&g_dev) < 80) return;
  for (int v = 0; v < L06_VERSIONS - 1; ++v)
    ck_assert_msg(r[v].status == ATTN_SKIPPED, "%s ran with lengths", r[v].version->name);
  const attn_result *x = &r[L06_VERSIONS - 1];
  ck_assert_msg(x->status == ATTN_PASS, "%s: %s", x->version->name, x->note);
  ck_assert_uint_gt(x->verdict.compared, 0);
  ck_assert_uint_eq(x->verdict.unwritten, 0);
  ck_assert_uint_eq(x->verdict.nonfinite, 0);
}
END_TEST

/* Versions 2-5 with 1, 3, 16 and 128 chunks (most of them empty for 300 keys) agree with version 1:
 * the same bf16 O within two bf16 steps (plus 1e-3), the same log-sum-exp, and no NaN anywhere. */
START_TEST(forced_splits_match_one_block) {
  if (attn_device_sm(&g_dev) < 80) return;
  const int batch = 1, heads = 8, kv_heads = 2, seq_q = 4, seq_kv = 300, dim = 64;
  const size_t nq = (size_t)batch * seq_q * heads * dim,
               nkv = (size_t)batch * seq_kv * kv_heads * dim;
  const size_t rows = (size_t)batch * heads * seq_q;
  uint16_t *hq = malloc(2 * nq), *hkv = malloc(2 * nkv), *o1 = malloc(2 * nq), *o2 = malloc(2 * nq);
  float l1[32], l2[32];
  ck_assert(hq && hkv && o1 && o2);
  for (size_t e = 0; e < nq; ++e) hq[e] = attn_f32_to_bf16(sinf(0.7f * (float)e));
  for (size_t e = 0; e < nkv; ++e) hkv[e] = attn_f32_to_bf16(cosf(0.3f * (float)e));
  void *dq, *dkv, *d_o;
  float *dlse, *ws;
  const size_t ws_bytes =
      l06_counter_bytes(64) + l06_split_workspace_bytes(L06_MAX_SPLITS, rows, dim);
  ATTN_CHECK(cudaMalloc(&dq, 2 * nq));
  ATTN_CHECK(cudaMalloc(&dkv, 2 * nkv));
  ATTN_CHECK(cudaMalloc(&d_o, 2 * nq));
  ATTN_CHECK(cudaMalloc((void **)&dlse, sizeof(float) * rows));
  ATTN_CHECK(cudaMalloc((void **)&ws, ws_bytes));
  ATTN_CHECK(cudaMemcpy(dq, hq, 2 * nq, cudaMemcpyHostToDevice));
  ATTN_CHECK(cudaMemcpy(dkv, hkv, 2 * nkv, cudaMemcpyHostToDevice));
  for (int causal = 0; causal <= 1; ++causal) {
    ck_assert_int_eq(l06_one_block_d64(dq, dkv, dkv, d_o, dlse, batch, heads, kv_heads, seq_q,
                                       seq_kv, causal, 0.125f, 0),
                     cudaSuccess);
    ATTN_CHECK(cudaMemcpy(o1, d_o, 2 * nq, cudaMemcpyDeviceToHost));
    ATTN_CHECK(cudaMemcpy(l1, dlse, sizeof(float) * rows, cudaMemcpyDeviceToHost));
    const int splits[4] = {1, 3, 16, L06_MAX_SPLITS};
    const l06_split_fn fns[4] = {l06_split_kv_d64, l06_gqa_group_d64, l06_pipeline_d64,
                                 l06_one_launch_d64};
    for (int t = 0; t < 16; ++t) {
      /* version 5's counters start at 0; the versions before it wrote partial states there */
      if (t == 12) ATTN_CHECK(cudaMemset(ws, 0, ws_bytes));
      ATTN_CHECK(cudaMemset(d_o, 0xff, 2 * nq)); /* NaN in bf16: every element must be written */
      ATTN_CHECK(cudaMemset(dlse, 0xff, sizeof(float) * rows));
      ck_assert_int_eq(fns[t / 4](dq, dkv, dkv, d_o, dlse, ws, ws_bytes, splits[t % 4], batch,
                                  heads, kv_heads, seq_q, seq_kv, causal, 0.125f, 0),
                       cudaSuccess);
      ATTN_CHECK(cudaMemcpy(o2, d_o, 2 * nq, cudaMemcpyDeviceToHost));
      ATTN_CHECK(cudaMemcpy(l2, dlse, sizeof(float) * rows, cudaMemcpyDeviceToHost));
      for (size_t e = 0; e < nq; ++e) {
        const float a = attn_bf16_to_f32(o1[e]), b = attn_bf16_to_f32(o2[e]);
        ck_assert_msg(isfinite(b) && fabsf(a - b) <= ldexpf(fabsf(a), -6) + 1e-3f,
                      "version %d splits %d causal %d: O[%zu] %g vs %g", 2 + t / 4, splits[t % 4],
                      causal, e, b, a);
      }
      for (size_t e = 0; e < rows; ++e)
        ck_assert_msg(isfinite(l2[e]) && fabsf(l1[e] - l2[e]) < 1e-4f * (1.0f + fabsf(l1[e])),
                      "version %d splits %d causal %d: lse[%zu] %g vs %g", 2 + t / 4, splits[t % 4],
                      causal, e, l2[e], l1[e]);
    }
  }
  ATTN_CHECK(cudaFree(dq));
  ATTN_CHECK(cudaFree(dkv));
  ATTN_CHECK(cudaFree(d_o));
  ATTN_CHECK(cudaFree(dlse));
  ATTN_CHECK(cudaFree(ws));
  free(hq), free(hkv), free(o1), free(o2);
}
END_TEST

/* The flat entry point (what a ctypes caller uses) reports a bad shape or a missing workspace as
 * an error, with no launch. */
START_TEST(flat_entry_point_refuses_bad_shapes) {
  ck_assert_int_eq(
      l06_forward(2, 128, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1, 4, 3, 1, 16, 0, 0.f, 0),
      cudaErrorInvalidValue);
  ck_assert_int_eq(
      l06_forward(2, 128, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1, 4, 4, 1, 4096, 0, 0.f, 0),
      cudaErrorInvalidValue);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  Suite *s = suite_create("lesson06_gpu");
  TCase *tc = tcase_create("gpu");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, every_version_passes_awkward_shapes, 0, N_SHAPES);
  tcase_add_test(tc, forced_splits_match_one_block);
  tcase_add_loop_test(tc, varlen_passes_and_others_skip, 0, N_VARLEN);
  tcase_add_test(tc, flat_entry_point_refuses_bad_shapes);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 1);
}
