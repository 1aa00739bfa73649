/**
 * @file attn_rng.h
 * @brief A small seeded random generator (PCG32, O'Neill 2014) and the input fills built on it.
 *
 * Every stream is fully determined by (seed, stream id), so Q, K and V drawn on separate streams do
 * not change when another tensor's size changes.
 */
#ifndef ATTN_RNG_H
#define ATTN_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** PCG32 state: 64-bit LCG state plus an odd increment that selects the stream. */
typedef struct attn_rng {
  uint64_t state; /**< the LCG state */
  uint64_t inc;   /**< odd increment: the stream */
} attn_rng;

/** Seed @p r for (@p seed, @p stream). */
void attn_rng_seed(attn_rng *r, uint64_t seed, uint64_t stream);
/** Next 32 random bits. */
uint32_t attn_rng_u32(attn_rng *r);
/** Move @p r forward by @p delta draws of attn_rng_u32() at once (O(log delta) steps): the fills
 * use it to draw the pieces of one stream in parallel. */
void attn_rng_advance(attn_rng *r, uint64_t delta);
/** Uniform in [0, 1), 24 random bits. */
float attn_rng_uniform(attn_rng *r);
/** Uniform integer in [0, n), unbiased; n > 0. */
uint32_t attn_rng_below(attn_rng *r, uint32_t n);

/** Fill @p x with uniform values in [lo, hi). */
void attn_fill_uniform(float *x, size_t n, float lo, float hi, uint64_t seed, uint64_t stream);

/** The lessons' attention inputs: uniform in [-1, 1) plus 0.25, so the data is not centred on zero
 *  (an error that only flips signs or drops a constant cannot cancel out), then rounded to the
 * nearest bf16 value. Every value is then exactly representable in fp32 and bf16, so fp32 and bf16
 * kernels see the same numbers and one double-precision reference serves both. */
void attn_fill_attention_input(float *x, size_t n, uint64_t seed, uint64_t stream);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RNG_H */
