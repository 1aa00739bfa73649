/**
 * @file paged_attention.h
 * @brief Lesson 07: PagedAttention. A KV cache kept in pages of a pool, managed like virtual
 *        memory (cache.h, paging.h), and decode kernels that read it through the block table.
 *
 * Versions (the lesson's table, in teaching order):
 *  1. paged-row: one block per (sequence, query head, query row) walking its block table (vLLM's
 *     paged_attention_v1 shape, lesson 06's version 1 as its body).
 *  2. paged-split: lesson 06's version 6 (GQA grouping on tensor cores, a cp.async ring, chunks by
 *     length, one launch) with every key row looked up in the block table.
 *  3. paged-pipeline: version 2 with the lookups out of the copy path: each tile's table entries
 *     read a tile ahead, one per lane, shared by shuffles; shifts for divisions (block sizes that
 *     are powers of two).
 *  4. paged-overlap: version 3 with the Q tile loaded before the table is read, and two blocks per
 *     SM (half the ring each) when the batch needs several waves, so that a block's dependent
 *     start runs under another block's stream.
 *  5. paged-balance: version 4's body with the grid in another order (the KV heads of a chunk side
 *     by side), even chunks, and for lengths that differ a plan that weighs work
 *     (l07_balance_chunk()) with the sequences it cuts launched first.
 *  6, 7. dense-one-launch, dense-varlen: not paged: lesson 06's versions 5 and 6 on the same values
 *     in dense tensors, run beside the paged ones as their yardstick.
 *
 * Every launcher takes the pool `[num_blocks, block_size, kv_heads, dim]` of K and of V in bf16,
 * the block table `[batch, max_blocks]` and the lengths `[batch]` on the device, Q and O in the
 * BSHD layout of attn_types.h, writes the fp32 natural-log log-sum-exp `[batch, heads, seq_q]`,
 * enqueues on the given stream, returns the first CUDA error and never exits.
 */
#ifndef L07_PAGED_ATTENTION_H
#define L07_PAGED_ATTENTION_H

#include "attn.h"
#include "cache.h"
#include "decode_loop.h"
#include "flash_decoding.h" /* lesson 06: the split plan (USES 6) */
#include "paging.h"
#include "sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Paged versions in the lesson. */
#define L07_PAGED_VERSIONS 5
/** Rows of the lesson's table: the paged versions, then two dense yardsticks (lesson 06's versions
 * 5 and 6 on dense K and V holding the same values). */
#define L07_VERSIONS (L07_PAGED_VERSIONS + 2)

/**
 * A paged decode launcher, for one head dimension (in its name).
 * @param q             `[batch, seq_q, heads, dim]`, bf16
 * @param k_cache       `[num_blocks, block_size, kv_heads, dim]`, bf16
 * @param v_cache       the same for V
 * @param block_table   `[batch, max_blocks]` physical block of each logical block, on the device
 * @param seq_lens      `[batch]` keys of each sequence, on the device
 * @param seq_lens_host the same on the host (versions 2 to 5 plan their chunks there), or NULL
 *                      when every sequence has @p seq_kv keys (versions 2 to 5 then do not read
 *                      @p seq_lens: one dependent load less before the first copy)
 * @param o             out: `[batch, seq_q, heads, dim]`, bf16
 * @param lse           out: `[batch, heads, seq_q]`, fp32
 * @param workspace,workspace_bytes versions 2 to 5's scratch (l07_paged_workspace_bytes()), zeroed
 * once before the first call; version 1 takes none
 * @param batch,heads,kv_heads,seq_q the shape (seq_q 1..L06_MAX_SEQ_Q)
 * @param seq_kv        the longest sequence
 * @param max_blocks    block-table columns, at least ceil(seq_kv / block_size)
 * @param block_size    tokens per block
 * @param causal        1: bottom-right causal mask, at each sequence's own last key
 * @param scale         softmax scale
 * @param stream        stream to enqueue on
 */
typedef cudaError_t (*l07_paged_fn)(const void *q, const void *k_cache, const void *v_cache,
                                    const int *block_table, const int *seq_lens,
                                    const int *seq_lens_host, void *o, float *lse, float *workspace,
                                    size_t workspace_bytes, int batch, int heads, int kv_heads,
                                    int seq_q, int seq_kv, int max_blocks, int block_size,
                                    int causal, float scale, cudaStream_t stream);

/** @name The launchers, two head dimensions each
 *  @{ */
/** Version 1, head dimension 64. @copydetails l07_paged_fn */
cudaError_t l07_paged_row_d64(const void *q, const void *k_cache, const void *v_cache,
                              const int *block_table, const int *seq_lens, const int *seq_lens_host,
                              void *o, float *lse, float *workspace, size_t workspace_bytes,
                              int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                              int max_blocks, int block_size, int causal, float scale,
                              cudaStream_t stream);
/** Version 1, head dimension 128. @copydetails l07_paged_fn */
cudaError_t l07_paged_row_d128(const void *q, const void *k_cache, const void *v_cache,
                               const int *block_table, const int *seq_lens,
                               const int *seq_lens_host, void *o, float *lse, float *workspace,
                               size_t workspace_bytes, int batch, int heads, int kv_heads,
                               int seq_q, int seq_kv, int max_blocks, int block_size, int causal,
                               float scale, cudaStream_t stream);
/** Version 2, head dimension 64. @copydetails l07_paged_fn */
cudaError_t l07_paged_split_d64(const void *q, const void *k_cache, const void *v_cache,
                                const int *block_table, const int *seq_lens,
                                const int *seq_lens_host, void *o, float *lse, float *workspace,
                                size_t workspace_bytes, int batch, int heads, int kv_heads,
                                int seq_q, int seq_kv, int max_blocks, int block_size, int causal,
                                float scale, cudaStream_t stream);
/** Version 2, head dimension 128. @copydetails l07_paged_fn */
cudaError_t l07_paged_split_d128(const void *q, const void *k_cache, const void *v_cache,
                                 const int *block_table, const int *seq_lens,
                                 const int *seq_lens_host, void *o, float *lse, float *workspace,
                                 size_t workspace_bytes, int batch, int heads, int kv_heads,
                                 int seq_q, int seq_kv, int max_blocks, int block_size, int causal,
                                 float scale, cudaStream_t stream);
/** Version 3, head dimension 64 (block sizes that are powers of two). @copydetails l07_paged_fn */
cudaError_t l07_paged_pipeline_d64(const void *q, const void *k_cache, const void *v_cache,
                                   const int *block_table, const int *seq_lens,
                                   const int *seq_lens_host, void *o, float *lse, float *workspace,
                                   size_t workspace_bytes, int batch, int heads, int kv_heads,
                                   int seq_q, int seq_kv, int max_blocks, int block_size,
                                   int causal, float scale, cudaStream_t stream);
/** Version 3, head dimension 128. @copydetails l07_paged_fn */
cudaError_t l07_paged_pipeline_d128(const void *q, const void *k_cache, const void *v_cache,
                                    const int *block_table, const int *seq_lens,
                                    const int *seq_lens_host, void *o, float *lse, float *workspace,
                                    size_t workspace_bytes, int batch, int heads, int kv_heads,
                                    int seq_q, int seq_kv, int max_blocks, int block_size,
                                    int causal, float scale, cudaStream_t stream);
/** Version 4, head dimension 64 (block sizes that are powers of two). @copydetails l07_paged_fn */
cudaError_t l07_paged_overlap_d64(const void *q, const void *k_cache, const void *v_cache,
                                  const int *block_table, const int *seq_lens,
                                  const int *seq_lens_host, void *o, float *lse, float *workspace,
                                  size_t workspace_bytes, int batch, int heads, int kv_heads,
                                  int seq_q, int seq_kv, int max_blocks, int block_size, int causal,
                                  float scale, cudaStream_t stream);
/** Version 4, head dimension 128. @copydetails l07_paged_fn */
cudaError_t l07_paged_overlap_d128(const void *q, const void *k_cache, const void *v_cache,
                                   const int *block_table, const int *seq_lens,
                                   const int *seq_lens_host, void *o, float *lse, float *workspace,
                                   size_t workspace_bytes, int batch, int heads, int kv_heads,
                                   int seq_q, int seq_kv, int max_blocks, int block_size,
                                   int causal, float scale, cudaStream_t stream);
/** Version 5, head dimension 64 (block sizes that are powers of two). @copydetails l07_paged_fn */
cudaError_t l07_paged_balance_d64(const void *q, const void *k_cache, const void *v_cache,
                                  const int *block_table, const int *seq_lens,
                                  const int *seq_lens_host, void *o, float *lse, float *workspace,
                                  size_t workspace_bytes, int batch, int heads, int kv_heads,
                                  int seq_q, int seq_kv, int max_blocks, int block_size, int causal,
                                  float scale, cudaStream_t stream);
/** Version 5, head dimension 128. @copydetails l07_paged_fn */
cudaError_t l07_paged_balance_d128(const void *q, const void *k_cache, const void *v_cache,
                                   const int *block_table, const int *seq_lens,
                                   const int *seq_lens_host, void *o, float *lse, float *workspace,
                                   size_t workspace_bytes, int batch, int heads, int kv_heads,
                                   int seq_q, int seq_kv, int max_blocks, int block_size,
                                   int causal, float scale, cudaStream_t stream);
/** Blocks of version 2's kernel one SM holds, head dimension 64 (0 without a device). */
int l07_paged_split_per_sm_d64(void);
/** The same, head dimension 128. */
int l07_paged_split_per_sm_d128(void);
/** Blocks of version 3's kernel one SM holds, head dimension 64 (0 without a device). */
int l07_paged_pipeline_per_sm_d64(void);
/** The same, head dimension 128. */
int l07_paged_pipeline_per_sm_d128(void);
/** Blocks of version 4's kernel one SM holds with a ring of @p stages tiles per warp (its deep or
 * its shallow ring, from l07_paged_overlap_ring_d64()), head dimension 64; 0 for another depth or
 * without a device. */
int l07_paged_overlap_per_sm_d64(int stages);
/** The same, head dimension 128. */
int l07_paged_overlap_per_sm_d128(int stages);
/** The ring version 4 runs for @p batch sequences of @p units blocks each (units: KV heads x row
 * tiles), head dimension 64: the deep one when those blocks fit in one wave at its occupancy, the
 * shallow one (two blocks per SM) when they do not, except for lengths that differ (@p varlen 1)
 * while the shallow ring's slots still hold every sequence in one wave. */
int l07_paged_overlap_ring_d64(int batch, int units, int varlen);
/** The same, head dimension 128. */
int l07_paged_overlap_ring_d128(int batch, int units, int varlen);
/** Version 5's occupancy at ring depth @p stages, as l07_paged_overlap_per_sm_d64() is version
 * 4's, head dimension 64. */
int l07_paged_balance_per_sm_d64(int stages);
/** The same, head dimension 128. */
int l07_paged_balance_per_sm_d128(int stages);
/** Version 5's ring, chosen as l07_paged_overlap_ring_d64() chooses version 4's, head dimension
 * 64. */
int l07_paged_balance_ring_d64(int batch, int units, int varlen);
/** The same, head dimension 128. */
int l07_paged_balance_ring_d128(int batch, int units, int varlen);
/** @} */

/**
 * Version 5's chunk length (balance.c). With one length for all (@p lens NULL), or more sequences
 * than one wave holds (@p units x @p batch > @p slots), l06_varlen_chunk()'s. Otherwise the
 * shortest multiple of L06_CHUNK_ALIGN keys, from L06_MIN_CHUNK up to the longest length, for
 * which the sequences longer than it (cut into len / chunk chunks, rounded up, @p units blocks
 * each) need at most @p slots blocks, and the slots they leave take the other sequences' keys
 * (units x len each) in the time of one chunk: units x sum(len <= chunk) <= chunk x (slots -
 * those blocks). The longest length always passes, so there is an answer.
 */
int l07_balance_chunk(int slots, int units, const int *lens, int batch, int seq_kv);

/** The chunk length of version @p version (2 to 5) on the current device: l06_varlen_chunk() with
 * its kernel's slots (versions 4 and 5 at the ring they run), l07_balance_chunk() for version 5;
 * @p lens_host NULL: every sequence has @p seq_kv keys. */
int l07_paged_chunk_for(int version, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                        const int *lens_host, int dim);

/** Bytes of version @p version's workspace (2 to 5) for these lengths on the current device (0
 * when every sequence is one chunk, or for version 1). */
size_t l07_paged_workspace_bytes(int version, int batch, int heads, int kv_heads, int seq_q,
                                 int seq_kv, const int *lens_host, int dim);

/** Paged decode on the CPU, in fp32, reading K and V through the block table with
 * l07_kv_offset() (the attn_cpu_check() shape; @p ctx unused): builds the harness's paged cache of
 * @p k and @p v (shuffled blocks, NaN in every slot no token owns) and attends over it. Returns 0,
 * or -1 when memory ran out. */
int l07_cpu_paged(const attn_problem *p, const float *q, const float *k, const float *v, float *o,
                  float *lse, void *ctx);

/**
 * Append (reshape-and-cache): token t's K and V rows, `[n_tokens, kv_heads, dim]` bf16 on the
 * device, into slot @p slots[t] of the pools (slots from l07_seq_append(); below 0: skipped).
 * kv_heads * dim * 2 must be a multiple of 16 bytes. cudaErrorInvalidValue for bad arguments.
 */
cudaError_t l07_append(const void *k_new, const void *v_new, const int *slots, int n_tokens,
                       int kv_heads, int dim, void *k_cache, void *v_cache, cudaStream_t stream);

/** The copies copy-on-write asked for (@p copies on the device): for each, the first `tokens`
 * slots of block `src` into block `dst`, K and V. cudaErrorInvalidValue for bad arguments. */
cudaError_t l07_copy_blocks(const l07_copy *copies, int n_copies, int block_size, int kv_heads,
                            int dim, void *k_cache, void *v_cache, cudaStream_t stream);

/** The launcher of paged version @p version (1..L07_PAGED_VERSIONS) for head dimension @p dim (64
 * or 128), or NULL (launch_plan.c, with l07_paged_chunk_for() and l07_paged_workspace_bytes()). */
l07_paged_fn l07_launcher(int version, int dim);

/** What the decode loop did on the GPU. */
typedef struct l07_loop_gpu_result {
  l07_loop_result loop; /**< the schedule's counts; max_abs against the fp64 reference */
  attn_verdict verdict; /**< every checked element against the fp64 reference (bf16 tolerances) */
  long checked_rows;    /**< query rows compared with the reference */
  long pool_mismatches; /**< with cfg->check_pool: token rows whose pool copy differed */
  double decode_ms;     /**< the decode kernels' time, summed over the steps (CUDA events) */
  double kv_bytes;      /**< K + V bytes those decodes needed: 2 x length x kv_heads x dim x 2 */
} l07_loop_gpu_result;

/**
 * The decode loop on the GPU: the schedule of l07_decode_loop_cpu() (arrivals with prompts, one
 * token per live sequence per step, forks, finishes) over a bf16 pool on the device. Each step
 * appends its new tokens with one launch of l07_append(), split only where a copy-on-write copy
 * (l07_copy_blocks()) must come between (its source may hold a prompt staged in the same step),
 * then runs one paged decode of version @p version over the live sequences; sequences
 * finish after that, so a freed block is written again only by a later step. Every row of O must
 * be written and finite, and the heads of one KV group per sequence and step (a different group
 * each step) are checked against an fp64 reference over a dense host copy of the sequence. The
 * pool starts as NaN.
 * @return 0 when it ran (see out->verdict and out->loop.free_at_end), -1 for a bad configuration
 *         or no host memory, -2 for a CUDA error; @p err says which.
 */
int l07_decode_loop_gpu(const l07_loop_config *cfg, int version, l07_loop_gpu_result *out,
                        char *err, size_t err_len);

/** The lesson's table of versions, its default shape and head dimensions. */
extern const attn_lesson l07_lesson;

#ifdef __cplusplus
}
#endif

#endif /* L07_PAGED_ATTENTION_H */
