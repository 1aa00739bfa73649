/**
 * @file serving_decode.h
 * @brief Lesson 10: decode as a server runs it, over lesson 07's paged cache. One step of
 *        speculative decoding checks several draft tokens per sequence at once; this lesson's
 *        kernels read each sequence's keys once for all of them.
 *
 * One step (l10_step): sequence b has seq_lens[b] keys in the paged cache; the last q_lens[b] of
 * them belong to its draft tokens (appended before the step, as a server appends them), and those
 * tokens' queries are rows q_start[b] .. q_start[b] + q_lens[b] - 1 of the packed Q. Draft token
 * i of sequence b stands at position n_b - q_b + i (n_b keys, q_b tokens) and sees (l10_sees()):
 *  - L10_MASK_NONE: every key of its sequence;
 *  - L10_MASK_CAUSAL: the keys up to its own position (the bottom-right causal mask of lesson 07);
 *  - L10_MASK_TREE: the n_b - q_b keys before the draft tokens, and draft token j's key when bit j
 *    of tree[q_start[b] + i] is set (a token tree, as EAGLE and Medusa verify: each token sees the
 *    path from the root to itself).
 *
 * Versions (the lesson's table):
 *  1. draft-tiles: lesson 07's version 5 with the query rows of a KV head's group and its draft
 *     tokens (up to L10_UNIT_ROWS rows) in one block: four 16-row tensor-core tiles share every K
 *     and V tile the block loads, so the keys are read from memory once for up to 64 rows.
 *  2. fp8-cache: version 1 over an FP8 cache: e4m3 codes with a scale per key row, written by a
 *     quantise-on-append kernel, widened to f16 in registers for the same mma.sync.
 *  The program's table runs version 1 twice, with the shape's mask (none or causal) and with a
 *  binary tree of draft tokens (draft-tree), version 2 with the shape's mask (fp8-cache), then
 *  lesson 07's version 5 on the same cache and values as the yardstick (l07-balance: equal counts
 *  of at most 8 tokens, no tree).
 *
 * Every length and count is read on the device: the grid depends only on the batch and the limits
 * (max_q, max_seq_kv), so one launch can be captured in a CUDA graph and replayed after the
 * lengths and the tables change. Values the device reads are clamped to the limits (q_lens to
 * 1..max_q, seq_lens to q_lens[b]..max_seq_kv), so a bad one gives a wrong answer, never a bad
 * address.
 */
#ifndef L10_SERVING_DECODE_H
#define L10_SERVING_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "draft.h"           /* l10_mask, l10_sees(), l10_merge_state() */
#include "paged_attention.h" /* lesson 07: the pool, the block table, the append (USES 7) */

#ifdef __cplusplus
extern "C" {
#endif

/** The most draft tokens per sequence and step. */
#define L10_MAX_DRAFT 16
/** The most query tokens per sequence of a step with no mask over a bf16 cache: version 3's prefix
 * pass packs the draft tokens of forked sequences, up to this many, into one "sequence" (its G x
 * tokens rows are ceil(G x tokens / L10_UNIT_ROWS) units, whose blocks for one chunk are neighbours
 * in the grid). */
#define L10_MAX_SHARED_Q 128
/** Query rows (query heads of a KV group x draft tokens) one block holds: four 16-row tiles. */
#define L10_UNIT_ROWS 64
/** Rows of the lesson's table: version 1 with the shape's mask, with a tree, version 2 (the FP8
 * cache), and the yardstick. */
#define L10_VERSIONS 7
/** The largest finite e4m3 magnitude: a key row's largest |x| is written as this code. */
#define L10_E4M3_MAX 448.0f
/** Version 2 reads a 16-key tile from one page: its pages hold at least this many tokens. */
#define L10_FP8_MIN_BLOCK 16

/** One decode step over a paged cache: device pointers, and the limits the grid is made from. */
typedef struct l10_step {
  const void *q;          /**< `[total_q, heads, dim]` bf16, the draft tokens of every sequence */
  const int *q_start;     /**< `[batch]` sequence b's first row of q, o and lse */
  const int *q_lens;      /**< `[batch]` its draft tokens, 1..max_q */
  const uint32_t *tree;   /**< `[total_q]` with L10_MASK_TREE: bit j of row r's word: the token
                               of row r sees draft token j of its sequence; else NULL */
  const void *k_cache;    /**< `[num_blocks, block_size, kv_heads, dim]` bf16 */
  const void *v_cache;    /**< the same for V */
  const int *block_table; /**< `[batch, max_blocks]` */
  const int *seq_lens;    /**< `[batch]` keys of each sequence, its draft tokens' included */
  int batch;              /**< sequences */
  int heads;              /**< query heads */
  int kv_heads;           /**< KV heads (heads a multiple of it) */
  int dim;                /**< head dimension: 64, 128 or 256 */
  int max_q;              /**< the most draft tokens of any sequence: 1..L10_MAX_DRAFT (no mask,
                               bf16 cache: 1..L10_MAX_SHARED_Q) */
  int max_seq_kv;         /**< the most keys of any sequence (the grid's limit) */
  int max_blocks;         /**< block-table columns, at least ceil(max_seq_kv / block_size) */
  int block_size;         /**< tokens per page, a power of two */
  l10_mask mask;          /**< what the draft tokens see of each other */
  float scale;            /**< softmax scale */
  /** An FP8 cache (version 2): k_cache and v_cache hold e4m3 codes, one byte per value, laid out
   * as the bf16 pools, and these are their scales, `[num_blocks, kv_heads, block_size]` fp32: the
   * value of K in slot s of page p, KV head h, is code x k_scale[(p * kv_heads + h) * block_size +
   * s] (l10_fp8_append() writes both). NULL for a bf16 cache (version 1). */
  const float *k_scale;
  const float *v_scale; /**< the same for V */
} l10_step;

/* l10_mask, l10_sees() and l10_merge_state(): draft.h (the drill's header). */

/**
 * Checks a step's limits on the host: 0, or -1 with a one-line reason in @p err. The values on
 * the device (counts, lengths, tables) are not read.
 */
int l10_step_check(const l10_step *s, char *err, size_t err_len);

/** Query rows of a KV head's group one unit (block row) holds, and the units per KV head: the
 * group's heads / kv_heads x max_q rows in blocks of L10_UNIT_ROWS. */
int l10_units_per_kv_head(int heads, int kv_heads, int max_q);

/** The chunk slots (items) of a step's grid, per KV head and unit, for version 1 (version 2 when
 * s->k_scale is set) on the current device: T, the chunks that would fill the GPU once were every
 * sequence at max_seq_kv keys (chunks a multiple of L06_CHUNK_ALIGN, at least L06_MIN_CHUNK), and
 * one more per sequence; s->batch when max_seq_kv is at most L06_MIN_CHUNK (no sequence is cut).
 * Made from the batch and the limits alone; the kernels spread the items over the sequences by
 * their lengths on the device (l10_split_chunk()). */
int l10_draft_items(const l10_step *s);

/** Chunks of @p chunk keys that @p batch sequences of @p keys keys make: sum of ceil(keys[b] /
 * chunk), every sequence at least one (0 for arguments below 1). */
int l10_split_count(int chunk, int batch, const int *keys);

/** The host's model of the split the kernels of versions 1, 2 and 4 make on the device
 * (split_device.cuh): for a grid of @p items items and sequences of @p keys keys (clamped as the
 * kernels clamp them, at most @p max_seq_kv), the chunk is the even share of their sum over
 * items - batch items, rounded up to a multiple of L06_CHUNK_ALIGN, at least L06_MIN_CHUNK;
 * @p max_seq_kv (one chunk a sequence) when @p items <= @p batch. Its l10_split_count() is at most
 * @p items. Sequence b's chunks take items first_b .. first_b + ceil(keys[b] / chunk) - 1,
 * first_b the counts of the sequences before it. */
int l10_split_chunk(int items, int batch, const int *keys, int max_seq_kv);

/** Bytes of version 1's workspace for this step, or version 2's when s->k_scale is set (0 when no
 * sequence can be cut into chunks): the partial states of every (item, KV head, unit, row), two
 * counters per (item, KV head, unit) for the merge inside the kernel (merge_device.cuh), then
 * each sequence's first item and count (two ints: the split as the kernel made it). Zero it once
 * before the first call: the counters must start at 0, and every call leaves them at 0 (the
 * same contract as lesson 06's version 5); the rest holds nothing between calls. */
size_t l10_draft_workspace_bytes(const l10_step *s);

/** @name Version 1's launchers
 *  Enqueue one step on @p stream: O `[total_q, heads, dim]` bf16 and the natural-log log-sum-exp
 *  `[total_q, heads]` fp32 (a row that sees no key: O = 0, -inf); the chunks merged inside the
 *  kernel or by the merge kernel after it (below). @p workspace: l10_draft_workspace_bytes() bytes,
 * zeroed before the first call. Return the first CUDA error, or cudaErrorInvalidValue for limits
 * l10_step_check() refuses or a workspace too small.
 *  @{ */
cudaError_t l10_draft_d64(const l10_step *s, void *o, float *lse, void *workspace,
                          size_t workspace_bytes, cudaStream_t stream);
cudaError_t l10_draft_d128(const l10_step *s, void *o, float *lse, void *workspace,
                           size_t workspace_bytes, cudaStream_t stream);
cudaError_t l10_draft_d256(const l10_step *s, void *o, float *lse, void *workspace,
                           size_t workspace_bytes, cudaStream_t stream);
/** Blocks of version 1's kernel one SM holds, head dimension 64 (0 without a device). */
int l10_draft_per_sm_d64(void);
/** The same, head dimension 128. */
int l10_draft_per_sm_d128(void);
/** The same, head dimension 256. */
int l10_draft_per_sm_d256(void);
/** @} */

/** Version 1 for head dimension s->dim (64, 128 or 256). */
cudaError_t l10_draft(const l10_step *s, void *o, float *lse, void *workspace,
                      size_t workspace_bytes, cudaStream_t stream);

/** @name The chunks' merge of versions 1, 2 and 4
 *  After a step's kernel wrote each chunk's partial state (@p part_o `[items, kv_heads, units,
 *  L10_UNIT_ROWS, dim]` fp32, O / l, and @p part_lse, the natural-log log-sum-exp, in the
 *  workspace) and each sequence's first item and count of items (@p plan `[batch][2]`), merge every
 *  row's chunks into O and lse; a sequence of one chunk was written by the kernel and is left.
 *  The launchers call it after their kernel when the kernel does not merge its chunks itself
 *  (l10_merge_inside() in merge_device.cuh: a unit with more rows than one float4 a thread, and
 *  more than eight or a sequence cut into more than four chunks).
 *  @p units is the launch's (l10_units_per_kv_head()).
 *  @{ */
/** The merge at head dimension 64. */
cudaError_t l10_draft_merge_d64(const l10_step *s, const float *part_o, const float *part_lse,
                                const int *plan, void *o, float *lse, int units,
                                cudaStream_t stream);
/** The same, head dimension 128. */
cudaError_t l10_draft_merge_d128(const l10_step *s, const float *part_o, const float *part_lse,
                                 const int *plan, void *o, float *lse, int units,
                                 cudaStream_t stream);
/** The same, head dimension 256. */
cudaError_t l10_draft_merge_d256(const l10_step *s, const float *part_o, const float *part_lse,
                                 const int *plan, void *o, float *lse, int units,
                                 cudaStream_t stream);
/** @} */

/** @name Version 4's launchers (sm_90a: one warpgroup a unit, wgmma)
 *  The same step, outputs and errors as version 1's launchers, its own items and workspace
 *  (l10_wg_items(), l10_wg_workspace_bytes(): version 4's blocks per SM fill the GPU); a bf16
 *  cache. In a build without sm_90a code (CMake's ATTN_ARCHS_HOPPER) they return
 *  cudaErrorNotSupported, and the occupancy queries 0.
 *  @{ */
/** Version 4 at head dimension 64. */
cudaError_t l10_wg_d64(const l10_step *s, void *o, float *lse, void *workspace,
                       size_t workspace_bytes, cudaStream_t stream);
/** The same, head dimension 128. */
cudaError_t l10_wg_d128(const l10_step *s, void *o, float *lse, void *workspace,
                        size_t workspace_bytes, cudaStream_t stream);
/** The same, head dimension 256. */
cudaError_t l10_wg_d256(const l10_step *s, void *o, float *lse, void *workspace,
                        size_t workspace_bytes, cudaStream_t stream);
/** Version 4 at head dimension 64 as a programmatic dependent launch behind the kernel before it
 * on @p stream (version 3's suffix pass behind its prefix pass, which lets it launch from its
 * start): its blocks may run beside that kernel's wherever an SM has room, and its last block
 * waits for that kernel before it exits, so that whatever follows it on the stream may read the
 * outputs of both. The same step, outputs, workspace and errors as l10_wg_d64(). */
cudaError_t l10_wg_after_d64(const l10_step *s, void *o, float *lse, void *workspace,
                             size_t workspace_bytes, cudaStream_t stream);
/** The same, head dimension 128. */
cudaError_t l10_wg_after_d128(const l10_step *s, void *o, float *lse, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream);
/** The same, head dimension 256. */
cudaError_t l10_wg_after_d256(const l10_step *s, void *o, float *lse, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream);
/** Two steps in one launch of version 4's kernel (version 3's passes): step @p a's blocks, then
 * step @p b's, each with its own outputs and workspace as l10_wg_d64() takes them (a's sized by
 * l10_wg_workspace_bytes(a), b's by l10_wg_workspace_bytes(b); the two must not overlap), then the
 * merge kernel of each step whose chunks the kernel does not merge itself. The same head
 * dimension for both; errors as l10_wg_d64()'s. */
cudaError_t l10_wg_pair_d64(const l10_step *a, void *o_a, float *lse_a, void *ws_a,
                            size_t ws_a_bytes, const l10_step *b, void *o_b, float *lse_b,
                            void *ws_b, size_t ws_b_bytes, cudaStream_t stream);
/** The same, head dimension 128. */
cudaError_t l10_wg_pair_d128(const l10_step *a, void *o_a, float *lse_a, void *ws_a,
                             size_t ws_a_bytes, const l10_step *b, void *o_b, float *lse_b,
                             void *ws_b, size_t ws_b_bytes, cudaStream_t stream);
/** The same, head dimension 256. */
cudaError_t l10_wg_pair_d256(const l10_step *a, void *o_a, float *lse_a, void *ws_a,
                             size_t ws_a_bytes, const l10_step *b, void *o_b, float *lse_b,
                             void *ws_b, size_t ws_b_bytes, cudaStream_t stream);
/** Blocks of version 4's kernel one SM holds, head dimension 64 (0 without a device, on a GPU
 * that cannot run it, or where it was not built). */
int l10_wg_per_sm_d64(void);
/** The same, head dimension 128. */
int l10_wg_per_sm_d128(void);
/** The same, head dimension 256. */
int l10_wg_per_sm_d256(void);
/** @} */

/** Version 4's blocks per SM at head dimension @p dim (64, 128 or 256; 0 for any other, and
 * wherever version 4 does not run): the question to ask before choosing it. */
int l10_wg_per_sm(int dim);
/** Version 4's items: l10_draft_items()'s rule with version 4's blocks per SM. */
int l10_wg_items(const l10_step *s);
/** Bytes of version 4's workspace for this step (0 when no sequence can be cut into chunks), laid
 * out as version 1's and zeroed once before the first call as its is. */
size_t l10_wg_workspace_bytes(const l10_step *s);

/** Version 4 for head dimension s->dim (64, 128 or 256). */
cudaError_t l10_wg(const l10_step *s, void *o, float *lse, void *workspace, size_t workspace_bytes,
                   cudaStream_t stream);
/** Version 4 behind the kernel before it, head dimension s->dim (l10_wg_after_d64()). */
cudaError_t l10_wg_after(const l10_step *s, void *o, float *lse, void *workspace,
                         size_t workspace_bytes, cudaStream_t stream);
/** Two steps in one launch of version 4 at head dimension a->dim (both steps' dim). */
cudaError_t l10_wg_pair(const l10_step *a, void *o_a, float *lse_a, void *ws_a, size_t ws_a_bytes,
                        const l10_step *b, void *o_b, float *lse_b, void *ws_b, size_t ws_b_bytes,
                        cudaStream_t stream);

/** @name Version 3's prefix pass on lesson 05's version 5 (prefill.cu, sm_90a, dims 64 and 128)
 *  @{ */
/**
 * The prefix pass of a cascade at head dimension 64: step @p s holds the plan's runs (their packed
 * rows, shared keys and pages; no mask, a bf16 cache, pages of at least 8 tokens). One block per
 * (run, chunk, KV head, unit of 128 group rows), @p units units, @p n_chunks chunks of
 * @p chunk_tiles tiles of 128 keys; each block writes its 128 rows' O / l (fp32) into @p part_o
 * `[blocks, 128, dim]` and their log-sum-exp (-inf where a row saw no key) into @p part_lse
 * `[blocks, 128]`, block = ((run x n_chunks + chunk) x kv_heads + kvh) x units + unit.
 * @p pool_pages: pages the pools' tensor maps span, more than any page the table names.
 * cudaErrorNotSupported where it was not built.
 */
cudaError_t l10_prefill_d64(const l10_step *s, int pool_pages, int units, int n_chunks,
                            int chunk_tiles, float *part_o, float *part_lse, cudaStream_t stream);
/** The same, head dimension 128. */
cudaError_t l10_prefill_d128(const l10_step *s, int pool_pages, int units, int n_chunks,
                             int chunk_tiles, float *part_o, float *part_lse, cudaStream_t stream);
/** Blocks of the prefix pass's kernel one SM holds at head dimension 64 (0 without a device, on a
 * GPU that cannot run it, or where it was not built). */
int l10_prefill_per_sm_d64(void);
/** The same, head dimension 128. */
int l10_prefill_per_sm_d128(void);
/** The prefix pass's blocks per SM at head dimension @p dim (0 for any dim but 64 and 128). */
int l10_prefill_per_sm(int dim);
/** The prefix pass's grid (l10_cascade_make()): @p runs runs of at most @p max_q draft tokens, @p
 * group query heads a KV head, over at most @p max_keys shared keys, on a GPU that holds @p slots
 * blocks at once. Sets @p units (128-row units a KV head), @p chunks and @p tiles (128-key tiles a
 * chunk): as many chunks as fill the slots once (one if a chunk's blocks alone fill them), no more
 * than there are tiles, every tile in exactly one chunk and no chunk empty. */
void l10_prefill_grid(int runs, int kv_heads, int group, int max_q, int max_keys, int slots,
                      int *units, int *chunks, int *tiles);
/** The prefix pass at head dimension s->dim (64 or 128). */
cudaError_t l10_prefill(const l10_step *s, int pool_pages, int units, int n_chunks, int chunk_tiles,
                        float *part_o, float *part_lse, cudaStream_t stream);
/** @} */

/** @name The FP8 cache (version 2)
 *  One scale per key row (a token's dim values of one KV head, K and V apart): a row's scale is
 *  its largest |x| / 448, so its largest value becomes the code +-448 and every value is rounded
 *  by at most half an e4m3 step (2^-4 of itself, or 2^-10 of the scale below 2^-6 of it: the
 *  subnormals). The scale is fixed when the row is written, so appending a token never rewrites
 *  its page's other rows.
 *  @{ */
/** The e4m3 code of @p x (1 sign bit, 4 exponent bits biased by 7, 3 mantissa bits, no
 * infinities): rounded to the nearest, ties to the even code, saturated to +-448; NaN gives 0x7f.
 * The rounding of the device's cvt.rn.satfinite.e4m3x2.f32. */
uint8_t l10_e4m3_encode(float x);
/** The value of e4m3 code @p c (0x7f and 0xff: NaN). */
float l10_e4m3_decode(uint8_t c);
/** One key row of @p dim values into @p codes as l10_fp8_append() writes it: amax = max |x|, the
 * codes e4m3(x * (448 / amax)) (each product one fp32 rounding), all 0 for a row of zeros; returns
 * the scale amax / 448 (0 for a row of zeros). The values must be finite. */
float l10_fp8_quantise_row(const float *x, int dim, uint8_t *codes);
/** Every key row of a float pool (`[pages, block_size, kv_heads, dim]`) as l10_fp8_quantise_row()
 * writes it: @p codes the codes' values (the same layout), @p scales the rows' scales
 * (`[pages, kv_heads, block_size]`), @p values (NULL, or @p pool itself) code x scale. A row whose
 * first value is not finite (a slot no token owns) is left NaN in all three. Returns 0, or -1 when
 * memory ran out. */
int l10_fp8_quantise_pool(const float *pool, int pages, int block_size, int kv_heads, int dim,
                          float *codes, float *scales, float *values);
/** An FP8 pool read back: @p values (`[pages, block_size, kv_heads, dim]`) = code x its row's
 * scale, NaN where the code is NaN. */
void l10_fp8_dequantise_pool(const uint8_t *codes, const float *scales, int pages, int block_size,
                             int kv_heads, int dim, float *values);
/**
 * Quantise-on-append: token t's K and V rows (`[n_tokens, kv_heads, dim]` bf16, on the device)
 * into slot @p slots[t] (page slots[t] / block_size, row slots[t] % block_size; below 0: skipped)
 * of the e4m3 pools @p k8 and @p v8 (`[num_blocks, block_size, kv_heads, dim]`), each row with
 * its scale in @p k_scale / @p v_scale (`[num_blocks, kv_heads, block_size]`), as
 * l10_fp8_quantise_row() computes them. dim 64, 128 or 256, block_size a power of two. Needs
 * compute capability 8.9 or above (cudaErrorNotSupported below); cudaErrorInvalidValue for bad
 * arguments.
 */
cudaError_t l10_fp8_append(const void *k_new, const void *v_new, const int *slots, int n_tokens,
                           int kv_heads, int dim, int block_size, void *k8, void *v8,
                           float *k_scale, float *v_scale, cudaStream_t stream);
/** Version 2, head dimension 64: version 1 over an FP8 cache (s->k_scale and s->v_scale set,
 * block_size at least L10_FP8_MIN_BLOCK); same outputs, workspace (l10_draft_workspace_bytes())
 * and errors as l10_draft_d64(). */
cudaError_t l10_fp8_d64(const l10_step *s, void *o, float *lse, void *workspace,
                        size_t workspace_bytes, cudaStream_t stream);
/** Version 2, head dimension 128. */
cudaError_t l10_fp8_d128(const l10_step *s, void *o, float *lse, void *workspace,
                         size_t workspace_bytes, cudaStream_t stream);
/** Version 2, head dimension 256. */
cudaError_t l10_fp8_d256(const l10_step *s, void *o, float *lse, void *workspace,
                         size_t workspace_bytes, cudaStream_t stream);
/** Blocks of version 2's kernel one SM holds, head dimension 64 (0 without a device). */
int l10_fp8_per_sm_d64(void);
/** The same, head dimension 128. */
int l10_fp8_per_sm_d128(void);
/** The same, head dimension 256. */
int l10_fp8_per_sm_d256(void);
/** Version 2 for head dimension s->dim (64, 128 or 256). */
cudaError_t l10_fp8(const l10_step *s, void *o, float *lse, void *workspace, size_t workspace_bytes,
                    cudaStream_t stream);
/** @} */

/**
 * The step on the CPU in double precision, reading K and V through the block table: the reference
 * every version is checked against. Host arrays laid out as in l10_step (@p k_cache and
 * @p v_cache in float); @p o `[total_q, heads, dim]` and @p lse `[total_q, heads]` in float.
 * Only the rows whose @p row_mask entry is non-zero are computed when @p row_mask (`[total_q]`)
 * is not NULL. Returns 0.
 */
int l10_reference(const l10_step *s, const float *q, const int *q_start, const int *q_lens,
                  const uint32_t *tree, const float *k_cache, const float *v_cache,
                  const int *block_table, const int *seq_lens, const unsigned char *row_mask,
                  float *o, float *lse);

/**
 * Version 1's algorithm on the CPU, in float, block by block: units of L10_UNIT_ROWS rows,
 * chunks of @p chunk keys, the 16-key tiles of a chunk dealt to four warps as the kernel loads
 * them (tile t to warp t % 4; where the kernel's warps share their tiles among several row tiles,
 * each row still sees every tile once, in another order), each warp's online softmax in base 2,
 * the warps merged, then the chunks merged with l10_merge_state(). Same arguments as
 * l10_reference() (no row mask). With s->k_scale and s->v_scale set (host arrays here) it is
 * version 2's: @p k_cache and @p v_cache hold the e4m3 codes' values, the K scales multiply the
 * scores and the V scales enter P over each warp's running maximum. Returns 0, or -1 when memory
 * ran out.
 */
int l10_cpu_model(const l10_step *s, int chunk, const float *q, const int *q_start,
                  const int *q_lens, const uint32_t *tree, const float *k_cache,
                  const float *v_cache, const int *block_table, const int *seq_lens, float *o,
                  float *lse);

/** Version 3's plan (cascade.c): which neighbours of the batch share the pages of a prompt, found
 * in the block table (equal page numbers at the start of their rows, lesson 07's fork), and the
 * host arrays of the two passes that read those pages once. All arrays are the plan's own. */
typedef struct l10_cascade_plan {
  int n_prefix;        /**< sequences of the prefix pass (0: nobody shares) */
  int max_prefix_q;    /**< the most draft tokens one of them packs, at most L10_MAX_SHARED_Q */
  int max_prefix_keys; /**< the most shared keys one of them reads */
  int max_suffix_keys; /**< the most keys a sequence reads in the suffix pass */
  int *pre_q_start;    /**< `[n_prefix]` its first packed row: a run of forked neighbours' rows */
  int *pre_q_lens;     /**< `[n_prefix]` their draft tokens together */
  int *pre_seq_lens;   /**< `[n_prefix]` the keys they share: whole pages */
  int *pre_table;      /**< `[n_prefix, max_blocks]` the shared pages */
  int *suf_seq_lens;   /**< `[batch]` each sequence's keys less its shared ones */
  int *suf_table;      /**< `[batch, max_blocks]` each row from its first page it does not share */
  int *shared_keys;    /**< `[batch]` the keys each sequence reads in the prefix pass */
} l10_cascade_plan;

/**
 * Version 3's plan from a step's host arrays. Neighbours b, b + 1, ... whose packed rows follow
 * each other and whose table rows start with the same pages form a run; a run of two or more
 * shares the pages common to all its rows, cut to whole pages before every member's draft tokens,
 * and its rows are packed into prefix-pass sequences of at most L10_MAX_SHARED_Q draft tokens.
 * Returns 0, or -1 on bad arguments or no memory (@p plan is then empty).
 */
int l10_cascade_plan_make(int batch, int max_blocks, int block_size, const int *q_start,
                          const int *q_lens, const int *seq_lens, const int *block_table,
                          l10_cascade_plan *plan);

/** Free the plan's arrays. */
void l10_cascade_plan_free(l10_cascade_plan *plan);

/**
 * Version 3 on the CPU: the plan from the step's host arrays, l10_cpu_model() for the suffix pass
 * (into @p o, @p lse) and for the prefix pass, and the merge by l10_merge_state(). Arguments as
 * l10_cpu_model()'s, with the step's @p total_q packed rows. Returns 0, or -1 (no memory, or the
 * model refused a pass).
 */
int l10_cascade_cpu(const l10_step *s, int chunk, const float *q, const int *q_start,
                    const int *q_lens, const uint32_t *tree, const float *k_cache,
                    const float *v_cache, const int *block_table, const int *seq_lens, int total_q,
                    float *o, float *lse);

/** Version 3's step: two steps over the same pools (the passes), and the packed rows. */
typedef struct l10_cascade {
  l10_step prefix; /**< the shared pages, no mask; batch 0 when nobody shares */
  l10_step suffix; /**< every sequence over its own pages, with the step's mask */
  int total_q;     /**< packed query rows of the step (both passes write into these rows) */
  int wg;          /**< 1: version 4 built, and this GPU runs it: the suffix pass on it, and the
                        prefix pass too where pf is 0 (both in one launch, l10_wg_pair()); 0:
                        both passes on version 1, one launch each */
  int pf;          /**< 1: the prefix pass on lesson 05's version 5 (l10_prefill()), its chunks
                        and the suffix pass's state of each row merged by one kernel */
  int pf_units;    /**< with pf: 128-row units per KV head */
  int pf_chunks;   /**< with pf: chunks of the shared keys */
  int pf_tiles;    /**< with pf: 128-key tiles a chunk holds */
  int pf_pages;    /**< with pf: pages the tensor maps span (the largest shared page + 1) */
} l10_cascade;

/** The plan's arrays on the device (l10_cascade_upload()). */
typedef struct l10_cascade_dev {
  int *pre_q_start;  /**< the plan's pre_q_start */
  int *pre_q_lens;   /**< the plan's pre_q_lens */
  int *pre_seq_lens; /**< the plan's pre_seq_lens */
  int *pre_table;    /**< the plan's pre_table */
  int *suf_seq_lens; /**< the plan's suf_seq_lens */
  int *suf_table;    /**< the plan's suf_table */
} l10_cascade_dev;

/** Copy the plan's arrays to the device; l10_cascade_dev_free() frees them. */
cudaError_t l10_cascade_upload(const l10_cascade_plan *plan, int batch, int max_blocks,
                               l10_cascade_dev *dev);

/** Free what l10_cascade_upload() allocated. */
void l10_cascade_dev_free(l10_cascade_dev *dev);

/** Version 3's step from version 1's step @p s (device pointers, @p total_q packed rows), its
 * plan and the plan's device arrays. */
void l10_cascade_make(const l10_step *s, int total_q, const l10_cascade_plan *plan,
                      const l10_cascade_dev *dev, l10_cascade *c);

/** Bytes of device workspace l10_cascade_run() needs: the prefix pass's O and log-sum-exp of every
 * row, then the two passes' workspaces, one after the other (with c->pf: the prefix pass's blocks'
 * partial states, then the suffix pass's workspace). Zero it once before the first call (the
 * passes' merge counters, which every call leaves at 0). */
size_t l10_cascade_workspace_bytes(const l10_cascade *c);

/**
 * Version 3: the prefix pass into the workspace (lesson 05's version 5 with c->pf, else version 4
 * or 1's kernel), the suffix pass (into @p o, @p lse), and the merge of the states of every row
 * that has both, in place. @p o, @p lse as l10_draft()'s.
 */
cudaError_t l10_cascade_run(const l10_cascade *c, void *o, float *lse, void *workspace,
                            size_t workspace_bytes, cudaStream_t stream);

/** @name The serving loop (serve.c)
 *  @{ */
/** A serving loop's workload and the tools it runs with. */
typedef struct l10_serve_config {
  int max_live;   /**< sequences in flight at most (forks add up to as many again) */
  int steps;      /**< decode steps */
  int prompt_min; /**< shortest prompt */
  int prompt_max; /**< longest prompt */
  int output_min; /**< fewest tokens a sequence generates */
  int output_max; /**< most tokens a sequence generates */
  int fork_every; /**< the first live sequence forks every this many steps (0: never) */
  int draft;      /**< tokens a sequence verifies per step: its generated token and draft - 1
                       guesses (1: plain decode), 1..L10_MAX_DRAFT, under the causal mask */
  double accept;  /**< the chance each guess is accepted, given the ones before it were */
  int fp8;        /**< 1: an FP8 cache, written by l10_fp8_append() and read by version 2; 0: bf16,
                       version 1 (or version 4 with wgmma) */
  int wgmma;      /**< 1: the bf16 cache read by version 4 (refused where it does not run, and
                       with fp8) */
  int graph;      /**< 1: the decode captured once into a CUDA graph and replayed every step */
  int heads;      /**< query heads */
  int kv_heads;   /**< key/value heads */
  int dim;        /**< head dimension: 64, 128 or 256 */
  int block_size; /**< tokens per page, a power of two (FP8: at least L10_FP8_MIN_BLOCK) */
  int num_blocks; /**< pages in the pool */
  uint64_t seed;  /**< the workload's seed */
} l10_serve_config;

/** What a serving loop did. */
typedef struct l10_serve_result {
  long steps;           /**< steps run */
  long tokens;          /**< tokens the sequences kept: generated and accepted guesses */
  long rows;            /**< query rows decoded: draft tokens of every sequence of every step */
  long started;         /**< sequences started (forks included) */
  long finished;        /**< sequences finished */
  long copies;          /**< copy-on-write page copies */
  long refused;         /**< appends refused for want of pages (retried later) */
  long decode_steps;    /**< steps that decoded (a step whose every sequence waits for pages has
                             no decode) */
  long replays;         /**< of those, the ones whose decode was a replay of the captured graph */
  long checked_rows;    /**< query rows compared with the fp64 reference */
  double decode_ms;     /**< the decode's GPU time, summed over the steps (CUDA events) */
  double bytes_peak;    /**< the most pool bytes held at once (pages in use, scales included) */
  double bytes_mean;    /**< pool bytes held, averaged over the steps */
  int free_at_end;      /**< free pages after every sequence closed */
  attn_verdict verdict; /**< every checked element against the reference (bf16 tolerances) */
} l10_serve_result;

/**
 * Lesson 07's decode loop as a server runs it, on the GPU: arrivals with prompts, forks sharing
 * pages, finishes, over lesson 07's cache manager; each step every live sequence appends
 * cfg->draft tokens, one decode (version 1, version 4 with cfg->wgmma, or version 2 over the FP8
 * cache) computes them all under the causal mask, a set share of the guesses is kept and the rest
 * are dropped (l07_seq_truncate()). The decode is one launch for a batch of a place per sequence
 * slot with
 * fixed limits, so that with cfg->graph it is captured once and replayed with new lengths, counts
 * and tables. One sequence a step (in turn) is checked against an fp64 reference over a host copy
 * of what the cache holds (the FP8 cache's values as l10_fp8_quantise_row() rounds them), and
 * every row of the step must be written and finite. The pool starts as NaN.
 * @return 0 when it ran (see out->verdict and out->free_at_end), -1 for a bad configuration or no
 *         host memory, -2 for a CUDA error; @p err says which.
 */
int l10_serve_gpu(const l10_serve_config *cfg, l10_serve_result *out, char *err, size_t err_len);
/** @} */

/** The lesson's table of versions, its default shape and head dimensions. */
extern const attn_lesson l10_lesson;

#ifdef __cplusplus
}
#endif

#endif /* L10_SERVING_DECODE_H */
