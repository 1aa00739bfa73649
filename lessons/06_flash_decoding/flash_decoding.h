/**
 * @file flash_decoding.h
 * @brief Lesson 06: Flash-Decoding. Attention for a few query rows against a long KV cache, with
 *        the keys of each row split over blocks and the blocks' partial states combined by their
 *        log-sum-exp.
 *
 * Versions (the lesson's table, in teaching order):
 *  1. one-block: one block per query row (batch, query head, row) walks every key; its 4 warps
 *     split the keys and merge their (m, l, O) states (lesson 02's version 8, in bf16). The grid
 *     is batch * heads * seq_q blocks: 32 at the default shape, for 132 SMs.
 *  2. split-kv: the keys of every row cut into num_splits chunks (l06_num_splits()), one block per
 *     (row, chunk) writing a partial state (normalised O, log-sum-exp) to an fp32 workspace, and a
 *     second kernel, the combine, merging the partial states of every row.
 *  3. gqa-group: one block per (batch, KV head, chunk) for every query row of the group (query
 *     heads x tokens, 16 rows per tile), on tensor cores: K and V read once per group.
 *  4. pipeline: version 3 with several key tiles in flight per warp (a cp.async ring).
 *  5. one-launch: version 4 whose last block per unit merges the chunks (an atomic counter): no
 *     combine kernel.
 *  6. varlen: version 5 over sequences of their own lengths, each cut into chunks of one common
 *     length (l06_varlen_chunk()), so long and short sequences share the GPU evenly.
 *
 * Every launcher takes device pointers in the BSHD layouts of attn_types.h, bf16 Q, K, V and O,
 * accumulates in fp32, writes the fp32 natural-log log-sum-exp `[batch, heads, seq_q]`, enqueues
 * on the given stream, returns the first CUDA error and never exits. Query head h reads KV head
 * h / (heads / kv_heads). seq_q is 1..L06_MAX_SEQ_Q; causal masking is bottom-right aligned.
 */
#ifndef L06_FLASH_DECODING_H
#define L06_FLASH_DECODING_H

#include "attn.h"
#include "split_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Threads per block of the attention kernels: 4 warps. */
#define L06_THREADS 128
/** The most query rows per sequence the versions take (decode, speculative drafts). */
#define L06_MAX_SEQ_Q 8
/** Number of versions in the lesson. */
#define L06_VERSIONS 6

/**
 * Version 1's launcher, for one head dimension (in its name).
 * @param q        `[batch, seq_q, heads, dim]`, bf16
 * @param k        `[batch, seq_kv, kv_heads, dim]`, bf16
 * @param v        `[batch, seq_kv, kv_heads, dim]`, bf16
 * @param o        out: `[batch, seq_q, heads, dim]`, bf16
 * @param lse      out: `[batch, heads, seq_q]`, fp32, natural log; -inf for a row that sees no key
 * @param batch    sequences
 * @param heads    query heads
 * @param kv_heads key/value heads, dividing @p heads
 * @param seq_q    query tokens per sequence, 1..L06_MAX_SEQ_Q
 * @param seq_kv   key/value tokens per sequence, >= 1
 * @param causal   1: bottom-right causal mask
 * @param scale    softmax scale (the caller passes 1/sqrt(dim) for the usual one)
 * @param stream   stream to enqueue on
 * @return cudaSuccess, cudaErrorInvalidValue for a bad shape, or the first CUDA error
 */
typedef cudaError_t (*l06_launch_fn)(const void *q, const void *k, const void *v, void *o,
                                     float *lse, int batch, int heads, int kv_heads, int seq_q,
                                     int seq_kv, int causal, float scale, cudaStream_t stream);

/**
 * Version 2's launcher, for one head dimension (in its name): the split pass, then the combine.
 * @param q,k,v,o,lse,batch,heads,kv_heads,seq_q,seq_kv,causal,scale as in l06_launch_fn
 * @param workspace       fp32 scratch of at least l06_split_workspace_bytes() bytes
 * @param workspace_bytes its size
 * @param num_splits      chunks per row, 1..L06_MAX_SPLITS; 0 chooses l06_splits_for() on the
 *                        current device
 * @param stream          stream to enqueue on
 * @return cudaSuccess, cudaErrorInvalidValue for a bad shape or a workspace too small, or the first
 *         CUDA error
 */
typedef cudaError_t (*l06_split_fn)(const void *q, const void *k, const void *v, void *o,
                                    float *lse, float *workspace, size_t workspace_bytes,
                                    int num_splits, int batch, int heads, int kv_heads, int seq_q,
                                    int seq_kv, int causal, float scale, cudaStream_t stream);

/**
 * Version 6's launcher, for one head dimension (in its name).
 * @param q,k,v,o,lse,batch,heads,kv_heads,seq_q,causal,scale,stream as in l06_launch_fn
 * @param workspace       scratch of l06_varlen_workspace_bytes() bytes, zeroed before the first
 *                        call (it holds counters that every call leaves at 0)
 * @param workspace_bytes its size
 * @param seq_lens        `[batch]` keys of each sequence, on the device, or NULL: all seq_kv
 * @param seq_lens_host   the same lengths on the host (the chunk plan is made there), or NULL
 *                        exactly when @p seq_lens is
 * @param seq_kv          the longest length and the stride of K and V: `[batch, seq_kv, ...]`
 * @return cudaSuccess, cudaErrorInvalidValue for a bad shape, a length outside 1..seq_kv or a
 *         workspace too small, or the first CUDA error
 */
typedef cudaError_t (*l06_varlen_fn)(const void *q, const void *k, const void *v, void *o,
                                     float *lse, float *workspace, size_t workspace_bytes,
                                     const int *seq_lens, const int *seq_lens_host, int batch,
                                     int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                                     float scale, cudaStream_t stream);

/** @name The launchers, two head dimensions each
 *  @{ */
/** Version 1, one block per query row, head dimension 64. @copydetails l06_launch_fn */
cudaError_t l06_one_block_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                              int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                              float scale, cudaStream_t stream);
/** Version 1, head dimension 128. @copydetails l06_launch_fn */
cudaError_t l06_one_block_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                               int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                               int causal, float scale, cudaStream_t stream);
/** Version 2, split keys and combine, head dimension 64. @copydetails l06_split_fn */
cudaError_t l06_split_kv_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                             float *workspace, size_t workspace_bytes, int num_splits, int batch,
                             int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                             float scale, cudaStream_t stream);
/** Version 2, head dimension 128. @copydetails l06_split_fn */
cudaError_t l06_split_kv_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                              float *workspace, size_t workspace_bytes, int num_splits, int batch,
                              int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                              float scale, cudaStream_t stream);
/** Version 3, one block per (batch, KV head, chunk), head dimension 64. Same arguments as
 * l06_split_kv_d64(); num_splits 0 chooses l06_splits_for(), and with one chunk no workspace
 * is needed. @copydetails l06_split_fn */
cudaError_t l06_gqa_group_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                              float *workspace, size_t workspace_bytes, int num_splits, int batch,
                              int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                              float scale, cudaStream_t stream);
/** Version 3, head dimension 128. @copydetails l06_gqa_group_d64 */
cudaError_t l06_gqa_group_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                               float *workspace, size_t workspace_bytes, int num_splits, int batch,
                               int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                               float scale, cudaStream_t stream);
/** Version 4, tiles in flight, head dimension 64. @copydetails l06_gqa_group_d64 */
cudaError_t l06_pipeline_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                             float *workspace, size_t workspace_bytes, int num_splits, int batch,
                             int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                             float scale, cudaStream_t stream);
/** Version 4, head dimension 128. @copydetails l06_gqa_group_d64 */
cudaError_t l06_pipeline_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                              float *workspace, size_t workspace_bytes, int num_splits, int batch,
                              int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                              float scale, cudaStream_t stream);
/** Version 5, one launch, head dimension 64. Its workspace (l06_workspace_bytes()) starts with
 * one counter per unit, which must be 0 before the first call (zero the workspace once); every
 * call leaves them at 0. @copydetails l06_gqa_group_d64 */
cudaError_t l06_one_launch_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                               float *workspace, size_t workspace_bytes, int num_splits, int batch,
                               int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                               float scale, cudaStream_t stream);
/** Version 5, head dimension 128. @copydetails l06_one_launch_d64 */
cudaError_t l06_one_launch_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                                float *workspace, size_t workspace_bytes, int num_splits, int batch,
                                int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                                float scale, cudaStream_t stream);
/** @} */

/** Version 6, lengths per sequence, head dimension 64. @copydetails l06_varlen_fn */
cudaError_t l06_varlen_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                           float *workspace, size_t workspace_bytes, const int *seq_lens,
                           const int *seq_lens_host, int batch, int heads, int kv_heads, int seq_q,
                           int seq_kv, int causal, float scale, cudaStream_t stream);
/** Version 6, head dimension 128. @copydetails l06_varlen_fn */
cudaError_t l06_varlen_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                            float *workspace, size_t workspace_bytes, const int *seq_lens,
                            const int *seq_lens_host, int batch, int heads, int kv_heads, int seq_q,
                            int seq_kv, int causal, float scale, cudaStream_t stream);

/** Version 6's chunk length on the current device: l06_varlen_chunk() with slots = SMs x its
 * blocks per SM and units = kv_heads x row tiles of one sequence. @p lens_host may be NULL (every
 * sequence has @p seq_kv keys). */
int l06_varlen_chunk_for(int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                         const int *lens_host, int dim);

/** Bytes of version 6's workspace for these lengths on the current device: 0 when every sequence
 * is one chunk, else l06_counter_bytes(batch x units) and the partial states of every (chunk,
 * unit), 16 rows of dim + 1 floats each. */
size_t l06_varlen_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                  const int *lens_host, int dim);

/** Bytes of version 5's counters, one int per unit, rounded up to 256 so that the partial states
 * after them stay aligned. */
size_t l06_counter_bytes(int units);

/** @name The combine alone (l06_split_kv_d64/_d128 call it after the split pass)
 *  @{ */
/**
 * Merge the partial states of every row into O and the log-sum-exp, head dimension 64.
 * @param workspace  the split pass's partial states: O `[num_splits, rows, dim]` then the
 *                   log-sum-exp `[num_splits, rows]`, rows = batch * seq_q * heads in O's order
 * @param num_splits partial states per row, 1..L06_MAX_SPLITS
 * @param o          out: `[batch, seq_q, heads, dim]`, bf16
 * @param lse        out: `[batch, heads, seq_q]`, fp32
 * @param batch,heads,seq_q the shape
 * @param stream     stream to enqueue on
 * @return cudaSuccess, cudaErrorInvalidValue for a bad shape, or the first CUDA error
 */
cudaError_t l06_combine_d64(const float *workspace, int num_splits, void *o, float *lse, int batch,
                            int heads, int seq_q, cudaStream_t stream);
/** The combine, head dimension 128. @copydetails l06_combine_d64 */
cudaError_t l06_combine_d128(const float *workspace, int num_splits, void *o, float *lse, int batch,
                             int heads, int seq_q, cudaStream_t stream);
/** @} */

/** Bytes of version 2's workspace: @p num_splits partial states of @p rows rows (dim floats of O
 * and one log-sum-exp each). */
size_t l06_split_workspace_bytes(int num_splits, size_t rows, int dim);

/** The current device's SM count (cudaDevAttrMultiProcessorCount), queried once and cached; 0 when
 * there is no usable device (then nothing is cached and the CUDA error is cleared). */
int l06_sm_count(void);

/** @name Blocks of each split kernel one SM holds (cudaOccupancyMaxActiveBlocksPerMultiprocessor,
 *  queried once; 0 when there is no usable device)
 *  @{ */
/** Version 2's split kernel, head dimension 64. */
int l06_split_kv_per_sm_d64(void);
/** Version 2's split kernel, head dimension 128. */
int l06_split_kv_per_sm_d128(void);
/** Version 3's kernel, head dimension 64. */
int l06_gqa_group_per_sm_d64(void);
/** Version 3's kernel, head dimension 128. */
int l06_gqa_group_per_sm_d128(void);
/** Version 4's kernel, head dimension 64. */
int l06_pipeline_per_sm_d64(void);
/** Version 4's kernel, head dimension 128. */
int l06_pipeline_per_sm_d128(void);
/** Version 5's kernel, head dimension 64. */
int l06_one_launch_per_sm_d64(void);
/** Version 5's kernel, head dimension 128. */
int l06_one_launch_per_sm_d128(void);
/** Version 6's kernel, head dimension 64. */
int l06_varlen_per_sm_d64(void);
/** Version 6's kernel, head dimension 128. */
int l06_varlen_per_sm_d128(void);
/** @} */

/** The units of version @p version: its blocks without a split. Version 2: batch * heads * seq_q
 * rows; versions 3 to 6: batch * kv_heads * row tiles, ceil(heads / kv_heads * seq_q / 16) row
 * tiles per group. 0 for version 1 or a bad shape; INT_MAX when the product overflows. */
int l06_units(int version, int batch, int heads, int kv_heads, int seq_q);

/** The chunks version @p version (2..5) cuts the keys into for this shape on the
 * current device: l06_num_splits() with slots = SMs x the kernel's blocks per SM and
 * l06_units(); 1 for version 1, without a device, or for a bad shape. */
int l06_splits_for(int version, int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim);

/**
 * Scratch bytes version @p version needs for this shape on the current device: 0 for version 1,
 * l06_split_workspace_bytes(l06_splits_for(...), rows, dim) for the others, plus
 * l06_counter_bytes(units) for version 5; 0 for versions 3 to 5 when that is one chunk (they then
 * write O directly).
 */
size_t l06_workspace_bytes(int version, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                           int dim);

/**
 * Any version by number, for callers without the harness's structs (Python's ctypes, bench/);
 * version 6 runs with every sequence of seq_kv keys.
 * @param version  1..L06_VERSIONS
 * @param dim      head dimension, 64 or 128
 * @param workspace,workspace_bytes scratch of l06_workspace_bytes() bytes; ignored by version 1
 * @param q,k,v,o,lse,batch,heads,kv_heads,seq_q,seq_kv,causal,scale,stream as in l06_launch_fn;
 *                 scale 0 means 1/sqrt(dim)
 * @return cudaErrorInvalidValue for an unknown version or dimension, else the launcher's result
 */
cudaError_t l06_forward(int version, int dim, const void *q, const void *k, const void *v, void *o,
                        float *lse, void *workspace, size_t workspace_bytes, int batch, int heads,
                        int kv_heads, int seq_q, int seq_kv, int causal, float scale,
                        cudaStream_t stream);

/** Short name of version @p version (1-based), or NULL when there is none. */
const char *l06_version_name(int version);

/** Threads per block of the read floor's kernel (l06_read_floor()). */
#define L06_FLOOR_THREADS 512
/** Blocks per SM of the read floor's grid: 8 x 132 = 1056 blocks on an H200, the best grid
 * measured there. That is twice the 4 blocks of 512 threads an SM of sm_80 or sm_90 holds at
 * once: the second round's blocks start as the first round's finish. */
#define L06_FLOOR_BLOCKS_PER_SM 8

/**
 * The read floor: a plain read of @p bytes, timed as the versions are, for what one launch of
 * that many bytes can reach. Allocates two buffers of @p bytes / 2 each (rounded up to whole
 * 16-byte vectors), zeroes them, reads them untimed for 200 ms (reads run slower for a while after
 * a large cudaFree, such as the harness's inputs just before the report: read_floor.cu), then
 * times with attn_time() (the L2 flushed before every run) a kernel that reads both with 16-byte
 * streaming loads (`__ldcs`): L06_FLOOR_THREADS threads and L06_FLOOR_BLOCKS_PER_SM x SM count
 * blocks, each block a contiguous slice of both buffers, 4 loads of each issued per step before
 * any is used. Frees the buffers. Lesson 06's report passes the K + V bytes of the shape, as the
 * lesson's byte model counts them.
 * @param bytes  bytes to read, both buffers together
 * @param warmup untimed runs first (the harness's --warmup, attn_options::warmup)
 * @param iters  timed runs, the median reported (--iters, attn_options::iters)
 * @param out    out: median, fastest and slowest run, in ms
 * @param skip   out: NULL when timed, else why not (a static string: no device, nothing to read,
 *               not enough device memory); @p out is then not written
 * @return cudaSuccess (also when skipped), or the first CUDA error (reported on stderr)
 */
cudaError_t l06_read_floor(size_t bytes, int warmup, int iters, attn_timing *out,
                           const char **skip);

/**
 * Version 2 on the CPU, in fp32: per row, the keys cut into chunks of l06_chunk_len(seq_kv,
 * @p num_splits), each chunk's partial state (normalised O, log-sum-exp; (-inf, 0) for a chunk
 * that sees no key), and l06_combine() over the row's chunks.
 * @param p   the shape
 * @param q   `[batch, seq_q, heads, dim]`
 * @param k   `[batch, seq_kv, kv_heads, dim]`
 * @param v   `[batch, seq_kv, kv_heads, dim]`
 * @param o   out: `[batch, seq_q, heads, dim]`
 * @param lse out: `[batch, heads, seq_q]`
 * @param num_splits chunks per row, >= 1
 * @return the number of chunks that saw no key, over every row; -1 when memory ran out
 */
long l06_cpu_split_forward(const attn_problem *p, const float *q, const float *k, const float *v,
                           float *o, float *lse, int num_splits);

/** The split of one l06_cpu_attention() run, and the empty chunks it counted. */
typedef struct l06_cpu_split {
  int num_splits;    /**< chunks per row */
  long empty_chunks; /**< out: chunks that saw no key */
} l06_cpu_split;

/** l06_cpu_split_forward() in the shape attn_cpu_check() takes; @p ctx is an l06_cpu_split.
 * Returns 0, or -1 when memory ran out. */
int l06_cpu_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx);

/** The lesson's table of versions, its default shape and head dimensions. */
extern const attn_lesson l06_lesson;

#ifdef __cplusplus
}
#endif

#endif /* L06_FLASH_DECODING_H */
