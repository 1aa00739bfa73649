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

/**
 * The bytes one step of the KV-outer walk on warpgroups moves through shared memory, by its
 * operands' arithmetic: a block of @p bc keys (one warpgroup per 64) against a Q tile of @p br
 * queries at head dimension @p dim, bf16 operands, the dQ block added in fp32 through a staging
 * tile. Counted, each once:
 *   - S^T and dP^T, each warpgroup's two products with both operands in shared memory: its 64
 *     keys of K or V (A) and the Q or dO tile (B), (64 + br) dim 2 bytes a product;
 *   - dV and dK, A from registers: the dO or Q tile (B), br dim 2 bytes a product and warpgroup;
 *   - the dS tile stored for dQ: br bc 2;
 *   - dQ = dS K made as @p dq_row_parts x @p dq_col_parts products, each reading its rows of dS
 *     and its columns of K: dq_col_parts br bc 2 + dq_row_parts bc dim 2;
 *   - the fp32 dQ block written to the staging tile and read back by the reduction: 2 br dim 4;
 *   - Q and dO landing from global memory: 2 br dim 2.
 * Version 7 at dim 128 (br 64, bc 128, dQ in two column halves) moves 376,832 bytes a step; one
 * m64n128 dQ product, as cuDNN's kernel makes it, 360,448. Returns 0 unless @p bc is a positive
 * multiple of 64, @p br, @p dim and both part counts are positive, and the parts divide @p br
 * and @p dim.
 */
long l09_step_shared_bytes(int br, int bc, int dim, int dq_row_parts, int dq_col_parts);

#ifdef __cplusplus
}
#endif

#endif /* L09_BWD_PLAN_H */
