/**
 * @file attn_bf16.h
 * @brief Host-side bfloat16 conversion: round to nearest, ties to even; NaN stays NaN.
 *
 * A bf16 value is the upper 16 bits of an fp32 value. Converting down keeps those bits after
 * rounding on the lower 16: add 0x7FFF plus the lowest kept bit, then truncate. NaN must be handled
 * first: rounding a NaN whose payload sits only in the low bits would carry into the exponent or
 * truncate to infinity.
 */
#ifndef ATTN_BF16_H
#define ATTN_BF16_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** fp32 to bf16 bits, round to nearest even; NaN becomes a quiet NaN with the same sign. */
uint16_t attn_f32_to_bf16(float x);
/** bf16 bits to fp32 (exact). */
float attn_bf16_to_f32(uint16_t b);
/** @p x rounded to the nearest bf16 value, returned as fp32. */
float attn_round_bf16(float x);
/** Convert @p n values from fp32 @p src to bf16 bits in @p dst. */
void attn_f32_to_bf16_array(const float *src, uint16_t *dst, size_t n);
/** Convert @p n bf16 values in @p src to fp32 in @p dst. */
void attn_bf16_to_f32_array(const uint16_t *src, float *dst, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_BF16_H */
