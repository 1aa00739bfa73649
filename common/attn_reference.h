/**
 * @file attn_reference.h
 * @brief The CPU reference: exact attention in double precision, for all rows or a seeded sample.
 *
 * For query row (b, h, i) with KV head g = h / (heads / kv_heads):
 *
 *     s_j = scale * sum_d Q[b,i,h,d] * K[b,j,g,d]      for every key j the mask lets through
 *     lse = m + log(sum_j exp(s_j - m)),  m = max_j s_j
 *     O[b,i,h,:] = sum_j exp(s_j - lse) * V[b,j,g,:]
 *
 * Rows are numbered as O is laid out: row r = (b * seq_q + i) * heads + h, so row r of O starts at
 * element r * dim.
 */
#ifndef ATTN_REFERENCE_H
#define ATTN_REFERENCE_H

#include <stddef.h>

#include "attn_types.h"
#include "attn_verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The (b, i, h) of O row @p r. */
void attn_row_coords(const attn_problem *p, size_t r, int *b, int *i, int *h);
/** Index into the log-sum-exp array `[batch, heads, seq_q]` of O row @p r. */
size_t attn_row_lse_index(const attn_problem *p, size_t r);

/**
 * Reference attention for the listed rows.
 * @param p       the problem
 * @param q,k,v   fp32 inputs in the dense layouts of attn_types.h
 * @param rows    O row numbers; NULL means every row, in order (n_rows must be attn_rows(p))
 * @param n_rows  number of rows
 * @param o       out: `[n_rows, dim]` in double
 * @param lse     out: `[n_rows]` natural-log log-sum-exp (-inf for a row that sees no key); may be
 * NULL Runs rows in parallel with OpenMP where the build has it.
 */
void attn_reference(const attn_problem *p, const float *q, const float *k, const float *v,
                    const size_t *rows, size_t n_rows, double *o, double *lse);

/** Problems whose full reference costs at most this many multiply-adds are checked whole. */
#define ATTN_FULL_CHECK_MACS 4.0e8

/**
 * Choose the rows to check. Small problems (reference cost at most ATTN_FULL_CHECK_MACS) get every
 * row. Larger ones get, in every (batch, head), the first and the last query row plus
 * @p per_head further rows drawn with @p seed; duplicates are removed and rows are sorted.
 * @return a malloc'd array (caller frees) and its length in @p n_rows.
 */
size_t *attn_sample_rows(const attn_problem *p, int per_head, uint64_t seed, size_t *n_rows);

/** A CPU implementation of attention (a lesson's model): write O `[batch, seq_q, heads, dim]` and
 *  the log-sum-exp `[batch, heads, seq_q]` for inputs in the harness's layout. @p ctx is the
 * caller's. Returns 0, or non-zero when it cannot run. */
typedef int (*attn_cpu_attention_fn)(const attn_problem *p, const float *q, const float *k,
                                     const float *v, float *o, float *lse, void *ctx);

/**
 * Check a CPU implementation against the reference, the one way every lesson and test does it:
 * seeded inputs (attn_fill_attention_input, streams 1-3 for Q, K, V), @p fn, the reference on every
 * row, and verdicts for O (@p vo, fp32 tolerances) and the log-sum-exp (@p vl, as the runner judges
 * an fp32 version's). Either verdict pointer may be NULL.
 * @return 0 when both pass, 1 when one fails, -1 when memory ran out or @p fn returned non-zero.
 */
int attn_cpu_check(const attn_problem *p, uint64_t seed, attn_cpu_attention_fn fn, void *ctx,
                   attn_verdict *vo, attn_verdict *vl);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_REFERENCE_H */
