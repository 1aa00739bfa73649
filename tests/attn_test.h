/**
 * @file attn_test.h
 * @brief Shared helpers for the Check suites.
 */
#ifndef ATTN_TEST_H
#define ATTN_TEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "attn.h"

/** ctest's "skipped" exit code (SKIP_RETURN_CODE in attn_test()). */
#define ATTN_TEST_SKIP 77

/** For a GPU suite's main(): fill @p d, or print why there is no usable device and exit 77. */
static inline void attn_test_gpu_or_skip(attn_device *d) {
  char why[256];
  if (attn_device_query(d, why, sizeof why) != 0) {
    printf("skipped: %s\n", why);
    exit(ATTN_TEST_SKIP);
  }
  printf("device: %s (sm_%d, %d SMs)\n", d->name, attn_device_sm(d), d->sm_count);
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
