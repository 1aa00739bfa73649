/* Lesson 07's checklist: the page-table address and the block pool (paging.h). Built against the
 * lesson's answers (checklist-7, must pass) and against drills/07 (drill-7). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "paging.h"

/* The address of every (token, head, d) of a sequence whose pages are scattered over the pool:
 * the formula written out, each element once, all inside the pool. */
START_TEST(offset_follows_the_block_table) {
  const int bss[3] = {1, 7, 16};
  for (int t3 = 0; t3 < 3; ++t3) {
    const int bs = bss[t3], kvh = 3, dim = 5, tokens = 40, blocks = (tokens + bs - 1) / bs;
    const int num_blocks = blocks + 4;
    int table[64];
    for (int j = 0; j < blocks; ++j) table[j] = (j * 3 + 1) % num_blocks; /* scattered, distinct */
    const size_t pool = (size_t)num_blocks * bs * kvh * dim;
    char *seen = calloc(pool, 1);
    ck_assert_ptr_nonnull(seen);
    for (int t = 0; t < tokens; ++t)
      for (int h = 0; h < kvh; ++h)
        for (int d = 0; d < dim; ++d) {
          const size_t off = l07_kv_offset(table, bs, kvh, dim, t, h, d);
          const size_t want = (((size_t)table[t / bs] * bs + t % bs) * kvh + h) * dim + d;
          ck_assert_msg(off == want, "bs %d token %d head %d d %d: %zu, want %zu", bs, t, h, d, off,
                        want);
          ck_assert(off < pool);
          ck_assert_msg(!seen[off], "bs %d: offset %zu given twice", bs, off);
          seen[off] = 1;
        }
    free(seen);
  }
}
END_TEST

/* Consecutive tokens of one page are neighbours; the first token of the next page is wherever its
 * block is. */
START_TEST(offset_inside_and_across_pages) {
  const int table[3] = {9, 2, 5};
  ck_assert_uint_eq(l07_kv_offset(table, 16, 8, 128, 0, 0, 0), (size_t)9 * 16 * 8 * 128);
  ck_assert_uint_eq(
      l07_kv_offset(table, 16, 8, 128, 1, 0, 0) - l07_kv_offset(table, 16, 8, 128, 0, 0, 0),
      (size_t)8 * 128);
  ck_assert_uint_eq(l07_kv_offset(table, 16, 8, 128, 16, 3, 7), ((size_t)2 * 16 * 8 + 3) * 128 + 7);
  ck_assert_uint_eq(l07_kv_offset(table, 16, 8, 128, 47, 7, 127),
                    (((size_t)5 * 16 + 15) * 8 + 7) * 128 + 127);
}
END_TEST

/* Every block handed out once, in order, until none is left; then -1 and nothing changes. */
START_TEST(pool_hands_out_each_block_once) {
  int fl[6], ref[6];
  l07_pool p;
  l07_pool_init(&p, 6, fl, ref);
  ck_assert_int_eq(p.n_free, 6);
  for (int i = 0; i < 6; ++i) {
    ck_assert_int_eq(l07_pool_alloc(&p), i);
    ck_assert_int_eq(p.ref[i], 1);
  }
  ck_assert_int_eq(l07_pool_alloc(&p), -1);
  ck_assert_int_eq(p.n_free, 0);
  ck_assert_int_eq(l07_pool_release(&p, 3), 0);
  ck_assert_int_eq(p.ref[3], 0);
  ck_assert_int_eq(l07_pool_alloc(&p), 3); /* the freed block comes back */
  ck_assert_int_eq(l07_pool_alloc(&p), -1);
}
END_TEST

/* A shared block stays allocated until its last holder lets it go. */
START_TEST(pool_counts_holders) {
  int fl[4], ref[4];
  l07_pool p;
  l07_pool_init(&p, 4, fl, ref);
  const int b = l07_pool_alloc(&p);
  ck_assert_int_eq(l07_pool_retain(&p, b), 0);
  ck_assert_int_eq(l07_pool_retain(&p, b), 0);
  ck_assert_int_eq(p.ref[b], 3);
  ck_assert_int_eq(l07_pool_release(&p, b), 0);
  ck_assert_int_eq(l07_pool_release(&p, b), 0);
  ck_assert_int_eq(p.n_free, 3); /* still held once */
  ck_assert_int_eq(l07_pool_release(&p, b), 0);
  ck_assert_int_eq(p.n_free, 4);
}
END_TEST

/* Errors change nothing: a double free, a retain of a free block, ids out of range. */
START_TEST(pool_refuses_bad_calls) {
  int fl[4], ref[4];
  l07_pool p;
  l07_pool_init(&p, 4, fl, ref);
  const int b = l07_pool_alloc(&p);
  ck_assert_int_eq(l07_pool_release(&p, b), 0);
  ck_assert_int_eq(l07_pool_release(&p, b), -1); /* double free */
  ck_assert_int_eq(p.n_free, 4);
  ck_assert_int_eq(l07_pool_retain(&p, b), -1); /* not allocated */
  ck_assert_int_eq(p.ref[b], 0);
  ck_assert_int_eq(l07_pool_release(&p, -1), -1);
  ck_assert_int_eq(l07_pool_release(&p, 4), -1);
  ck_assert_int_eq(l07_pool_retain(&p, 99), -1);
  ck_assert_int_eq(p.n_free, 4);
  /* the free list holds each block once: four allocations, four distinct blocks */
  int got[4];
  for (int i = 0; i < 4; ++i) got[i] = l07_pool_alloc(&p);
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) ck_assert_int_ne(got[i], got[j]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("checklist-7");
  TCase *tc = tcase_create("paging");
  tcase_add_test(tc, offset_follows_the_block_table);
  tcase_add_test(tc, offset_inside_and_across_pages);
  tcase_add_test(tc, pool_hands_out_each_block_once);
  tcase_add_test(tc, pool_counts_holders);
  tcase_add_test(tc, pool_refuses_bad_calls);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
