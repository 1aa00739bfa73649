/** @file
 * @brief Where versions 6 and 7 keep their FP8 tensors in the workspace, shared by the conversion
 * kernels (fp8_quant.cu, fp8_quant_tiles.cu, with the steps they share in fp8_convert.cuh) and the
 * attention kernels (v6_fp8.cu, v7_fp8_tiles.cu).
 *
 * [0, 16): the largest |x| of Q, K and V as float bits (atomicMax on the bits orders non-negative
 * floats correctly); then, each at a 256-byte boundary, Q in e4m3 [batch, seq_q, heads, dim], K in
 * e4m3 [batch, seq_kv, kv_heads, dim], and V transposed, [batch, kv_heads, dim, keys], its keys
 * padded with zeros to a multiple of L05_FP8_KEY_PAD and permuted inside each group of 32
 * (l05_fp8_key() says which key sits at a position). Then version 7's scales, each the power of
 * two that turns a tile's e4m3 values back (descale): Q's, one float per [batch, heads, Q tile of
 * L05_FP8_KEY_PAD rows]; K's and V's together, one pair {K's, V's} per [batch, kv_heads, KV tile
 * of L05_FP8_KEY_PAD keys].
 * Version 6 reads the first 16 bytes and ignores the tile scales; version 7 the reverse.
 */
#ifndef L05_FP8_WORKSPACE_CUH
#define L05_FP8_WORKSPACE_CUH

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/** The helpers' qualifiers: host and device under nvcc, plain `inline` in C (the CPU tests). */
#ifdef __CUDACC__
#define L05_FP8_HD __host__ __device__ __forceinline__
#else
#define L05_FP8_HD inline
#endif

/** The transposed V's keys are padded to this (one KV tile). */
#define L05_FP8_KEY_PAD 128
/** e4m3's largest finite value: a tensor's largest |x| maps to it. */
#define L05_FP8_MAX 448.0f

/** Byte offsets of the parts of the workspace. */
typedef struct l05_fp8_layout {
  size_t q;     /**< Q, e4m3 */
  size_t k;     /**< K, e4m3 */
  size_t vt;    /**< V transposed, e4m3 */
  size_t dq;    /**< version 7: Q's descale per (batch, head, Q tile), float */
  size_t dkv;   /**< version 7: {K's, V's descale} per (batch, kv head, KV tile), float2 */
  size_t bytes; /**< the whole workspace */
  int seq_pad;  /**< keys per (batch, kv head, dim) row of the transposed V */
  int q_tiles;  /**< Q tiles of L05_FP8_KEY_PAD rows per (batch, head) */
  int kv_tiles; /**< KV tiles of L05_FP8_KEY_PAD keys per (batch, kv head): seq_pad / 128 */
} l05_fp8_layout;

/** Round @p x up to a multiple of 256. */
static inline size_t l05_fp8_align(size_t x) {
  return (x + 255) / 256 * 256;
}

/** The layout for a shape. */
static inline l05_fp8_layout l05_fp8_layout_of(int batch, int heads, int kv_heads, int seq_q,
                                               int seq_kv, int dim) {
  l05_fp8_layout l;
  l.seq_pad = (seq_kv + L05_FP8_KEY_PAD - 1) / L05_FP8_KEY_PAD * L05_FP8_KEY_PAD;
  l.q = 256;
  l.k = l.q + l05_fp8_align((size_t)batch * seq_q * heads * dim);
  l.vt = l.k + l05_fp8_align((size_t)batch * seq_kv * kv_heads * dim);
  l.q_tiles = (seq_q + L05_FP8_KEY_PAD - 1) / L05_FP8_KEY_PAD;
  l.kv_tiles = l.seq_pad / L05_FP8_KEY_PAD;
  l.dq = l.vt + l05_fp8_align((size_t)batch * kv_heads * dim * l.seq_pad);
  l.dkv = l.dq + l05_fp8_align((size_t)batch * heads * l.q_tiles * sizeof(float));
  l.bytes = l.dkv + l05_fp8_align((size_t)batch * kv_heads * l.kv_tiles * 2 * sizeof(float));
  return l;
}

/** The key (0-31, inside its group of 32) whose value sits at position @p p of a transposed V row.
 * Positions 4 t .. 4 t + 3 hold keys 2 t, 2 t + 1, 2 t + 8, 2 t + 9, and positions 16 on the same
 * 16 keys further: the order in which a thread already holds P (its S accumulator columns), so P
 * goes to the FP8 wgmma as it is, without moving a byte between lanes. */
static L05_FP8_HD int l05_fp8_key(int p) {
  const int half = p >> 4, t = (p & 15) >> 2, u = p & 3;
  return 16 * half + 2 * t + (u & 1) + 8 * (u >> 1);
}

/** The key (0-127, in its tile of L05_FP8_KEY_PAD) whose value is byte @p u of word @p quad (0-31)
 * of a transposed V row: positions 4 quad .. 4 quad + 3, l05_fp8_key() inside each group of 32. */
static L05_FP8_HD int l05_vt_key(int quad, int u) {
  return (quad >> 3) * 32 + l05_fp8_key(4 * (quad & 7) + u);
}

/** A byte permute (PTX `prmt`, CUDA's __byte_perm()): byte i of the result is byte
 * (s >> 4 i) & 7 of the eight bytes of {y, x}, x's lowest first. */
static L05_FP8_HD uint32_t l05_prmt(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
  return __byte_perm(x, y, s);
#else
  const uint64_t v = ((uint64_t)y << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= (uint32_t)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
#endif
}

/** Four words of V^T from four keys' codes: @p a, @p b, @p c, @p d each hold 4 dims of one key
 * (the lowest dim in the lowest byte), in the order the word wants its keys (l05_vt_key(): u = 0,
 * 1, 2, 3); w[j] gets dim j of the four, key a in its lowest byte. A 4 x 4 transpose of bytes in
 * four permutes of pairs, then four of halves. */
static L05_FP8_HD void l05_vt_words(uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t w[4]) {
  const uint32_t ab01 = l05_prmt(a, b, 0x5140), ab23 = l05_prmt(a, b, 0x7362);
  const uint32_t cd01 = l05_prmt(c, d, 0x5140), cd23 = l05_prmt(c, d, 0x7362);
  w[0] = l05_prmt(ab01, cd01, 0x5410);
  w[1] = l05_prmt(ab01, cd01, 0x7632);
  w[2] = l05_prmt(ab23, cd23, 0x5410);
  w[3] = l05_prmt(ab23, cd23, 0x7632);
}

/** @name Version 13: 2^x on the FMA pipes
 * Adding L05_EXP2_MAGIC (1.5 x 2^15) to x puts x, in steps of 2^-8, into the low bits of the sum's
 * mantissa: within [2^15, 2^16) a float's last bit is worth 2^-8. One integer multiply-add then
 * moves those bits up by 15, into the exponent field and the top of the mantissa of another float,
 * and adds 127's exponent bias: x's integer part n lands in the exponent and its fraction f in the
 * mantissa, so the result is 2^n (1 + f), a straight line between powers of two where 2^x is a
 * curve (Schraudolph's exponential). It is exact at every power of two, so a row's largest value
 * (x = 0) is 1 exactly, as the special function unit gives it, and high by up to 6.2% between them
 * (at f = 0.44), 4.1% on average; e4m3 then rounds P by up to 6.25%. The sum is held at
 * L05_EXP2_FLOOR first: x = -127 gives +0 exactly (a masked score's -inf among them), where any
 * lower x would wrap round the exponent field.
 *  @{ */
#define L05_EXP2_MAGIC 49152.0f
#define L05_EXP2_FLOOR (L05_EXP2_MAGIC - 127.0f)

/** 2^x from t = x + L05_EXP2_MAGIC, as version 13 computes half of its exponentials: a clamp and
 * one integer multiply-add (FMNMX and LEA in the machine code). */
static L05_FP8_HD float l05_exp2_line(float t) {
  union {
    float f;
    uint32_t u;
  } b;
  b.f = fmaxf(t, L05_EXP2_FLOOR);
  b.u = b.u * 32768u + (127u << 23);
  return b.f;
}
/** @} */

#endif /* L05_FP8_WORKSPACE_CUH */
