/* Lesson 09, GPU: every version through the harness (dQ, dK and dV poisoned before each run, then
 * checked against the fp64 reference) on awkward shapes: one token, 17, a tile minus one and plus
 * one, lengths that are multiples of nothing, GQA 8:1 and MQA (dK and dV summed over the group),
 * causal with q_len != kv_len both ways, rows that see no key, keys no query sees. Then version 5's
 * promise: dQ bitwise the same over runs. Under compute-sanitizer (ATTN_TEST_SANITIZER=1,
 * attn_test.h) each case runs its sanitizer-sized shape. Exits 77 (skipped) without a GPU. */
#include <string.h>

#include "attn_test.h"
#include "backward.h"

static attn_device g_dev;

/* Each case twice, in attn_test_problem()'s order (batch, heads, kv_heads, seq_q, seq_kv, dim,
 * causal): the full shape, then the sanitizer-sized one. */
static const struct {
  int full[7], small[7];
} kShapes[] = {
    /* one token, MQA */
    {{1, 4, 1, 1, 1, 64, 0}, {1, 4, 1, 1, 1, 64, 0}},
    /* one token, GQA 8:1, causal */
    {{1, 8, 1, 1, 1, 128, 1}, {1, 8, 1, 1, 1, 128, 1}},
    /* 17 tokens, GQA 8:1, causal */
    {{2, 8, 1, 17, 17, 128, 1}, {1, 8, 1, 17, 17, 128, 1}},
    /* a tile minus one */
    {{1, 4, 4, 63, 63, 64, 0}, {1, 4, 4, 63, 63, 64, 0}},
    /* a tile plus one, dim 128, causal */
    {{1, 4, 2, 65, 65, 128, 1}, {1, 4, 2, 65, 65, 128, 1}},
    /* a multiple of nothing, many tiles (sanitizer-sized: 300) */
    {{1, 2, 2, 1000, 1000, 128, 0}, {1, 2, 2, 300, 300, 128, 0}},
    {{1, 2, 2, 1000, 1000, 64, 1}, {1, 2, 2, 300, 300, 64, 1}},
    /* causal, q_len < kv_len (bottom-right), GQA 2:1 */
    {{1, 4, 2, 40, 300, 64, 1}, {1, 4, 2, 40, 300, 64, 1}},
    /* causal, q_len > kv_len: rows that see no key */
    {{1, 4, 4, 300, 70, 128, 1}, {1, 4, 4, 300, 70, 128, 1}},
    /* almost every row sees no key */
    {{1, 2, 2, 200, 1, 64, 1}, {1, 2, 2, 200, 1, 64, 1}},
    /* one query row sees every key; keys after it are seen by nobody when causal */
    {{1, 2, 2, 1, 1000, 128, 1}, {1, 2, 2, 1, 300, 128, 1}},
    /* q_len > kv_len without the mask */
    {{2, 4, 1, 129, 77, 64, 0}, {1, 4, 1, 129, 77, 64, 0}},
    /* exact multiples, GQA 4:1, MQA 8:1 at dim 128 */
    {{1, 8, 2, 256, 256, 64, 1}, {1, 4, 1, 128, 128, 64, 1}},
    {{2, 8, 1, 512, 512, 128, 0}, {1, 8, 1, 128, 128, 128, 0}},
};
/* Set by tests/lesson09/CMakeLists.txt where the build has versions 6 and 7 (sm_90a). */
#ifndef L09_HAVE_SM90A
#define L09_HAVE_SM90A 0
#endif

enum { N_SHAPES = sizeof kShapes / sizeof kShapes[0] };

START_TEST(every_version_passes_awkward_shapes) {
  attn_options o;
  memset(&o, 0, sizeof o);
  const int *x = attn_test_sanitizer_sized() ? kShapes[_i].small : kShapes[_i].full;
  o.problem = attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
  o.seed = 21 + (uint64_t)_i;
  o.iters = 1;
  o.check_only = 1;
  attn_result r[L09_VERSIONS];
  const int failed = attn_run_versions(&l09_lesson, &o, &g_dev, r, stdout);
  ck_assert_int_eq(failed, 0);
  for (int v = 0; v < L09_VERSIONS; ++v) {
    if (r[v].status == ATTN_SKIPPED) {
      /* Only for want of the hardware (sm_80 for versions 1-5, an sm_90 GPU for 6 and 7) or, for
       * 6 and 7, of their sm_90a code in a build without lesson 05 (ATTN_ARCHS_HOPPER lacks 90a).
       */
      const int sm = attn_device_sm(&g_dev);
      ck_assert_msg(v + 1 >= 6 ? sm != 90 || !L09_HAVE_SM90A : sm < 80, "%s skipped: %s",
                    r[v].version->name, r[v].note);
      continue;
    }
    ck_assert_msg(r[v].status == ATTN_PASS, "%s: %s", r[v].version->name, r[v].note);
    ck_assert_uint_gt(r[v].verdict.compared, 0);
    ck_assert_uint_eq(r[v].verdict.unwritten, 0);
  }
}
END_TEST

/* Version 5 writes dQ bitwise the same on every run, on a shape with many K/V tiles per query row
 * (where atomics would add in a different order); its check already fails on any difference, so
 * this runs it three times through the flat entry point and compares the bytes. */
START_TEST(deterministic_dq_is_bitwise_reproducible) {
  const int sq = attn_test_sanitizer_sized() ? 256 : 2048, dim = 128, heads = 4, batch = 1;
  const size_t nq = (size_t)batch * sq * heads * dim, nkv = nq;
  void *buf[8];
  const size_t bytes[8] = {nq * 2, nkv * 2, nkv * 2, nq * 2, nq * 2, nq * 2, nkv * 2, nkv * 2};
  for (int i = 0; i < 8; ++i) {
    ck_assert_int_eq(cudaMalloc(&buf[i], bytes[i]), cudaSuccess);
    ck_assert_int_eq(cudaMemset(buf[i], 0x3c + 7 * i, bytes[i]), cudaSuccess); /* finite bf16s */
  }
  float *lse;
  ck_assert_int_eq(cudaMalloc((void **)&lse, sizeof(float) * batch * heads * sq), cudaSuccess);
  ck_assert_int_eq(cudaMemset(lse, 0x40, sizeof(float) * batch * heads * sq), cudaSuccess);
  const size_t ws = l09_workspace_bytes(5, batch, heads, heads, sq, sq, dim);
  void *w;
  ck_assert_int_eq(cudaMalloc(&w, ws), cudaSuccess);
  uint16_t *first = malloc(nq * 2), *again = malloc(nq * 2);
  ck_assert_ptr_nonnull(first);
  ck_assert_ptr_nonnull(again);
  for (int run = 0; run < 3; ++run) {
    ck_assert_int_eq(
        l09_backward_flat(5, dim, buf[0], buf[1], buf[2], buf[3], buf[4], lse, buf[5], buf[6],
                          buf[7], w, ws, batch, heads, heads, sq, sq, 0, 0.f, 0),
        cudaSuccess);
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(run ? again : first, buf[5], nq * 2, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    if (run) ck_assert_int_eq(memcmp(first, again, nq * 2), 0);
  }
  free(first), free(again);
  for (int i = 0; i < 8; ++i) cudaFree(buf[i]);
  cudaFree(lse), cudaFree(w);
}
END_TEST

/* The flat entry point reports a bad shape, a bad version or a short workspace as an error, with
 * no launch. */
START_TEST(flat_entry_point_refuses_bad_input) {
  ck_assert_int_eq(l09_backward_flat(4, 128, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                     NULL, 0, 1, 4, 3, 16, 16, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  ck_assert_int_eq(l09_backward_flat(L09_VERSIONS + 1, 128, NULL, NULL, NULL, NULL, NULL, NULL,
                                     NULL, NULL, NULL, NULL, 0, 1, 4, 4, 16, 16, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  ck_assert_int_eq(l09_backward_flat(4, 96, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                     NULL, 0, 1, 4, 4, 16, 16, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  /* versions 2-5 need a workspace; 0 bytes is refused */
  ck_assert_int_eq(l09_backward_flat(3, 64, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                     NULL, 0, 1, 4, 4, 16, 16, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  Suite *s = suite_create("lesson09_gpu");
  TCase *tc = tcase_create("gpu");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, every_version_passes_awkward_shapes, 0, N_SHAPES);
  tcase_add_test(tc, deterministic_dq_is_bitwise_reproducible);
  tcase_add_test(tc, flat_entry_point_refuses_bad_input);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 1);
}
