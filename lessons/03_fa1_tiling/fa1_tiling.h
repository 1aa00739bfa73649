/**
 * @file fa1_tiling.h
 * @brief Lesson 3: FlashAttention-1, tiling plus online softmax. The C API: the launchers of every
 *        version, the tile plan the FA1 kernel runs with, and the CPU model of Algorithm 1 that
 *        counts its HBM traffic.
 *
 * All versions compute fp32 attention on CUDA cores over the dense BSHD layouts of attn_types.h,
 * with GQA, a bottom-right causal mask and any seq_q, seq_kv, and write the log-sum-exp. Each
 * kernel is compiled once per head dimension (64 and 128); the `_d64` / `_d128` suffix names the
 * build.
 */
#ifndef L03_FA1_TILING_H
#define L03_FA1_TILING_H

#include <stddef.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The H200's opt-in shared memory per block, 227 KB, in floats: the CPU model's default M. */
#define L03_H200_SMEM_FLOATS 58112L

/** Threads per block of the FA1 kernel (8 warps). */
#define L03_FA1_THREADS 256

/** How the FA1 kernel tiles one problem on a device with M floats of shared memory per block. */
typedef struct l03_fa1_plan {
  long smem_floats; /**< M: the per-block shared memory the tiles were sized for, in floats */
  int bc_paper;     /**< Bc = ceil(M / 4d), Algorithm 1's key tile */
  int br_paper;     /**< Br = min(Bc, d), Algorithm 1's query tile */
  int bc;           /**< the key tile the kernel uses: bc_paper rounded down to a multiple of 32,
                         smaller still if the padded tiles would not fit in M */
  int br;           /**< the query tile the kernel uses: min(bc, d) */
  int ld_s; /**< row pitch of the transposed S tile in shared memory (bank-conflict padding) */
  int tr;   /**< Tr = ceil(seq_q / br) query tiles */
  int tc;   /**< Tc = ceil(seq_kv / bc) key tiles */
  size_t smem_bytes; /**< dynamic shared memory per block */
  int q_groups;      /**< blocks per (batch, head); 1 is Algorithm 1 as published */
  int slots; /**< blocks of the kernel the device runs at once (SMs x resident blocks per SM);
                  0 when the plan was made without a device (l03_fa1_plan_make()) */
} l03_fa1_plan;

/**
 * Shared memory the FA1 kernel needs for its tiles, in floats: K_j transposed (d x bc), V_j (bc x
 * d), Q_i transposed (d x br), S_ij transposed (bc x ld_s) and two per-row factors (2 x br).
 * @param br    query rows per tile
 * @param bc    keys per tile
 * @param ld_s  row pitch of the S tile
 * @param d     head dimension
 * @return the floats of shared memory
 */
size_t l03_fa1_smem_floats(int br, int bc, int ld_s, int d);

/**
 * Plan the FA1 tiles for @p p on a block budget of @p smem_floats floats (q_groups set to 1, slots
 * to 0).
 * @param p            the problem (dim, seq_q, seq_kv are used)
 * @param smem_floats  M in floats
 * @param plan         out: the plan
 * @return 0, or -1 when M is too small for the smallest tile the kernel supports (Bc = 32)
 */
int l03_fa1_plan_make(const attn_problem *p, long smem_floats, l03_fa1_plan *plan);

/**
 * Choose how many blocks share the query tiles of one (batch, head) so that every block slot of the
 * GPU has work: the smallest count whose estimated efficiency (work / (waves x slots x the largest
 * block's work)) is within 5% of the best.
 * @param bh     batch x heads
 * @param tr     query tiles per (batch, head)
 * @param slots  blocks the GPU runs at once (SMs x blocks per SM)
 * @return a group count in [1, tr] (1 when tr is 0)
 */
int l03_fa1_choose_groups(int bh, int tr, int slots);

/**
 * M for the current device: the per-block opt-in shared memory
 * (cudaDevAttrMaxSharedMemoryPerBlockOptin) in floats.
 * @param smem_floats  out: M in floats
 * @return 0, or -1 without a usable device (then *smem_floats is untouched)
 */
int l03_device_smem_floats(long *smem_floats);

/* ---- Launchers ----------------------------------------------------------------------------------
 */

/**
 * Version 1, fused but not tiled (HEAD_DIM 64): one thread per query row streams every visible key
 * and value of its head from global memory (through L1/L2) with the online-softmax update.
 * @param p       the problem; p->dim must be 64
 * @param q       [batch, seq_q, heads, 64] fp32, device
 * @param k       [batch, seq_kv, kv_heads, 64] fp32, device
 * @param v       [batch, seq_kv, kv_heads, 64] fp32, device
 * @param o       [batch, seq_q, heads, 64] fp32, device, written
 * @param lse     [batch, heads, seq_q] fp32, device, written (natural log; -inf for a row with no
 * key)
 * @param stream  stream to enqueue on
 * @return the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fused_row_d64(const attn_problem *p, const float *q, const float *k, const float *v,
                              float *o, float *lse, cudaStream_t stream);

/**
 * Version 1 for HEAD_DIM 128: two adjacent threads share a query row, 64 dimensions each.
 * @param p       the problem; p->dim must be 128
 * @param q       [batch, seq_q, heads, 128] fp32, device
 * @param k       [batch, seq_kv, kv_heads, 128] fp32, device
 * @param v       [batch, seq_kv, kv_heads, 128] fp32, device
 * @param o       [batch, seq_q, heads, 128] fp32, device, written
 * @param lse     [batch, heads, seq_q] fp32, device, written
 * @param stream  stream to enqueue on
 * @return the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fused_row_d128(const attn_problem *p, const float *q, const float *k,
                               const float *v, float *o, float *lse, cudaStream_t stream);

/**
 * Version 2, FlashAttention-1's Algorithm 1 (HEAD_DIM 64): for each key tile j (outer) and
 * each query tile i (inner), K_j and V_j sit in shared memory while Q_i, O_i, l_i and m_i are read
 * from and written back to HBM. Tiles are sized from the device's opt-in shared memory per block,
 * queried at every launch.
 * @param p          the problem; p->dim must be 64
 * @param q          [batch, seq_q, heads, 64] fp32, device
 * @param k          [batch, seq_kv, kv_heads, 64] fp32, device
 * @param v          [batch, seq_kv, kv_heads, 64] fp32, device
 * @param o          [batch, seq_q, heads, 64] fp32, device: Algorithm 1's O, normalised at the end
 * @param lse        [batch, heads, seq_q] fp32, device, written: m + log(l)
 * @param workspace  2 x batch x heads x seq_q floats, device: Algorithm 1's m, then l
 * @param q_groups   blocks per (batch, head), each taking every q_groups-th query tile: 1 is the
 *                   paper's one block per (batch, head) (version 2); version 3 passes the count
 *                   l03_fa1_qgroups_plan_d64() chooses; values above Tr are clamped to Tr
 * @param stream     stream to enqueue on
 * @return cudaErrorInvalidValue when q_groups < 1, else the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fa1_d64(const attn_problem *p, const float *q, const float *k, const float *v,
                        float *o, float *lse, float *workspace, int q_groups, cudaStream_t stream);

/**
 * Version 2 for HEAD_DIM 128. See l03_fa1_d64().
 * @param p          the problem; p->dim must be 128
 * @param q          [batch, seq_q, heads, 128] fp32, device
 * @param k          [batch, seq_kv, kv_heads, 128] fp32, device
 * @param v          [batch, seq_kv, kv_heads, 128] fp32, device
 * @param o          [batch, seq_q, heads, 128] fp32, device
 * @param lse        [batch, heads, seq_q] fp32, device, written
 * @param workspace  2 x batch x heads x seq_q floats, device
 * @param q_groups   blocks per (batch, head), at least 1
 * @param stream     stream to enqueue on
 * @return cudaErrorInvalidValue when q_groups < 1, else the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fa1_d128(const attn_problem *p, const float *q, const float *k, const float *v,
                         float *o, float *lse, float *workspace, int q_groups, cudaStream_t stream);

/**
 * The plan l03_fa1_d64() would launch with on the current device, without launching.
 * @param p         the problem; p->dim must be 64
 * @param q_groups  as for l03_fa1_d64()
 * @param plan      out: tiles, shared memory, the group count in force and the device's slots
 * @return cudaErrorInvalidValue when q_groups < 1, else the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fa1_device_plan_d64(const attn_problem *p, int q_groups, l03_fa1_plan *plan);

/**
 * The plan l03_fa1_d128() would launch with on the current device, without launching.
 * @param p         the problem; p->dim must be 128
 * @param q_groups  as for l03_fa1_d128()
 * @param plan      out: tiles, shared memory, the group count in force and the device's slots
 * @return cudaErrorInvalidValue when q_groups < 1, else the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fa1_device_plan_d128(const attn_problem *p, int q_groups, l03_fa1_plan *plan);

/**
 * Version 3 (HEAD_DIM 64): version 2's kernel with several blocks per (batch, head), as many as
 * l03_fa1_qgroups_plan_d64() chooses for the current device.
 * @param p          the problem; p->dim must be 64
 * @param q          [batch, seq_q, heads, 64] fp32, device
 * @param k          [batch, seq_kv, kv_heads, 64] fp32, device
 * @param v          [batch, seq_kv, kv_heads, 64] fp32, device
 * @param o          [batch, seq_q, heads, 64] fp32, device
 * @param lse        [batch, heads, seq_q] fp32, device, written
 * @param workspace  2 x batch x heads x seq_q floats, device
 * @param stream     stream to enqueue on
 * @return the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fa1_qgroups_d64(const attn_problem *p, const float *q, const float *k,
                                const float *v, float *o, float *lse, float *workspace,
                                cudaStream_t stream);

/**
 * Version 3 for HEAD_DIM 128. See l03_fa1_qgroups_d64().
 * @param p          the problem; p->dim must be 128
 * @param q          [batch, seq_q, heads, 128] fp32, device
 * @param k          [batch, seq_kv, kv_heads, 128] fp32, device
 * @param v          [batch, seq_kv, kv_heads, 128] fp32, device
 * @param o          [batch, seq_q, heads, 128] fp32, device
 * @param lse        [batch, heads, seq_q] fp32, device, written
 * @param workspace  2 x batch x heads x seq_q floats, device
 * @param stream     stream to enqueue on
 * @return the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fa1_qgroups_d128(const attn_problem *p, const float *q, const float *k,
                                 const float *v, float *o, float *lse, float *workspace,
                                 cudaStream_t stream);

/**
 * Version 3's grid choice (HEAD_DIM 64): l03_fa1_device_plan_d64() with the group count that fills
 * the device, l03_fa1_choose_groups(batch x heads, Tr, slots), clamped to Tr.
 * @param p     the problem; p->dim must be 64
 * @param plan  out: tiles, shared memory, slots and the chosen group count
 * @return the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fa1_qgroups_plan_d64(const attn_problem *p, l03_fa1_plan *plan);

/**
 * Version 3's grid choice for HEAD_DIM 128. See l03_fa1_qgroups_plan_d64().
 * @param p     the problem; p->dim must be 128
 * @param plan  out: tiles, shared memory, slots and the chosen group count
 * @return the first CUDA error, or cudaSuccess
 */
cudaError_t l03_fa1_qgroups_plan_d128(const attn_problem *p, l03_fa1_plan *plan);

/** Workspace bytes of versions 2 and 3: m and l for every query row. @param p the problem
 *  @return 2 x batch x heads x seq_q x sizeof(float) */
size_t l03_fa1_workspace_bytes(const attn_problem *p);

/* ---- The CPU model of Algorithm 1
 * ---------------------------------------------------------------- */

/** The arrays the CPU model keeps in its "HBM", for the traffic breakdown. */
typedef enum l03_array {
  L03_ARR_Q = 0, /**< queries */
  L03_ARR_K,     /**< keys */
  L03_ARR_V,     /**< values */
  L03_ARR_O,     /**< the output, read and written at every visited (i, j) */
  L03_ARR_L,     /**< the running softmax denominators l */
  L03_ARR_M,     /**< the running maxima m */
  L03_ARR_LSE,   /**< the log-sum-exp output */
  L03_N_ARRAYS   /**< number of arrays */
} l03_array;

/** Elements the model read from and wrote to each HBM array. */
typedef struct l03_traffic {
  double reads[L03_N_ARRAYS];  /**< elements read, per array */
  double writes[L03_N_ARRAYS]; /**< elements written, per array */
  long tiles_visited;          /**< (i, j) tile pairs computed */
  long tiles_skipped;          /**< (i, j) tile pairs skipped as fully masked */
} l03_traffic;

/** Total elements read. @param t the counts @return the sum over arrays */
double l03_traffic_reads(const l03_traffic *t);
/** Total elements written. @param t the counts @return the sum over arrays */
double l03_traffic_writes(const l03_traffic *t);

/**
 * Algorithm 1 on the CPU, with the plan's tiles (plan->br, plan->bc) and group count
 * (plan->q_groups), counting every element read from and written to the HBM arrays Q, K, V, O,
 * l, m and lse. With @p q NULL it only walks the loops and counts (fast for any shape).
 * @param p     the problem
 * @param plan  tiles from l03_fa1_plan_make()
 * @param q     [batch, seq_q, heads, dim] fp32, host; NULL to count only
 * @param k     [batch, seq_kv, kv_heads, dim]; unused when q is NULL
 * @param v     [batch, seq_kv, kv_heads, dim]; unused when q is NULL
 * @param o     out: [batch, seq_q, heads, dim]; unused when q is NULL
 * @param lse   out: [batch, heads, seq_q]; unused when q is NULL
 * @param t     out: the traffic
 * @return 0, or -1 when host memory runs out
 */
int l03_fa1_model(const attn_problem *p, const l03_fa1_plan *plan, const float *q, const float *k,
                  const float *v, float *o, float *lse, l03_traffic *t);

/** One l03_fa1_attention() run: the plan it follows and the traffic it counted. */
typedef struct l03_fa1_run {
  const l03_fa1_plan *plan; /**< the tiles */
  l03_traffic traffic;      /**< out: the traffic of the run */
} l03_fa1_run;

/** l03_fa1_model() in the shape attn_cpu_check() takes; @p ctx is an l03_fa1_run. Returns 0, or -1
 *  when host memory runs out. */
int l03_fa1_attention(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx);

/**
 * The model's traffic in closed form, exact for every non-causal shape (any seq_q, seq_kv), in
 * elements. Per (batch, head), with N_q = seq_q, N_kv = seq_kv, G = plan->q_groups:
 * reads = 2 G N_kv d + Tc N_q (2d + 2) + 2 N_q and writes = N_q (d + 2) + Tc N_q (d + 2) + N_q.
 * @param p     the problem (its causal flag is ignored)
 * @param plan  the tiles
 * @param reads   out: elements read
 * @param writes  out: elements written
 */
void l03_fa1_formula(const attn_problem *p, const l03_fa1_plan *plan, double *reads,
                     double *writes);

/**
 * Standard attention's HBM traffic in elements, as the FlashAttention paper counts it (its
 * Algorithm 0): read Q and K, write S; read S, write P; read P and V, write O. Per (batch, head):
 * 2 N_q d + 2 N_kv d + 4 N_q N_kv, whatever the mask.
 * @param p  the problem
 * @return elements moved
 */
double l03_standard_elems(const attn_problem *p);

/**
 * Elements version 1 (fused, not tiled) asks the memory system for: each row reads its query and
 * every visible key and value row and writes its output and log-sum-exp. Most of these reads are
 * served by L1 and L2, not by HBM.
 * @param p  the problem
 * @return elements requested
 */
double l03_fused_row_elems(const attn_problem *p);

/**
 * The lesson's CPU part: the tile plan for M (the device's, or the H200's without a GPU or with
 * --cpu), the model's traffic for the current shape beside the closed form, the paper's N^2 d^2 / M
 * and standard attention's count, and the model checked against attn_reference() on a small shape
 * of the same kind.
 * @param o  the parsed command line
 * @return 0, or 1 when the model fails its check or its count disagrees with the closed form
 */
int l03_cpu_part(const attn_options *o);

/** The lesson's version table (versions.c). */
extern const attn_lesson l03_lesson;

#ifdef __cplusplus
}
#endif

#endif /* L03_FA1_TILING_H */
