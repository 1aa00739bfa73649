/**
 * @file attn_verify.h
 * @brief The verdict: how far a kernel's output is from the reference, and whether that passes.
 *
 * Outputs are poisoned before every checked launch by filling them with 0xFF bytes, which is NaN in
 * fp32 (0xFFFFFFFF) and in bf16 (0xFFFF). Arithmetic never produces that bit pattern (the GPU's NaN
 * is 0x7FFFFFFF), so an element still holding it was never written. The verdict counts those apart
 * from computed NaN or infinity, and fails on either.
 *
 * Use: attn_verdict_init(), then attn_verdict_scan() over each whole output buffer, then
 * attn_verdict_add() for each (got, reference) pair that is compared, then attn_verdict_finish().
 */
#ifndef ATTN_VERIFY_H
#define ATTN_VERIFY_H

#include <stddef.h>
#include <stdio.h>

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** fp32 outputs: relative L2 error tolerance (unit-scale data). */
#define ATTN_TOL_F32_REL_L2 1e-5
/** fp32 outputs: max-abs error tolerance. */
#define ATTN_TOL_F32_MAX_ABS 1e-4
/** bf16 outputs: relative L2 error tolerance (bf16 keeps 8 significant bits). */
#define ATTN_TOL_BF16_REL_L2 1e-2
/** bf16 outputs: max-abs error tolerance (half a bf16 step at 1.0 is 2^-8, about 4e-3). */
#define ATTN_TOL_BF16_MAX_ABS 1e-2

/** Outputs computed in FP8 (e4m3 operands on the tensor cores, bf16 in and out): relative L2
 *  error tolerance. e4m3 keeps 4 significant bits: each operand is rounded by up to 2^-4 (6.25%)
 *  of itself, against bf16's 2^-9. */
#define ATTN_TOL_FP8_REL_L2 5e-2
/** FP8 outputs (and their log-sum-exp): max-abs error tolerance. An output row can be as close to
 *  one V row as the softmax allows, so its error reaches 2^-4 of the largest |V|: 0.08 for the
 *  harness's inputs, which lie in [-0.75, 1.25]. */
#define ATTN_TOL_FP8_MAX_ABS 1e-1

/** The byte every output is poisoned with before a checked launch. */
#define ATTN_POISON_BYTE 0xFF

/** Error figures and the verdict. */
typedef struct attn_verdict {
  double tol_max_abs; /**< pass needs max_abs <= this */
  double tol_rel_l2;  /**< and rel_l2 <= this */
  double max_abs;     /**< largest |got - ref| over compared elements */
  double rel_l2;      /**< ||got - ref|| / ||ref|| (|| || is the L2 norm) */
  double err_sq;      /**< running sum of (got - ref)^2 */
  double ref_sq;      /**< running sum of ref^2 */
  size_t compared;    /**< elements compared with the reference */
  size_t scanned;     /**< elements scanned for poison and non-finite values */
  size_t unwritten;   /**< elements still holding the poison pattern */
  size_t nonfinite;   /**< NaN or infinity the kernel produced (or a mismatched infinity) */
  int pass;           /**< set by attn_verdict_finish() */
} attn_verdict;

/** Start a verdict with the default tolerances for outputs of type @p t. */
void attn_verdict_init(attn_verdict *v, attn_dtype t);

/** Start a verdict for an fp32 log-sum-exp written by a version of dtype @p t: bf16 versions are
 *  held to the bf16 tolerances, fp32 ones to an absolute 1e-3 (|lse| grows like log(seq_kv)). */
void attn_verdict_init_lse(attn_verdict *v, attn_dtype t);

/** Scan a whole output buffer (host copy) of @p n elements of type @p t: count unwritten elements
 *  and computed NaN; infinities count too unless @p allow_inf (for log-sum-exp, where a row with no
 *  visible key has -inf). */
void attn_verdict_scan(attn_verdict *v, attn_dtype t, const void *buf, size_t n, int allow_inf);

/** Compare one element. Equal infinities match exactly; any other non-finite value counts as
 *  non-finite; otherwise the error enters max_abs and the L2 sums. */
void attn_verdict_add(attn_verdict *v, double got, double ref);

/** Compute rel_l2 and the verdict: pass needs at least one compared element, no unwritten or
 *  non-finite element, and both errors within tolerance. */
void attn_verdict_finish(attn_verdict *v);

/** How close a finished verdict is to failing: the larger of max_abs / tol_max_abs and
 *  rel_l2 / tol_rel_l2 (above 1 fails), or infinity when it failed. A version judged by several
 *  verdicts (lessons 08 and 09) reports the one with the largest margin. */
double attn_verdict_margin(const attn_verdict *v);

/** One line: `max_abs 1.2e-06  rel_l2 3.4e-07  (tol 1e-04 / 1e-05)  unwritten 0  nonfinite 0`. */
void attn_verdict_print(const attn_verdict *v, FILE *f);

/** Read element @p i of a host buffer of type @p t as double. */
double attn_load(attn_dtype t, const void *buf, size_t i);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_VERIFY_H */
