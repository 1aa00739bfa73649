/**
 * @file decode_loop.h
 * @brief Lesson 07's decode loop: sequences arrive with a prompt, generate a token per step, fork
 *        now and then (parallel sampling) and finish, over one cache; every step's attention is
 *        computed through the block table and checked against a dense copy of each sequence.
 *
 * This is the CPU run of the loop: the cache manager hands out slots and copy-on-write copies, the
 * pool is written through them, and decode reads it through the table (l07_kv_offset()), while a
 * shadow keeps every sequence's K and V in one dense array to check against. At the end every
 * block must be back on the free list.
 */
#ifndef L07_DECODE_LOOP_H
#define L07_DECODE_LOOP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The loop's workload. */
typedef struct l07_loop_config {
  int max_live;   /**< sequences in flight at most */
  int steps;      /**< decode steps */
  int prompt_min; /**< shortest prompt */
  int prompt_max; /**< longest prompt */
  int output_min; /**< fewest tokens a sequence generates */
  int output_max; /**< most tokens a sequence generates */
  int fork_every; /**< a live sequence forks every this many steps (0: never) */
  int heads;      /**< query heads */
  int kv_heads;   /**< key/value heads */
  int dim;        /**< head dimension */
  int block_size; /**< tokens per block */
  int num_blocks; /**< blocks in the pool */
  int check_pool; /**< GPU loop only: after each step's writes, read the pool back and compare
                       every live token's K and V through the table with the dense copy (slow) */
  uint64_t seed;  /**< the workload's seed */
} l07_loop_config;

/** What the loop did. */
typedef struct l07_loop_result {
  long steps;      /**< steps run */
  long tokens;     /**< query rows decoded (one per live sequence per step) */
  long started;    /**< sequences started (forks included) */
  long finished;   /**< sequences finished */
  long copies;     /**< copy-on-write block copies */
  long refused;    /**< appends or forks refused for want of blocks (retried later) */
  double max_abs;  /**< largest |O - dense reference| over every decoded row */
  int free_at_end; /**< free blocks after every sequence closed */
} l07_loop_result;

/** Run the loop on the CPU. Returns 0 when it ran (check out->max_abs and out->free_at_end), -1
 * for a bad configuration or no memory. */
int l07_decode_loop_cpu(const l07_loop_config *cfg, l07_loop_result *out);

#ifdef __cplusplus
}
#endif

#endif /* L07_DECODE_LOOP_H */
