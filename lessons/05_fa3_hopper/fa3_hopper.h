/**
 * @file fa3_hopper.h
 * @brief Lesson 05: FlashAttention-3 on Hopper. Lesson 04's kernel moved onto the Hopper-only
 *        hardware one feature per version: the warpgroup's asynchronous matrix multiply (wgmma),
 *        the tensor memory accelerator (TMA) with mbarriers, and what follows from them.
 *
 * Versions (the lesson's table, in teaching order):
 *  1. wgmma-bf16: lesson 04's version 7 with mma.sync replaced by wgmma.mma_async: two warpgroups
 * of 64 query rows each, Q and K read by the tensor cores straight from 128-byte-swizzled shared
 *     memory through descriptors, P from registers; the loads are still cp.async.
 *  2. tma-bf16: the same, with every tile brought in by TMA (one thread issues a copy, an mbarrier
 *     counts its bytes) into a two-stage ring; no cp.async address arithmetic left in the kernel.
 *
 * Every launcher takes device pointers in the BSHD layouts of attn_types.h, bf16 in and out, fp32
 * accumulation, enqueues on the given stream, returns the first CUDA error and never exits. All
 * write the natural-log log-sum-exp. The kernels are built for sm_90a only: they run on Hopper
 * (H100, H200, GH200) and on no other GPU, older or newer.
 */
#ifndef L05_FA3_HOPPER_H
#define L05_FA3_HOPPER_H

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Query rows per block: two consumer warpgroups of 64 rows (wgmma's M). */
#define L05_BR 128
/** Keys per KV tile. */
#define L05_BC 128
/** Rows of one warpgroup: wgmma's M. */
#define L05_WG_ROWS 64
/** Number of versions in the lesson. */
#define L05_VERSIONS 15

/**
 * One attention launcher of this lesson, for one head dimension (in its name).
 * @param q        `[batch, seq_q, heads, dim]`, bf16
 * @param k        `[batch, seq_kv, kv_heads, dim]`, bf16
 * @param v        `[batch, seq_kv, kv_heads, dim]`, bf16
 * @param o        out: `[batch, seq_q, heads, dim]`, bf16; 16-byte aligned where a TMA store
 *                 writes it (version 5 at dim 128)
 * @param lse      out: `[batch, heads, seq_q]`, fp32, natural log; -inf for a row that sees no key
 * @param batch    sequences
 * @param heads    query heads
 * @param kv_heads key/value heads, dividing @p heads
 * @param seq_q    query tokens per sequence, >= 1
 * @param seq_kv   key/value tokens per sequence, >= 1
 * @param causal   1: bottom-right causal mask
 * @param scale    softmax scale (the caller passes 1/sqrt(dim) for the usual one)
 * @param stream   stream to enqueue on
 * @return cudaSuccess, cudaErrorInvalidValue for a bad shape, or the first CUDA error
 */
typedef cudaError_t (*l05_launch_fn)(const void *q, const void *k, const void *v, void *o,
                                     float *lse, int batch, int heads, int kv_heads, int seq_q,
                                     int seq_kv, int causal, float scale, cudaStream_t stream);

/** @name The launchers, two head dimensions each (parameters as in l05_launch_fn)
 *  @{ */
/** Version 1, wgmma with cp.async loads, head dimension 64. @copydetails l05_launch_fn */
cudaError_t l05_wgmma_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                          int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                          float scale, cudaStream_t stream);
/** Version 1, head dimension 128. @copydetails l05_launch_fn */
cudaError_t l05_wgmma_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                           int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                           float scale, cudaStream_t stream);
/** Version 2, TMA loads into a two-stage mbarrier ring, head dimension 64.
 *  @copydetails l05_launch_fn */
cudaError_t l05_tma_d64(const void *q, const void *k, const void *v, void *o, float *lse, int batch,
                        int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale,
                        cudaStream_t stream);
/** Version 2, head dimension 128. @copydetails l05_launch_fn */
cudaError_t l05_tma_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                         int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                         float scale, cudaStream_t stream);
/** Version 3, a producer warpgroup and two consumers, head dimension 64.
 *  @copydetails l05_launch_fn */
cudaError_t l05_warpspec_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                             float scale, cudaStream_t stream);
/** Version 3, head dimension 128. @copydetails l05_launch_fn */
cudaError_t l05_warpspec_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                              int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                              float scale, cudaStream_t stream);
/** Version 4, ping-pong consumers, head dimension 64. @copydetails l05_launch_fn */
cudaError_t l05_pingpong_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                             float scale, cudaStream_t stream);
/** Version 4, head dimension 128. @copydetails l05_launch_fn */
cudaError_t l05_pingpong_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                              int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                              float scale, cudaStream_t stream);
/** Version 5, the softmax under the warpgroup's own P V, head dimension 64.
 *  @copydetails l05_launch_fn */
cudaError_t l05_overlap_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                            int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                            float scale, cudaStream_t stream);
/** Version 5, head dimension 128. @copydetails l05_launch_fn */
cudaError_t l05_overlap_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                             float scale, cudaStream_t stream);
/** Version 8 (dim 64 only): version 5 with three consumer warpgroups and 192-row blocks. */
cudaError_t l05_three_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                          int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                          float scale, cudaStream_t stream);
/** Version 9 (dim 64 only): version 8 with one persistent block per SM taking items from a
 * counter. Its counter is one per device: launches of version 9 must not overlap on one device. */
cudaError_t l05_persist_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                            int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                            float scale, cudaStream_t stream);
/** Version 15: version 5 in persistent blocks, one per SM, each walking a list of items fixed
 * before the launch (under the mask a head's Q tiles in pairs, i with n - 1 - i), head dimension
 * 64. No counter: launches may overlap. @copydetails l05_launch_fn */
cudaError_t l05_pairs_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                          int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                          float scale, cudaStream_t stream);
/** Version 15, head dimension 128. @copydetails l05_launch_fn */
cudaError_t l05_pairs_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                           int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                           float scale, cudaStream_t stream);
/** @} */

/**
 * A TMA tensor map for one of the BSHD tensors, made on the host through the CUDA runtime's driver
 * entry point (no link against libcuda, so the program starts without a driver): 4-D, bf16, the
 * dimensions innermost first (dim, heads, tokens, batch), the box 64 columns x 1 head x @p box_rows
 * tokens x 1 sequence, the 128-byte swizzle, rows past the end read as zeros.
 * @param map      out: the 128-byte CUtensorMap, as opaque bytes
 * @param base     the tensor's device pointer (16-byte aligned)
 * @param batch    sequences
 * @param tokens   tokens per sequence
 * @param heads    heads of this tensor
 * @param dim      head dimension (a multiple of 64)
 * @param box_rows tokens per box (1..256)
 * @return cudaSuccess; cudaErrorInvalidValue for arguments TMA cannot describe;
 *         cudaErrorNotSupported when the driver has no cuTensorMapEncodeTiled
 */
cudaError_t l05_tensor_map(void *map, const void *base, int batch, int tokens, int heads, int dim,
                           int box_rows);

/** @name The pipeline timeline (versions 3-6)
 * Built with `-DATTN_L05_TIMELINE=ON` (CMake; the compile definition L05_TIMELINE), versions 3-6
 * record the SM's cycle counter (clock64) at each step of their loop, for the first
 * L05_TL_BLOCKS blocks and their first L05_TL_TILES KV tiles, into a device buffer set with
 * l05_timeline_set(). Slot ((block * L05_TL_ROLES + role) * L05_TL_TILES + tile) *
 * L05_TL_EVENTS + event; role 0 is the producer warpgroup, 1 and 2 the consumers. Without the
 * definition the kernels hold no stamp code at all. `l05-timeline` writes the stamps as CSV and
 * scripts/plot-timeline.sh draws them.
 *  @{ */
#define L05_TL_BLOCKS 2 /**< blocks recorded: blockIdx.x 0 and 1 */
#define L05_TL_ROLES 3  /**< producer, consumer 0, consumer 1 */
#define L05_TL_TILES 12 /**< KV tiles (turns) recorded per block */
#define L05_TL_EVENTS 8 /**< events per tile */
#define L05_TL_SLOTS (L05_TL_BLOCKS * L05_TL_ROLES * L05_TL_TILES * L05_TL_EVENTS) /**< all */

/** What a stamp marks. */
enum l05_tl_event {
  L05_TL_K_READY = 0, /**< consumer: K_j has landed (its full barrier passed) */
  L05_TL_TURN = 1,    /**< consumer: starts issuing the tile's GEMMs (in 4-5: its turn began) */
  L05_TL_S_READY = 2, /**< consumer: S_j is in registers (the wait for it returned) */
  L05_TL_SOFTMAX = 3, /**< consumer: the softmax of S_j is done */
  L05_TL_PV_DONE = 4, /**< consumer: the tile's P V is in O (the last wait returned) */
  L05_TL_ISSUE_K = 5, /**< producer: the TMA copy of K_j was issued */
  L05_TL_ISSUE_V = 6  /**< producer: the TMA copy of V_j was issued */
};

/** 1 when this library was built with L05_TIMELINE (the kernels stamp), else 0. */
int l05_timeline_compiled(void);

/** Where the next launches of versions 3-6 write their stamps: a device buffer of L05_TL_SLOTS
 * unsigned 64-bit counts, zeroed by the caller; NULL (the default) turns recording off. */
void l05_timeline_set(unsigned long long *device_buffer);

/** The buffer l05_timeline_set() set, or NULL (the launchers read it). */
unsigned long long *l05_timeline_get(void);
/** @} */

/**
 * A TMA tensor map over bytes (FP8 tensors), 4-D, the 128-byte swizzle, zeros past the ends.
 * @param map    out: the 128-byte CUtensorMap
 * @param base   device pointer, 16-byte aligned
 * @param size   elements per dimension, innermost first
 * @param stride bytes between consecutive indices of dimensions 1-3 (multiples of 16)
 * @param box    elements per dimension of one copy (box[0] <= 128 bytes, each <= 256; a box
 *               reaching past the end reads zeros there)
 * @return as l05_tensor_map()
 */
cudaError_t l05_tensor_map_u8(void *map, const void *base, const unsigned long long size[4],
                              const unsigned long long stride[3], const unsigned box[4]);

/**
 * The same for a 4-D fp32 tensor (box[0] at most 32 elements: 128 bytes), the 128-byte swizzle:
 * lesson 09's version 7 reduces its dQ blocks into the fp32 dQ through it
 * (cp.reduce.async.bulk.tensor ... .add).
 * @return as l05_tensor_map()
 */
cudaError_t l05_tensor_map_f32(void *map, const void *base, const unsigned long long size[4],
                               const unsigned long long stride[3], const unsigned box[4]);

/** @name FP8 (version 6, head dimension 128)
 * Version 6 computes in e4m3 with one scale per tensor: its launcher first measures the largest
 * |x| of Q, K and V, writes Q and K as e4m3 (x * 448 / amax) and V transposed ([batch, kv_heads,
 * dim, keys], keys padded to a multiple of 128 with zeros and permuted inside each group of 32,
 * see v6_fp8.cu), into a workspace, then runs the attention kernel on those. The two halves are
 * also callable apart, so that the kernel can be timed without the conversion.
 *  @{ */
/** Workspace bytes version 6 needs for a shape (0 for a shape it cannot run: a dimension other
 *  than 128, an extent below 1, query heads not a multiple of the KV heads). */
size_t l05_fp8_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim);

/** Quantise bf16 Q, K, V into @p workspace (l05_fp8_workspace_bytes() bytes) on @p stream. */
cudaError_t l05_fp8_quantize(const void *q, const void *k, const void *v, int batch, int heads,
                             int kv_heads, int seq_q, int seq_kv, int dim, void *workspace,
                             size_t workspace_bytes, cudaStream_t stream);

/** The FP8 attention kernel on a workspace l05_fp8_quantize() filled: O (bf16) and the
 *  log-sum-exp as every launcher writes them. */
cudaError_t l05_fp8_attention(const void *workspace, size_t workspace_bytes, void *o, float *lse,
                              int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                              int causal, float scale, cudaStream_t stream);

/** Both: quantise, then attend (what the harness times for version 6). */
cudaError_t l05_fp8_forward(const void *q, const void *k, const void *v, void *o, float *lse,
                            int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                            int causal, float scale, void *workspace, size_t workspace_bytes,
                            cudaStream_t stream);
/** @} */

/** @name FP8 with a scale per tile (version 7, head dimension 128)
 * Version 7 converts in one pass: each tile of 128 rows of Q (one head) and of 128 keys of K and
 * of V (one KV head) gets its own power-of-two scale, chosen from the tile's largest |x| by the
 * block that converts it, stored beside the e4m3 values (fp8_workspace.cuh); the kernel undoes
 * them tile by tile. The same shapes, workspace and halves as version 6.
 *  @{ */
/** Workspace bytes version 7 needs for a shape (0 for a shape it cannot run, as version 6). */
size_t l05_fp8t_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim);

/** Quantise bf16 Q, K, V into @p workspace with a scale per tile, in one launch. The tiles are
 * loaded with TMA: @p q, @p k and @p v must be 16-byte aligned (cudaErrorInvalidValue otherwise).
 */
cudaError_t l05_fp8t_quantize(const void *q, const void *k, const void *v, int batch, int heads,
                              int kv_heads, int seq_q, int seq_kv, int dim, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream);

/** Version 7's attention kernel on a workspace l05_fp8t_quantize() filled. */
cudaError_t l05_fp8t_attention(const void *workspace, size_t workspace_bytes, void *o, float *lse,
                               int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                               int causal, float scale, cudaStream_t stream);

/** Both: quantise, then attend (what the harness times for version 7). */
cudaError_t l05_fp8t_forward(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                             int causal, float scale, void *workspace, size_t workspace_bytes,
                             cudaStream_t stream);
/** @} */

/** @name FP8 with the exponentials taking turns (version 10, head dimension 128)
 * Version 10 reads version 7's workspace (l05_fp8t_workspace_bytes(), l05_fp8t_quantize()) with
 * tiles of 256 keys; its warpgroups take turns at the exponentials instead of the tensor cores.
 *  @{ */
/** Version 10's workspace bytes: version 7's (l05_fp8t_workspace_bytes()). */
size_t l05_fp8w_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim);

/** Version 10's conversion: version 7's (l05_fp8t_quantize()). */
cudaError_t l05_fp8w_quantize(const void *q, const void *k, const void *v, int batch, int heads,
                              int kv_heads, int seq_q, int seq_kv, int dim, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream);

/** Version 10's attention kernel on a workspace l05_fp8t_quantize() filled. */
cudaError_t l05_fp8w_attention(const void *workspace, size_t workspace_bytes, void *o, float *lse,
                               int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                               int causal, float scale, cudaStream_t stream);

/** Version 7's conversion, then version 10's kernel (what the harness times for version 10). */
cudaError_t l05_fp8w_forward(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                             int causal, float scale, void *workspace, size_t workspace_bytes,
                             cudaStream_t stream);
/** @} */

/** @name FP8 in persistent blocks (version 11, head dimension 128)
 * Version 11 is version 10 with version 9's scheduler: min(items, SMs) blocks taking their items
 * from a counter that is one per device, so launches of version 11 must not overlap on one device.
 * It reads version 7's workspace.
 *  @{ */
/** Version 11's workspace bytes: version 7's (l05_fp8t_workspace_bytes()). */
size_t l05_fp8p_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim);

/** Version 11's conversion: version 7's (l05_fp8t_quantize()). */
cudaError_t l05_fp8p_quantize(const void *q, const void *k, const void *v, int batch, int heads,
                              int kv_heads, int seq_q, int seq_kv, int dim, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream);

/** Version 11's attention kernel on a workspace l05_fp8t_quantize() filled. It writes @p o through
 * a TMA store: @p o must be 16-byte aligned (cudaErrorInvalidValue otherwise). */
cudaError_t l05_fp8p_attention(const void *workspace, size_t workspace_bytes, void *o, float *lse,
                               int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                               int causal, float scale, cudaStream_t stream);

/** Version 7's conversion, then version 11's kernel (what the harness times for version 11). */
cudaError_t l05_fp8p_forward(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                             int causal, float scale, void *workspace, size_t workspace_bytes,
                             cudaStream_t stream);
/** @} */

/** @name FP8 with Q converted in the kernel (version 12, head dimension 128)
 * Version 12 is version 11 reading Q in bf16: each consumer warp converts its 16 rows of the Q tile
 * into e4m3 in shared memory, with a power-of-two scale of their own. Its workspace holds K and V
 * alone (version 7's layout with no Q rows), which its conversion fills. Its scheduler's counter is
 * its own, one per device, as version 11's.
 *  @{ */
/** Version 12's workspace bytes: K and V in e4m3 and their descales; 0 for a shape the FP8
 * versions refuse. */
size_t l05_fp8q_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim);

/** Version 12's conversion: K and V as version 7 converts them (16-byte aligned); @p q is not
 * read. */
cudaError_t l05_fp8q_quantize(const void *q, const void *k, const void *v, int batch, int heads,
                              int kv_heads, int seq_q, int seq_kv, int dim, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream);

/** Version 12's attention kernel on the bf16 @p q and a workspace l05_fp8q_quantize() filled. @p q
 * and @p o must be 16-byte aligned (cudaErrorInvalidValue otherwise). */
cudaError_t l05_fp8q_attention(const void *q, const void *workspace, size_t workspace_bytes,
                               void *o, float *lse, int batch, int heads, int kv_heads, int seq_q,
                               int seq_kv, int dim, int causal, float scale, cudaStream_t stream);

/** Version 12's conversion of K and V, then its kernel (what the harness times for version 12). */
cudaError_t l05_fp8q_forward(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                             int causal, float scale, void *workspace, size_t workspace_bytes,
                             cudaStream_t stream);
/** @} */

/** @name FP8 with half the exponentials on the FMA pipes (version 13, head dimension 128)
 * Version 13 is version 12 computing the exponentials of the even keys as a straight line between
 * powers of two (l05_exp2_line() in fp8_workspace.cuh) on the FMA and ALU pipes, the odd keys' on
 * the special function unit. Its workspace and conversion are version 12's; its scheduler's
 * counter is its own.
 *  @{ */
/** Version 13's workspace bytes: version 12's (l05_fp8q_workspace_bytes()). */
size_t l05_fp8x_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim);

/** Version 13's conversion: version 12's (l05_fp8q_quantize()), K and V. */
cudaError_t l05_fp8x_quantize(const void *q, const void *k, const void *v, int batch, int heads,
                              int kv_heads, int seq_q, int seq_kv, int dim, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream);

/** Version 13's attention kernel on the bf16 @p q and a workspace l05_fp8x_quantize() filled, with
 * version 12's arguments and alignment rules. */
cudaError_t l05_fp8x_attention(const void *q, const void *workspace, size_t workspace_bytes,
                               void *o, float *lse, int batch, int heads, int kv_heads, int seq_q,
                               int seq_kv, int dim, int causal, float scale, cudaStream_t stream);

/** Version 13's conversion of K and V, then its kernel (what the harness times for version 13). */
cudaError_t l05_fp8x_forward(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                             int causal, float scale, void *workspace, size_t workspace_bytes,
                             cudaStream_t stream);
/** @} */

/** @name FP8 with the diagonal's half tile (version 14, head dimension 128)
 * Version 14 is version 13 running an item's last KV tile over its first 128 keys only where the
 * other 128 are masked for every row of the item (the causal diagonal of even Q tiles, keys ending
 * in a tile's first half). Its workspace and conversion are version 12's; its scheduler's counter
 * is its own.
 *  @{ */
/** Version 14's workspace bytes: version 12's (l05_fp8q_workspace_bytes()). */
size_t l05_fp8h_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim);

/** Version 14's conversion: version 12's (l05_fp8q_quantize()), K and V. */
cudaError_t l05_fp8h_quantize(const void *q, const void *k, const void *v, int batch, int heads,
                              int kv_heads, int seq_q, int seq_kv, int dim, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream);

/** Version 14's attention kernel on the bf16 @p q and a workspace l05_fp8h_quantize() filled, with
 * version 12's arguments and alignment rules. */
cudaError_t l05_fp8h_attention(const void *q, const void *workspace, size_t workspace_bytes,
                               void *o, float *lse, int batch, int heads, int kv_heads, int seq_q,
                               int seq_kv, int dim, int causal, float scale, cudaStream_t stream);

/** Version 14's conversion of K and V, then its kernel (what the harness times for version 14). */
cudaError_t l05_fp8h_forward(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                             int causal, float scale, void *workspace, size_t workspace_bytes,
                             cudaStream_t stream);
/** @} */

/**
 * Any version by number, for callers without the harness's structs (Python's ctypes, bench/).
 * @param version  1..L05_VERSIONS
 * @param dim      head dimension, 64 or 128
 * @param q,k,v,o,lse,batch,heads,kv_heads,seq_q,seq_kv,causal,scale,stream as in l05_launch_fn;
 *                 scale 0 means 1/sqrt(dim)
 * @return cudaErrorInvalidValue for an unknown version or dimension, else the launcher's result
 */
cudaError_t l05_forward(int version, int dim, const void *q, const void *k, const void *v, void *o,
                        float *lse, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                        int causal, float scale, cudaStream_t stream);

/** Short name of version @p version (1-based), or NULL when there is none. */
const char *l05_version_name(int version);

/** The tiles of one l05_cpu_attention() run, and what it counted. */
typedef struct l05_cpu_tiles {
  int br;          /**< query rows per block (a multiple of @p wg_rows) */
  int wg_rows;     /**< rows per warpgroup */
  int bc;          /**< keys per tile */
  long s_products; /**< out: S tiles computed (one per warpgroup per KV tile) */
  long max_early;  /**< out: the most S tiles a warpgroup held at once (2: S_{j+1} before
                        softmax_j) */
} l05_cpu_tiles;

/**
 * FA3's tile loop on the CPU, in fp32, in the order its two-stage pipeline runs it: each
 * warpgroup's rows computed apart, S for KV tile j + 1 formed before the softmax of tile j, then
 * P_j V_j, the online softmax in base 2 with the scale folded in, bottom-right causal. In the shape
 * attn_cpu_check() takes; @p ctx is an l05_cpu_tiles. Returns 0 (-1 when out of memory).
 */
int l05_cpu_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx);

/** The lesson's table of versions, its default shape and head dimensions. */
extern const attn_lesson l05_lesson;

#ifdef __cplusplus
}
#endif

#endif /* L05_FA3_HOPPER_H */
