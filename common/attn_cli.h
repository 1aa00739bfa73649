/**
 * @file attn_cli.h
 * @brief The command line every lesson program shares.
 *
 *     ./run [VERSION] [--batch N] [--heads N] [--kv-heads N] [--seq N] [--kv-seq N] [--dim N]
 *           [--causal] [--block-size N] [--seed N] [--iters N] [--warmup N]
 *           [--check-only | --no-check] [--cpu] [--csv FILE] [--help]
 *
 * Bad input (an unknown option, a value that is not a number or is out of range, heads not
 * divisible by kv-heads, a head dimension the lesson does not build, a version that does not exist)
 * is one line on stderr naming the option and what is valid, and exit code 2.
 */
#ifndef ATTN_CLI_H
#define ATTN_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Upper bound on every size option: 2^24. */
#define ATTN_MAX_EXTENT (1 << 24)
/** Upper bound on the elements of any one tensor: 2^36 (256 GiB of fp32). */
#define ATTN_MAX_TENSOR_ELEMS ((size_t)1 << 36)

/** What the command line asked for. */
/** The most sequences --kv-lens takes. */
#define ATTN_MAX_KV_LENS 4096

/** Everything the command line sets. */
typedef struct attn_options {
  attn_problem problem; /**< the shape (defaults from the lesson); with --kv-lens, problem.kv_lens
                             points into kv_lens below, so an attn_options copy shares them */
  uint64_t seed;        /**< input seed (default 1) */
  int iters;            /**< timed runs per version (default 20) */
  int warmup;           /**< untimed runs first (default 3) */
  int version;          /**< 1-based version to run, 0 for all */
  int check_only;       /**< check, do not time */
  int no_check;         /**< time, do not check */
  int cpu_only;         /**< --cpu: run only the CPU parts */
  const char *csv_path; /**< --csv FILE, or NULL */
  int kv_lens[ATTN_MAX_KV_LENS]; /**< --kv-lens: one length per sequence */
} attn_options;

/** What a lesson tells the parser. */
typedef struct attn_cli_spec {
  const char *program;   /**< name in messages and --help, e.g. "lesson-1" */
  const char *title;     /**< one line under the usage */
  attn_problem defaults; /**< default shape (kv_heads 0: same as heads; seq_kv 0: same as seq_q) */
  const int *dims;       /**< head dimensions the lesson builds, or NULL for any in 1..1024 */
  int n_dims;            /**< entries in dims */
  int n_versions;        /**< valid VERSION numbers are 1..n_versions */
  const char *const *version_names; /**< for --help; may be NULL */
} attn_cli_spec;

/** Parse result. */
enum { ATTN_CLI_OK = 0, ATTN_CLI_HELP = 1, ATTN_CLI_ERROR = 2 };

/**
 * Parse @p argv into @p o. Returns ATTN_CLI_OK, ATTN_CLI_HELP (usage was written to @p out), or
 * ATTN_CLI_ERROR with one line (no newline) in @p err, which names the option and what is valid.
 * Uses getopt_long and resets its state, so it may be called more than once.
 */
int attn_cli_parse(int argc, char **argv, const attn_cli_spec *spec, attn_options *o, char *err,
                   size_t err_len, FILE *out);

/** Write the usage text. */
void attn_cli_usage(const attn_cli_spec *spec, FILE *out);

/** Check a shape on its own (used by the parser; also for shapes built in code). Returns 0 or -1
 *  with a one-line reason in @p err. */
int attn_problem_validate(const attn_problem *p, const int *dims, int n_dims, char *err,
                          size_t err_len);

/** Print the shape as `batch 4  heads 16/4  seq 1024/1024  dim 64  causal`. */
void attn_problem_print(const attn_problem *p, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_CLI_H */
