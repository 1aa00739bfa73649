/**
 * @file attn_types.h
 * @brief The vocabulary every lesson shares: data types, the problem shape, tensor layouts, the
 * work model (flops and bytes), and the CUDA error-checking macros.
 *
 * Layouts (one set for all lessons):
 *  - dense Q and O: `[batch, seq_q, heads, dim]`, K and V: `[batch, seq_kv, kv_heads, dim]` (BSHD).
 *    Query head `h` reads KV head `h / (heads / kv_heads)` (GQA; MQA when kv_heads is 1).
 *  - log-sum-exp: `[batch, heads, seq_q]`, fp32, natural log.
 *  - paged cache: `[num_blocks, block_size, kv_heads, dim]`, block table `[batch, max_blocks]`,
 *    `seq_lens[batch]`.
 *
 * Causal masking is bottom-right aligned: query `i` sees key `j` when `j <= i + (seq_kv - seq_q)`.
 * A query that sees no key (only when seq_q > seq_kv) has output 0 and log-sum-exp -inf.
 */
#ifndef ATTN_TYPES_H
#define ATTN_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element type of Q, K, V and O. Accumulation is always fp32 or wider. */
typedef enum attn_dtype {
  ATTN_F32 = 0, /**< IEEE binary32 */
  ATTN_BF16 = 1 /**< bfloat16: fp32's exponent, 8 bits of significand; stored as uint16_t */
} attn_dtype;

/** Bytes per element of @p t. */
size_t attn_dtype_size(attn_dtype t);
/** "fp32" or "bf16". */
const char *attn_dtype_name(attn_dtype t);

/** One attention problem. Every field is validated by the command line (attn_cli.h). */
typedef struct attn_problem {
  int batch;      /**< sequences in the batch */
  int heads;      /**< query heads */
  int kv_heads;   /**< key/value heads; divides heads */
  int seq_q;      /**< query tokens per sequence (1 for decode) */
  int seq_kv;     /**< key/value tokens per sequence */
  int dim;        /**< head dimension */
  int causal;     /**< 1: bottom-right causal mask */
  int block_size; /**< tokens per block of a paged KV cache */
  float scale;    /**< softmax scale; 0 means 1/sqrt(dim) */
  /** [batch] keys of each sequence, each 1..seq_kv, or NULL: every sequence has seq_kv. With
   * lengths, seq_kv is their maximum and still the stride of the dense K/V layout; keys past a
   * sequence's length exist in memory but belong to nobody (the harness fills them with NaN). */
  const int *kv_lens;
} attn_problem;

/** The softmax scale in force: p->scale, or 1/sqrt(dim) when that is 0. */
float attn_scale(const attn_problem *p);

/** Number of (query, key) pairs the mask lets through, over the whole problem. */
double attn_visible_pairs(const attn_problem *p);

/** Keys visible to query row @p i (0-based) of a sequence: the causal window, or seq_kv. */
int attn_visible_keys(const attn_problem *p, int i);

/** Keys of sequence @p b: p->kv_lens[b], or seq_kv without lengths. */
int attn_kv_len(const attn_problem *p, int b);

/** Keys visible to query row @p i of sequence @p b: attn_visible_keys() with that sequence's
 * length (the causal window's bottom-right corner sits at its last key). */
int attn_visible_keys_in(const attn_problem *p, int b, int i);

/** The keys of every sequence added up: batch * seq_kv without lengths. */
double attn_total_kv(const attn_problem *p);

/** p->kv_lens written compactly into @p buf ("131072,1024x31": a run of equal lengths as NxCOUNT),
 * or "" without lengths; truncated to @p len. Returns @p buf. */
char *attn_kv_lens_str(const attn_problem *p, char *buf, size_t len);

/** Floating-point work of the forward pass: 4 * dim flops per visible (query, key) pair
 *  (2*dim for QK^T, 2*dim for PV). Causal counts only visible pairs, about half for seq_q ==
 * seq_kv. */
double attn_flops(const attn_problem *p);

/** The fewest bytes a forward pass must move through device memory: Q, K, V read once, O written
 *  once, all in @p t, plus the fp32 log-sum-exp when @p with_lse. */
double attn_min_bytes(const attn_problem *p, attn_dtype t, int with_lse);

/** Elements of Q (and of O). */
size_t attn_q_elems(const attn_problem *p);
/** Elements of K (and of V). */
size_t attn_kv_elems(const attn_problem *p);
/** Rows of O and entries of the log-sum-exp: batch * heads * seq_q. */
size_t attn_rows(const attn_problem *p);

/** Report a failed CUDA call on stderr as `file:line: call: error-name: message`. */
void attn_cuda_report(cudaError_t err, const char *call, const char *file, int line);

/** Evaluate a CUDA runtime call; on failure report it with file and line and return the error from
 *  the enclosing function (which must return cudaError_t). For launchers and harness code. */
#define ATTN_TRY(call)                                        \
  do {                                                        \
    cudaError_t attn_err_ = (call);                           \
    if (attn_err_ != cudaSuccess) {                           \
      attn_cuda_report(attn_err_, #call, __FILE__, __LINE__); \
      return attn_err_;                                       \
    }                                                         \
  } while (0)

/** After a kernel launch: report and return a launch-configuration error, with file and line. */
#define ATTN_TRY_LAUNCH() ATTN_TRY(cudaGetLastError())

/** Evaluate a CUDA runtime call where failure is fatal (tests, programs' setup): report and
 * exit(1). */
#define ATTN_CHECK(call)                                      \
  do {                                                        \
    cudaError_t attn_err_ = (call);                           \
    if (attn_err_ != cudaSuccess) {                           \
      attn_cuda_report(attn_err_, #call, __FILE__, __LINE__); \
      exit(1);                                                \
    }                                                         \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif /* ATTN_TYPES_H */
