/**
 * @file sim.h
 * @brief Lesson 07's serving simulation: how much of the memory held for a KV cache holds tokens,
 *        under contiguous reservation and under paging, for one seeded stream of requests.
 *
 * A closed loop of @p live requests: each has a prompt and an output length drawn log-uniformly
 * (so short and long ones are equally likely per octave), generates one token per step, and when
 * it finishes a new request takes its place. At every step the simulation adds up the tokens the
 * live requests hold and the tokens' worth of memory each scheme keeps for them:
 *  - contiguous, max context: every request reserves the model's whole context up front;
 *  - contiguous, prompt + max output: it reserves its prompt and the longest output allowed;
 *  - paged, block size B: ceil(tokens / B) blocks of B, taken as the request grows.
 * Utilisation is held tokens over reserved tokens, summed over the steps.
 */
#ifndef L07_SIM_H
#define L07_SIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The request stream. */
typedef struct l07_sim_config {
  int live;        /**< requests in flight at every step */
  int steps;       /**< steps simulated */
  int prompt_min;  /**< shortest prompt */
  int prompt_max;  /**< longest prompt */
  int output_min;  /**< shortest output */
  int output_max;  /**< longest output, also what "prompt + max output" reserves */
  int max_context; /**< the model's context, what "max context" reserves */
  uint64_t seed;   /**< the stream's seed */
} l07_sim_config;

/** The block sizes the simulation measures. */
#define L07_SIM_BLOCK_SIZES 8

/** What the simulation measured. */
typedef struct l07_sim_result {
  double tokens;                              /**< token-steps held by live requests */
  double reserved_max_context;                /**< token-steps reserved, max context */
  double reserved_prompt_output;              /**< token-steps reserved, prompt + max output */
  int block_size[L07_SIM_BLOCK_SIZES];        /**< 1, 2, 4, ..., 128 */
  double reserved_paged[L07_SIM_BLOCK_SIZES]; /**< token-steps reserved, paged */
  long requests;                              /**< requests started */
} l07_sim_result;

/** Run the simulation; returns 0, or -1 for a bad configuration or no memory. */
int l07_simulate(const l07_sim_config *cfg, l07_sim_result *out);

#ifdef __cplusplus
}
#endif

#endif /* L07_SIM_H */
