/**
 * @file harness_kernels.h
 * @brief Small kernels that test the harness itself (not a lesson): a plain one-thread-per-row
 *        attention in fp32, bf16 and paged form, two deliberately broken variants the runner must
 *        catch, and an elementwise kernel for the custom-version path.
 */
#ifndef HARNESS_KERNELS_H
#define HARNESS_KERNELS_H

#include "attn_runner.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest head dimension the test kernels accept. */
#define TH_MAX_DIM 128

/** Correct attention, one thread per O row, writes the log-sum-exp. fp32 / bf16 / paged bf16. */
cudaError_t th_attention_f32(const attn_problem *p, const attn_args *a, cudaStream_t s);
cudaError_t th_attention_bf16(const attn_problem *p, const attn_args *a, cudaStream_t s);
cudaError_t th_attention_paged_bf16(const attn_problem *p, const attn_args *a, cudaStream_t s);
/** Broken: leaves the last O row unwritten. */
cudaError_t th_attention_skips_last_row(const attn_problem *p, const attn_args *a, cudaStream_t s);
/** Broken: softmax scale 1% too large (finite, plausible, wrong). */
cudaError_t th_attention_wrong_scale(const attn_problem *p, const attn_args *a, cudaStream_t s);
/** y[i] = 2 x[i] + 1 over n floats. */
cudaError_t th_affine(const float *x, float *y, size_t n, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif /* HARNESS_KERNELS_H */
