/**
 * @file reference_bwd.h
 * @brief Lesson 09's CPU reference: the exact backward pass in double precision, for every row or
 *        a seeded sample, and the loss it differentiates (for the finite-difference check).
 *
 * The loss is L = sum over every element of dO o O(Q, K, V): its gradient with respect to O is dO,
 * so dQ, dK and dV below are the gradients the backward pass must return. For query row (b, i, h)
 * with KV head g = h / (heads / kv_heads) and every key j the mask lets through:
 *
 *     s_j = scale * Q_i . K_j,  lse = log sum_j exp(s_j),  P_j = exp(s_j - lse)
 *     O_i = sum_j P_j V_j,      D_i = dO_i . O_i,          dP_j = dO_i . V_j
 *     dS_j = P_j (dP_j - D_i)
 *     dQ_i = scale * sum_j dS_j K_j
 *     dK_j += scale * dS_j Q_i,  dV_j += P_j dO_i      (summed over every row i and head h of g)
 *
 * Inputs are fp32 (the harness's bf16-exact values) in the layouts of attn_types.h; everything is
 * accumulated in double. A row that sees no key contributes nothing: its dQ is 0. Lesson 09 has no
 * lengths per sequence, but the reference honours p->kv_lens where it is set: a key past its
 * sequence's length is seen by no row, is never read, and gets dK = dV = 0.
 *
 * Every row is computed alone from the definition, so a row's gradient is the same, bit for bit,
 * whichever other rows are listed with it and in whatever order.
 */
#ifndef L09_REFERENCE_BWD_H
#define L09_REFERENCE_BWD_H

#include <stddef.h>
#include <stdint.h>

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * dQ of the listed query rows, numbered as O's rows: r = (b * seq_q + i) * heads + h
 * (attn_row_coords()). Costs O(seq_kv * dim) per row. Runs rows in parallel with OpenMP where the
 * build has it.
 * @param p      the problem (shape, mask, scale; kv_lens honoured where set)
 * @param q      `[batch, seq_q, heads, dim]`
 * @param k      `[batch, seq_kv, kv_heads, dim]`
 * @param v      `[batch, seq_kv, kv_heads, dim]`
 * @param d_o    dO, the loss's gradient with respect to O: `[batch, seq_q, heads, dim]`
 * @param rows   O row numbers, in any order; NULL means every row in order (n_rows = attn_rows(p))
 * @param n_rows number of rows
 * @param dq     out: `[n_rows, dim]`; should memory run out, every element is NaN (no check passes)
 */
void l09_reference_dq(const attn_problem *p, const float *q, const float *k, const float *v,
                      const float *d_o, const size_t *rows, size_t n_rows, double *dq);

/**
 * dK and dV of the listed key rows, numbered as K's rows: r = (b * seq_kv + j) * kv_heads + g.
 * Every (batch, KV head) that a listed row belongs to first gets the log-sum-exp and D of each of
 * its query rows (O(heads / kv_heads * seq_q * seq_kv * dim) for that pair), then each listed key
 * row sums over the query rows of its group. Runs in parallel with OpenMP where the build has it.
 * @param p      the problem (shape, mask, scale; kv_lens honoured where set)
 * @param q      `[batch, seq_q, heads, dim]`
 * @param k      `[batch, seq_kv, kv_heads, dim]`
 * @param v      `[batch, seq_kv, kv_heads, dim]`
 * @param d_o    dO, the loss's gradient with respect to O: `[batch, seq_q, heads, dim]`
 * @param rows   K row numbers, in any order (repeats allowed); NULL means every row in order
 *               (n_rows = batch * seq_kv * kv_heads)
 * @param n_rows number of rows
 * @param dk     out: `[n_rows, dim]`
 * @param dv     out: `[n_rows, dim]`
 * @return 0, or -1 when memory ran out
 */
int l09_reference_dkv(const attn_problem *p, const float *q, const float *k, const float *v,
                      const float *d_o, const size_t *rows, size_t n_rows, double *dk, double *dv);

/** The loss sum(dO o O) with O computed in double: what the gradients above differentiate. It is
 * the sum of every row's D term, added in row order (the same value for any number of threads).
 * NaN when memory ran out. */
double l09_reference_loss(const attn_problem *p, const float *q, const float *k, const float *v,
                          const float *d_o);

/**
 * Choose the key rows to check. Problems whose full backward reference costs at most
 * ATTN_FULL_CHECK_MACS multiply-adds get every row; that cost is counted as 6 * dim per visible
 * (query, key) pair and head: Q K^T and P V for the log-sum-exp and D, then Q K^T, dO V^T, dK and
 * dV for the key rows. Larger ones get rows of two (batch, KV head) pairs only, the first and the
 * last, each with its first and last key plus @p per_head keys drawn with @p seed; sorted, no
 * duplicates.
 * @return a malloc'd array (caller frees), its length in @p n_rows; NULL when memory ran out
 */
size_t *l09_sample_kv_rows(const attn_problem *p, int per_head, uint64_t seed, size_t *n_rows);

#ifdef __cplusplus
}
#endif

#endif /* L09_REFERENCE_BWD_H */
