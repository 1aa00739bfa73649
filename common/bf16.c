/* Host bf16 conversion. See attn_bf16.h for the rounding rule. */
#include "attn_bf16.h"

#include <string.h>

uint16_t attn_f32_to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    /* NaN: keep the sign and the top payload bits, force the quiet bit so the result stays NaN even
     * when the payload lived only in the discarded low half. */
    return (uint16_t)((u >> 16) | 0x0040u);
  }
  uint32_t lsb = (u >> 16) & 1u; /* lowest bit that survives */
  u += 0x7FFFu + lsb;            /* round half to even; overflow carries into the exponent (inf) */
  return (uint16_t)(u >> 16);
}

float attn_bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

float attn_round_bf16(float x) {
  return attn_bf16_to_f32(attn_f32_to_bf16(x));
}

void attn_f32_to_bf16_array(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = attn_f32_to_bf16(src[i]);
}

void attn_bf16_to_f32_array(const uint16_t *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = attn_bf16_to_f32(src[i]);
}
