/**
 * @file backward_row.h
 * @brief The backward pass of attention for one query row, with the probabilities recomputed from
 *        the log-sum-exp: what FlashAttention keeps from the forward pass and how it rebuilds the
 *        rest.
 *
 * The forward pass of one query q against keys k_j and values v_j, j < n:
 *
 *     s_j = scale * q . k_j          p_j = exp(s_j - L)          o = sum_j p_j v_j
 *
 * with L = log sum_j exp(s_j), the row's log-sum-exp. Standard attention stores every p_j (the
 * N x N matrix P) for the backward pass. FlashAttention stores o and L, one number per row beyond
 * the output, and recomputes the rest: s_j from q and k_j, then p_j = exp(s_j - L) in one step,
 * because L already holds both the maximum and the sum. With dO, the gradient of the loss with
 * respect to o:
 *
 *     dv_j = p_j dO                        o is linear in v_j
 *     dP_j = dO . v_j                      the gradient that reaches p_j
 *     D    = dO . o                        equals sum_j p_j dP_j, since o = sum_j p_j v_j
 *     dS_j = p_j (dP_j - D)                the softmax Jacobian, applied without forming it
 *     dq   = scale * sum_j dS_j k_j        dk_j = scale * dS_j q
 *
 * D is what makes the row's backward one pass over the keys: the Jacobian's sum over all keys is
 * already in the forward output. A masked key (score -inf) has p_j = 0 and zero gradients. In
 * FlashAttention-2's backward D is computed for every row before the tile loops, and dk_j and dv_j
 * are sums over all the query rows; this function is the contribution of one row.
 *
 * backward_row.c holds the lesson's answer; drills/03_tile_loops.c holds the function with an
 * empty body (`make drill-3`).
 */
#ifndef L03_BACKWARD_ROW_H
#define L03_BACKWARD_ROW_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Gradients of one attention row from q, K, V, the forward output and the log-sum-exp, without the
 * probabilities of the forward pass: each p_j is recomputed as exp(scale * q . k_j - lse). Keys
 * n_visible .. n-1 are masked (their score is -inf, as a causal mask hides the keys after a query's
 * diagonal): their dk and dv rows are 0. A row that sees no key has lse = -inf, and then every
 * gradient is 0.
 * @param q          the query, [d]
 * @param k          the keys, [n, d] row-major
 * @param v          the values, [n, d] row-major
 * @param o          the forward output of this row, [d]
 * @param d_o        dO, the gradient of the loss with respect to o, [d]
 * @param lse        the row's log-sum-exp (natural log) over the visible keys; -inf when none
 * @param scale      the softmax scale applied to q . k_j
 * @param n          keys
 * @param n_visible  keys 0 .. n_visible-1 take part; the others are masked (0 <= n_visible <= n)
 * @param d          head dimension
 * @param dq         out: the gradient with respect to q, [d]
 * @param dk         out: the gradient with respect to each key, [n, d]
 * @param dv         out: the gradient with respect to each value, [n, d]
 */
void l03_row_backward(const float *q, const float *k, const float *v, const float *o,
                      const float *d_o, float lse, float scale, int n, int n_visible, int d,
                      float *dq, float *dk, float *dv);

#ifdef __cplusplus
}
#endif

#endif /* L03_BACKWARD_ROW_H */
