/* Lesson 07, CPU: the cache manager (growth, fork, copy-on-write, every error leaving the cache as
 * it was, no block leaked or handed out twice under a random workload), the serving simulation,
 * and the CPU model of paged decode against the double-precision reference. No GPU needed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_rng.h"
#include "attn_test.h"
#include "paged_attention.h"

/* Every block is free, or held by exactly as many open sequences' tables as its count says. */
static void check_books(const l07_cache *c) {
  int *held = calloc((size_t)c->pool.num_blocks, sizeof(int));
  ck_assert_ptr_nonnull(held);
  for (int s = 0; s < c->max_seqs; ++s) {
    const int len = l07_seq_len(c, s);
    if (len < 0) continue;
    const int *t = l07_seq_table(c, s);
    for (int b = 0; b < (len + c->block_size - 1) / c->block_size; ++b) {
      ck_assert_int_ge(t[b], 0);
      held[t[b]]++;
    }
  }
  int free_blocks = 0;
  for (int b = 0; b < c->pool.num_blocks; ++b) {
    ck_assert_msg(held[b] == c->pool.ref[b], "block %d: held %d, count %d", b, held[b],
                  c->pool.ref[b]);
    free_blocks += held[b] == 0;
  }
  ck_assert_int_eq(free_blocks, l07_cache_free_blocks(c));
  free(held);
}

START_TEST(append_takes_blocks_as_the_last_fills) {
  l07_cache c;
  ck_assert_int_eq(l07_cache_init(&c, 10, 4, 3, 5), L07_OK);
  int s, slots[20];
  ck_assert_int_eq(l07_seq_open(&c, &s), L07_OK);
  ck_assert_int_eq(l07_seq_append(&c, s, 0, slots, NULL), L07_OK); /* nothing: no block */
  ck_assert_int_eq(l07_cache_free_blocks(&c), 10);
  ck_assert_int_eq(l07_seq_append(&c, s, 3, slots, NULL), L07_OK); /* block_size - 1 */
  ck_assert_int_eq(l07_cache_free_blocks(&c), 9);
  ck_assert_int_eq(l07_seq_append(&c, s, 1, slots, NULL), L07_OK); /* exactly full */
  ck_assert_int_eq(l07_cache_free_blocks(&c), 9);
  ck_assert_int_eq(slots[0], l07_seq_table(&c, s)[0] * 4 + 3);
  ck_assert_int_eq(l07_seq_append(&c, s, 1, slots, NULL), L07_OK); /* block_size + 1 */
  ck_assert_int_eq(l07_cache_free_blocks(&c), 8);
  ck_assert_int_eq(slots[0], l07_seq_table(&c, s)[1] * 4);
  ck_assert_int_eq(l07_seq_len(&c, s), 5);
  ck_assert_int_eq(l07_seq_append(&c, s, 16, slots, NULL), L07_TOO_LONG); /* 21 > 5 blocks x 4 */
  ck_assert_int_eq(l07_seq_len(&c, s), 5);
  ck_assert_int_eq(l07_seq_append(&c, s, -1, slots, NULL), L07_BAD_ARG);
  check_books(&c);
  ck_assert_int_eq(l07_seq_close(&c, s), L07_OK);
  ck_assert_int_eq(l07_cache_free_blocks(&c), 10);
  l07_cache_destroy(&c);
}
END_TEST

START_TEST(fork_shares_and_copy_on_write_splits) {
  l07_cache c;
  ck_assert_int_eq(l07_cache_init(&c, 8, 4, 4, 8), L07_OK);
  int a, b, slots[8];
  l07_copy cp;
  ck_assert_int_eq(l07_seq_open(&c, &a), L07_OK);
  ck_assert_int_eq(l07_seq_append(&c, a, 6, slots, &cp), L07_OK);
  ck_assert_int_eq(cp.tokens, 0);
  ck_assert_int_eq(l07_seq_fork(&c, a, &b), L07_OK);
  ck_assert_int_eq(l07_cache_free_blocks(&c), 6); /* shared, not copied */
  ck_assert_int_eq(l07_seq_table(&c, b)[0], l07_seq_table(&c, a)[0]);
  check_books(&c);
  /* b writes into the shared, half-full last block: it gets its own copy first */
  const int shared_last = l07_seq_table(&c, a)[1];
  ck_assert_int_eq(l07_seq_append(&c, b, 1, slots, &cp), L07_OK);
  ck_assert_int_eq(cp.src, shared_last);
  ck_assert_int_eq(cp.tokens, 2);
  ck_assert_int_ne(cp.dst, shared_last);
  ck_assert_int_eq(l07_seq_table(&c, b)[1], cp.dst);
  ck_assert_int_eq(l07_seq_table(&c, a)[1], shared_last); /* a keeps the original */
  ck_assert_int_eq(l07_seq_table(&c, b)[0],
                   l07_seq_table(&c, a)[0]); /* the full one stays shared */
  ck_assert_int_eq(slots[0], cp.dst * 4 + 2);
  check_books(&c);
  /* a writes into its last block: it is no longer shared, so no copy */
  ck_assert_int_eq(l07_seq_append(&c, a, 1, slots, &cp), L07_OK);
  ck_assert_int_eq(cp.tokens, 0);
  ck_assert_int_eq(slots[0], shared_last * 4 + 2);
  /* a fork of a full last block: the next append opens a new block, no copy */
  int d;
  ck_assert_int_eq(l07_seq_append(&c, a, 1, slots, &cp), L07_OK); /* a: 8 tokens, 2 full blocks */
  ck_assert_int_eq(l07_seq_fork(&c, a, &d), L07_OK);
  ck_assert_int_eq(l07_seq_append(&c, d, 1, slots, &cp), L07_OK);
  ck_assert_int_eq(cp.tokens, 0);
  check_books(&c);
  ck_assert_int_eq(l07_seq_close(&c, a), L07_OK);
  ck_assert_int_eq(l07_seq_close(&c, b), L07_OK);
  ck_assert_int_eq(l07_seq_close(&c, d), L07_OK);
  ck_assert_int_eq(l07_cache_free_blocks(&c), 8);
  l07_cache_destroy(&c);
}
END_TEST

START_TEST(truncate_gives_back_what_the_drafts_took) {
  l07_cache c;
  ck_assert_int_eq(l07_cache_init(&c, 8, 4, 4, 8), L07_OK);
  int a, b, slots[8];
  l07_copy cp;
  ck_assert_int_eq(l07_seq_open(&c, &a), L07_OK);
  ck_assert_int_eq(l07_seq_append(&c, a, 3, slots, NULL), L07_OK);
  ck_assert_int_eq(l07_seq_append(&c, a, 4, slots, NULL), L07_OK); /* 7 tokens, 2 blocks */
  ck_assert_int_eq(l07_cache_free_blocks(&c), 6);
  ck_assert_int_eq(l07_seq_truncate(&c, a, 3), L07_OK); /* back to 4: the second block goes */
  ck_assert_int_eq(l07_seq_len(&c, a), 4);
  ck_assert_int_eq(l07_cache_free_blocks(&c), 7);
  ck_assert_int_eq(l07_seq_table(&c, a)[1], -1);
  check_books(&c);
  ck_assert_int_eq(l07_seq_truncate(&c, a, 5), L07_BAD_ARG); /* more than it holds */
  ck_assert_int_eq(l07_seq_truncate(&c, a, -1), L07_BAD_ARG);
  ck_assert_int_eq(l07_seq_truncate(&c, 3, 1), L07_BAD_SEQ);
  ck_assert_int_eq(l07_seq_len(&c, a), 4);
  /* a shared block: truncating into it keeps it for the other holder, and the next append copies
   * it before writing (the slots past the new length are the other's) */
  ck_assert_int_eq(l07_seq_append(&c, a, 2, slots, NULL), L07_OK); /* 6: blocks 0 full, 1 half */
  ck_assert_int_eq(l07_seq_fork(&c, a, &b), L07_OK);
  const int shared = l07_seq_table(&c, a)[1];
  ck_assert_int_eq(l07_seq_truncate(&c, b, 1), L07_OK); /* b: 5 tokens, still in block 1 */
  ck_assert_int_eq(l07_seq_table(&c, b)[1], shared);
  ck_assert_int_eq(l07_seq_append(&c, b, 1, slots, &cp), L07_OK);
  ck_assert_int_eq(cp.src, shared);
  ck_assert_int_eq(cp.tokens, 1);
  ck_assert_int_eq(slots[0], cp.dst * 4 + 1);
  ck_assert_int_eq(l07_seq_table(&c, a)[1], shared); /* a keeps its tokens where they were */
  check_books(&c);
  ck_assert_int_eq(l07_seq_truncate(&c, b, 6), L07_OK); /* to nothing: every block given back */
  ck_assert_int_eq(l07_seq_len(&c, b), 0);
  check_books(&c);
  ck_assert_int_eq(l07_seq_close(&c, a), L07_OK);
  ck_assert_int_eq(l07_seq_close(&c, b), L07_OK);
  ck_assert_int_eq(l07_cache_free_blocks(&c), 8);
  l07_cache_destroy(&c);
}
END_TEST

START_TEST(errors_change_nothing) {
  l07_cache c;
  ck_assert_int_eq(l07_cache_init(&c, 0, 4, 1, 1), L07_BAD_ARG);
  ck_assert_int_eq(l07_cache_init(&c, 4, 4, 2, 4), L07_OK);
  int a, b, e, slots[32];
  l07_copy cp;
  ck_assert_int_eq(l07_seq_open(&c, &a), L07_OK);
  ck_assert_int_eq(l07_seq_open(&c, &b), L07_OK);
  ck_assert_int_eq(l07_seq_open(&c, &e), L07_NO_SEQ_SLOT);
  ck_assert_int_eq(l07_seq_fork(&c, a, &e), L07_NO_SEQ_SLOT);
  ck_assert_int_eq(l07_seq_append(&c, a, 10, slots, NULL), L07_OK);       /* 3 of 4 blocks */
  ck_assert_int_eq(l07_seq_append(&c, b, 8, slots, NULL), L07_NO_BLOCKS); /* needs 2, 1 free */
  ck_assert_int_eq(l07_seq_len(&c, b), 0);
  ck_assert_int_eq(l07_cache_free_blocks(&c), 1);
  /* a shared, partly filled last block needs a block for its copy too: none is left */
  ck_assert_int_eq(l07_seq_close(&c, b), L07_OK);
  ck_assert_int_eq(l07_seq_fork(&c, a, &b), L07_OK);
  ck_assert_int_eq(l07_seq_append(&c, b, 3, slots, &cp), L07_NO_BLOCKS); /* copy + 1 new */
  ck_assert_int_eq(cp.tokens, 0);
  ck_assert_int_eq(l07_seq_len(&c, b), 10);
  check_books(&c);
  ck_assert_int_eq(l07_seq_close(&c, a), L07_OK);
  ck_assert_int_eq(l07_seq_close(&c, a), L07_BAD_SEQ); /* double close */
  ck_assert_int_eq(l07_seq_append(&c, a, 1, slots, NULL), L07_BAD_SEQ);
  ck_assert_int_eq(l07_seq_fork(&c, a, &e), L07_BAD_SEQ);
  ck_assert_int_eq(l07_seq_close(&c, -1), L07_BAD_SEQ);
  ck_assert_int_eq(l07_seq_close(&c, 2), L07_BAD_SEQ);
  ck_assert_int_eq(l07_seq_len(&c, 7), -1);
  check_books(&c);
  ck_assert_int_eq(l07_seq_close(&c, b), L07_OK);
  ck_assert_int_eq(l07_cache_free_blocks(&c), 4);
  ck_assert_str_eq(l07_status_text(L07_NO_BLOCKS), "the pool has too few free blocks");
  l07_cache_destroy(&c);
}
END_TEST

/* A seeded random workload of opens, appends, forks and closes: after every call the books
 * balance (no block held without its count, none free and held), and at the end every block is
 * back. */
START_TEST(random_workload_leaks_nothing) {
  l07_cache c;
  const int block_sizes[3] = {1, 16, 5};
  for (int t = 0; t < 3; ++t) {
    ck_assert_int_eq(l07_cache_init(&c, 64, block_sizes[t], 12, 40), L07_OK);
    attn_rng r;
    attn_rng_seed(&r, 11 + (uint64_t)t, 3);
    int slots[64];
    for (int step = 0; step < 3000; ++step) {
      const int s = (int)attn_rng_below(&r, 12), op = (int)attn_rng_below(&r, 10);
      int id;
      if (op < 2)
        (void)l07_seq_open(&c, &id);
      else if (op < 6)
        (void)l07_seq_append(&c, s, (int)attn_rng_below(&r, 40), slots, NULL);
      else if (op < 7)
        (void)l07_seq_fork(&c, s, &id);
      else if (op < 8) /* rejected draft tokens, now and then more than the sequence has */
        (void)l07_seq_truncate(&c, s, (int)attn_rng_below(&r, 24));
      else
        (void)l07_seq_close(&c, s);
      check_books(&c);
    }
    for (int s = 0; s < 12; ++s) (void)l07_seq_close(&c, s);
    ck_assert_int_eq(l07_cache_free_blocks(&c), 64);
    l07_cache_destroy(&c);
  }
}
END_TEST

START_TEST(simulation_orders_the_schemes) {
  const l07_sim_config cfg = {64, 2000, 32, 2048, 16, 1024, 4096, 5};
  l07_sim_result r, r2;
  ck_assert_int_eq(l07_simulate(&cfg, &r), 0);
  ck_assert_int_eq(l07_simulate(&cfg, &r2), 0);
  ck_assert(memcmp(&r, &r2, sizeof r) == 0); /* the seed decides everything */
  ck_assert(r.tokens > 0 && r.requests > 64);
  ck_assert(r.reserved_max_context > r.reserved_prompt_output);
  ck_assert(r.reserved_prompt_output > r.reserved_paged[L07_SIM_BLOCK_SIZES - 1]);
  ck_assert(r.reserved_paged[0] == r.tokens); /* block size 1 wastes nothing */
  for (int b = 1; b < L07_SIM_BLOCK_SIZES; ++b) {
    ck_assert(r.reserved_paged[b] >= r.reserved_paged[b - 1]);
    /* at most block_size - 1 tokens wasted per request at every step */
    ck_assert(r.reserved_paged[b] - r.tokens <=
              (double)(r.block_size[b] - 1) * cfg.live * cfg.steps);
  }
  const l07_sim_config bad = {0, 10, 1, 2, 1, 2, 8, 1};
  ck_assert_int_eq(l07_simulate(&bad, &r), -1);
}
END_TEST

/* The CPU model through the block table against the reference: lengths around the block size,
 * GQA 8:1, causal with several query rows. */
static const int kLensA[4] = {1, 15, 16, 17};
static const int kLensB[3] = {300, 2, 129};
START_TEST(cpu_model_matches_the_reference) {
  const struct {
    const int *lens;
    int batch, heads, kv_heads, seq_q, dim, causal, block_size;
  } cases[] = {{kLensA, 4, 8, 1, 1, 64, 0, 16},
               {kLensA, 4, 8, 1, 2, 128, 1, 16},
               {kLensB, 3, 4, 2, 3, 64, 1, 8},
               {kLensB, 3, 4, 4, 1, 64, 0, 128},
               {NULL, 2, 4, 2, 1, 64, 0, 32}};
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; ++t) {
    int longest = 0;
    for (int b = 0; cases[t].lens && b < cases[t].batch; ++b)
      longest = cases[t].lens[b] > longest ? cases[t].lens[b] : longest;
    attn_problem p =
        attn_test_problem(cases[t].batch, cases[t].heads, cases[t].kv_heads, cases[t].seq_q,
                          cases[t].lens ? longest : 77, cases[t].dim, cases[t].causal);
    p.block_size = cases[t].block_size;
    p.kv_lens = cases[t].lens;
    attn_verdict vo, vl;
    ck_assert_msg(attn_cpu_check(&p, 3 + t, l07_cpu_paged, NULL, &vo, &vl) == 0, "case %zu", t);
    ck_assert_uint_gt(vo.compared, 0);
  }
}
END_TEST

/* The decode loop: every row read through the table equals the dense shadow's, bit for bit, at
 * block sizes 1, 5, 16 and 128; forks copy on write; a tight pool refuses and recovers; every
 * block comes back. */
START_TEST(decode_loop_checks_every_step) {
  const int bss[4] = {1, 5, 16, 128};
  for (int t = 0; t < 4; ++t) {
    l07_loop_config cfg = {.max_live = 5,
                           .steps = 120,
                           .prompt_min = 1,
                           .prompt_max = 70,
                           .output_min = 1,
                           .output_max = 40,
                           .fork_every = 10,
                           .heads = 8,
                           .kv_heads = 2,
                           .dim = 64,
                           .block_size = bss[t],
                           .num_blocks = 2 + 400 / bss[t],
                           .seed = 9 + (uint64_t)t};
    l07_loop_result r;
    ck_assert_int_eq(l07_decode_loop_cpu(&cfg, &r), 0);
    ck_assert_msg(r.max_abs == 0.0, "block size %d: max |diff| %g", bss[t], r.max_abs);
    ck_assert_int_eq(r.free_at_end, cfg.num_blocks);
    ck_assert_int_gt(r.tokens, 100);
    ck_assert_int_eq(r.started, r.finished);
    if (bss[t] > 1) ck_assert_int_gt(r.copies, 0);
    if (bss[t] == 128) ck_assert_int_gt(r.refused, 0); /* 5 blocks for 5 sequences and forks */
  }
  l07_loop_config bad = {0};
  l07_loop_result r;
  ck_assert_int_eq(l07_decode_loop_cpu(&bad, &r), -1);
}
END_TEST

START_TEST(version_table_is_consistent) {
  ck_assert_int_eq(l07_lesson.n_versions, L07_VERSIONS);
  ck_assert_int_eq(l07_lesson.number, 7);
  ck_assert_int_eq(l07_lesson.defaults.block_size, 16);
  for (int i = 0; i < L07_VERSIONS; ++i) {
    const attn_version *v = &l07_lesson.versions[i];
    /* the paged versions first, then the two dense yardsticks */
    ck_assert_int_eq(v->kind, i < L07_PAGED_VERSIONS ? ATTN_PAGED : ATTN_DENSE);
    ck_assert_int_eq(v->varlen, i != L07_PAGED_VERSIONS); /* lesson 06's version 5 takes none */
    ck_assert_int_eq(v->writes_lse, 1);
    attn_problem p = attn_test_problem(1, 4, 4, 1, 64, 96, 0);
    p.block_size = 16;
    ck_assert_ptr_nonnull(v->supports(&p));
    p.dim = 128;
    ck_assert_ptr_null(v->supports(&p));
    p.block_size = 24; /* only versions 3 to 5 shift */
    if (i >= 2 && i < L07_PAGED_VERSIONS)
      ck_assert_ptr_nonnull(v->supports(&p));
    else
      ck_assert_ptr_null(v->supports(&p));
    p.block_size = 16;
    p.seq_q = 9;
    ck_assert_ptr_nonnull(v->supports(&p));
  }
}
END_TEST

/* Whether chunk @p c balances @p lens as l07_balance_chunk() promises (paged_attention.h). */
static int balances(int c, int slots, int units, const int *lens, int batch) {
  long long heavy = 0, light = 0;
  for (int b = 0; b < batch; ++b)
    if (lens[b] > c)
      heavy += (long long)units * ((lens[b] + c - 1) / c);
    else
      light += (long long)units * lens[b];
  return heavy <= slots && light <= (long long)c * (slots - heavy);
}

/* Version 5's plan: one length for all, or more sequences than a wave, is lesson 06's plan; lengths
 * that differ get the shortest aligned chunk that balances, and one sequence of 131072 keys among 7
 * of 1024 on 132 slots of 8 units is cut into 15 chunks (120 blocks, 12 slots for the short ones),
 * where lesson 06's plan cuts it into 9 (72 blocks) to keep every block in one wave. */
START_TEST(balance_plan_weighs_work) {
  int lens[40];
  ck_assert_int_eq(l07_balance_chunk(132, 8, NULL, 4, 32768),
                   l06_varlen_chunk(132, 8, NULL, 4, 32768));
  for (int b = 0; b < 40; ++b) lens[b] = 1000 + 37 * b;
  ck_assert_int_eq(l07_balance_chunk(132, 8, lens, 40, 2443),
                   l06_varlen_chunk(132, 8, lens, 40, 2443));
  lens[0] = 131072;
  for (int b = 1; b < 8; ++b) lens[b] = 1024;
  const int c = l07_balance_chunk(132, 8, lens, 8, 131072);
  ck_assert_int_eq(c % L06_CHUNK_ALIGN, 0);
  ck_assert_int_eq((131072 + c - 1) / c, 15);
  ck_assert_int_eq(l06_varlen_chunks(l06_varlen_chunk(132, 8, lens, 8, 131072), lens, 8, 131072),
                   9 + 7);
  /* random batches that fit one wave: the answer balances, one alignment step less does not */
  attn_rng r;
  attn_rng_seed(&r, 12345, 7);
  for (int trial = 0; trial < 200; ++trial) {
    const int batch = 1 + (int)attn_rng_below(&r, 16), units = 1 + (int)attn_rng_below(&r, 8);
    int longest = 1;
    for (int b = 0; b < batch; ++b) {
      lens[b] = 1 + (int)attn_rng_below(&r, trial % 2 ? 200000 : 5000);
      if (lens[b] > longest) longest = lens[b];
    }
    const int slots = units * batch + (int)attn_rng_below(&r, 200);
    const int k = l07_balance_chunk(slots, units, lens, batch, longest);
    ck_assert_int_eq(k % L06_CHUNK_ALIGN, 0);
    ck_assert_int_ge(k, L06_MIN_CHUNK < longest ? L06_MIN_CHUNK : L06_CHUNK_ALIGN);
    ck_assert_int_le(k, (longest + L06_CHUNK_ALIGN - 1) / L06_CHUNK_ALIGN * L06_CHUNK_ALIGN);
    ck_assert_msg(balances(k, slots, units, lens, batch), "trial %d: chunk %d", trial, k);
    if (k > L06_MIN_CHUNK)
      ck_assert_msg(!balances(k - L06_CHUNK_ALIGN, slots, units, lens, batch), "trial %d", trial);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson07_cpu");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, append_takes_blocks_as_the_last_fills);
  tcase_add_test(tc, fork_shares_and_copy_on_write_splits);
  tcase_add_test(tc, truncate_gives_back_what_the_drafts_took);
  tcase_add_test(tc, errors_change_nothing);
  tcase_add_test(tc, random_workload_leaks_nothing);
  tcase_add_test(tc, simulation_orders_the_schemes);
  tcase_add_test(tc, cpu_model_matches_the_reference);
  tcase_add_test(tc, decode_loop_checks_every_step);
  tcase_add_test(tc, version_table_is_consistent);
  tcase_add_test(tc, balance_plan_weighs_work);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
