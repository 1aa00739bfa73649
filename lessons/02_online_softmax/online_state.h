/**
 * @file online_state.h
 * @brief Partial softmax states and their merge, in plain C: the functions lesson 02 drills.
 *
 * A partial softmax over some scores x_j is two numbers:
 *
 *     m = max_j x_j                 (the running max)
 *     l = sum_j exp(x_j - m)        (the sum, taken relative to that max)
 *
 * Every exp is of a number <= 0, so nothing overflows, and the whole row's softmax is
 * exp(x_j - m) / l. The attention form adds the output that softmax weights:
 *
 *     O = sum_j exp(x_j - m) * v_j  (not yet divided by l)
 *
 * Two rules make the state streamable and splittable. Push one score x (with its value row v):
 * m' = max(m, x), and everything summed so far was relative to m, so it is rescaled by exp(m - m'):
 *
 *     l' = l * exp(m - m') + exp(x - m')
 *     O' = O * exp(m - m') + exp(x - m') * v
 *
 * Merge two states over disjoint sets of scores: m = max(m1, m2) and
 *
 *     l = l1 * exp(m1 - m) + l2 * exp(m2 - m)
 *     O = O1 * exp(m1 - m) + O2 * exp(m2 - m)
 *
 * The empty state is m = -inf, l = 0, O = 0. A masked score is -inf and changes nothing. When every
 * score so far is -inf the state stays empty (computing exp(m - m') there would be exp(-inf + inf),
 * NaN, so the functions return the state unchanged). The finished output of an empty state is
 * O / l := 0 and log-sum-exp -inf: a fully masked row attends to nothing.
 *
 * The maximum and the sum of a row are computed, on the GPU, by a warp of 32 lanes that reduce
 * their partial results with __shfl_xor_sync. The end of this header models that shuffle on the
 * CPU, one float per lane, so the butterfly reduction can be written and tested here.
 *
 * lessons/02_online_softmax/online_state.c holds the lesson's solution; drills/02_online_softmax.c
 * holds the same functions with empty bodies for the reader to fill in (`make drill-2`).
 */
#ifndef L02_ONLINE_STATE_H
#define L02_ONLINE_STATE_H

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A partial softmax: running max and the sum of exp(x - m) over the scores seen. */
typedef struct l02_online_ml {
  float m; /**< largest score seen; -inf when none (or only masked ones) */
  float l; /**< sum of exp(x_j - m) over the scores seen; 0 when empty */
} l02_online_ml;

/** The empty state: m = -inf, l = 0.
 *  @return the state of a softmax that has seen no score */
static inline l02_online_ml l02_online_ml_empty(void) {
  l02_online_ml s = {-INFINITY, 0.0f};
  return s;
}

/**
 * Push one score into a partial softmax (the online update).
 * @param s the state so far
 * @param x the next score; -inf for a masked one
 * @return the state with @p x included
 */
l02_online_ml l02_online_ml_push(l02_online_ml s, float x);

/**
 * Merge two partial softmaxes over disjoint sets of scores.
 * @param a one state
 * @param b the other
 * @return the state over both sets; merging with the empty state returns the other state exactly
 */
l02_online_ml l02_online_ml_merge(l02_online_ml a, l02_online_ml b);

/** A partial attention row for one query: (m, l) plus the unnormalised output O. */
typedef struct l02_online_mlo {
  float m;  /**< largest score seen; -inf when none */
  float l;  /**< sum of exp(s_j - m) */
  float *o; /**< [dim]: sum of exp(s_j - m) * v_j; storage belongs to the caller */
} l02_online_mlo;

/**
 * Make @p s the empty state, with @p o (dim floats) as its output storage, zeroed.
 * @param s   the state to initialise
 * @param o   caller's storage for O, @p dim floats
 * @param dim head dimension
 */
static inline void l02_online_mlo_init(l02_online_mlo *s, float *o, int dim) {
  s->m = -INFINITY;
  s->l = 0.0f;
  s->o = o;
  for (int d = 0; d < dim; ++d) o[d] = 0.0f;
}

/**
 * Push one key into a partial attention row: its score (q . k_j, scaled) and its value row.
 * @param s     the state, updated in place
 * @param score the key's score; -inf for a masked key
 * @param v     the key's value row, @p dim floats
 * @param dim   head dimension
 */
void l02_online_mlo_push(l02_online_mlo *s, float score, const float *v, int dim);

/**
 * Merge state @p b into state @p a (a := merge(a, b)); the two cover disjoint sets of keys.
 * @param a   the state that receives the merge (its O storage is written)
 * @param b   the other state, unchanged
 * @param dim head dimension
 */
void l02_online_mlo_merge(l02_online_mlo *a, const l02_online_mlo *b, int dim);

/**
 * The finished row: out = O / l and lse = m + log(l); for the empty state out = 0 and lse = -inf.
 * @param s   the state
 * @param dim head dimension
 * @param out the normalised output, @p dim floats
 * @param lse the natural-log log-sum-exp of the scores seen; may be NULL
 */
void l02_online_mlo_finish(const l02_online_mlo *s, int dim, float *out, float *lse);

/* ---- A warp on the CPU ---------------------------------------------------------------------- */

/** Lanes of a warp: one float of each lane's register is one element of a float[32]. */
#define L02_LANES 32

/**
 * __shfl_xor_sync(0xffffffff, v, lane_mask) for a whole warp at once: lane i receives the value
 * lane (i ^ lane_mask) holds. Every lane reads before any lane writes, as the hardware does, so
 * @p in and @p out must not be the same array.
 * @param in         the value each lane holds, [L02_LANES]
 * @param lane_mask  the partner's lane is i ^ lane_mask (0 .. 31)
 * @param out        what each lane receives, [L02_LANES]
 */
static inline void l02_shfl_xor(const float *in, int lane_mask, float *out) {
  for (int lane = 0; lane < L02_LANES; ++lane) out[lane] = in[(lane ^ lane_mask) & (L02_LANES - 1)];
}

/**
 * Warp max by the xor butterfly: at offsets 16, 8, 4, 2, 1 every lane takes l02_shfl_xor() of the
 * offset and keeps fmaxf of its own value and its partner's. Afterwards every lane, not only lane
 * 0, holds the max of the 32 values (-inf lanes, masked scores, take part like any other). The
 * device version, warp_max() in softmax_reduce.cuh, is the same loop line for line.
 * @param lanes  the value of each lane, [L02_LANES]; on return every element is the max
 */
void l02_warp_max(float *lanes);

/**
 * Warp sum by the xor butterfly: as l02_warp_max() with + in place of fmaxf. A lane and its
 * partner add the same two numbers (a + b and b + a, equal in IEEE arithmetic), so every lane ends
 * with the same bits. The device version is warp_sum() in softmax_reduce.cuh.
 * @param lanes  the value of each lane, [L02_LANES]; on return every element is the sum
 */
void l02_warp_sum(float *lanes);

#ifdef __cplusplus
}
#endif

#endif /* L02_ONLINE_STATE_H */
