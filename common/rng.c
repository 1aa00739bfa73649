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

/* The LCG's multiplier: state' = state * PCG_MULT + inc. */
#define PCG_MULT 6364136223846793005ULL

uint32_t attn_rng_u32(attn_rng *r) {
  uint64_t old = r->state;
  r->state = old * PCG_MULT + r->inc;
  uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
  uint32_t rot = (uint32_t)(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

void attn_rng_advance(attn_rng *r, uint64_t delta) {
  /* k steps of state' = a state + c are state * a^k + c (a^(k-1) + ... + 1). Build both factors
   * by squaring: (a, c) for one step, (a^2, (a + 1) c) for two, and so on, taking the powers the
   * bits of delta name (Brown, "Random number generation with arbitrary strides", 1994). */
  uint64_t mult = PCG_MULT, plus = r->inc, acc_mult = 1u, acc_plus = 0u;
  while (delta > 0u) {
    if (delta & 1u) {
      acc_mult *= mult;
      acc_plus = acc_plus * mult + plus;
    }
    plus = (mult + 1u) * plus;
    mult *= mult;
    delta >>= 1u;
  }
  r->state = acc_mult * r->state + acc_plus;
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

/* Values per piece of a fill: each piece starts its own copy of the stream, advanced to the piece's
 * first value, so that the pieces can be drawn in parallel and the values are the same as one
 * sequential draw. */
#define FILL_PIECE ((size_t)1 << 16)

/* Uniform values in [lo, hi), rounded to bf16 when @p round_bf16. */
static void fill_pieces(float *x, size_t n, float lo, float hi, uint64_t seed, uint64_t stream,
                        int round_bf16) {
  attn_rng base;
  attn_rng_seed(&base, seed, stream);
  const long pieces = (long)((n + FILL_PIECE - 1) / FILL_PIECE);
#pragma omp parallel for schedule(static) if (pieces > 1)
  for (long p = 0; p < pieces; ++p) {
    attn_rng r = base;
    const size_t i0 = (size_t)p * FILL_PIECE, i1 = n - i0 < FILL_PIECE ? n : i0 + FILL_PIECE;
    attn_rng_advance(&r, i0);
    for (size_t i = i0; i < i1; ++i) {
      const float u = lo + (hi - lo) * attn_rng_uniform(&r);
      x[i] = round_bf16 ? attn_round_bf16(u) : u;
    }
  }
}

void attn_fill_uniform(float *x, size_t n, float lo, float hi, uint64_t seed, uint64_t stream) {
  fill_pieces(x, n, lo, hi, seed, stream, 0);
}

void attn_fill_attention_input(float *x, size_t n, uint64_t seed, uint64_t stream) {
  fill_pieces(x, n, -0.75f, 1.25f, seed, stream, 1);
}
