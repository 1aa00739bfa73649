/**
 * @file memory_hierarchy.h
 * @brief Lesson 01's C API: a bandwidth probe for every level of the memory hierarchy (host link,
 *        HBM, L2, shared memory, registers and FMA), and standard attention as three kernels that
 *        keep S and P in HBM.
 *
 * Every launcher takes device pointers and a stream, enqueues work, and returns the first CUDA
 * error (it never exits). The probes' data follow two patterns that host code can recompute
 * exactly:
 *  - the sum pattern, element i = i mod 17, read by the read probes: each block returns the exact
 *    sum of what it read, which the host predicts in closed form (l01_read_expected());
 *  - the hash pattern, element i = a float in [1, 2) with hashed mantissa (l01_hash_value()),
 *    written by the write probe and copied by the copy and host-link probes, then compared element
 *    by element.
 */
#ifndef L01_MEMORY_HIERARCHY_H
#define L01_MEMORY_HIERARCHY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attn.h"
#include "traffic_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* The lesson table */

/** Version numbers of lesson 01 (1-based, as `./run N` takes them). */
enum l01_version_number {
  L01_V_H2D_PAGEABLE = 1, /**< host to device from pageable memory */
  L01_V_H2D_PINNED,       /**< host to device from pinned memory */
  L01_V_D2H_PAGEABLE,     /**< device to host into pageable memory */
  L01_V_D2H_PINNED,       /**< device to host into pinned memory */
  L01_V_HBM_READ4,        /**< HBM read, 4-byte loads */
  L01_V_HBM_READ16,       /**< HBM read, 16-byte loads */
  L01_V_HBM_WRITE16,      /**< HBM write, 16-byte stores */
  L01_V_HBM_COPY16,       /**< HBM copy, 16-byte loads and stores */
  L01_V_L2_READ16,        /**< the HBM read on a working set that fits in L2 */
  L01_V_SMEM_ROW,         /**< shared memory, conflict-free */
  L01_V_SMEM_STRIDE2,     /**< shared memory, 2-way bank conflict */
  L01_V_SMEM_STRIDE32,    /**< shared memory, 32-way bank conflict */
  L01_V_SMEM_PAD33,       /**< shared memory, stride 32 with padded rows: conflict-free again */
  L01_V_FMA,              /**< fp32 FMA throughput from registers */
  L01_V_NAIVE,            /**< standard attention: three kernels, S and P in HBM */
  L01_N_VERSIONS = L01_V_NAIVE /**< how many versions the table holds */
};

/** Lesson 01's table of versions, for main.c and the tests. */
extern const attn_lesson l01_lesson;

/** The lesson's CPU part: prints the traffic model of the chosen shape and checks it against the
 *  harness's own counts. Returns 0, or 1 when they disagree.
 *  @param o the parsed command line */
int l01_cpu_part(const attn_options *o);

/** The lesson's report: the measured pyramid, the bank-conflict and access-width ratios, and the
 *  naive attention's roofline with a per-kernel breakdown. Returns 0, or 1 on a CUDA error.
 *  @param o       the parsed command line
 *  @param dev     the device (NULL without a GPU: then it prints one line and returns 0)
 *  @param results one entry per version, as attn_run_versions() filled them
 *  @param n       number of entries */
int l01_report(const attn_options *o, const attn_device *dev, const attn_result *results, int n);

/** The model's shape for a harness problem. @param p the problem */
l01_shape l01_shape_of(const attn_problem *p);

/* ---------------------------------------------------------------------------------------------- */
/* Probe sizes */

/** Sizes of the probes. Zero in any field means the default, chosen from the device. */
typedef struct l01_probe_config {
  size_t link_bytes; /**< bytes per host-link transfer (default 256 MiB) */
  size_t hbm_bytes;  /**< bytes an HBM probe touches: read or write one buffer of this size, or
                          copy half of it into the other half's buffer (default: 4 GiB for the
                          reads, 2 GiB for the write and the copy, at least 8 x L2, at most half
                          the free memory, rounded down to whole rounds of one tile per block) */
  size_t l2_bytes;   /**< working set of the L2 probe (default a quarter of the L2) */
  int l2_passes;     /**< passes the L2 probe makes over its working set (default: 4 GiB in all) */
  int smem_iters;    /**< loop trips of the shared-memory probe (default: about 8 GB of reads) */
  int fma_iters;     /**< loop trips of the FMA probe (default: about 3e10 flops) */
} l01_probe_config;

/** Set the probe sizes for the setups that follow (tests use small, awkward sizes).
 *  @param c the sizes, or NULL for every default */
void l01_probe_configure(const l01_probe_config *c);

/** The sizes in force. */
l01_probe_config l01_probe_config_get(void);

/* ---------------------------------------------------------------------------------------------- */
/* Data patterns */

/** Element @p i of the sum pattern: i mod 17, an integer in [0, 16]. 17 is prime to every power of
 *  two, so a load from the wrong place changes the sum of a tile. */
#define L01_SUM_VALUE(i) ((unsigned)((uint64_t)(i) % 17u))

/** The bits of element @p i of the hash pattern: exponent of 1.0 and 23 hashed mantissa bits, so a
 *  float in [1, 2) that is never NaN and never the poison pattern. */
#define L01_HASH_BITS(i) \
  (0x3F800000u | (((uint32_t)((uint64_t)(i) ^ ((uint64_t)(i) >> 32)) * 2654435761u) >> 9))

/** Element @p i of the hash pattern, on the host. @param i element index */
static inline float l01_hash_value(uint64_t i) {
  const uint32_t bits = L01_HASH_BITS(i);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/** Fill @p x with the sum pattern. @param x device buffer @param n elements @param stream stream */
cudaError_t l01_fill_sum_pattern(float *x, size_t n, cudaStream_t stream);

/** Fill @p x with the hash pattern.
 *  @param x device buffer @param n elements @param stream stream */
cudaError_t l01_fill_hash_pattern(float *x, size_t n, cudaStream_t stream);

/* ---------------------------------------------------------------------------------------------- */
/* HBM and L2 probes (probe_global.cu) */

/** Threads per block of the global-memory probes. */
#define L01_GLOBAL_THREADS 256
/** Independent loads (or stores) each thread has in flight per trip of a global-memory probe. */
#define L01_GLOBAL_UNROLL 4

/** What a global-memory probe does. */
typedef enum l01_global_op {
  L01_READ4 = 0, /**< sum a buffer with 4-byte loads */
  L01_READ16,    /**< sum a buffer with 16-byte loads */
  L01_WRITE16,   /**< write the hash pattern with 16-byte stores */
  L01_COPY16     /**< copy a buffer with 16-byte loads and stores */
} l01_global_op;

/** Blocks that fill every SM once for @p op: SMs x resident blocks per SM (occupancy API).
 *  @param op the probe @param sm_count SMs on the device @param grid out: blocks */
cudaError_t l01_global_grid(l01_global_op op, int sm_count, int *grid);

/**
 * Read @p n floats @p passes times and write, per block, the exact sum of what the block read.
 * The buffer is cut into tiles of L01_GLOBAL_THREADS x L01_GLOBAL_UNROLL vectors (a vector is 1
 * float for L01_READ4, 4 for L01_READ16); tile t belongs to block t mod @p grid; the block owning
 * the first tile that is not full (t = full tiles mod grid) also reads that partial tile and the
 * 0-3 floats left after the last whole vector. Loads bypass L1 (ld.global.cg), so a repeated pass
 * hits L2.
 * @param op         L01_READ4 or L01_READ16
 * @param x          device data holding the sum pattern; 16-byte aligned
 * @param n          floats
 * @param passes     passes over the data (1 for HBM; many for the L2 probe)
 * @param grid       blocks (l01_global_grid())
 * @param block_sums out: `[grid]` sums, exact while each thread's share stays below 2^24 / 16
 * @param stream     stream
 */
cudaError_t l01_read(l01_global_op op, const float *x, size_t n, int passes, int grid,
                     unsigned long long *block_sums, cudaStream_t stream);

/** The per-block sums l01_read() must produce, in closed form.
 *  @param n floats @param vec_floats 1 or 4 @param passes passes @param grid blocks
 *  @param sums out: `[grid]` */
void l01_read_expected(size_t n, int vec_floats, int passes, int grid, unsigned long long *sums);

/** The largest number of floats one thread of l01_read() adds up (to prove its float sums exact).
 *  @param n floats @param vec_floats 1 or 4 @param passes passes @param grid blocks */
double l01_read_max_per_thread(size_t n, int vec_floats, int passes, int grid);

/** Write the hash pattern over @p n floats with 16-byte stores, tiles as in l01_read().
 *  @param x device buffer, 16-byte aligned @param n floats @param grid blocks
 *  @param stream stream */
cudaError_t l01_write(float *x, size_t n, int grid, cudaStream_t stream);

/** Copy @p n floats with 16-byte loads and stores, one vector per thread over a grid of n/1024
 *  blocks (not the persistent grid of the other probes: see probe_global.cu).
 *  @param dst device destination @param src device source (both 16-byte aligned) @param n floats
 *  @param stream stream */
cudaError_t l01_copy(float *dst, const float *src, size_t n, cudaStream_t stream);

/* ---------------------------------------------------------------------------------------------- */
/* Shared-memory probe (probe_smem.cu) */

/** Threads per block of the shared-memory and FMA probes. */
#define L01_CHIP_THREADS 256
/** Words of the shared tile the shared-memory probe reads: 32 rows of 33 words, plus slack. */
#define L01_SMEM_WORDS (32 * 33 + 32)
/** Word @p w of block @p blk's shared tile: an integer in [0, 3], so every sum stays exact. */
#define L01_SMEM_VALUE(w, blk) ((float)((unsigned)((w)*7u + (unsigned)(blk)) & 3u))

/**
 * Where lane `l` of a warp reads its k-th word (k = 0..31): word `l * lane_stride + k * k_stride`.
 * Bank = word mod 32, so a warp's 32 loads of one k hit gcd(lane_stride, 32) words per bank.
 */
typedef enum l01_smem_layout {
  L01_SMEM_ROW = 0,  /**< lane_stride 1, k_stride 32: a warp reads one row, conflict-free */
  L01_SMEM_STRIDE2,  /**< lane_stride 2, k_stride 1: two words per bank, 2-way conflict */
  L01_SMEM_STRIDE32, /**< lane_stride 32, k_stride 1: a warp reads a column, 32-way conflict */
  L01_SMEM_PAD33     /**< lane_stride 33, k_stride 1: the same column, rows padded to 33 words */
} l01_smem_layout;

/** The strides of @p layout. @param layout the layout @param lane_stride out @param k_stride out */
void l01_smem_strides(l01_smem_layout layout, int *lane_stride, int *k_stride);

/** Bank conflict degree of a warp reading words `lane * stride`: the most distinct words that fall
 *  in one of the 32 banks (gcd(stride, 32)); the access takes that many shared-memory cycles.
 *  @param lane_stride words between neighbouring lanes */
int l01_smem_conflict_ways(int lane_stride);

/** The shared-memory bandwidth the hardware can deliver: SMs x 32 banks x 4 bytes x SM clock,
 *  in GB/s. @param dev the device */
double l01_smem_peak_gbs(const attn_device *dev);

/** Blocks that fill every SM once (occupancy API). @param sm_count SMs @param grid out: blocks */
cudaError_t l01_smem_grid(int sm_count, int *grid);

/**
 * Each thread reads its 32 words of the tile @p iters times through a volatile pointer (every load
 * happens) and writes the sum to out[global thread]: `iters * sum_k tile[lane*ls + k*ks]`.
 * @param layout access pattern @param out device `[grid * L01_CHIP_THREADS]` @param iters trips
 * @param grid blocks @param stream stream
 */
cudaError_t l01_smem_read(l01_smem_layout layout, float *out, int iters, int grid,
                          cudaStream_t stream);

/** What out[@p thread] of l01_smem_read() must hold. @param layout layout @param thread global
 *  thread @param iters trips */
float l01_smem_expected(l01_smem_layout layout, size_t thread, int iters);

/* ---------------------------------------------------------------------------------------------- */
/* FMA probe (probe_fma.cu) */

/** Independent FMA chains per thread of the FMA probe (enough to hide the FMA latency). */
#define L01_FMA_CHAINS 16
/** Start of chain @p c of global thread @p g: an exact float in [1, 2). */
#define L01_FMA_START(g, c) \
  (1.0f + (float)((((unsigned)(g)) * 16u + (unsigned)(c)) & 255u) * 0.00390625f)

/** Blocks that fill every SM once (occupancy API). @param sm_count SMs @param grid out: blocks */
cudaError_t l01_fma_grid(int sm_count, int *grid);

/**
 * Each thread runs L01_FMA_CHAINS chains `x = fmaf(x, a, b)` for @p iters trips, all in registers,
 * then writes the sum of its chains (added in chain order) to out[global thread].
 * @param out device `[grid * L01_CHIP_THREADS]` @param iters trips @param a multiplier
 * @param b addend @param grid blocks @param stream stream
 */
cudaError_t l01_fma(float *out, int iters, float a, float b, int grid, cudaStream_t stream);

/** What out[@p thread] of l01_fma() must hold, replayed on the host with the same fused operations.
 *  @param thread global thread @param iters trips @param a multiplier @param b addend */
float l01_fma_expected(size_t thread, int iters, float a, float b);

/* ---------------------------------------------------------------------------------------------- */
/* Naive attention (v15_naive.cu) */

/** Row pitch of S and P in floats: seq_kv rounded up to 4, so every row starts 16-byte aligned.
 *  @param p the problem */
size_t l01_s_pitch(const attn_problem *p);

/** Bytes of the S/P buffer the naive version needs: batch * heads * seq_q * pitch floats.
 *  @param p the problem */
size_t l01_naive_workspace(const attn_problem *p);

/** NULL when S fits in the free device memory and the grids fit the launch limits, else the reason.
 *  @param p the problem */
const char *l01_naive_supports(const attn_problem *p);

/** Kernel 1: S = Q K^T * scale for every (batch, head), masked entries set to -inf.
 *  @param p shape @param q `[batch, seq_q, heads, dim]` @param k `[batch, seq_kv, kv_heads, dim]`
 *  @param s out: `[batch, heads, seq_q, pitch]` @param stream stream */
cudaError_t l01_naive_qk(const attn_problem *p, const float *q, const float *k, float *s,
                         cudaStream_t stream);

/** Kernel 2: P = softmax(S) row by row, written over S, and the row's natural-log log-sum-exp.
 *  A row that sees no key gets P = 0 and lse = -inf.
 *  @param p shape @param s in: S, out: P, `[batch, heads, seq_q, pitch]`
 *  @param lse out: `[batch, heads, seq_q]`, or NULL @param stream stream */
cudaError_t l01_naive_softmax(const attn_problem *p, float *s, float *lse, cudaStream_t stream);

/** Kernel 3: O = P V. @param p shape @param pm P `[batch, heads, seq_q, pitch]`
 *  @param v `[batch, seq_kv, kv_heads, dim]` @param o out: `[batch, seq_q, heads, dim]`
 *  @param stream stream */
cudaError_t l01_naive_pv(const attn_problem *p, const float *pm, const float *v, float *o,
                         cudaStream_t stream);

/** The three kernels in order, S and P in @p a->workspace (at least l01_naive_workspace() bytes).
 *  @param p shape @param a device pointers (q, k, v, o, lse, workspace) @param stream stream */
cudaError_t l01_naive_attention(const attn_problem *p, const attn_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* L01_MEMORY_HIERARCHY_H */
