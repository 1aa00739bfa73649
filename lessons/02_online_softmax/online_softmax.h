/**
 * @file online_softmax.h
 * @brief Lesson 02: row softmax from naive to one streaming pass, and the attention (m, l, O)
 * state.
 *
 * The softmax versions work on an fp32 matrix `[rows, cols]`, row-major, one softmax per row. The
 * lesson maps the shared command line onto it as attention does: a row is one query's scores over
 * the keys, so
 *
 *     rows = batch * heads * seq      (one per query row, in the order of O's rows)
 *     cols = kv-seq                   (one per key)
 *
 * and the lesson's default, `--batch 1 --heads 16 --seq 1024 --kv-seq 4096`, is 16384 x 4096.
 * With `--causal`, entry (r, j) of query i = (r / heads) % seq is -inf when key j is hidden from it
 * (bottom-right alignment, as in attn_types.h); a row that sees no key is all -inf and its softmax
 * is defined as all zeros.
 *
 * Every launcher takes device pointers, enqueues on @p stream, returns the first error and never
 * exits. A row may be any length >= 1 unless the version's supports function says otherwise.
 */
#ifndef L02_ONLINE_SOFTMAX_H
#define L02_ONLINE_SOFTMAX_H

#include <stddef.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The largest matrix the lesson builds: 2^32 elements (16 GiB of fp32 in, as much out). */
#define L02_MAX_ELEMS ((size_t)1 << 32)

/** float4 values each thread of versions 6 and 7 keeps in registers. */
#define L02_REG_VECS 8
/** The most threads one row gets in versions 6 and 7. */
#define L02_MAX_THREADS 1024
/** Longest row version 6 holds in registers: 1024 threads x 8 float4 = 32768 floats (128 KiB). */
#define L02_REGS_MAX_COLS (L02_MAX_THREADS * L02_REG_VECS * 4)
/** float4 values each thread of version 7 keeps in shared memory, beside those in registers. */
#define L02_SMEM_VECS 8
/** Longest row version 7 holds: 1024 threads x (8 + 8) float4 = 65536 floats (256 KiB). */
#define L02_SMEM_MAX_COLS (L02_MAX_THREADS * (L02_REG_VECS + L02_SMEM_VECS) * 4)

/** Largest head dimension the attention version keeps in registers (8 values per lane). */
#define L02_SPLIT_MAX_DIM 256
/** Warps that share one query's keys in the attention version. */
#define L02_SPLIT_WARPS 8

/**
 * A row-softmax launcher: y[r, :] = softmax(x[r, :]) for every row r.
 * @param x      device input `[rows, cols]`, fp32, row-major
 * @param y      device output `[rows, cols]`
 * @param rows   number of rows, >= 0
 * @param cols   row length, >= 1
 * @param stream the stream to enqueue on
 * @return cudaSuccess or the first CUDA error
 */
typedef cudaError_t (*l02_softmax_launch_fn)(const float *x, float *y, int rows, int cols,
                                             cudaStream_t stream);

/** v1: one thread per row, exp / sum / divide with no max subtraction: overflows for scores above
 *  ln(FLT_MAX) = 88.7. @copydetails l02_softmax_launch_fn */
cudaError_t l02_softmax_v1_naive(const float *x, float *y, int rows, int cols, cudaStream_t stream);
/** v2: one thread per row, three passes (max, sum, normalise).
 *  @copydetails l02_softmax_launch_fn */
cudaError_t l02_softmax_v2_safe_thread(const float *x, float *y, int rows, int cols,
                                       cudaStream_t stream);
/** v3: one warp per row, three passes, reductions by __shfl_xor_sync.
 *  @copydetails l02_softmax_launch_fn */
cudaError_t l02_softmax_v3_safe_warp(const float *x, float *y, int rows, int cols,
                                     cudaStream_t stream);
/** v4: one block per row, three passes, warp shuffles then shared memory across warps.
 *  @copydetails l02_softmax_launch_fn */
cudaError_t l02_softmax_v4_safe_block(const float *x, float *y, int rows, int cols,
                                      cudaStream_t stream);
/** v5: one block per row, the online (m, l) in one pass, then normalise: two reads, not three.
 *  @copydetails l02_softmax_launch_fn */
cudaError_t l02_softmax_v5_online_block(const float *x, float *y, int rows, int cols,
                                        cudaStream_t stream);
/** v6: one block per row holding the row in registers, 16-byte loads: one read, one write. Needs
 *  cols a multiple of 4 and at most L02_REGS_MAX_COLS (l02_softmax_v6_supports()).
 *  @copydetails l02_softmax_launch_fn */
cudaError_t l02_softmax_v6_online_regs(const float *x, float *y, int rows, int cols,
                                       cudaStream_t stream);
/** v7: as v6, with half of each thread's share staged in shared memory by cp.async, so two long
 * rows fit on one SM. Needs cols a multiple of 4 and at most L02_SMEM_MAX_COLS
 *  (l02_softmax_v7_supports()). @copydetails l02_softmax_launch_fn */
cudaError_t l02_softmax_v7_regs_smem(const float *x, float *y, int rows, int cols,
                                     cudaStream_t stream);

/** Why v6 cannot run rows of length @p cols, or NULL when it can.
 *  @param cols row length
 *  @return a static string, or NULL */
const char *l02_softmax_v6_supports(int cols);
/** Why v7 cannot run rows of length @p cols, or NULL when it can.
 *  @param cols row length
 *  @return a static string, or NULL */
const char *l02_softmax_v7_supports(int cols);
/** Threads per row (one block) that v6 launches for rows of length @p cols: enough for 8 float4
 *  each, a multiple of 32, at least 32.
 *  @param cols row length (a multiple of 4, at most L02_REGS_MAX_COLS)
 *  @return the block size */
int l02_softmax_v6_threads(int cols);
/** Threads per row that v7 launches: enough for 8 + 8 float4 each, a multiple of 32, at least 32.
 *  @param cols row length (a multiple of 4, at most L02_SMEM_MAX_COLS)
 *  @return the block size */
int l02_softmax_v7_threads(int cols);

/**
 * v8, the attention form: one block per query row; the row's keys are split into L02_SPLIT_WARPS
 * contiguous ranges, one per warp; each warp streams its keys through the online (m, l, O) update,
 * and the warps' states are merged through shared memory. With seq_q = 1 this is decode, and the
 * split is flash-decoding's, inside one block. Writes O and the log-sum-exp.
 * @param p      the problem (any batch, heads, GQA, seq_q, seq_kv, causal; dim <=
 * L02_SPLIT_MAX_DIM)
 * @param a      device pointers (q, k, v, o, lse), fp32, dense layouts of attn_types.h
 * @param stream the stream to enqueue on
 * @return cudaSuccess or the first CUDA error
 */
cudaError_t l02_attn_v8_decode_split(const attn_problem *p, const attn_args *a,
                                     cudaStream_t stream);
/** Why v8 cannot run @p p, or NULL.
 *  @param p the problem
 *  @return a static string, or NULL */
const char *l02_attn_v8_supports(const attn_problem *p);

/** The inputs the lesson makes. */
typedef enum l02_softmax_data {
  /** uniform in [-4, 4): every exp fits in fp32, so even the naive version is right */
  L02_DATA_SMALL = 0,
  /** the table's data: uniform in [-8, 8), and every eighth row (r % 8 == 7) shifted by an offset
   *  drawn from [-1e4, 1e4], where exp overflows (or underflows to 0 for the whole row) */
  L02_DATA_SCORES = 1,
  /** the tests' data: uniform in [-8, 8) with one entry in 16 drawn from [-1e4, 1e4] and one in 16
   *  masked (-inf); every fifth row (r % 5 == 4) fully masked */
  L02_DATA_WILD = 2
} l02_softmax_data;

/** What a softmax version brings beside its row of the lesson's table (which names it and points
 *  its attn_version::user here). */
typedef struct l02_softmax_variant {
  l02_softmax_launch_fn launch;      /**< the launcher */
  const char *(*supports)(int cols); /**< NULL when every row length runs */
  l02_softmax_data data;             /**< the data the lesson's table gives it */
  /** passes over the input in the work model (each pass reads the whole matrix from HBM); every
   *  version writes it once */
  int reads;
} l02_softmax_variant;

/** Number of softmax versions (versions 1..7 of the lesson). */
#define L02_N_VARIANTS 7
/** The softmax versions, in the lesson's order: entry i is version i + 1 of l02_lesson. */
extern const l02_softmax_variant l02_softmax_variants[L02_N_VARIANTS];

/** Why the softmax version @p var cannot run @p p (l02_softmax_shape_supports(), then the
 *  variant's own limit on the row length), or NULL when it can.
 *  @param var the version
 *  @param p   the problem
 *  @return a static string, or NULL */
const char *l02_softmax_variant_supports(const l02_softmax_variant *var, const attn_problem *p);

/** Rows of the softmax matrix for @p p: batch * heads * seq_q.
 *  @param p the problem
 *  @return the row count */
size_t l02_softmax_rows(const attn_problem *p);
/** Columns: seq_kv.
 *  @param p the problem
 *  @return the row length */
int l02_softmax_cols(const attn_problem *p);
/** Why the softmax versions cannot run @p p at all (too many rows or elements), or NULL.
 *  @param p the problem
 *  @return a static string, or NULL */
const char *l02_softmax_shape_supports(const attn_problem *p);

/**
 * Fill @p x (`[rows, cols]`) with the data @p kind describes, drawn from @p seed.
 * @param x    host buffer of rows * cols floats
 * @param rows row count
 * @param cols row length
 * @param kind which data
 * @param seed the run's seed
 */
void l02_softmax_fill(float *x, size_t rows, int cols, l02_softmax_data kind, uint64_t seed);

/**
 * With p->causal, write -inf over the keys each row's query cannot see (see the file comment).
 * Does nothing without p->causal.
 * @param x host matrix `[l02_softmax_rows(p), l02_softmax_cols(p)]`
 * @param p the problem
 */
void l02_softmax_mask_causal(float *x, const attn_problem *p);

/** CPU softmax of one row with no max subtraction (overflows like v1). Fully masked row: zeros.
 *  @param x input, @p n floats
 *  @param n row length
 *  @param y output, @p n floats */
void l02_softmax_row_naive_cpu(const float *x, int n, float *y);
/** CPU softmax of one row in three passes (max, sum, normalise), fp32.
 *  @param x input, @p n floats
 *  @param n row length
 *  @param y output, @p n floats */
void l02_softmax_row_safe_cpu(const float *x, int n, float *y);
/** CPU softmax of one row in one online pass (l02_online_ml_push) and a normalising pass, fp32.
 *  @param x input, @p n floats
 *  @param n row length
 *  @param y output, @p n floats */
void l02_softmax_row_online_cpu(const float *x, int n, float *y);
/** The reference: softmax of one row in double (max subtracted). Fully masked row: zeros.
 *  @param x input, @p n floats
 *  @param n row length
 *  @param y output, @p n doubles */
void l02_softmax_row_reference(const float *x, int n, double *y);

/**
 * The rows a check compares with the reference: every row when rows * cols <= 2^22, else the first,
 * the last, the first shifted row (7) and 253 more drawn with @p seed.
 * @param rows row count
 * @param cols row length
 * @param seed the run's seed
 * @param n    out: how many
 * @return a malloc'd array of row numbers, or NULL when out of memory
 */
size_t *l02_softmax_check_rows(size_t rows, int cols, uint64_t seed, size_t *n);

/**
 * Judge a softmax output: scan all of @p y for unwritten and non-finite elements, then compare the
 * listed rows with l02_softmax_row_reference(). The verdict must be initialised (attn_verdict_init)
 * and is not finished here.
 * @param v     the verdict to add to
 * @param x     host input `[rows, cols]`
 * @param y     host output `[rows, cols]`
 * @param rows  row count
 * @param cols  row length
 * @param check rows to compare
 * @param n     how many
 * @return 0, or -1 when out of memory
 */
int l02_softmax_judge(attn_verdict *v, const float *x, const float *y, size_t rows, int cols,
                      const size_t *check, size_t n);

/** Bytes a version moves through HBM in the work model: (reads + 1 write) * rows * cols * 4.
 *  @param reads passes over the input
 *  @param rows  row count
 *  @param cols  row length
 *  @return bytes */
double l02_softmax_model_bytes(int reads, size_t rows, int cols);

/** Lesson 02's CPU part: the shape mapping, the bytes table, the overflow and merge demonstrations.
 *  @param o the parsed options
 *  @return 0, or 1 when a CPU check fails */
int l02_cpu_part(const attn_options *o);
/** Lesson 02's report after the table: bandwidth per version against HBM, and the naive version
 *  overflowing on the GPU.
 *  @param o       the parsed options
 *  @param dev     the device, or NULL without a GPU
 *  @param results the table's results
 *  @param n       how many
 *  @return 0, or 1 when the GPU demonstration does not behave as documented */
int l02_report(const attn_options *o, const attn_device *dev, const attn_result *results, int n);

/** The lesson: versions 1-7 (softmax, ATTN_CUSTOM) and 8 (attention, ATTN_DENSE). */
extern const attn_lesson l02_lesson;

#ifdef __cplusplus
}
#endif

#endif /* L02_ONLINE_SOFTMAX_H */
