/**
 * @file attn_timer.h
 * @brief Timing a launch: CUDA events, warm-up, the median of N runs, the L2 flushed before each.
 *
 * The L2 is flushed between runs (outside the timed events) by a kernel that reads a zeroed scratch
 * buffer twice the L2's size, so every timed run reads its inputs from HBM, as it would in a model
 * where other layers ran in between, and finds only clean lines to evict.
 */
#ifndef ATTN_TIMER_H
#define ATTN_TIMER_H

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Something to time: enqueue one run on @p stream; return cudaSuccess or the error. */
typedef cudaError_t (*attn_launch_thunk)(void *ctx, cudaStream_t stream);

/** Result of attn_time(), in milliseconds. */
typedef struct attn_timing {
  double median_ms; /**< median of the timed runs */
  double min_ms;    /**< fastest run */
  double max_ms;    /**< slowest run */
  int iters;        /**< timed runs */
} attn_timing;

/**
 * Time @p fn: @p warmup untimed runs, then @p iters timed runs, each between two events, with the
 * L2 flushed before each when @p flush_l2. Returns the first CUDA error (the launch's or a
 * runtime's).
 */
cudaError_t attn_time(attn_launch_thunk fn, void *ctx, cudaStream_t stream, int warmup, int iters,
                      int flush_l2, attn_timing *out);

/** Evict the L2 by reading a zeroed scratch buffer of twice its size (allocated once), leaving it
 *  full of clean lines. */
cudaError_t attn_flush_l2(cudaStream_t stream);

/** Fill @p bytes of device memory at @p dptr with the poison byte (see attn_verify.h). */
cudaError_t attn_poison(void *dptr, size_t bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_TIMER_H */
