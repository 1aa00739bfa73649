/**
 * @file attn_test.h
 * @brief Shared helpers for the Check suites.
 */
#ifndef ATTN_TEST_H
#define ATTN_TEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"

/** ctest's "skipped" exit code (SKIP_RETURN_CODE in attn_test()). */
#define ATTN_TEST_SKIP 77

/**
 * 1 when the GPU suites run sanitizer-sized, else 0: the environment variable ATTN_TEST_SANITIZER
 * is set to a non-empty value other than "0" (scripts/gpu-suite.sh sets it for its
 * compute-sanitizer runs). A sanitizer-sized suite keeps every awkward case (one token, a tile
 * minus one, lengths that are multiples of nothing, causal with q_len != kv_len, GQA, rows that see
 * no key) on small shapes, since memcheck and racecheck slow every access down by orders of
 * magnitude; tests that only exist for their size (long sequences, grids of several waves) are left
 * out, each with a line from attn_test_left_out().
 */
static inline int attn_test_sanitizer_sized(void) {
  const char *v = getenv("ATTN_TEST_SANITIZER");
  return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/** The problem a test runs: @p full, or @p small in a sanitizer-sized run (the same awkward case
 *  on a smaller shape). @param full the shape of a full run @param small the sanitizer-sized one */
static inline attn_problem attn_test_sized(attn_problem full, attn_problem small) {
  return attn_test_sanitizer_sized() ? small : full;
}

/**
 * Say, on one line, that a sanitizer-sized run leaves out a test or one of its shapes, and why:
 * `sanitizer-sized: TEST (shape N) left out: only the full run checks CHECKS`. Nothing a suite
 * leaves out goes unsaid.
 * @param test   the test's name
 * @param shape  the shape's index in the test's table, or -1 for the whole test
 * @param checks what the test or shape checks, which needs the full size
 */
static inline void attn_test_left_out(const char *test, int shape, const char *checks) {
  if (shape >= 0)
    printf("sanitizer-sized: %s (shape %d) left out: only the full run checks %s\n", test, shape,
           checks);
  else
    printf("sanitizer-sized: %s left out: only the full run checks %s\n", test, checks);
}

/** For a GPU suite's main(): fill @p d, or print why there is no usable device and exit 77; then
 *  print the device and whether the suite runs full or sanitizer-sized
 *  (attn_test_sanitizer_sized()). */
static inline void attn_test_gpu_or_skip(attn_device *d) {
  char why[256];
  if (attn_device_query(d, why, sizeof why) != 0) {
    printf("skipped: %s\n", why);
    exit(ATTN_TEST_SKIP);
  }
  printf("device: %s (sm_%d, %d SMs)\n", d->name, attn_device_sm(d), d->sm_count);
  printf("size: %s\n", attn_test_sanitizer_sized()
                           ? "sanitizer-sized (ATTN_TEST_SANITIZER): small shapes, size-only tests "
                             "left out"
                           : "full (set ATTN_TEST_SANITIZER=1 for the sanitizer-sized suite)");
}

/** Run @p s and return the exit code. GPU suites pass @p nofork = 1: CUDA does not survive fork().
 */
static inline int attn_test_run(Suite *s, int nofork) {
  SRunner *sr = srunner_create(s);
  if (nofork) srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/** Make a dense problem in one line. */
static inline attn_problem attn_test_problem(int batch, int heads, int kv_heads, int seq_q,
                                             int seq_kv, int dim, int causal) {
  attn_problem p = {batch, heads, kv_heads, seq_q, seq_kv, dim, causal, 16, 0.0f, NULL};
  return p;
}

#endif /* ATTN_TEST_H */
