/* Lesson 10's e4m3 on the host: the code of a float and the float of a code, one key row
 * quantised with its scale exactly as fp8_append.cu writes it, and a whole pool quantised or read
 * back, so the tests and the reference can rebuild the FP8 cache bit for bit. See serving_decode.h,
 * "The FP8 cache (version 2)".
 *
 * e4m3: 1 sign bit, 4 exponent bits (bias 7), 3 mantissa bits, no infinities. Exponent 0 holds
 * the subnormals m x 2^-9; the others (1 + m/8) x 2^(e-7); 0x7f and 0xff are NaN, so the largest
 * finite value is 0x7e = 1.75 x 2^8 = 448. Read as unsigned numbers, the codes 0x00..0x7e run
 * through the non-negative values in increasing order, and the encoder leans on that. */
#include <math.h>
#include <stdlib.h>

#include "serving_decode.h"

enum { kMaxCode = 0x7e, kNaNCode = 0x7f, kSignBit = 0x80 };

float l10_e4m3_decode(uint8_t c) {
  const int e = (c >> 3) & 0xf, m = c & 0x7;
  if ((c & 0x7f) == kNaNCode) return NAN;
  /* Subnormals have no implicit 1: m x 2^-9. Normals: (1 + m/8) x 2^(e-7) = (8 + m) x 2^(e-10). */
  const float v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
  return (c & kSignBit) ? -v : v;
}

uint8_t l10_e4m3_encode(float x) {
  if (isnan(x)) return kNaNCode; /* whatever its sign, as the device writes it */
  /* The sign is kept apart, so -0.0 (and a negative value too small for the smallest
   * subnormal) gives 0x80, as cvt.rn.satfinite does. */
  const uint8_t sign = signbit(x) ? kSignBit : 0;
  const double a = fabs((double)x);
  /* satfinite: anything at or above 448, infinity included, is written as 448. The values in
   * (448, 464] would round to 448 anyway, and those above have no finite code to round to. */
  if (a >= L10_E4M3_MAX) return sign | kMaxCode;
  /* Binary search for c, the largest code whose value is at most a; 0 <= c < 0x7e since
   * a < 448. The codes are in increasing order of value, so the answer is c or c + 1. */
  int lo = 0, hi = kMaxCode; /* value(lo) <= a < value(hi) */
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if ((double)l10_e4m3_decode((uint8_t)mid) <= a)
      lo = mid;
    else
      hi = mid;
  }
  /* Round to nearest: compare with the midpoint of the two neighbours (exact in double, it has
   * five significant bits). A tie goes to the even code, whose mantissa's last bit is 0; between
   * 0x07 and 0x08 (the last subnormal and the first normal) that is 0x08, as on the device. */
  const double half = 0.5 * ((double)l10_e4m3_decode((uint8_t)lo) + l10_e4m3_decode((uint8_t)hi));
  const int c = a < half ? lo : a > half ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | (uint8_t)c;
}

float l10_fp8_quantise_row(const float *x, int dim, uint8_t *codes) {
  float amax = 0.0f;
  for (int i = 0; i < dim; ++i) amax = fmaxf(amax, fabsf(x[i]));
  if (amax == 0.0f) { /* a row of zeros: scale 0, every code 0 (no division by zero) */
    for (int i = 0; i < dim; ++i) codes[i] = 0;
    return 0.0f;
  }
  /* The same fp32 operations as the kernel, in the same order, so the codes agree bit for bit:
   * one division for the inverse, then one rounded product per element (nothing to fuse it
   * with), then the encoder. The largest |x| lands on 448 give or take an fp32 rounding, which
   * the encoder takes to the code 448 either way. */
  const float inv = L10_E4M3_MAX / amax;
  for (int i = 0; i < dim; ++i) codes[i] = l10_e4m3_encode(x[i] * inv);
  return amax / L10_E4M3_MAX;
}

/* Row r of a pool `[pages, block_size, kv_heads, dim]` is slot r / kv_heads, KV head
 * r % kv_heads; its scale sits at [page, KV head, slot in the page]. */
static size_t scale_index(size_t r, int block_size, int kv_heads) {
  const size_t slot = r / (size_t)kv_heads, page = slot / (size_t)block_size;
  return (page * (size_t)kv_heads + r % (size_t)kv_heads) * (size_t)block_size +
         slot % (size_t)block_size;
}

int l10_fp8_quantise_pool(const float *pool, int pages, int block_size, int kv_heads, int dim,
                          float *codes, float *scales, float *values) {
  uint8_t *row = (uint8_t *)malloc((size_t)dim);
  if (!row) return -1;
  const size_t rows = (size_t)pages * block_size * kv_heads;
  for (size_t r = 0; r < rows; ++r) {
    const float *x = pool + r * dim;
    const size_t si = scale_index(r, block_size, kv_heads);
    if (!isfinite(x[0])) { /* a slot no token owns: NaN stays */
      scales[si] = NAN;
      for (int d = 0; d < dim; ++d) {
        codes[r * dim + d] = NAN;
        if (values) values[r * dim + d] = NAN;
      }
      continue;
    }
    const float sc = l10_fp8_quantise_row(x, dim, row);
    scales[si] = sc;
    for (int d = 0; d < dim; ++d) {
      codes[r * dim + d] = l10_e4m3_decode(row[d]);
      if (values) values[r * dim + d] = codes[r * dim + d] * sc;
    }
  }
  free(row);
  return 0;
}

void l10_fp8_dequantise_pool(const uint8_t *codes, const float *scales, int pages, int block_size,
                             int kv_heads, int dim, float *values) {
  float value[256]; /* every code's value */
  for (int c = 0; c < 256; ++c) value[c] = l10_e4m3_decode((uint8_t)c);
  const size_t rows = (size_t)pages * block_size * kv_heads;
  for (size_t r = 0; r < rows; ++r) {
    const float sc = scales[scale_index(r, block_size, kv_heads)];
    for (int d = 0; d < dim; ++d) values[r * dim + d] = value[codes[r * dim + d]] * sc;
  }
}
