/* The shared command line: good input parses; every kind of bad input is one line naming the
 * option, and attn_main() exits 2 on it. */
#include <stdlib.h>
#include <string.h>

#include "attn_test.h"

static const int kDims[] = {64, 128};
static const attn_version kVersions[3] = {
    {.name = "one", .summary = "first", .kind = ATTN_DENSE, .dtype = ATTN_F32},
    {.name = "two", .summary = "second", .kind = ATTN_DENSE, .dtype = ATTN_F32},
    {.name = "three", .summary = "third", .kind = ATTN_DENSE, .dtype = ATTN_BF16},
};
static const attn_lesson kLesson = {
    9, "test lesson", kVersions, 3, {1, 16, 0, 128, 0, 64, 0, 16, 0.0f, NULL}, kDims,
    2, NULL,          NULL,      0};
static const attn_cli_spec kSpec = {
    "lesson-9", "test", {1, 16, 0, 128, 0, 64, 0, 16, 0.0f, NULL}, kDims, 2, 3, NULL};

static int parse(const char *const *args, attn_options *o, char *err) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = (char *)"lesson-9";
  for (; args[argc - 1]; ++argc) argv[argc] = (char *)args[argc - 1];
  argv[argc] = NULL;
  FILE *sink = fopen("/dev/null", "w");
  int rc = attn_cli_parse(argc, argv, &kSpec, o, err, 256, sink);
  fclose(sink);
  return rc;
}

/* --kv-lens sets the batch, the longest length and a length per sequence; bad lists say why. */
START_TEST(kv_lens_list) {
  attn_options o;
  char err[256];
  const char *a[] = {"--kv-lens", "128k,1024x3,17", NULL};
  ck_assert_int_eq(parse(a, &o, err), ATTN_CLI_OK);
  ck_assert_int_eq(o.problem.batch, 5);
  ck_assert_int_eq(o.problem.seq_kv, 131072);
  ck_assert_ptr_eq(o.problem.kv_lens, o.kv_lens);
  ck_assert_int_eq(o.problem.kv_lens[0], 131072);
  ck_assert_int_eq(o.problem.kv_lens[3], 1024);
  ck_assert_int_eq(o.problem.kv_lens[4], 17);
  const char *same[] = {"--batch", "2", "--kv-lens", "5x2", NULL};
  ck_assert_int_eq(parse(same, &o, err), ATTN_CLI_OK);
  const char *bad[][5] = {{"--kv-lens", "", NULL},
                          {"--kv-lens", "12x", NULL},
                          {"--kv-lens", "3,,4", NULL},
                          {"--kv-lens", "0", NULL},
                          {"--kv-lens", "-5", NULL},
                          {"--kv-lens", "7y", NULL},
                          {"--batch", "3", "--kv-lens", "5x2", NULL},
                          {"--kv-seq", "9", "--kv-lens", "5", NULL}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    ck_assert_int_eq(parse(bad[i], &o, err), ATTN_CLI_ERROR);
    ck_assert_msg(strstr(err, "kv-lens") != NULL, "case %zu: %s", i, err);
  }
  const char *none[] = {NULL};
  ck_assert_int_eq(parse(none, &o, err), ATTN_CLI_OK);
  ck_assert_ptr_null(o.problem.kv_lens);
}
END_TEST

START_TEST(defaults_and_good_values) {
  attn_options o;
  char err[256];
  const char *a0[] = {NULL};
  ck_assert_int_eq(parse(a0, &o, err), ATTN_CLI_OK);
  ck_assert_int_eq(o.problem.heads, 16);
  ck_assert_int_eq(o.problem.kv_heads, 16); /* follows --heads */
  ck_assert_int_eq(o.problem.seq_kv, 128);  /* follows --seq */
  ck_assert_int_eq(o.version, 0);
  ck_assert_int_eq(o.iters, 20);
  ck_assert_uint_eq(o.seed, 1);

  const char *a1[] = {
      "--heads",  "32",     "--kv-heads",           "4",       "--seq", "17",    "--dim", "128",
      "--causal", "--seed", "18446744073709551615", "--iters", "5",     "--csv", "x.csv", "2",
      NULL};
  ck_assert_int_eq(parse(a1, &o, err), ATTN_CLI_OK);
  ck_assert_int_eq(o.problem.heads, 32);
  ck_assert_int_eq(o.problem.kv_heads, 4);
  ck_assert_int_eq(o.problem.seq_q, 17);
  ck_assert_int_eq(o.problem.seq_kv, 17);
  ck_assert_int_eq(o.problem.dim, 128);
  ck_assert_int_eq(o.problem.causal, 1);
  ck_assert_uint_eq(o.seed, UINT64_MAX);
  ck_assert_int_eq(o.iters, 5);
  ck_assert_str_eq(o.csv_path, "x.csv");
  ck_assert_int_eq(o.version, 2);

  const char *a2[] = {"--seq", "1", "--kv-seq", "4096", "--check-only", NULL};
  ck_assert_int_eq(parse(a2, &o, err), ATTN_CLI_OK);
  ck_assert_int_eq(o.problem.seq_q, 1);
  ck_assert_int_eq(o.problem.seq_kv, 4096);
  ck_assert_int_eq(o.check_only, 1);

  const char *a4[] = {"--seq", "0128", NULL}; /* leading zeros stay accepted */
  ck_assert_int_eq(parse(a4, &o, err), ATTN_CLI_OK);
  ck_assert_int_eq(o.problem.seq_q, 128);

  const char *a3[] = {"--help", NULL};
  ck_assert_int_eq(parse(a3, &o, err), ATTN_CLI_HELP);
}
END_TEST

/* Each bad command line and a piece of the one-line message it must produce. */
static const struct {
  const char *args[8];
  const char *message;
} kBad[] = {
    {{"--bogus", NULL}, "unknown option '--bogus'"},
    {{"--seq", "abc", NULL}, "--seq must be an integer in 1..16777216, got 'abc'"},
    {{"--seq", "0", NULL}, "--seq must be an integer"},
    {{"--batch", "-3", NULL}, "--batch must be an integer"},
    {{"--heads", "12x", NULL}, "--heads must be an integer"},
    {{"--kv-seq", "99999999999", NULL}, "--kv-seq must be an integer"},
    {{"--heads", "16", "--kv-heads", "5", NULL}, "--heads 16 is not a multiple of --kv-heads 5"},
    {{"--kv-heads", "32", NULL}, "is not a multiple of --kv-heads 32"},
    {{"--dim", "96", NULL}, "--dim 96 is not built by this lesson; valid: 64, 128"},
    {{"--dim", "0", NULL}, "--dim must be an integer"},
    {{"7", NULL}, "VERSION must be a number in 1..3, got '7'"},
    {{"0", NULL}, "VERSION must be a number in 1..3"},
    {{"fast", NULL}, "VERSION must be a number in 1..3, got 'fast'"},
    {{"1", "2", NULL}, "one VERSION at most"},
    {{"--seq", NULL}, "option '--seq' needs a value"},
    {{"--iters", "0", NULL}, "--iters must be an integer in 1..100000"},
    {{"--warmup", "-1", NULL}, "--warmup must be an integer"},
    {{"--seed", "-1", NULL}, "--seed must be a non-negative integer"},
    {{"--block-size", "0", NULL}, "--block-size must be an integer"},
    {{"--check-only", "--no-check", NULL}, "--check-only and --no-check exclude each other"},
    {{"--seq", " 128", NULL}, "--seq must be an integer in 1..16777216, got ' 128'"},
    {{"--seq", "+3", NULL}, "--seq must be an integer in 1..16777216, got '+3'"},
    {{"--batch", "4 ", NULL}, "--batch must be an integer"},
    {{"--iters", "+5", NULL}, "--iters must be an integer"},
    {{"--seed", " 7", NULL}, "--seed must be a non-negative integer"},
    {{" 2", NULL}, "VERSION must be a number in 1..3, got ' 2'"},
    {{"--batch", "65536", "--seq", "65536", "--heads", "256", NULL}, "problem too large"},
};
enum { N_BAD = sizeof kBad / sizeof kBad[0] };

START_TEST(bad_input_names_the_option) {
  attn_options o;
  char err[256];
  ck_assert_int_eq(parse(kBad[_i].args, &o, err), ATTN_CLI_ERROR);
  ck_assert_msg(strstr(err, kBad[_i].message) != NULL, "message '%s' lacks '%s'", err,
                kBad[_i].message);
  ck_assert_ptr_null(strchr(err, '\n')); /* one line */
}
END_TEST

/* The whole program path: attn_main() must exit 2 (run in a forked child by Check). */
START_TEST(bad_input_exits_2) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = (char *)"lesson-9";
  for (int k = 0; kBad[_i].args[k]; ++k) argv[argc++] = (char *)kBad[_i].args[k];
  argv[argc] = NULL;
  exit(attn_main(argc, argv, &kLesson));
}
END_TEST

START_TEST(help_exits_0) {
  char *argv[] = {(char *)"lesson-9", (char *)"--help", NULL};
  FILE *f = freopen("/dev/null", "w", stdout);
  (void)f;
  exit(attn_main(2, argv, &kLesson));
}
END_TEST

START_TEST(unwritable_csv_exits_2) {
  char *argv[] = {(char *)"lesson-9", (char *)"--csv", (char *)"/nonexistent-dir/x.csv", NULL};
  exit(attn_main(3, argv, &kLesson));
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("cli");
  tcase_add_test(tc, defaults_and_good_values);
  tcase_add_test(tc, kv_lens_list);
  tcase_add_loop_test(tc, bad_input_names_the_option, 0, N_BAD);
  tcase_add_loop_exit_test(tc, bad_input_exits_2, 2, 0, N_BAD);
  tcase_add_exit_test(tc, help_exits_0, 0);
  tcase_add_exit_test(tc, unwritable_csv_exits_2, 2);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
