/* Lesson 08, GPU: every version through the harness (the ranks' outputs poisoned before each run,
 * then checked against the fp64 reference and against version 1's output on one GPU) with virtual
 * ranks on one GPU, on awkward shapes: one token over several ranks (ranks that hold no token),
 * more ranks than tokens, lengths that are multiples of nothing, GQA 8:1 and MQA, causal and not,
 * dims 64 and 128, 1 to 8 ranks. Then the ring run several times in a row (the buffers rotate; a
 * run must start again from each rank's own block), and refusals. Where the machine has two GPUs
 * or more, the same checks with a GPU per rank (NCCL where the build has it, else peer copies);
 * with one GPU that case says it is left out. Under compute-sanitizer (ATTN_TEST_SANITIZER=1)
 * each shape runs its sanitizer-sized version. Exits 77 (skipped) without a GPU. */
#include <math.h>
#include <string.h>

#include "attn_bf16.h"
#include "attn_rng.h"
#include "attn_test.h"
#include "ring_attention.h"

static attn_device g_dev;
static int g_gpu_count;

/* (batch, heads, kv_heads, seq, dim, causal, ranks): the full shape, then the sanitizer-sized. */
static const struct {
  int full[7], small[7];
} kShapes[] = {
    /* one token: one rank, then two (rank 1, or a zig-zag chunk, holds nothing) */
    {{1, 4, 1, 1, 64, 0, 1}, {1, 4, 1, 1, 64, 0, 1}},
    {{1, 8, 1, 1, 128, 1, 2}, {1, 8, 1, 1, 128, 1, 2}},
    /* 17 tokens over 3 ranks, GQA 8:1, causal */
    {{2, 8, 1, 17, 128, 1, 3}, {1, 8, 1, 17, 128, 1, 3}},
    /* more ranks than tokens */
    {{1, 4, 2, 7, 64, 1, 8}, {1, 4, 2, 7, 64, 1, 8}},
    /* 100 over 4, causal, dim 64 */
    {{1, 4, 4, 100, 64, 1, 4}, {1, 4, 4, 100, 64, 1, 4}},
    /* a multiple of nothing, MQA, non-causal, 3 ranks */
    {{1, 8, 1, 1000, 128, 0, 3}, {1, 8, 1, 300, 128, 0, 3}},
    /* long enough for many tiles per chunk, GQA 4:1, causal, 2 ranks */
    {{1, 8, 2, 4095, 128, 1, 2}, {1, 4, 1, 300, 128, 1, 2}},
    /* 8 ranks, zig-zag's 16 chunks of uneven length, batch 2 */
    {{2, 4, 4, 513, 64, 1, 8}, {1, 4, 4, 129, 64, 1, 8}},
    /* exact multiples, dim 128, non-causal */
    {{2, 4, 4, 1024, 128, 0, 4}, {1, 4, 4, 256, 128, 0, 4}},
};
enum { N_SHAPES = sizeof kShapes / sizeof kShapes[0] };

static attn_problem shape(int i, int *ranks) {
  const int *x = attn_test_sanitizer_sized() ? kShapes[i].small : kShapes[i].full;
  *ranks = x[6];
  return attn_test_problem(x[0], x[1], x[2], x[3], x[3], x[4], x[5]);
}

/* Every version through the harness: all four pass, none skipped. */
static void run_versions(int i, int gpus) {
  int ranks = 0;
  attn_options o;
  memset(&o, 0, sizeof o);
  o.problem = shape(i, &ranks);
  if (gpus > 1) ranks = gpus;
  l08_set_ranks(ranks, gpus);
  o.seed = 41 + (uint64_t)i;
  o.iters = 1;
  o.check_only = 1;
  attn_result r[L08_VERSIONS];
  const int failed = attn_run_versions(&l08_lesson, &o, &g_dev, r, stdout);
  ck_assert_int_eq(failed, 0);
  for (int v = 0; v < L08_VERSIONS; ++v)
    ck_assert_msg(r[v].status == ATTN_PASS, "shape %d, %d ranks on %d GPU(s), version %d: %s (%s)",
                  i, ranks, gpus, v + 1, attn_status_name(r[v].status), r[v].note);
}

START_TEST(every_version_passes_with_virtual_ranks) {
  run_versions(_i, 1);
}
END_TEST

START_TEST(every_version_passes_with_a_gpu_per_rank) {
  const int gpus = g_gpu_count < 4 ? g_gpu_count : 4;
  run_versions(_i, gpus);
}
END_TEST

/* The ring run three times after one poisoning, then compared with the forward kernel on the whole
 * problem, element by element, for every schedule and layout: a run must not depend on where the
 * last one left the rotating buffers. */
START_TEST(repeated_runs_agree_with_one_gpu) {
  const int full[] = {2, 8, 2, 600, 128, 1}, small[] = {1, 4, 2, 200, 64, 1};
  const int *x = attn_test_sanitizer_sized() ? small : full;
  const attn_problem p = attn_test_problem(x[0], x[1], x[2], x[3], x[3], x[4], x[5]);
  const size_t nq = attn_q_elems(&p), nkv = attn_kv_elems(&p), rows = attn_rows(&p);
  float *f = malloc((nq > nkv ? nq : nkv) * 4);
  uint16_t *q = malloc(nq * 2), *k = malloc(nkv * 2), *v = malloc(nkv * 2);
  uint16_t *o1 = malloc(nq * 2), *o = malloc(nq * 2);
  float *lse1 = malloc(rows * 4), *lse = malloc(rows * 4);
  ck_assert(f && q && k && v && o1 && o && lse1 && lse);
  attn_fill_attention_input(f, nq, 5, 1);
  attn_f32_to_bf16_array(f, q, nq);
  attn_fill_attention_input(f, nkv, 5, 2);
  attn_f32_to_bf16_array(f, k, nkv);
  attn_fill_attention_input(f, nkv, 5, 3);
  attn_f32_to_bf16_array(f, v, nkv);
  /* The forward kernel on the whole problem. */
  void *dq, *dk, *dv, *dout;
  float *dlse;
  ATTN_CHECK(cudaMalloc(&dq, nq * 2));
  ATTN_CHECK(cudaMalloc(&dk, nkv * 2));
  ATTN_CHECK(cudaMalloc(&dv, nkv * 2));
  ATTN_CHECK(cudaMalloc(&dout, nq * 2));
  ATTN_CHECK(cudaMalloc((void **)&dlse, rows * 4));
  ATTN_CHECK(cudaMemcpy(dq, q, nq * 2, cudaMemcpyHostToDevice));
  ATTN_CHECK(cudaMemcpy(dk, k, nkv * 2, cudaMemcpyHostToDevice));
  ATTN_CHECK(cudaMemcpy(dv, v, nkv * 2, cudaMemcpyHostToDevice));
  ATTN_CHECK(l08_forward(dq, dk, dv, dout, dlse, p.batch, p.heads, p.kv_heads, p.seq_q, p.seq_kv,
                         p.dim, p.causal, 0.0f, 0));
  ATTN_CHECK(cudaMemcpy(o1, dout, nq * 2, cudaMemcpyDeviceToHost));
  ATTN_CHECK(cudaMemcpy(lse1, dlse, rows * 4, cudaMemcpyDeviceToHost));
  cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dlse);
  for (int sched = 0; sched < 2; ++sched)
    for (int layout = 0; layout < 2; ++layout) {
      const l08_ring_config cfg = {.batch = p.batch,
                                   .heads = p.heads,
                                   .kv_heads = p.kv_heads,
                                   .seq = p.seq_q,
                                   .dim = p.dim,
                                   .causal = p.causal,
                                   .ranks = 3,
                                   .gpus = 1,
                                   .layout = (l08_layout)layout,
                                   .schedule = (l08_schedule)sched,
                                   .transport = L08_TRANSPORT_AUTO};
      char why[256];
      l08_ring *r = NULL;
      ck_assert_msg(l08_ring_create(&r, &cfg, why, sizeof why) == cudaSuccess, "%s", why);
      ATTN_CHECK(l08_ring_scatter(r, q, k, v));
      ATTN_CHECK(l08_ring_poison(r));
      for (int it = 0; it < 3; ++it) ATTN_CHECK(l08_ring_run(r, 0));
      ATTN_CHECK(l08_ring_gather(r, o, lse));
      attn_verdict vo, vl;
      attn_verdict_init(&vo, ATTN_BF16);
      attn_verdict_scan(&vo, ATTN_BF16, o, nq, 0);
      for (size_t i = 0; i < nq; ++i)
        attn_verdict_add(&vo, attn_bf16_to_f32(o[i]), attn_bf16_to_f32(o1[i]));
      attn_verdict_finish(&vo);
      attn_verdict_init_lse(&vl, ATTN_BF16);
      attn_verdict_scan(&vl, ATTN_F32, lse, rows, 1);
      for (size_t i = 0; i < rows; ++i) attn_verdict_add(&vl, lse[i], lse1[i]);
      attn_verdict_finish(&vl);
      printf("3 runs, schedule %d, layout %d: O ", sched, layout);
      attn_verdict_print(&vo, stdout);
      printf("\n");
      ck_assert_msg(vo.pass && vl.pass, "schedule %d layout %d: O max_abs %g, lse max_abs %g",
                    sched, layout, vo.max_abs, vl.max_abs);
      /* Every step of every rank left a stamp; the transfers only between steps. */
      for (int rank = 0; rank < 3; ++rank)
        for (int st = 0; st < 3; ++st) {
          const l08_step_times t = l08_ring_step_times(r, rank, st);
          ck_assert(t.compute_start >= 0.0f && t.compute_end >= t.compute_start);
          ck_assert(st == 2 ? t.exchange_start < 0.0f : t.exchange_end >= t.exchange_start);
        }
      float ms = 0.0f;
      ATTN_CHECK(l08_ring_time_exchange(r, 3, &ms));
      ck_assert(ms >= 0.0f);
      l08_ring_destroy(r);
    }
  free(f), free(q), free(k), free(v), free(o1), free(o), free(lse1), free(lse);
}
END_TEST

/* Configurations the ring refuses, each with a line saying why. */
START_TEST(refusals_say_why) {
  const l08_ring_config good = {.batch = 1,
                                .heads = 4,
                                .kv_heads = 2,
                                .seq = 64,
                                .dim = 64,
                                .ranks = 2,
                                .gpus = 1,
                                .transport = L08_TRANSPORT_AUTO};
  l08_ring_config c[5];
  for (int i = 0; i < 5; ++i) c[i] = good;
  c[0].ranks = 9;
  c[1].gpus = 3;
  c[2].dim = 96;
  c[3].kv_heads = 3;
  c[4].transport = L08_TRANSPORT_NCCL; /* two ranks on one GPU: NCCL cannot */
  for (int i = 0; i < 5; ++i) {
    char why[256] = "";
    l08_ring *r = NULL;
    ck_assert_int_eq(l08_ring_create(&r, &c[i], why, sizeof why), cudaErrorInvalidValue);
    ck_assert_ptr_null(r);
    ck_assert_msg(strlen(why) > 10, "case %d: no reason given", i);
    printf("refused: %s\n", why);
  }
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  ATTN_CHECK(cudaGetDeviceCount(&g_gpu_count));
  printf("GPUs: %d; NCCL in this build: %s; forward kernel: %s\n", g_gpu_count,
         l08_have_nccl() ? "yes" : "no", l08_kernel_name(g_dev.id, 128));
  Suite *s = suite_create("lesson08_gpu");
  TCase *tc = tcase_create("ring");
  tcase_set_timeout(tc, 900);
  tcase_add_loop_test(tc, every_version_passes_with_virtual_ranks, 0, N_SHAPES);
  if (g_gpu_count >= 2)
    tcase_add_loop_test(tc, every_version_passes_with_a_gpu_per_rank, 0, N_SHAPES);
  else
    printf("one GPU: every_version_passes_with_a_gpu_per_rank left out: it needs 2 GPUs or more\n");
  tcase_add_test(tc, repeated_runs_agree_with_one_gpu);
  tcase_add_test(tc, refusals_say_why);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 1);
}
