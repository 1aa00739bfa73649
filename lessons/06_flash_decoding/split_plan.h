/**
 * @file split_plan.h
 * @brief Lesson 06's drill: how many chunks to cut the keys into, how long a chunk is, and how the
 *        chunks' partial softmax states are combined into one row.
 *
 * A partial state is a pair (lse, O): the natural-log log-sum-exp of the chunk's scores and the
 * chunk's output already normalised by its own sum, O = sum_j exp(s_j - lse) v_j. A chunk that saw
 * no key is (-inf, 0): its weight in any merge is exp(-inf) = 0. Two pairs merge as
 *
 *     lse = log(e^lse_a + e^lse_b)        O = e^(lse_a - lse) O_a + e^(lse_b - lse) O_b
 *
 * The lesson's own answers are in split_plan.c; drills/06_split_combine.c has the same functions
 * with empty bodies, and `make drill-6` runs the checklist (tests/lesson06/checklist.c) against it.
 * Everything here is plain C with no CUDA: the kernels and the CPU model call the same functions.
 */
#ifndef L06_SPLIT_PLAN_H
#define L06_SPLIT_PLAN_H

#ifdef __cplusplus
extern "C" {
#endif

/** The fewest keys a chunk keeps: below this a block's fixed costs (q, the merge, the partial
 * write) outweigh its share of the K/V stream. */
#define L06_MIN_CHUNK 256
/** A chunk's length is a multiple of this many keys (every warp step of both head dimensions). */
#define L06_CHUNK_ALIGN 64
/** Version 6, more sequences than one wave: a sequence longer than a block's average share of
 * the keys is cut into chunks of share / L06_VARLEN_CUTS (l06_varlen_chunk()). */
#define L06_VARLEN_CUTS 4
/** The most chunks per row: bounds the workspace and the combine's loop. */
#define L06_MAX_SPLITS 128
/**
 * The number of chunks the keys of every row (or group) are cut into.
 * @param slots      blocks the GPU runs at once: SMs x the blocks of the kernel one SM holds
 *                   (cudaOccupancyMaxActiveBlocksPerMultiprocessor)
 * @param units      blocks without a split (version 2: batch * heads * seq_q rows; versions 3-4:
 *                   batch * kv_heads * row tiles)
 * @param seq_kv     keys per sequence
 * @param max_splits upper bound (L06_MAX_SPLITS for the kernels)
 * @return floor(@p slots / @p units): one wave of blocks, never a second partial one; then no more
 *         than seq_kv / L06_MIN_CHUNK and @p max_splits, at least 1 (also for any argument below
 *         1); then trimmed to ceil(seq_kv / l06_chunk_len(seq_kv, n)), so that rounding the chunk
 *         up to L06_CHUNK_ALIGN keys never leaves a chunk with no key
 */
int l06_num_splits(int slots, int units, int seq_kv, int max_splits);

/**
 * Keys per chunk when @p seq_kv keys are cut into @p num_splits chunks: ceil(seq_kv / num_splits)
 * rounded up to a multiple of L06_CHUNK_ALIGN. Chunk s covers [s * len, (s + 1) * len) clipped to
 * the keys a row sees, so the last chunks of a row may be empty.
 * @return the length, >= L06_CHUNK_ALIGN; L06_CHUNK_ALIGN for arguments below 1
 */
int l06_chunk_len(int seq_kv, int num_splits);

/**
 * Merge the partial state (@p lse_b, @p o_b) into (*@p lse, @p o), in place.
 * @param lse   in/out: log-sum-exp of the running state (-inf: empty)
 * @param o     in/out: its normalised output, @p dim floats
 * @param lse_b log-sum-exp of the state merged in (-inf: empty, ignored)
 * @param o_b   its normalised output, @p dim floats
 * @param dim   head dimension
 */
void l06_merge(float *lse, float *o, float lse_b, const float *o_b, int dim);

/**
 * The combine: fold @p n partial states into one row.
 * @param lse     `[n]` partial log-sum-exps
 * @param o       `[n, dim]` partial normalised outputs
 * @param n       number of partial states, >= 1
 * @param dim     head dimension
 * @param lse_out out: the row's log-sum-exp, -inf when every state is empty
 * @param o_out   out: the row's output, `[dim]`, zeros when every state is empty
 */
void l06_combine(const float *lse, const float *o, int n, int dim, float *lse_out, float *o_out);

/**
 * Chunks of @p chunk keys over a batch of sequences of their own lengths: the sum of
 * ceil(len_b / chunk), every sequence at least one.
 * @param chunk  keys per chunk (below 1: taken as 1)
 * @param lens   `[batch]` keys of each sequence, or NULL: every sequence has @p seq_kv
 * @param batch  sequences
 * @param seq_kv the length of every sequence when @p lens is NULL
 * @return the chunks of the whole batch
 */
int l06_varlen_chunks(int chunk, const int *lens, int batch, int seq_kv);

/**
 * The chunk length for sequences of different lengths (version 6), a multiple of
 * L06_CHUNK_ALIGN: every sequence is cut into chunks of this many keys, so a long sequence gets
 * chunks in proportion to its length and a short one a single chunk.
 * - When one wave can hold a chunk of every sequence (@p units x batch <= @p slots): the shortest
 *   chunk, at least L06_MIN_CHUNK, with @p units x l06_varlen_chunks() <= @p slots.
 * - Otherwise (more sequences than one wave holds): the blocks' average share of the keys,
 *   total x units / slots, so that no block is much longer than the rest; a quarter of it
 *   (L06_VARLEN_CUTS) when the longest sequence is longer than the share, so that the blocks of
 *   the long sequence end at most a quarter share apart; at least L06_MIN_CHUNK.
 * Never longer than the longest sequence rounded up (one chunk each), which is also the answer
 * for arguments below 1.
 * @param slots  blocks the GPU runs at once (SMs x the kernel's blocks per SM)
 * @param units  blocks of one sequence without a split (kv_heads x row tiles)
 * @param lens   `[batch]` keys of each sequence, or NULL: every sequence has @p seq_kv
 * @param batch  sequences
 * @param seq_kv the length of every sequence when @p lens is NULL
 * @return the chunk length in keys
 */
int l06_varlen_chunk(int slots, int units, const int *lens, int batch, int seq_kv);

#ifdef __cplusplus
}
#endif

#endif /* L06_SPLIT_PLAN_H */
