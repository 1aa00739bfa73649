/**
 * @file attn_runner.h
 * @brief The one contract between a lesson and the harness: a lesson is a table of versions.
 *
 * A lesson program declares its versions (name, one-line summary, what it can run, the launcher)
 * and calls attn_main(). The harness parses the command line, prints the device header, makes
 * inputs, computes the reference, and for each version: skips it with a reason when it cannot run
 * the shape or the GPU, poisons its outputs, launches it, checks it, times it, and prints one table
 * row (and a CSV row with --csv).
 *
 * Three kinds of version:
 *  - ATTN_DENSE: attention over dense BSHD tensors. The harness owns everything: inputs, reference,
 *    check (O, and the log-sum-exp when the version writes it), and the work model.
 *  - ATTN_PAGED: the same attention with K and V in a paged cache (attn_paged.h) built by the
 * harness.
 *  - ATTN_CUSTOM: anything else (bandwidth probes, softmax rows). The version brings its own setup,
 *    launch, check and work model through attn_custom; the harness still poisons, checks, times and
 *    prints through the same code.
 */
#ifndef ATTN_RUNNER_H
#define ATTN_RUNNER_H

#include <stddef.h>
#include <stdio.h>

#include "attn_cli.h"
#include "attn_device.h"
#include "attn_timer.h"
#include "attn_types.h"
#include "attn_verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Device pointers handed to an attention launcher. Element type is the version's dtype. */
typedef struct attn_args {
  const void *q;          /**< [batch, seq_q, heads, dim] */
  const void *k;          /**< [batch, seq_kv, kv_heads, dim] (dense versions) */
  const void *v;          /**< [batch, seq_kv, kv_heads, dim] (dense versions) */
  void *o;                /**< [batch, seq_q, heads, dim] */
  float *lse;             /**< [batch, heads, seq_q], written when the version says writes_lse */
  const void *k_cache;    /**< [num_blocks, block_size, kv_heads, dim] (paged versions) */
  const void *v_cache;    /**< [num_blocks, block_size, kv_heads, dim] (paged versions) */
  const int *block_table; /**< [batch, max_blocks] (paged versions) */
  const int *seq_lens;    /**< [batch] keys per sequence, on the device: paged versions always,
                               dense ones when the problem has lengths (else NULL) */
  int num_blocks;         /**< blocks in the paged pool */
  int max_blocks;         /**< block-table columns */
  void *workspace;        /**< scratch of the size the version's workspace() asked for, zeroed
                               once when allocated (not before each call): a version may keep
                               state there across calls, such as counters, if every call leaves
                               it as it found it */
  size_t workspace_bytes; /**< its size */
  int version;            /**< the version's 1-based number in its lesson's table */
  const void *user;       /**< the version's attn_version::user */
} attn_args;

/** An attention launcher: enqueue the kernels on @p stream and return the first error. */
typedef cudaError_t (*attn_attention_fn)(const attn_problem *p, const attn_args *a,
                                         cudaStream_t stream);

/** The work one launch does, for rates and "% of peak". */
typedef struct attn_work {
  double flops;           /**< floating-point operations (0: not a compute measure) */
  double bytes;           /**< bytes that must move at the level peak_gbs describes */
  double peak_gbs;        /**< bandwidth ceiling for bytes; 0 means the device's HBM figure */
  const char *peak_label; /**< name of that ceiling, e.g. "HBM", "SMEM"; NULL means "HBM" */
} attn_work;

/** What attn_custom's setup gets. */
typedef struct attn_setup_ctx {
  const attn_problem *problem; /**< the shape */
  const attn_options *options; /**< seed, iterations, flags */
  const attn_device *device;   /**< the GPU */
  int version;                 /**< the version's 1-based number in its lesson's table */
  const void *user;            /**< the version's attn_version::user */
} attn_setup_ctx;

/** A version that brings its own data, launch and check. Every function receives the state that
 *  setup() created. */
typedef struct attn_custom {
  /** Allocate and fill inputs, compute the reference. Set *skip to a reason (static string) and
   *  return cudaSuccess when the version cannot run this shape; return an error on CUDA failure. */
  cudaError_t (*setup)(void **state, const attn_setup_ctx *ctx, const char **skip);
  /** Poison every output (attn_poison()); called before each checked launch. */
  cudaError_t (*poison)(void *state, cudaStream_t stream);
  /** Enqueue one run. */
  cudaError_t (*launch)(void *state, cudaStream_t stream);
  /** Copy outputs back and judge them into @p v (attn_verdict_init with its own dtype, scan, add,
   *  then the harness calls attn_verdict_finish). */
  cudaError_t (*check)(void *state, attn_verdict *v);
  /** The work of one launch. */
  void (*work)(void *state, attn_work *w);
  /** Free everything. */
  void (*teardown)(void *state);
  /** Optional: the bytes setup() will allocate for @p p on the GPU and on the host, so a problem
   * that cannot fit is refused before anything is allocated. NULL: not known in advance. */
  void (*footprint)(const attn_problem *p, double *device_bytes, double *host_bytes);
} attn_custom;

/** Kinds of version. */
typedef enum attn_kind { ATTN_DENSE = 0, ATTN_PAGED = 1, ATTN_CUSTOM = 2 } attn_kind;

/** One row of a lesson's table. */
typedef struct attn_version {
  const char *name;    /**< short name, e.g. "fa2-mma" */
  const char *summary; /**< one line: what this version does */
  attn_kind kind;      /**< dense, paged or custom */
  attn_dtype dtype;    /**< element type of Q, K, V, O; fp32 rates are against the CUDA-core peak,
                            bf16 against the tensor-core peak */
  int min_sm;          /**< lowest compute capability it runs on (e.g. 80, 90); 0 for any */
  int writes_lse;      /**< 1 when the launcher writes the log-sum-exp (then it is checked) */
  int fp8;             /**< 1 when it computes in FP8 (e4m3 on the tensor cores) from and to its
                            dtype: checked against ATTN_TOL_FP8_*, its % of peak taken against
                            twice the bf16 tensor-core peak (the FP8 rate) */
  int varlen;          /**< 1 when it takes a length per sequence (attn_problem::kv_lens, through
                            attn_args::seq_lens); others are skipped, with the reason, when a
                            problem has lengths */
  /** NULL when the version can run @p p, else the reason it cannot (a static string or one kept in
   * a static buffer). May be NULL itself: everything is supported. */
  const char *(*supports)(const attn_problem *p);
  attn_attention_fn launch;                   /**< ATTN_DENSE and ATTN_PAGED */
  size_t (*workspace)(const attn_problem *p); /**< scratch bytes (zeroed once); NULL for none */
  const attn_custom *custom;                  /**< ATTN_CUSTOM */
  /** Anything the lesson wants its launcher or setup to receive (attn_args::user,
   *  attn_setup_ctx::user), so one launcher serves several versions without a thunk per version. */
  const void *user;
} attn_version;

/** How a version ended. */
typedef enum attn_status {
  ATTN_PASS = 0, /**< checked and within tolerance */
  ATTN_FAIL,     /**< checked and wrong */
  ATTN_SKIPPED,  /**< could not run (shape, GPU, memory): the reason is in note */
  ATTN_ERROR,    /**< a CUDA error */
  ATTN_UNCHECKED /**< --no-check: timed only */
} attn_status;

/** Everything measured for one version. */
typedef struct attn_result {
  const attn_version *version; /**< the version measured */
  int index;                   /**< 1-based number in the lesson's table */
  attn_status status;          /**< how it ended */
  char note[192];              /**< skip reason or error */
  attn_verdict verdict;        /**< output (O for attention) */
  attn_verdict verdict_lse;    /**< log-sum-exp, when checked (compared > 0) */
  int timed;                   /**< 1 when the figures below are measured */
  attn_timing timing;          /**< median, min, max of the timed runs */
  attn_work work;              /**< the work model of one launch */
  double tflops;               /**< work.flops / median time, 1e12/s */
  double pct_flops; /**< of the datasheet peak for the version's dtype (-1 when unknown) */
  double gbs;       /**< work.bytes / median time, 1e9 bytes/s */
  double pct_bw;    /**< of work.peak_gbs */
} attn_result;

/** A lesson. */
typedef struct attn_lesson {
  int number;                   /**< the lesson's number, as in its folder lessons/NN_name/ */
  const char *title;            /**< one line */
  const attn_version *versions; /**< the table, in teaching order */
  int n_versions;               /**< its length */
  attn_problem defaults;        /**< the default shape */
  const int *dims;              /**< head dimensions the lesson builds (NULL: any) */
  int n_dims;                   /**< entries in dims */
  /** Optional: CPU-only content (models, traffic counts), run before the GPU part, also with --cpu
   *  or without a GPU. Returns 0, or non-zero when something it checks fails. */
  int (*cpu_part)(const attn_options *o);
  /** Optional: printed after the table (e.g. lesson 1's pyramid). @p dev is NULL without a GPU. */
  int (*report)(const attn_options *o, const attn_device *dev, const attn_result *results, int n);
  /** 0, or the one compute capability the lesson's kernels run on (90 for code built for sm_90a,
   *  which no other GPU, older or newer, can run). On any other GPU the program says so in one
   *  line, runs the CPU part and exits with its result; attn_run_versions() skips every version. */
  int only_sm;
} attn_lesson;

/**
 * The whole program: parse, header, CPU part, every selected version, table, CSV, report.
 * Exit code: 0 when every version that ran passed (or was skipped); 1 when a version failed its
 * check or hit a CUDA error, or the CPU part failed; 2 for bad command-line input. Without a usable
 * GPU it says so in one line, runs the CPU part and returns its result.
 */
int attn_main(int argc, char **argv, const attn_lesson *lesson);

/**
 * Run the selected versions on a parsed problem and fill @p results (n_versions entries; versions
 * not selected get ATTN_SKIPPED with note "not selected"). @p dev must be a queried device. Prints
 * the table to @p out (NULL for silence). Returns the number of versions that failed or errored.
 */
int attn_run_versions(const attn_lesson *lesson, const attn_options *o, const attn_device *dev,
                      attn_result *results, FILE *out);

/**
 * Allocate @p n elements of type @p t on the device into *@p dst and copy @p src (fp32 on the
 * host) there, rounded to bf16 when @p t is ATTN_BF16: how the harness uploads its inputs, for a
 * custom version's setup too. Returns the first CUDA error (cudaErrorMemoryAllocation when the
 * host buffer for the conversion cannot be had); *@p dst is set once the allocation succeeded.
 */
cudaError_t attn_upload(void **dst, const float *src, size_t n, attn_dtype t);

/**
 * The memory a run of the selected versions needs before any version-specific scratch: the
 * harness's shared inputs and the reference for dense and paged versions (per dtype used), plus the
 * largest footprint() of the custom versions. Bytes on the GPU and on the host.
 */
void attn_footprint(const attn_lesson *lesson, const attn_options *o, double *device_bytes,
                    double *host_bytes);

/**
 * Refuse a problem that cannot fit: compare attn_footprint() with @p device_free and @p host_free
 * (bytes; a value <= 0 is not checked). Returns 0 when it fits; otherwise writes one line into
 * @p why with both figures and the largest size of the longest sequence axis (`--seq` or
 * `--kv-seq`) that fits, and returns -1.
 */
int attn_fits(const attn_lesson *lesson, const attn_options *o, double device_free,
              double host_free, char *why, size_t why_len);

/** Host memory available for a new allocation, in bytes (MemAvailable; 0 when unknown). */
double attn_host_available_bytes(void);

/** Short label of a status: "PASS", "FAIL", "skipped", "ERROR", "unchecked". */
const char *attn_status_name(attn_status s);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RUNNER_H */
