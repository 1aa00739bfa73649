/**
 * @file ring_attention.h
 * @brief Lesson 08: ring attention. One sequence sharded over several GPUs (or several virtual
 *        ranks on one GPU); the key/value blocks travel around a ring while every rank computes its
 *        queries against the block in hand, and the partial (O, log-sum-exp) states merge exactly
 * as lessons 02 and 06 merge them.
 *
 * The versions (the program's table, `./run --help`):
 *  1. one-gpu: the whole sequence on one GPU by the forward kernel the ring uses (lesson 05's
 *     version 5 on sm_90 where it is built, else lesson 04's version 7): the yardstick.
 *  2. ring-serial: contiguous shards; each step computes, then sends and receives on the same
 *     stream, so every transfer waits for the compute before it and delays the compute after it.
 *  3. ring-overlap: the send and receive on a stream of their own, into a second buffer, while the
 *     compute runs on the block in hand.
 *  4. ring-zigzag: version 3 on the zig-zag layout (ring_plan.h), which gives every rank the same
 *     causal work at every step.
 *
 * Layouts: Q, K, V, O are `[batch, seq, heads, dim]` bf16, the log-sum-exp `[batch, heads, seq]`
 * fp32, as in every lesson; a rank stores each of its chunks as a tensor of that layout with the
 * chunk's length for seq. Self-attention only: the keys are the queries' own tokens
 * (seq_q == seq_kv), causal means query i sees keys 0..i.
 */
#ifndef L08_RING_ATTENTION_H
#define L08_RING_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "attn_runner.h"
#include "ring_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Number of versions in the lesson. */
#define L08_VERSIONS 4

/* ---- The CPU model ---------------------------------------------------------------------------
 */

/** What l08_cpu_attention() is asked to model, and what it counted. */
typedef struct l08_cpu_ring {
  int ranks;         /**< p, 1..L08_MAX_RANKS */
  l08_layout layout; /**< how the sequence is cut */
  int reverse_merge; /**< 1: merge the steps' states in the opposite order (the result must not
                          change beyond rounding: the merge is associative and commutative) */
  long pairs_full;   /**< out: (query chunk, key chunk) pairs computed without the mask */
  long pairs_diag;   /**< out: pairs computed with the bottom-right mask */
  long pairs_skip;   /**< out: pairs skipped */
} l08_cpu_ring;

/**
 * The ring on the CPU, in fp32: every rank's chunks against every block it holds, step by step in
 * ring order, each (chunk, chunk) pair's partial (O, log-sum-exp) computed by a plain softmax over
 * its keys and merged into the rank's running state with lesson 06's l06_merge(); then the
 * ranks' outputs written back to the whole sequence's layout. An attn_cpu_attention_fn: @p ctx is
 * an l08_cpu_ring. Needs seq_q == seq_kv and no lengths per sequence.
 * @return 0, -1 when memory runs out, -2 for a problem it does not model
 */
int l08_cpu_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx);

/* ---- The ring on GPUs -------------------------------------------------------------------------
 */

/** How the steps are scheduled: the difference between versions 2 and 3. */
typedef enum l08_schedule {
  L08_SERIAL = 0, /**< compute, then send/receive, on one stream per rank */
  L08_OVERLAP = 1 /**< send/receive on a second stream, into a second buffer, under the compute */
} l08_schedule;

/** How a block moves from one rank to the next. */
typedef enum l08_transport {
  L08_TRANSPORT_AUTO =
      0, /**< NCCL when it is built in and every rank has its own GPU, else copies */
  L08_TRANSPORT_COPY = 1, /**< cudaMemcpyPeerAsync (a plain device-to-device copy on one GPU) */
  L08_TRANSPORT_NCCL = 2  /**< ncclSend / ncclRecv in a group, one communicator per rank */
} l08_transport;

/** A ring to build. */
typedef struct l08_ring_config {
  int batch;         /**< sequences */
  int heads;         /**< query heads */
  int kv_heads;      /**< key/value heads, dividing heads */
  int seq;           /**< tokens of the whole sequence (queries and keys) */
  int dim;           /**< head dimension, 64 or 128 */
  int causal;        /**< 1: query i sees keys 0..i */
  float scale;       /**< softmax scale; 0 means 1/sqrt(dim) */
  int ranks;         /**< p, 1..L08_MAX_RANKS */
  int gpus;          /**< 1: every rank on device first_device (virtual ranks); p: rank r on device
                          first_device + r */
  int first_device;  /**< the CUDA device of rank 0 */
  l08_layout layout; /**< contiguous or zig-zag */
  l08_schedule schedule;   /**< serial or overlap */
  l08_transport transport; /**< how blocks move */
} l08_ring_config;

/** One rank's timestamps of one step, in ms from the moment its streams could start (the events
 * of the last l08_ring_run()). -1 where nothing ran (no compute for a skipped block, no exchange
 * after the last step). */
typedef struct l08_step_times {
  float compute_start;  /**< the step's kernels and merges begin */
  float compute_end;    /**< and end */
  float exchange_start; /**< its send and receive begin */
  float exchange_end;   /**< and end */
} l08_step_times;

/** The ring itself (buffers on every rank's device, streams, events, communicators). */
typedef struct l08_ring l08_ring;

/**
 * Build a ring: check the configuration, allocate every rank's buffers on its device, create the
 * streams, events and (for NCCL) communicators.
 * @param out   the ring, or NULL on failure
 * @param cfg   what to build
 * @param why   on failure, one line saying why (a configuration the ring refuses, NCCL missing)
 * @param why_len its size
 * @return cudaSuccess; cudaErrorInvalidValue for a refused configuration (with @p why);
 *         cudaErrorMemoryAllocation; or the first CUDA error
 */
cudaError_t l08_ring_create(l08_ring **out, const l08_ring_config *cfg, char *why, size_t why_len);

/** Free everything; NULL is fine. Leaves the current device as it found it. */
void l08_ring_destroy(l08_ring *r);

/** The configuration the ring was built with (transport resolved: never AUTO). */
const l08_ring_config *l08_ring_get_config(const l08_ring *r);

/**
 * Copy the whole sequence's bf16 inputs from the host into the ranks' chunks.
 * @param r the ring
 * @param q `[batch, seq, heads, dim]` bf16 bits
 * @param k,v `[batch, seq, kv_heads, dim]` bf16 bits
 */
cudaError_t l08_ring_scatter(l08_ring *r, const uint16_t *q, const uint16_t *k, const uint16_t *v);

/** Fill every rank's output and log-sum-exp with the poison pattern (attn_poison) and wait. */
cudaError_t l08_ring_poison(l08_ring *r);

/**
 * Run the ring once. Every rank's streams first wait for the work enqueued so far on @p after
 * (a stream of rank 0's device, or 0 for none), and @p after then waits for every rank: timing
 * @p after with events measures the whole ring. Returns without waiting for the GPUs.
 */
cudaError_t l08_ring_run(l08_ring *r, cudaStream_t after);

/**
 * Copy the ranks' outputs back into the whole sequence's layout on the host (waits for the ring).
 * @param r   the ring
 * @param o   `[batch, seq, heads, dim]` bf16 bits
 * @param lse `[batch, heads, seq]` fp32; may be NULL
 */
cudaError_t l08_ring_gather(const l08_ring *r, uint16_t *o, float *lse);

/** The timestamps of rank @p rank at step @p step of the last run (after l08_ring_gather() or a
 * synchronisation); zeros for indices out of range. */
l08_step_times l08_ring_step_times(const l08_ring *r, int rank, int step);

/**
 * Time one exchange of a block on its own (no compute), @p iters times, and return the median in
 * ms through @p ms: what the link costs per step at this shard length.
 */
cudaError_t l08_ring_time_exchange(l08_ring *r, int iters, float *ms);

/** Bytes one rank sends at one step: the largest block's keys and values. */
double l08_ring_block_bytes(const l08_ring *r);

/** 1 when this build has NCCL (found by CMake), else 0. */
int l08_have_nccl(void);

/** The forward kernel the ring (and version 1) uses on device @p device, e.g. "lesson 05 v5
 * (overlap)"; NULL when none can run there. */
const char *l08_kernel_name(int device, int dim);

/**
 * The forward kernel on one device: l04_launch_fn's parameters; the kernel is lesson 05's version
 * 5 on an sm_90 GPU where this build has lesson 05, else lesson 04's version 7.
 */
cudaError_t l08_forward(const void *q, const void *k, const void *v, void *o, float *lse, int batch,
                        int heads, int kv_heads, int seq_q, int seq_kv, int dim, int causal,
                        float scale, cudaStream_t stream);

/** Version 1 as the harness's dense launcher: l08_forward() on the harness's buffers. */
cudaError_t l08_one_gpu(const attn_problem *p, const attn_args *a, cudaStream_t stream);

/* ---- Kernels of the merge (merge.cu) ----------------------------------------------------------
 */

/** Start a running state: O = 0 and log-sum-exp = -inf for @p rows rows of @p dim (the empty
 * state, which any merge replaces). */
cudaError_t l08_state_init(float *o_acc, float *lse_acc, size_t rows, int dim, cudaStream_t stream);

/**
 * Merge a partial state into the running one, row by row: the pair (O_part, lse_part) that the
 * forward kernel wrote for one (query chunk, key chunk) pair, into (O_acc, lse_acc), with the rule
 * of lesson 06's l06_merge(). Layouts: O `[batch, len, heads, dim]` (partial bf16, running
 * fp32), log-sum-exp `[batch, heads, len]`.
 */
cudaError_t l08_state_merge(float *o_acc, float *lse_acc, const void *o_part, const float *lse_part,
                            int batch, int len, int heads, int dim, cudaStream_t stream);

/** The running state's O in bf16 (`[batch, len, heads, dim]`), the rank's final output. */
cudaError_t l08_state_finish(const float *o_acc, void *o, size_t elems, cudaStream_t stream);

/** The lesson's table for attn_main(). */
extern const attn_lesson l08_lesson;

/**
 * The ranks and GPUs the versions use (main.c sets them from `--ranks` and `--gpus` before
 * attn_main()).
 * @param ranks p, 1..L08_MAX_RANKS
 * @param gpus  1 (virtual ranks on one GPU) or p; 0: p when that many GPUs are visible, else 1
 */
void l08_set_ranks(int ranks, int gpus);

#ifdef __cplusplus
}
#endif

#endif /* L08_RING_ATTENTION_H */
