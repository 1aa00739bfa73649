/**
 * @file fa2_warps.h
 * @brief Lesson 04: FlashAttention-2 on tensor cores. Split-Q warps, mma.sync, a swizzled and
 *        double-buffered shared-memory pipeline, and the causal tile skip.
 *
 * Versions (the lesson's table, in teaching order):
 *  1. splitk-f32: fp32 on CUDA cores, one block per (Q tile, head, batch); the warps split each KV
 *     tile and meet in shared memory behind block barriers (FlashAttention-1's partition).
 *  2. splitq-f32: the same tile, but each warp owns rows of the Q tile (FlashAttention-2's
 *     partition): softmax statistics by warp shuffles, no barrier inside the softmax.
 *  3. mma-bf16: tensor cores (mma.sync m16n8k16, ldmatrix); S and P never leave registers.
 *  4. swizzle-bf16: the same, with an XOR-swizzled shared-memory layout (no bank conflicts).
 *  5. cpasync-bf16: cp.async double buffering: the next K/V tile loads while this one computes.
 *  6. causal-bf16: fully masked KV tiles skipped, the mask only on diagonal tiles, heavy Q tiles
 *     first.
 *  7. tiles-bf16: the tile shape per head dimension: at dim 64, KV tiles of 128 keys and Q read
 *     from shared memory (registers go to the larger S).
 *
 * Every launcher takes device pointers in the BSHD layouts of attn_types.h, enqueues on the given
 * stream, returns the first CUDA error and never exits. Versions 1-2 read and write fp32; versions
 * 3-7 read and write bf16 and accumulate in fp32. All write the natural-log log-sum-exp.
 */
#ifndef L04_FA2_WARPS_H
#define L04_FA2_WARPS_H

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Query rows per block in versions 1-2 (fp32): 4 warps of 8 rows (split-Q) or of 32 lanes. */
#define L04_BR_F32 32
/** Keys per KV tile in versions 1-2. */
#define L04_BC_F32 32
/** Query rows per block in versions 3-7: 4 warps of 32 rows. */
#define L04_BR 128
/** Keys per KV tile in versions 3-6 (and 7 at dim 128; 7 takes 128 at dim 64). */
#define L04_BC 64
/** Threads per block in every version: 4 warps. */
#define L04_THREADS 128
/** Number of versions in the lesson. */
#define L04_VERSIONS 7

/**
 * One attention launcher of this lesson, for one head dimension (in its name).
 * @param q        `[batch, seq_q, heads, dim]`, fp32 (versions 1-2) or bf16 (3-7)
 * @param k        `[batch, seq_kv, kv_heads, dim]`, same type
 * @param v        `[batch, seq_kv, kv_heads, dim]`, same type
 * @param o        out: `[batch, seq_q, heads, dim]`, same type
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
typedef cudaError_t (*l04_launch_fn)(const void *q, const void *k, const void *v, void *o,
                                     float *lse, int batch, int heads, int kv_heads, int seq_q,
                                     int seq_kv, int causal, float scale, cudaStream_t stream);

/** @name The launchers, two head dimensions each (parameters as in l04_launch_fn)
 *  @{ */
/** Version 1, split-K warps, fp32, head dimension 64. @copydetails l04_launch_fn */
cudaError_t l04_splitk_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                           int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                           float scale, cudaStream_t stream);
/** Version 1, head dimension 128. @copydetails l04_launch_fn */
cudaError_t l04_splitk_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                            int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                            float scale, cudaStream_t stream);
/** Version 2, split-Q warps, fp32, head dimension 64. @copydetails l04_launch_fn */
cudaError_t l04_splitq_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                           int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                           float scale, cudaStream_t stream);
/** Version 2, head dimension 128. @copydetails l04_launch_fn */
cudaError_t l04_splitq_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                            int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                            float scale, cudaStream_t stream);
/** Version 3, mma.sync tensor cores, bf16, head dimension 64. @copydetails l04_launch_fn */
cudaError_t l04_mma_d64(const void *q, const void *k, const void *v, void *o, float *lse, int batch,
                        int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale,
                        cudaStream_t stream);
/** Version 3, head dimension 128. @copydetails l04_launch_fn */
cudaError_t l04_mma_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                         int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                         float scale, cudaStream_t stream);
/** Version 4, swizzled shared memory, head dimension 64. @copydetails l04_launch_fn */
cudaError_t l04_swizzle_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                            int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                            float scale, cudaStream_t stream);
/** Version 4, head dimension 128. @copydetails l04_launch_fn */
cudaError_t l04_swizzle_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                             float scale, cudaStream_t stream);
/** Version 5, cp.async double buffering, head dimension 64. @copydetails l04_launch_fn */
cudaError_t l04_cpasync_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                            int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                            float scale, cudaStream_t stream);
/** Version 5, head dimension 128. @copydetails l04_launch_fn */
cudaError_t l04_cpasync_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                             int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                             float scale, cudaStream_t stream);
/** Version 6, causal skip and heavy-first order, dim 64. @copydetails l04_launch_fn */
cudaError_t l04_causal_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                           int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                           float scale, cudaStream_t stream);
/** Version 6, head dimension 128. @copydetails l04_launch_fn */
cudaError_t l04_causal_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                            int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                            float scale, cudaStream_t stream);
/** Version 7, Bc 128 and Q from shared memory, dim 64. @copydetails l04_launch_fn */
cudaError_t l04_tiles_d64(const void *q, const void *k, const void *v, void *o, float *lse,
                          int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                          float scale, cudaStream_t stream);
/** Version 7, head dimension 128. @copydetails l04_launch_fn */
cudaError_t l04_tiles_d128(const void *q, const void *k, const void *v, void *o, float *lse,
                           int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                           float scale, cudaStream_t stream);
/** @} */

/**
 * Any version by number, for callers without the harness's structs (Python's ctypes, bench/).
 * @param version  1..L04_VERSIONS
 * @param dim      head dimension, 64 or 128
 * @param q,k,v,o,lse,batch,heads,kv_heads,seq_q,seq_kv,causal,scale,stream as in l04_launch_fn;
 *                 scale 0 means 1/sqrt(dim)
 * @return cudaErrorInvalidValue for an unknown version or dimension, else the launcher's result
 */
cudaError_t l04_forward(int version, int dim, const void *q, const void *k, const void *v, void *o,
                        float *lse, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                        int causal, float scale, cudaStream_t stream);

/** Short name of version @p version (1-based), or NULL when there is none. */
const char *l04_version_name(int version);

/** 1 when version @p version reads and writes bf16, 0 for fp32 (and for an unknown version). */
int l04_version_is_bf16(int version);

/**
 * The tile loop of version 6 on the CPU, in fp32: Q tiles of @p br rows, KV tiles of @p bc keys,
 * only the visible tiles visited, the mask applied only where l04_kv_tiles_unmasked() says a tile
 * needs it, the online softmax in base 2 with the scale folded into log2(e) as the kernel does it.
 * @param p   the shape
 * @param q   `[batch, seq_q, heads, dim]`
 * @param k   `[batch, seq_kv, kv_heads, dim]`
 * @param v   `[batch, seq_kv, kv_heads, dim]`
 * @param o   out: `[batch, seq_q, heads, dim]`
 * @param lse out: `[batch, heads, seq_q]`
 * @param br  query rows per tile
 * @param bc  keys per tile
 * @return the number of KV tiles visited, summed over every Q tile of every (batch, head)
 */
long l04_cpu_forward(const attn_problem *p, const float *q, const float *k, const float *v,
                     float *o, float *lse, int br, int bc);

/** The tiles of one l04_cpu_attention() run, and the KV-tile visits it counted. */
typedef struct l04_cpu_tiles {
  int br;      /**< query rows per tile */
  int bc;      /**< keys per tile */
  long visits; /**< out: KV tiles visited */
} l04_cpu_tiles;

/** l04_cpu_forward() in the shape attn_cpu_check() takes; @p ctx is an l04_cpu_tiles. Returns 0. */
int l04_cpu_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx);

/** The lesson's table of versions, its default shape and head dimensions. */
extern const attn_lesson l04_lesson;

#ifdef __cplusplus
}
#endif

#endif /* L04_FA2_WARPS_H */
