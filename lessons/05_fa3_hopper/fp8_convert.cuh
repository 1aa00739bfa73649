/** @file
 * @brief The steps both FP8 conversions share (fp8_quant.cu, version 6; fp8_quant_tiles.cu, version
 * 7): the largest |x| of 8 bf16 values, 8 bf16 values scaled into e4m3, and the transposed write of
 * a staged V tile.
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
