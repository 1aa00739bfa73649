/* Drill 02: online softmax and the warp reduction. Fill in the seven bodies below, then
 * `make drill-2`.
 *
 * online_state.h (lessons/02_online_softmax/) says what each function must do; try to write the
 * first five from the two rules alone before you read it:
 *   - a partial softmax is (m, l): the max of the scores seen and the sum of exp(x - m) over them;
 *     the attention form adds O, the sum of exp(x - m) * v over the keys seen;
 *   - when the max moves from m to m', everything summed under m is multiplied by exp(m - m').
 * Mind the empty state (m = -inf, l = 0): exp(-inf - (-inf)) is NaN.
 *
 * The last two are a warp's max and sum, written with nothing but the shuffle l02_shfl_xor()
 * (online_state.h: __shfl_xor_sync over an array of 32 lanes; there is no __shfl_max_sync). Every
 * lane must end with the result, not only lane 0. Which lane does lane i talk to at each step, and
 * how many steps does it take?
 *
 * The lesson's answers are in lessons/02_online_softmax/online_state.c.
 */
#include "online_state.h"

l02_online_ml l02_online_ml_push(l02_online_ml s, float x) {
  (void)x;
  /* TODO: the online update */
  return s;
}

l02_online_ml l02_online_ml_merge(l02_online_ml a, l02_online_ml b) {
  (void)b;
  /* TODO: merge two partial softmaxes */
  return a;
}

void l02_online_mlo_push(l02_online_mlo *s, float score, const float *v, int dim) {
  (void)s;
  (void)score;
  (void)v;
  (void)dim;
  /* TODO: the (m, l, O) update for one key */
}

void l02_online_mlo_merge(l02_online_mlo *a, const l02_online_mlo *b, int dim) {
  (void)a;
  (void)b;
  (void)dim;
  /* TODO: merge b into a */
}

void l02_online_mlo_finish(const l02_online_mlo *s, int dim, float *out, float *lse) {
  (void)s;
  (void)dim;
  (void)out;
  (void)lse;
  /* TODO: out = O / l and lse = m + log(l); the empty state gives 0 and -inf */
}

void l02_warp_max(float *lanes) {
  (void)lanes;
  /* TODO: the xor butterfly with fmaxf; every lane ends with the max */
}

void l02_warp_sum(float *lanes) {
  (void)lanes;
  /* TODO: the same butterfly with +; every lane ends with the sum */
}
