/** @file
 * @brief The steps the FP8 conversions share (fp8_quant.cu, version 6; fp8_quant_tiles.cu, version
 * 7; version 12's kernel, which converts Q itself): the largest |x| of 8 bf16 values, a tile's
 * power-of-two scale, 8 bf16 values scaled into e4m3, and the transposed write of a staged V tile.
 */
#ifndef L05_FP8_CONVERT_CUH
#define L05_FP8_CONVERT_CUH

#include "attn_cuda.cuh"
#include "fp8_workspace.cuh"
#include "hopper.cuh"

/** Padded row length (in bf16) of a V tile staged in shared memory: 130, so that the keys one warp
 * reads for a row of the transposed tile spread over the banks. */
#define L05_VT_ROW 130

/** The largest |x| of 8 bf16 values (one 16-byte chunk). */
static __device__ __forceinline__ float l05_absmax8(uint4 c) {
  const uint32_t w[4] = {c.x, c.y, c.z, c.w};
  float m = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    m = fmaxf(m, fabsf(__uint_as_float(w[j] << 16)));
    m = fmaxf(m, fabsf(__uint_as_float(w[j] & 0xFFFF0000u)));
  }
  return m;
}

/** The scale of a tile whose largest |x| is `amax`: the largest power of two f with amax f <= 448,
 * so that the tile's values land in (224, 448] at the top of e4m3's range. A power of two, because
 * multiplying by it and by its inverse is exact: the scale adds no rounding of its own. An all-zero
 * tile takes 1. The exponent stays within [-126, 126], so that f and 1 / f are normal floats. */
static __device__ __forceinline__ int l05_tile_exponent(float amax) {
  if (!(amax > 0.f)) return 0;
  const float f = L05_FP8_MAX / amax;                     /* inf when amax is tiny: clamped below */
  int e = (int)((__float_as_uint(f) >> 23) & 0xFF) - 127; /* floor(log2 f) for a normal f */
  return min(126, max(-126, e));
}

/** 2^e for e in [-126, 126]. */
static __device__ __forceinline__ float l05_pow2f(int e) {
  return __uint_as_float((uint32_t)(e + 127) << 23);
}

/** 8 bf16 values times `f`, rounded to e4m3 (saturating) and packed into 8 bytes, in order. */
static __device__ __forceinline__ uint2 l05_e4m3x8(uint4 c, float f) {
  const uint32_t w[4] = {c.x, c.y, c.z, c.w};
  float e[8];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    e[2 * j] = __uint_as_float(w[j] << 16) * f;
    e[2 * j + 1] = __uint_as_float(w[j] & 0xFFFF0000u) * f;
  }
  return make_uint2(pack_e4m3x4(e[0], e[1], e[2], e[3]), pack_e4m3x4(e[4], e[5], e[6], e[7]));
}

/** A staged V tile (L05_FP8_KEY_PAD keys x 128 dims, rows L05_VT_ROW apart) written transposed by
 * the block's `threads` threads: row d of the output (at `out`, rows seq_pad / 4 words apart) is
 * the tile's column d, 128 keys times `f` in e4m3, permuted by l05_fp8_key() inside each group of
 * 32, 4 keys to a word. */
static __device__ __forceinline__ void l05_write_vt(const attn_bf16 *tile, uint32_t *out,
                                                    int seq_pad, float f, int threads) {
  for (int w = threadIdx.x; w < 128 * 32; w += threads) {
    const int d = w >> 5, p0 = (w & 31) * 4, g0 = p0 & ~31;
    float x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      x[u] = __bfloat162float(tile[(g0 + l05_fp8_key((p0 & 31) + u)) * L05_VT_ROW + d]) * f;
    out[(size_t)d * (seq_pad / 4) + (w & 31)] = pack_e4m3x4(x[0], x[1], x[2], x[3]);
  }
}

#endif /* L05_FP8_CONVERT_CUH */
