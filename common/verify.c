/* Error figures and the verdict. See attn_verify.h. */
#include "attn_verify.h"

#include <math.h>
#include <string.h>

#include "attn_bf16.h"

void attn_verdict_init(attn_verdict *v, attn_dtype t) {
  memset(v, 0, sizeof *v);
  v->tol_max_abs = t == ATTN_BF16 ? ATTN_TOL_BF16_MAX_ABS : ATTN_TOL_F32_MAX_ABS;
  v->tol_rel_l2 = t == ATTN_BF16 ? ATTN_TOL_BF16_REL_L2 : ATTN_TOL_F32_REL_L2;
}

void attn_verdict_init_lse(attn_verdict *v, attn_dtype t) {
  attn_verdict_init(v, ATTN_F32);
  if (t == ATTN_BF16) {
    v->tol_max_abs = ATTN_TOL_BF16_MAX_ABS;
    v->tol_rel_l2 = ATTN_TOL_BF16_REL_L2;
  } else {
    v->tol_max_abs = 1e-3;
  }
}

double attn_load(attn_dtype t, const void *buf, size_t i) {
  if (t == ATTN_BF16) return attn_bf16_to_f32(((const uint16_t *)buf)[i]);
  return ((const float *)buf)[i];
}

void attn_verdict_scan(attn_verdict *v, attn_dtype t, const void *buf, size_t n, int allow_inf) {
  for (size_t i = 0; i < n; ++i) {
    if (t == ATTN_BF16) {
      uint16_t b = ((const uint16_t *)buf)[i];
      if (b == 0xFFFFu) {
        v->unwritten++;
      } else if ((b & 0x7F80u) == 0x7F80u) { /* exponent all ones: inf or NaN */
        if ((b & 0x007Fu) != 0 || !allow_inf) v->nonfinite++;
      }
    } else {
      uint32_t u;
      memcpy(&u, (const float *)buf + i, sizeof u);
      if (u == 0xFFFFFFFFu) {
        v->unwritten++;
      } else if ((u & 0x7F800000u) == 0x7F800000u) {
        if ((u & 0x007FFFFFu) != 0 || !allow_inf) v->nonfinite++;
      }
    }
  }
  v->scanned += n;
}

void attn_verdict_add(attn_verdict *v, double got, double ref) {
  v->compared++;
  if (!isfinite(got) || !isfinite(ref)) {
    /* Equal infinities (a fully masked row's -inf log-sum-exp) are exact; anything else is an
     * infinite error. */
    if (!(isinf(got) && isinf(ref) && got == ref)) v->max_abs = INFINITY;
    return;
  }
  double e = fabs(got - ref);
  if (e > v->max_abs) v->max_abs = e;
  v->err_sq += e * e;
  v->ref_sq += ref * ref;
}

void attn_verdict_finish(attn_verdict *v) {
  if (v->ref_sq > 0.0) {
    v->rel_l2 = sqrt(v->err_sq / v->ref_sq);
  } else {
    v->rel_l2 = v->err_sq > 0.0 ? INFINITY : 0.0;
  }
  if (isinf(v->max_abs)) v->rel_l2 = INFINITY;
  v->pass = v->compared > 0 && v->unwritten == 0 && v->nonfinite == 0 &&
            v->max_abs <= v->tol_max_abs && v->rel_l2 <= v->tol_rel_l2;
}

double attn_verdict_margin(const attn_verdict *v) {
  if (!v->pass) return INFINITY;
  return fmax(v->max_abs / v->tol_max_abs, v->rel_l2 / v->tol_rel_l2);
}

void attn_verdict_print(const attn_verdict *v, FILE *f) {
  fprintf(
      f, "max_abs %.2e  rel_l2 %.2e  (tol %.0e / %.0e)  compared %zu  unwritten %zu  nonfinite %zu",
      v->max_abs, v->rel_l2, v->tol_max_abs, v->tol_rel_l2, v->compared, v->unwritten,
      v->nonfinite);
}
