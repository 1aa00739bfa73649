/* PCG32 (O'Neill, "PCG: A Family of Simple Fast Space-Efficient Statistically Good Algorithms for
 * Random Number Generation", 2014): a 64-bit LCG whose output is a permuted 32-bit slice. */
#include "attn_rng.h"

#include "attn_bf16.h"

void attn_rng_seed(attn_rng *r, uint64_t seed, uint64_t stream) {
  r->state = 0u;
  r->inc = (stream << 1u) | 1u; /* any odd increment selects an independent stream */
  (void)attn_rng_u32(r);
  r->state += seed;
  (void)attn_rng_u32(r);
}

uint32_t attn_rng_u32(attn_rng *r) {
  uint64_t old = r->state;
  r->state = old * 6364136223846793005ULL + r->inc;
  uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
  uint32_t rot = (uint32_t)(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

float attn_rng_uniform(attn_rng *r) {
  return (float)(attn_rng_u32(r) >> 8) * (1.0f / 16777216.0f);
}

uint32_t attn_rng_below(attn_rng *r, uint32_t n) {
  /* Reject the top partial range so every residue is equally likely. */
  uint32_t threshold = (uint32_t)(-n) % n;
  for (;;) {
    uint32_t x = attn_rng_u32(r);
    if (x >= threshold) return x % n;
  }
}

void attn_fill_uniform(float *x, size_t n, float lo, float hi, uint64_t seed, uint64_t stream) {
  attn_rng r;
  attn_rng_seed(&r, seed, stream);
  for (size_t i = 0; i < n; ++i) x[i] = lo + (hi - lo) * attn_rng_uniform(&r);
}

void attn_fill_attention_input(float *x, size_t n, uint64_t seed, uint64_t stream) {
  attn_fill_uniform(x, n, -0.75f, 1.25f, seed, stream);
  for (size_t i = 0; i < n; ++i) x[i] = attn_round_bf16(x[i]);
}
