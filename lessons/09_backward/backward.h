/**
 * @file backward.h
 * @brief Lesson 09: the backward pass of attention. Recompute P instead of storing it, on tensor
 *        cores, with dQ added by atomics or in a deterministic second pass.
 *
 * The forward pass (lesson 04) writes O and the per-row log-sum-exp L. Given the gradient dO of a
 * loss with respect to O, the backward pass returns dQ, dK and dV through five products per tile:
 *
 *     P  = exp(scale * Q K^T - L)      (recomputed from Q, K and L: nothing N x N is stored)
 *     dV = P^T dO
 *     dP = dO V^T
 *     dS = P o (dP - D),  D = rowsum(dO o O)      (o: elementwise)
 *     dQ = scale * dS K
 *     dK = scale * dS^T Q
 *
 * Versions (the lesson's table, in teaching order):
 *  1. naive-f32: P and dS materialised in HBM as fp32 [batch, heads, seq_q, seq_kv] matrices, one
 *     simple kernel per product, fp32 CUDA cores. O(N^2) memory, printed.
 *  2. recompute-f32: D in a small kernel, then one KV-outer kernel: a block owns a K/V tile, walks
 *     the Q tiles, rebuilds P from Q K^T and L, keeps dK and dV in registers and adds its share of
 *     dQ to an fp32 buffer with atomics. fp32 CUDA cores. O(N) extra memory.
 *  3. mma-bf16: the same walk on tensor cores (mma.sync m16n8k16, ldmatrix); P and dS stay in
 *     registers for dV and dK, dS goes through shared memory for dQ.
 *  4. causal-bf16: + causal tile skipping (a K/V tile starts at the first Q tile that sees it, the
 *     mask only on the tiles the diagonal crosses) and cp.async double-buffered Q/dO tiles.
 *  5. determ-bf16: dQ without atomics: a second, Q-outer kernel owns a Q tile, walks the K/V
 *     tiles and accumulates dQ in registers; bitwise the same result run to run.
 *  6. wgmma-bf16: version 4's walk on Hopper's warpgroup tensor cores (sm_90a only): every product
 *     a wgmma reading its tiles from shared memory, where TMA puts them; dQ by atomics.
 *  7. bulkdq-bf16: version 6 with each warpgroup's dQ block staged in shared memory and added into
 *     the fp32 dQ by a TMA reduction (cp.reduce.async.bulk.tensor) instead of per-thread atomics.
 *
 * Every version reads bf16 Q, K, V, O, dO in the BSHD layouts of attn_types.h and the fp32
 * natural-log L `[batch, heads, seq_q]`, accumulates in fp32 and writes bf16 dQ `[batch, seq_q,
 * heads, dim]`, dK and dV `[batch, seq_kv, kv_heads, dim]`. With GQA/MQA, dK and dV of a KV head
 * sum over the query heads of its group. Causal masking is bottom-right, as in the forward. A query
 * row that sees no key (L = -inf) contributes nothing and gets dQ = 0; a key no query sees gets dK
 * = dV = 0.
 */
#ifndef L09_BACKWARD_H
#define L09_BACKWARD_H

#include <stddef.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Number of versions in the lesson. */
#define L09_VERSIONS 7

/** Everything one backward launch needs: device pointers and the shape. */
typedef struct l09_grad_args {
  const void *q;    /**< `[batch, seq_q, heads, dim]`, bf16 */
  const void *k;    /**< `[batch, seq_kv, kv_heads, dim]`, bf16 */
  const void *v;    /**< `[batch, seq_kv, kv_heads, dim]`, bf16 */
  const void *o;    /**< the forward's output, `[batch, seq_q, heads, dim]`, bf16 */
  const void *d_o;  /**< the gradient of the loss with respect to O, same layout, bf16 */
  const float *lse; /**< the forward's log-sum-exp `[batch, heads, seq_q]`, fp32, natural log */
  void *dq;         /**< out: `[batch, seq_q, heads, dim]`, bf16 */
  void *dk;         /**< out: `[batch, seq_kv, kv_heads, dim]`, bf16 */
  void *dv;         /**< out: `[batch, seq_kv, kv_heads, dim]`, bf16 */
  void *workspace;  /**< scratch of l09_workspace_bytes() bytes (contents on entry: any) */
  size_t workspace_bytes; /**< its size */
  int batch;              /**< sequences */
  int heads;              /**< query heads */
  int kv_heads;           /**< key/value heads, dividing heads */
  int seq_q;              /**< query tokens per sequence, >= 1 */
  int seq_kv;             /**< key/value tokens per sequence, >= 1 */
  int causal;             /**< 1: bottom-right causal mask */
  float scale;            /**< softmax scale (1/sqrt(dim) for the usual one) */
} l09_grad_args;

/** One backward launcher, for one head dimension (in its name). Enqueues on @p stream, returns
 * cudaErrorInvalidValue for a bad shape or a workspace that is too small, else the first CUDA
 * error; never exits. */
typedef cudaError_t (*l09_launch_fn)(const l09_grad_args *a, cudaStream_t stream);

/** @name The launchers, two head dimensions each
 *  @{ */
/** Version 1, naive: P and dS in HBM, head dimension 64. */
cudaError_t l09_naive_d64(const l09_grad_args *a, cudaStream_t stream);
/** Version 1, head dimension 128. */
cudaError_t l09_naive_d128(const l09_grad_args *a, cudaStream_t stream);
/** Version 2, recompute on CUDA cores, head dimension 64. */
cudaError_t l09_recompute_d64(const l09_grad_args *a, cudaStream_t stream);
/** Version 2, head dimension 128. */
cudaError_t l09_recompute_d128(const l09_grad_args *a, cudaStream_t stream);
/** Version 3, tensor cores, head dimension 64. */
cudaError_t l09_mma_d64(const l09_grad_args *a, cudaStream_t stream);
/** Version 3, head dimension 128. */
cudaError_t l09_mma_d128(const l09_grad_args *a, cudaStream_t stream);
/** Version 4, causal tile skip and cp.async, head dimension 64. */
cudaError_t l09_causal_d64(const l09_grad_args *a, cudaStream_t stream);
/** Version 4, head dimension 128. */
cudaError_t l09_causal_d128(const l09_grad_args *a, cudaStream_t stream);
/** Version 5, deterministic dQ pass, head dimension 64. */
cudaError_t l09_determ_d64(const l09_grad_args *a, cudaStream_t stream);
/** Version 5, head dimension 128. */
cudaError_t l09_determ_d128(const l09_grad_args *a, cudaStream_t stream);
/** Version 6, wgmma and TMA (sm_90a; in builds without sm_90a it returns cudaErrorNotSupported),
 * head dimension 64. */
cudaError_t l09_wgmma_d64(const l09_grad_args *a, cudaStream_t stream);
/** Version 6, head dimension 128. */
cudaError_t l09_wgmma_d128(const l09_grad_args *a, cudaStream_t stream);
/** Version 7, dQ by TMA reductions (sm_90a; in builds without sm_90a it returns
 * cudaErrorNotSupported), head dimension 64. */
cudaError_t l09_bulkdq_d64(const l09_grad_args *a, cudaStream_t stream);
/** Version 7, head dimension 128. */
cudaError_t l09_bulkdq_d128(const l09_grad_args *a, cudaStream_t stream);
/** @} */

/**
 * Scratch bytes version @p version needs for a shape: version 1 the fp32 P and dS matrices
 * (2 * batch * heads * seq_q * seq_kv * 4 bytes) and D; versions 2-4, 6 and 7 D and an fp32 dQ
 * accumulator; version 5 D alone. 0 for an unknown version.
 */
size_t l09_workspace_bytes(int version, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                           int dim);

/**
 * Any version by number, for callers without the harness's structs (Python's ctypes, bench/).
 * @param version 1..L09_VERSIONS
 * @param dim     head dimension, 64 or 128
 * @param a       the arguments; a->scale 0 means 1/sqrt(dim)
 * @param stream  stream to enqueue on
 * @return cudaErrorInvalidValue for an unknown version or dimension, else the launcher's result
 */
cudaError_t l09_backward(int version, int dim, const l09_grad_args *a, cudaStream_t stream);

/**
 * The same with every argument flat (ctypes passes no structs): see l09_grad_args for each one.
 */
cudaError_t l09_backward_flat(int version, int dim, const void *q, const void *k, const void *v,
                              const void *o, const void *d_o, const float *lse, void *dq, void *dk,
                              void *dv, void *workspace, size_t workspace_bytes, int batch,
                              int heads, int kv_heads, int seq_q, int seq_kv, int causal,
                              float scale, cudaStream_t stream);

/** Short name of version @p version (1-based), or NULL when there is none. */
const char *l09_version_name(int version);

/** The lesson's table of versions, its default shape and head dimensions. */
extern const attn_lesson l09_lesson;

#ifdef __cplusplus
}
#endif

#endif /* L09_BACKWARD_H */
