/**
 * @file bwd_plan.h
 * @brief The pure arithmetic of lesson 09 that the checklist drills (`make drill-9`): the softmax
 *        backward of one row, the D term, the Q tiles a K/V tile visits with causal skipping, and
 *        the shared-memory passes of a warp's access (version 7's dQ staging).
 *
 * The softmax backward. For one row, P = softmax(s) and dP = dO V^T; then
 *     dS_j = P_j (dP_j - D),  D = sum_k P_k dP_k,
 * and since dP_k = dO . V_k and O = sum_k P_k V_k, D = dO . O: the row sum that needs the whole
 * row of P is the dot product of two vectors the forward and the caller already have.
 *
 * The KV-outer loop bounds. A block owns the keys [j0, j0 + bc) and walks the Q tiles of br rows.
 * With the bottom-right causal mask (query i sees key j when j <= i + seq_kv - seq_q), the Q tiles
 * before l09_first_q_tile() see none of its keys and are skipped; the tiles from
 * l09_first_unmasked_q_tile() on see every one of its keys and need no mask; the tiles between
 * are the ones the diagonal crosses.
 */
#ifndef L09_BWD_PLAN_H
#define L09_BWD_PLAN_H

#ifdef __cplusplus
extern "C" {
#endif

/** D = sum_d dO[d] * O[d] over one row of @p dim elements (accumulated in double). */
float l09_d_term(const float *d_o, const float *o, int dim);

/** The softmax backward of one row of @p n entries: ds[j] = p[j] * (dp[j] - d), where @p d is the
 * row's D term. */
void l09_softmax_grad_row(const float *p, const float *dp, float d, int n, float *ds);

/**
 * The first Q tile (of @p br rows) with a row that sees a key of the K/V tile starting at key
 * @p j0. 0 without the mask; the number of Q tiles, ceil(seq_q / br), when no row sees the tile.
 */
int l09_first_q_tile(int j0, int br, int seq_q, int seq_kv, int causal);

/**
 * The first Q tile from which every row sees every key of the K/V tile [j0, min(j0 + bc, seq_kv)),
 * so the causal mask can be left out; at least l09_first_q_tile(), at most the number of Q tiles
 * (no such tile). 0 without the mask.
 */
int l09_first_unmasked_q_tile(int j0, int bc, int br, int seq_q, int seq_kv, int causal);

/**
 * The shared-memory passes one warp-wide access takes: lane l accesses @p bytes (4, 8 or 16) at
 * byte offset @p offsets[l] (a multiple of @p bytes). Shared memory is 32 banks of 4-byte words
 * (bank = word mod 32) and serves 128 bytes a pass, so a 4-byte access is served for all 32 lanes
 * at once, an 8-byte one half a warp (lanes 0-15, then 16-31) at a time, a 16-byte one a quarter at
 * a time. Within each such group the passes are the most distinct words any one bank must serve
 * (lanes naming the same word share it); the access takes the sum over its groups. Lesson 01
 * measured the 4-byte case (a lane stride of s words: gcd(s, 32) passes). Returns 0 for @p bytes
 * other than 4, 8 or 16.
 */
int l09_shared_passes(const unsigned offsets[32], int bytes);

#ifdef __cplusplus
}
#endif

#endif /* L09_BWD_PLAN_H */
