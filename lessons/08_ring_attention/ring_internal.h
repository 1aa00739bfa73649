/**
 * @file ring_internal.h
 * @brief What the ring's driver (ring.cu) shares with the versions' schedules (v2-v4): the ring's
 *        state and the two moves of a step. Not part of the lesson's API.
 */
#ifndef L08_RING_INTERNAL_H
#define L08_RING_INTERNAL_H

#include <cuda_runtime.h>

#include "ring_attention.h"

#ifndef L08_HAVE_NCCL
/** 1 when CMake found NCCL and compiled the ring against it (it then defines this), else 0. */
#define L08_HAVE_NCCL 0
#endif
#if L08_HAVE_NCCL
#include <nccl.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** The forward kernel of lesson 05 the ring uses on sm_90: version 5 (intra-warpgroup overlap). */
#define L08_L05_VERSION 5
/** The forward kernel of lesson 04 the ring uses elsewhere: version 7 (tiles). */
#define L08_L04_VERSION 7

/** The events of one step of one rank: the timeline's stamps, which the schedules also wait on. */
enum {
  L08_EV_COMPUTE_START = 0,
  L08_EV_COMPUTE_END, /**< the step's compute is done: its block and its buffer are free */
  L08_EV_EXCHANGE_START,
  L08_EV_EXCHANGE_END, /**< the next block has arrived */
  L08_EV_READY,        /**< copies only: this rank's stream has reached the exchange */
  L08_EV_COUNT
};

/** One rank: its device, its tokens, its buffers (ring.cu says what each holds), streams, events.
 */
typedef struct l08_rank {
  int device;           /**< its CUDA device */
  l08_shard shard;      /**< the tokens it holds */
  cudaStream_t compute; /**< the kernels and merges of its steps */
  cudaStream_t comm;    /**< its sends and receives (versions 3-4) */
  void *q;              /**< its query chunks, bf16, back to back */
  void *own;            /**< its own key/value block (K chunks, then V chunks) */
  void *kv[2];          /**< the two buffers the other ranks' blocks arrive in, in turn */
  float *o_acc;         /**< the running O of its chunks, fp32 */
  float *lse_acc;       /**< the running log-sum-exp of its chunks */
  void *o_part;         /**< one pair's O as the forward kernel writes it, bf16 */
  float *lse_part;      /**< that pair's log-sum-exp */
  void *o;              /**< its final output, bf16 */
  float *lse;           /**< its final log-sum-exp */
  cudaEvent_t ev[L08_MAX_RANKS][L08_EV_COUNT]; /**< per step: the L08_EV_* stamps */
  cudaEvent_t t0;   /**< the start of its part of a run (the timeline's zero) */
  cudaEvent_t done; /**< its part of a run is finished */
#if L08_HAVE_NCCL
  ncclComm_t nccl; /**< its NCCL communicator */
#endif
} l08_rank;

/** The ring. */
struct l08_ring {
  l08_ring_config cfg;          /**< as built (transport resolved) */
  l08_rank rank[L08_MAX_RANKS]; /**< its ranks */
  cudaEvent_t start;            /**< on rank 0's device: the caller's stream reached the run */
  int ran_steps;                /**< steps whose events the last run recorded (0: none) */
};

/** Rank @p rank's compute at step @p step, on its compute stream: every pair of its query chunks
 *  and the block's key chunks that the mask does not skip, each a forward kernel and a merge. The
 *  caller has made the stream wait for the block. */
cudaError_t l08_compute_step(l08_ring *r, int rank, int step);

/** Every rank sends the block it holds at @p step on and receives the next one, on its comm
 *  stream (@p on_comm) or its compute stream. On the comm stream, each rank first waits for its
 *  compute of step - 1 (the buffer the next block lands in). */
cudaError_t l08_exchange(l08_ring *r, int step, int on_comm);

/** The start of a run: every rank's streams wait for @p after (0: nothing) and stamp t0. */
cudaError_t l08_run_begin(l08_ring *r, cudaStream_t after);

/** The end of a run: every rank's output in bf16, and @p after waits for every rank. */
cudaError_t l08_run_end(l08_ring *r, cudaStream_t after);

/** Version 2's schedule (v2_ring_serial.cu): each step computes, then exchanges, on one stream.
 *  @p after as in l08_ring_run(). */
cudaError_t l08_run_serial(l08_ring *r, cudaStream_t after);
/** Version 3's schedule (v3_ring_overlap.cu): the exchange on the comm stream under the compute.
 *  @p after as in l08_ring_run(). */
cudaError_t l08_run_overlap(l08_ring *r, cudaStream_t after);
/** Version 4's schedule (v4_ring_zigzag.cu): version 3's, on zig-zag shards. @p after as in
 *  l08_ring_run(). */
cudaError_t l08_run_zigzag(l08_ring *r, cudaStream_t after);

#ifdef __cplusplus
}
#endif

#endif /* L08_RING_INTERNAL_H */
