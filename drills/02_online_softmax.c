/* Drill 02: online softmax. Fill in the five bodies below, then `make drill-2`.
 *
 * online_state.h (lessons/02_online_softmax/) says what each function must do; try to write them
 * from the two rules alone before you read it:
 *   - a partial softmax is (m, l): the max of the scores seen and the sum of exp(x - m) over them;
 *     the attention form adds O, the sum of exp(x - m) * v over the keys seen;
 *   - when the max moves from m to m', everything summed under m is multiplied by exp(m - m').
 * Mind the empty state (m = -inf, l = 0): exp(-inf - (-inf)) is NaN.
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
