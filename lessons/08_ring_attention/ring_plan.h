/**
 * @file ring_plan.h
 * @brief Lesson 08's drill: which tokens each rank holds, which block it holds at each step of the
 *        ring, what one (query chunk, key chunk) pair computes under the causal mask, and the model
 *        that says when the ring is compute-bound.
 *
 * One sequence of n tokens is sharded over p ranks. A rank keeps its queries for the whole run and
 * passes its keys and values around the ring: at step s (0 <= s < p) rank r holds the key/value
 * block that rank (r - s) mod p started with, computes its queries against it, and sends it on to
 * rank r + 1 while it receives the next one from rank r - 1.
 *
 * Two layouts:
 *  - contiguous: rank r holds chunk r of p near-equal chunks. Under the causal mask rank 0's
 *    queries see only its own block and rank p - 1's see every block: the last rank does about
 *    2p - 1 times the work of the first.
 *  - zig-zag: the sequence is cut into 2p near-equal chunks and rank r holds chunks r and
 *    2p - 1 - r, one from the cheap front and one from the expensive back; every rank does the same
 *    work at every step when 2p divides n (otherwise up to the rounding of the chunk lengths).
 *
 * Near-equal chunks: n tokens cut into c chunks give the first n % c chunks n / c + 1 tokens and
 * the others n / c (so a chunk may hold no token when n < c).
 *
 * Everything here is plain C with no CUDA: the ring's driver, the CPU model and the tests call the
 * same functions; drills/08_ring_plan.c has them with empty bodies for `make drill-8`.
 */
#ifndef L08_RING_PLAN_H
#define L08_RING_PLAN_H

#ifdef __cplusplus
extern "C" {
#endif

/** The most ranks the lesson drives (GPUs of one host, or virtual ranks on one GPU). */
#define L08_MAX_RANKS 8
/** The most chunks of the sequence one rank holds (zig-zag: 2). */
#define L08_MAX_CHUNKS 2

/** How the sequence is cut over the ranks. */
typedef enum l08_layout {
  L08_CONTIGUOUS = 0, /**< rank r holds chunk r of p */
  L08_ZIGZAG = 1      /**< rank r holds chunks r and 2p - 1 - r of 2p */
} l08_layout;

/** The tokens one rank holds: one or two chunks of the sequence, in the order the rank stores
 *  them (contiguous: one chunk; zig-zag: chunk r, then chunk 2p - 1 - r). */
typedef struct l08_shard {
  int n_chunks;              /**< 1 (contiguous) or 2 (zig-zag) */
  int start[L08_MAX_CHUNKS]; /**< first token of each chunk, in the whole sequence */
  int len[L08_MAX_CHUNKS];   /**< tokens in each chunk (0 when n is smaller than the chunks) */
  int tokens;                /**< len[0] + ... + len[n_chunks - 1] */
} l08_shard;

/**
 * The shard of rank @p rank.
 * @param n      tokens in the sequence, >= 1
 * @param p      ranks, 1..L08_MAX_RANKS
 * @param layout L08_CONTIGUOUS or L08_ZIGZAG
 * @param rank   0..p-1
 * @param out    the shard
 * @return 0, or -1 (and @p out zeroed) for an argument out of range
 */
int l08_shard_of(int n, int p, l08_layout layout, int rank, l08_shard *out);

/**
 * The rank whose key/value block rank @p rank holds at step @p step of a ring of @p p ranks:
 * (rank - step) mod p, always in 0..p-1 (also when rank - step is negative; 0 when p < 1).
 * Step 0 is the rank's own block.
 */
int l08_block_origin(int rank, int step, int p);

/** What one (query chunk, key chunk) pair computes under the mask. */
typedef enum l08_pair {
  L08_PAIR_SKIP = 0, /**< no query of the chunk sees any key of the other (or a chunk is empty) */
  L08_PAIR_FULL = 1, /**< every query sees every key: the kernel without the mask */
  L08_PAIR_DIAG = 2  /**< the chunks end on the same token: the kernel's own bottom-right mask is
                          exactly the global causal mask */
} l08_pair;

/**
 * How the queries [@p q_start, @p q_start + @p q_len) attend the keys [@p k_start, @p k_start +
 * @p k_len) of one sequence. Query i sees key j when j <= i (with @p causal) or always (without).
 * @return L08_PAIR_SKIP when a chunk is empty or, with @p causal, the first key comes after the
 *         last query; L08_PAIR_FULL without @p causal, or when the last key is at or before the
 *         first query (tested before DIAG: a one-token chunk against itself is FULL);
 *         L08_PAIR_DIAG when both chunks end on the same token and the keys start at or before
 *         the queries; -1 for any other overlap (the layouts above never make one: their
 *         chunks are equal or disjoint)
 */
int l08_pair_kind(int q_start, int q_len, int k_start, int k_len, int causal);

/**
 * The (query, key) pairs one pair of chunks computes: q_len * k_len for L08_PAIR_FULL, the
 * visible pairs of the bottom-right mask for L08_PAIR_DIAG, 0 for L08_PAIR_SKIP (and for -1).
 */
double l08_pair_work(int q_start, int q_len, int k_start, int k_len, int causal);

/**
 * The (query, key) pairs rank @p rank computes at step @p step: its chunks against the chunks of
 * the block it holds then (l08_block_origin()), summed with l08_pair_work(). Per (batch, head):
 * multiply by 4 * dim for the flops. 0 for an argument out of range.
 */
double l08_step_work(int n, int p, l08_layout layout, int causal, int rank, int step);

/** The ring's load balance, from l08_step_work(). */
typedef struct l08_balance {
  double total;         /**< pairs over every rank and step: the whole problem's work */
  double max_rank;      /**< the busiest rank's pairs over all its steps */
  double critical;      /**< sum over steps of the busiest rank at that step: the work on the
                             critical path when every step ends with a send and receive */
  double imbalance;     /**< max_rank / (total / p): 1 is perfect balance */
  double ideal_speedup; /**< total / max_rank: the speed-up over one rank if nothing else costs */
  double critical_speedup; /**< total / critical: the same when the steps are in lock step */
} l08_balance;

/** Fill @p out for the ring (@p n, @p p, @p layout, @p causal). Returns 0, or -1 for bad input. */
int l08_balance_of(int n, int p, l08_layout layout, int causal, l08_balance *out);

/**
 * The shard length above which a step's compute outlasts its send. A step computes about
 * 4 * L^2 * heads * dim flops (half that with the causal mask under zig-zag) and sends the block's
 * keys and values, 2 * L * kv_heads * dim * 2 bytes (bf16), so compute hides the send when
 * L > kv_heads / heads * flops_per_s / bytes_per_s (twice that for causal). Batch cancels.
 * @param heads         query heads
 * @param kv_heads      key/value heads
 * @param causal        1: half the work per step
 * @param flops_per_s   the kernel's measured rate
 * @param bytes_per_s   the link's measured rate, one direction
 * @return the length in tokens, or 0 for an argument <= 0
 */
double l08_compute_bound_len(int heads, int kv_heads, int causal, double flops_per_s,
                             double bytes_per_s);

#ifdef __cplusplus
}
#endif

#endif /* L08_RING_PLAN_H */
