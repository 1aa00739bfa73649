/* Lesson 08, CPU: the ring's CPU model (shards, ring order, pair kinds, merges) against the
 * double-precision reference on awkward shapes and ring sizes, in both layouts, with and without
 * the mask; the merge order; the pair counters and the balance on hand-worked cases; the shapes
 * the model refuses. No GPU needed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_test.h"
#include "ring_attention.h"

/* batch, heads, kv_heads, seq, dim, ranks. Every shape runs in both layouts, causal and not. */
static const int kShapes[][6] = {
    {1, 4, 4, 1, 64, 1},    /* one token, one rank */
    {2, 4, 2, 17, 128, 1},  /* one rank: the plain softmax, zig-zag as two chunks */
    {1, 4, 4, 1, 64, 2},    /* one token on two ranks: every other chunk is empty */
    {2, 8, 1, 17, 64, 2},   /* GQA 8:1, 17 tokens: chunks of 9 and 8 (zig-zag 5, 4, 4, 4) */
    {1, 4, 1, 100, 128, 3}, /* MQA, 100 = 3 x 33 + 1 = 6 x 16 + 4 */
    {1, 8, 2, 17, 128, 4},  /* GQA 4:1, 17 = 4 x 4 + 1 = 8 x 2 + 1 */
    {2, 4, 4, 100, 64, 4},  /* 100 = 4 x 25: contiguous even, zig-zag 13 and 12 */
    {1, 2, 2, 5, 64, 4},    /* 5 < 2p: three zig-zag chunks hold no token */
    {1, 2, 1, 3, 128, 4},   /* 3 < p: a contiguous rank with no token at all */
    {1, 8, 1, 100, 64, 8},  /* GQA 8:1 on the most ranks: chunks of 13 and 12, 7 and 6 */
    {1, 4, 2, 17, 128, 8},  /* 17 on 8 ranks: zig-zag chunks of 2 and 1 */
    {1, 2, 2, 7, 64, 8},    /* 7 < p: an empty rank in both layouts */
};
enum { N_SHAPES = sizeof kShapes / sizeof kShapes[0] };

static const char *kLayoutName[2] = {"contiguous", "zig-zag"};

/* Shape _i / 4, layout _i % 2, causal (_i / 2) % 2: the model against the reference. */
START_TEST(cpu_model_matches_reference) {
  const int *x = kShapes[_i / 4];
  const l08_layout layout = (l08_layout)(_i % 2);
  const int causal = (_i / 2) % 2;
  const attn_problem p = attn_test_problem(x[0], x[1], x[2], x[3], x[3], x[4], causal);
  l08_cpu_ring ring = {.ranks = x[5], .layout = layout, .reverse_merge = 0};
  attn_verdict vo, vl;
  const int rc = attn_cpu_check(&p, 11 + (uint64_t)_i, l08_cpu_attention, &ring, &vo, &vl);
  ck_assert_msg(rc >= 0, "shape %d (%s, causal %d): the model did not run", _i / 4,
                kLayoutName[layout], causal);
  ck_assert_msg(
      vo.pass, "shape %d (%s, causal %d) O: max_abs %g rel_l2 %g unwritten %zu nonfinite %zu",
      _i / 4, kLayoutName[layout], causal, vo.max_abs, vo.rel_l2, vo.unwritten, vo.nonfinite);
  ck_assert_msg(vl.pass, "shape %d (%s, causal %d) LSE: max_abs %g nonfinite %zu", _i / 4,
                kLayoutName[layout], causal, vl.max_abs, vl.nonfinite);
  /* every (rank, step, query chunk, key chunk) counted once */
  const long chunks = layout == L08_ZIGZAG ? 2 : 1;
  ck_assert_int_eq(ring.pairs_full + ring.pairs_diag + ring.pairs_skip,
                   (long)x[5] * x[5] * chunks * chunks);
  if (!causal) ck_assert_int_eq(ring.pairs_diag, 0);
}
END_TEST

/* Inputs of one problem in the harness's layouts, and room for two outputs. */
typedef struct io {
  float *q, *k, *v, *o[2], *lse[2];
} io;

static void io_alloc(io *b, const attn_problem *p, uint64_t seed) {
  const size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p), rows = attn_rows(p);
  b->q = malloc(sizeof(float) * nq);
  b->k = malloc(sizeof(float) * nkv);
  b->v = malloc(sizeof(float) * nkv);
  for (int t = 0; t < 2; ++t) {
    b->o[t] = malloc(sizeof(float) * nq);
    b->lse[t] = malloc(sizeof(float) * rows);
    ck_assert(b->o[t] && b->lse[t]);
  }
  ck_assert(b->q && b->k && b->v);
  attn_fill_attention_input(b->q, nq, seed, 1);
  attn_fill_attention_input(b->k, nkv, seed, 2);
  attn_fill_attention_input(b->v, nkv, seed, 3);
}

static void io_free(io *b) {
  free(b->q), free(b->k), free(b->v);
  for (int t = 0; t < 2; ++t) free(b->o[t]), free(b->lse[t]);
}

/* The merge is associative and commutative: taking the steps last to first changes the result
 * by rounding only, and the same pairs are computed. */
START_TEST(reverse_merge_changes_only_rounding) {
  const attn_problem base = attn_test_problem(1, 4, 2, 100, 100, 64, 0);
  for (int layout = L08_CONTIGUOUS; layout <= L08_ZIGZAG; ++layout)
    for (int causal = 0; causal <= 1; ++causal) {
      attn_problem p = base;
      p.causal = causal;
      io b;
      io_alloc(&b, &p, 5);
      l08_cpu_ring ring[2];
      for (int t = 0; t < 2; ++t) {
        ring[t] = (l08_cpu_ring){.ranks = 4, .layout = (l08_layout)layout, .reverse_merge = t};
        ck_assert_int_eq(l08_cpu_attention(&p, b.q, b.k, b.v, b.o[t], b.lse[t], &ring[t]), 0);
      }
      ck_assert_int_eq(ring[0].pairs_full, ring[1].pairs_full);
      ck_assert_int_eq(ring[0].pairs_diag, ring[1].pairs_diag);
      ck_assert_int_eq(ring[0].pairs_skip, ring[1].pairs_skip);
      double max_o = 0.0, max_l = 0.0;
      for (size_t e = 0; e < attn_q_elems(&p); ++e)
        max_o = fmax(max_o, fabs((double)b.o[0][e] - b.o[1][e]));
      for (size_t r = 0; r < attn_rows(&p); ++r)
        max_l = fmax(max_l, fabs((double)b.lse[0][r] - b.lse[1][r]));
      ck_assert_msg(max_o < 1e-5 && max_l < 1e-5, "%s causal %d: O differs by %g, LSE by %g",
                    kLayoutName[layout], causal, max_o, max_l);
      io_free(&b);
    }
}
END_TEST

/* The counters on cases worked by hand (chunk pairs over ranks and steps, not rows):
 *  - contiguous causal, p = 4, 100 tokens: rank r meets its own block once (diag), the r blocks
 *    before it (full) and the 3 - r after it (skip): 4 diag, 0 + 1 + 2 + 3 = 6 full, 6 skip.
 *  - zig-zag causal, p = 4, 100 tokens: step 0 is its two chunks' triangles (2 diag), back
 *    against front (full) and front against back (skip); each later step 2 full and 2 skip. Per
 *    rank 2 diag, 7 full, 7 skip; 8, 28, 28 in all.
 *  - zig-zag causal, p = 4, 5 tokens: chunks of 1, 1, 1, 1, 1, 0, 0, 0. Of the 64 pairs, 25 join
 *    two single tokens (tokens 0..4 as queries, each against tokens 0..4 as keys once): 15 with
 *    the key at or before the query (full: a one-token pair is never diag), 10 skipped; the other
 *    39 hold an empty chunk (skip).
 *  - without the mask every non-empty pair is full: contiguous p = 3 on 2 tokens leaves rank 2
 *    empty, so 2 x 2 pairs are full and the 5 that touch rank 2 skipped. */
START_TEST(pair_counters_by_hand) {
  static const struct {
    int seq, causal, ranks, layout;
    long full, diag, skip;
  } kCases[] = {
      {100, 1, 4, L08_CONTIGUOUS, 6, 4, 6}, {100, 1, 4, L08_ZIGZAG, 28, 8, 28},
      {5, 1, 4, L08_ZIGZAG, 15, 0, 49},     {2, 0, 3, L08_CONTIGUOUS, 4, 0, 5},
      {100, 0, 4, L08_ZIGZAG, 64, 0, 0},    {100, 1, 1, L08_CONTIGUOUS, 0, 1, 0},
  };
  for (size_t c = 0; c < sizeof kCases / sizeof kCases[0]; ++c) {
    /* batch 2 and 4 heads: the counters do not scale with them */
    const attn_problem p =
        attn_test_problem(2, 4, 2, kCases[c].seq, kCases[c].seq, 64, kCases[c].causal);
    l08_cpu_ring ring = {.ranks = kCases[c].ranks, .layout = (l08_layout)kCases[c].layout};
    ring.pairs_full = ring.pairs_diag = ring.pairs_skip = -7; /* reset by the model */
    attn_verdict vo, vl;
    ck_assert_int_eq(attn_cpu_check(&p, 3, l08_cpu_attention, &ring, &vo, &vl), 0);
    ck_assert_msg(ring.pairs_full == kCases[c].full && ring.pairs_diag == kCases[c].diag &&
                      ring.pairs_skip == kCases[c].skip,
                  "case %zu: full %ld diag %ld skip %ld, want %ld %ld %ld", c, ring.pairs_full,
                  ring.pairs_diag, ring.pairs_skip, kCases[c].full, kCases[c].diag, kCases[c].skip);
  }
}
END_TEST

/* 8 tokens on 4 ranks under the mask (36 pairs).
 *  - contiguous, chunks of 2: rank r does r full squares of 4 and one triangle of 3: 3, 7, 11, 15.
 *    Imbalance 15 / 9; at every step the last rank is the busiest (3 at step 0, then 4 each), so
 *    the critical path is 15 as well.
 *  - zig-zag, chunks of 1: every rank 3 at step 0 (its two tokens against themselves, its back
 *    token against its front one), then 2 per step: 9 each, perfect balance. */
START_TEST(balance_by_hand) {
  l08_balance b;
  ck_assert_int_eq(l08_balance_of(8, 4, L08_CONTIGUOUS, 1, &b), 0);
  ck_assert(b.total == 36.0 && b.max_rank == 15.0 && b.critical == 15.0);
  ck_assert(fabs(b.imbalance - 15.0 / 9.0) < 1e-12);
  ck_assert(fabs(b.ideal_speedup - 2.4) < 1e-12 && fabs(b.critical_speedup - 2.4) < 1e-12);
  ck_assert(l08_step_work(8, 4, L08_CONTIGUOUS, 1, 3, 0) == 3.0);
  ck_assert(l08_step_work(8, 4, L08_CONTIGUOUS, 1, 3, 1) == 4.0);
  ck_assert(l08_step_work(8, 4, L08_CONTIGUOUS, 1, 0, 1) == 0.0);
  ck_assert_int_eq(l08_balance_of(8, 4, L08_ZIGZAG, 1, &b), 0);
  ck_assert(b.total == 36.0 && b.max_rank == 9.0 && b.critical == 9.0);
  ck_assert(b.imbalance == 1.0 && b.ideal_speedup == 4.0 && b.critical_speedup == 4.0);
  for (int r = 0; r < 4; ++r) {
    ck_assert(l08_step_work(8, 4, L08_ZIGZAG, 1, r, 0) == 3.0);
    for (int s = 1; s < 4; ++s) ck_assert(l08_step_work(8, 4, L08_ZIGZAG, 1, r, s) == 2.0);
  }
  /* 9 tokens: zig-zag chunks 2, 1, 1, 1, 1, 1, 1, 1. Rank 0 holds tokens {0, 1} and {8}: 12 of 45
   * pairs (its triangle 3, token 8 against all 9); every other rank 11. The busiest rank changes
   * from step to step, so the critical path (18) is longer than the busiest rank. */
  ck_assert_int_eq(l08_balance_of(9, 4, L08_ZIGZAG, 1, &b), 0);
  ck_assert(b.total == 45.0 && b.max_rank == 12.0 && b.critical == 18.0);
}
END_TEST

/* What the model does not model: -2, before touching the buffers. */
START_TEST(model_refuses_what_it_does_not_model) {
  attn_problem p = attn_test_problem(1, 2, 1, 8, 8, 64, 1);
  io b;
  io_alloc(&b, &p, 9);
  l08_cpu_ring ring = {.ranks = 2, .layout = L08_ZIGZAG};
  ck_assert_int_eq(l08_cpu_attention(&p, b.q, b.k, b.v, b.o[0], b.lse[0], &ring), 0);
  p.seq_kv = 4; /* cross-attention, or a decode step: not a ring of one sequence */
  ck_assert_int_eq(l08_cpu_attention(&p, b.q, b.k, b.v, b.o[0], b.lse[0], &ring), -2);
  p.seq_kv = 8;
  const int lens[1] = {5};
  p.kv_lens = lens;
  ck_assert_int_eq(l08_cpu_attention(&p, b.q, b.k, b.v, b.o[0], b.lse[0], &ring), -2);
  p.kv_lens = NULL;
  ring.ranks = 0;
  ck_assert_int_eq(l08_cpu_attention(&p, b.q, b.k, b.v, b.o[0], b.lse[0], &ring), -2);
  ring.ranks = L08_MAX_RANKS + 1;
  ck_assert_int_eq(l08_cpu_attention(&p, b.q, b.k, b.v, b.o[0], b.lse[0], &ring), -2);
  ring.ranks = 2;
  ring.layout = (l08_layout)3;
  ck_assert_int_eq(l08_cpu_attention(&p, b.q, b.k, b.v, b.o[0], b.lse[0], &ring), -2);
  ck_assert_int_eq(l08_cpu_attention(&p, b.q, b.k, b.v, b.o[0], b.lse[0], NULL), -2);
  io_free(&b);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson08_cpu");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, cpu_model_matches_reference, 0, 4 * N_SHAPES);
  tcase_add_test(tc, reverse_merge_changes_only_rounding);
  tcase_add_test(tc, pair_counters_by_hand);
  tcase_add_test(tc, balance_by_hand);
  tcase_add_test(tc, model_refuses_what_it_does_not_model);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
