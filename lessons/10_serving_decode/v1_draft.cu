// clang-format off
/** @file
 * @brief Version 1: draft tokens. Lesson 07's version 5 with every query row of a KV head's
 * group, for every draft token of the sequence, in one block: up to four 16-row tensor-core
 * tiles read each K and V tile the block loads, so the keys cross the memory bus once for up to
 * 64 rows (query heads of the group x draft tokens).
 *
 * What changed: against lesson 07's version 5 (`diff
 * lessons/07_paged_attention/v5_paged_balance.cu lessons/10_serving_decode/v1_draft.cu`):
 *  - a unit is 64 group rows (L10_UNIT_ROWS), not 16: the block loads a Q tile of 64 rows, and
 *    its four warps form 4 / rw key streams of rw warps each, rw the row tiles the sequence's rows
 *    fill (1, 2, or 4 for 3 and 4). Warp w still loads lesson 07's 16-key tiles w, w + 4, ...
 *    into its own ring; at each step the rw warps of a stream read all rw tiles of the stream,
 *    one after the other, each warp for its own row tile. The warps wait for each other once per
 *    step (__syncthreads), where lesson 07's warp waited for itself, and a ring slot is refilled
 *    after that barrier (every warp is past the tile that was in it): the wait before it keeps
 *    FD_STAGES - 2 groups in flight, not FD_STAGES - 1;
 *  - the step's shape lives on the device: each sequence's draft tokens (q_lens, q_start into a
 *    packed Q) and keys (seq_lens) are read by the block, which exits when its unit has no rows
 *    or its item no chunk; the grid is items x KV heads x units, the items made from the batch and
 *    the limits (max_q, max_seq_kv) alone (l10_draft_items()), and the block cuts the keys into
 *    them itself: every warp reads the lengths, takes the even share of their sum for the chunk
 *    and finds its item's sequence and chunk by a prefix sum (split_device.cuh), in place of
 *    lesson 07's plan over the host's lengths;
 *  - the mask: a row sees its keys below `lim` and the draft keys its bit word names (none,
 *    causal, or a token tree: l10_sees()); a tile below every row's `lim` skips the test, and O
 *    is rescaled only when a row of the warp has a new maximum;
 *  - one ring depth, lesson 07's shallow one: two blocks per SM at every batch;
 *  - the chunks of a sequence merged by a second kernel (FD_COMBINE, a thread per row and four
 *    columns over the whole GPU, as lesson 06's version 4), not by the last of their blocks: with
 *    64 rows that block would read every chunk's 64 x dim floats alone (about 1 MB at batch 1).
 *    On sm_90 it is a programmatic dependent launch (griddepcontrol.wait at its top), so that
 *    the launch between the two kernels costs less; versions 2 and 4 call the same launcher.
 *    Where a unit's rows give each thread one float4 (one token at 32/8 heads and dim 128:
 *    l10_merge_here()), or up to eight when no sequence is cut into more than four chunks
 *    (l10_merge_inside()), the last blocks merge inside the kernel instead, in two levels
 *    (merge_device.cuh: the last block of each group of about sqrt(n) chunks merges its group,
 *    the last group merger the groups), and the second launch is saved.
 *
 * Why: lesson 07's version 5 gives each 16 rows their own blocks. With 32/8 heads a KV group is 4
 * rows a token, so 8 draft tokens are two row tiles, and each reads the sequence's keys: twice
 * the requests, the second pass from L2 when it is lucky; past 8 tokens it has no answer.
 *
 * Prediction: one read of the keys for up to 16 tokens at 32/8 heads, so 2-8 tokens near the
 * one-token rate. The tensor cores are far from their ceiling: at 16 tokens 64 rows x 2 x 2 x 128
 * flops per key of 512 bytes is 64 flops a byte, about 215 TFLOP/s of mma.sync at an H100's
 * 3.35 TB/s, a third of what it can issue. What is not free is latency: a warp reads rw tiles
 * per step where lesson 07's read one, with two warps per scheduler to hide it.
 *
 * Measured: H200, 2026-11-26 (docs/results/h200-l10b-2026-11-26, bench/lesson10_peers.py, causal,
 * 32/8 heads, dim 128): at batch 16 and 64 with 32k-128k keys, 2-8 draft tokens at 0.98-1.00x
 * the one-token rate (4.31-4.54 TB/s, 90-94% of HBM), 4.3-4.6x cuDNN's paged SDPA with the same
 * token counts; 16 tokens at 2.66-2.76 TB/s, 0.60-0.61x. At batch 1: 8 tokens at 0.87x with 32k
 * keys (2.67 TB/s) and 0.95x with 128k; the default step 1.02x lesson 07's version 5. Before the
 * merge had its kernel (the last block of the chunks merging them; h200-l10-2026-11-26, and
 * h100-l10-2026-11-26 on an H100): the same at batch 16 and more, but at batch 1 8 tokens at 0.65x
 * (2.00 TB/s) with 32k keys and 0.81x with 128k, the default step 0.79x lesson 07's. Predicted
 * for the merge kernel: the batch-1 steps, whose 33 chunks a KV head made the last block read
 * about 1 MB alone, near lesson 07's (whose 16-row units keep that merge small); measured: level
 * with it or ahead from 8 tokens. On the H100 (before the merge kernel) 16 tokens ran at
 * 2.65-2.76 TB/s too, 0.88-0.90x its one-token rate: past the memory's speed the warps' latency
 * sets the rate, the same on both parts. With the mask test behind a warp-uniform branch, as
 * version 2 has it (docs/results/h200-l10d-2026-11-26): 16 tokens at 3.50-3.68 TB/s, 0.79-0.81x
 * the one-token rate at batch 16-64 with 32k keys and more, 0.71-0.75x at batch 1; 2-8 tokens
 * as before (0.96-1.00x, 4.29-4.56 TB/s); 8 tokens at batch 1 and 32k keys 0.90x. At dim 256
 * (Q's fragments read from shared memory, one block an SM; docs/results/h200-l10f-2026-11-26):
 * 1-4 tokens at 4.56-4.63 TB/s from batch 16 and 32k keys, 1.01-1.04x dim 128's rate; 16 tokens
 * 0.51-0.58x the one-token rate at batch 16-64. The merge as a programmatic dependent launch
 * (docs/results/h200-l10i-2026-11-27/merge-pdl-experiment.log, two rounds each way): 1.03-1.07x
 * at batch 1 (8 tokens, 32k keys: 2.87 TB/s, version 4's 3.08), 1.02x at batch 16 with 4k keys,
 * level from batch 16 and 32k keys, for versions 1, 2 and 4 alike.
 * The merge inside the kernel where the rows are few (docs/results/h200-l10p-2026-11-27 and
 * h200-l10q-2026-11-27): one token at batch 1 and 32k keys 0.0418-0.0425 ms a step against the
 * merge kernel's 0.0432-0.0434 (version 4: 0.0428-0.0433 against 0.0445-0.0448); two levels as
 * fast as one or faster at every step tried (version 1 at 128k keys: 0.1297-0.1299 ms against
 * 0.1309-0.1313).
 *
 * Where it falls short: 16 tokens (above); 4k keys (8 tokens 0.77x the one-token rate at batch 1);
 * lengths that differ (one sequence of 32k among 7 of 1k: 0.30x lesson 07's plan, which sees the
 * lengths). Development runs of the same day on H100s, kept in docs/results/h100-l10-2026-11-26,
 * measured three alternatives: lesson 07's deep ring when the blocks fit one wave
 * (dev-ring-and-barriers.log: at batch 16, 8k keys, 16 tokens 45.5% of HBM against the shallow
 * ring's 66.9%, at batch 1 with 4 and 8 tokens 4-5 points ahead of it), one online softmax over
 * all the tiles of a step (dev-one-softmax-per-step.log: 36.5% of HBM at batch 1 with 16 tokens,
 * where the tiles in turn ran at 36.6% on another machine), and a barrier per key stream in place
 * of the block's (__syncwarp, or a named barrier for a pair of warps: about as fast, but racecheck
 * reported hazards on the state the warps share at the end, which the block-wide barrier does not
 * have). Nsight Compute before the last two changes (ncu-dev.txt, batch 1, 16 tokens): 0.38
 * instructions issued per cycle and scheduler, the top stall a fixed-latency dependency, and the
 * SMs active 59% of the kernel's time (the merge on one SM).
 *
 * Run: `./run 1`, `./run 1 --seq 16 --causal`, `./run --kv-heads 4 --seq 16`.
 */
// clang-format on
/* Built three times by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64, 128 and 256. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <limits.h>
#include <math.h>

#include "attn_cuda.cuh"
#include "flash_decoding.h" /* lesson 06: the split plan and the combine (USES 6) */
#include "merge_device.cuh" /* the chunks' merge, inside the kernel */
#include "pdl_launch.cuh"   /* the merge kernel's launch behind the main kernel */
#include "ptx.cuh"          /* lesson 04: one function per PTX instruction (USES 4) */
#include "serving_decode.h"
#include "split_device.cuh" /* the split of the keys into the grid's items, on the device */

#if L06_THREADS != L10_MERGE_THREADS
#error "l10_merge_chunks() spreads a unit's rows over blocks of L10_MERGE_THREADS threads"
#endif

#define FD_WARPS (L06_THREADS / 32)     /**< 4 warps */
#define FD_TK 16                        /**< keys per warp tile: one k-step of P V */
#define FD_KS (HEAD_DIM / 16)           /**< k-steps of S = Q K^T */
#define FD_DT (HEAD_DIM / 8)            /**< n8 tiles of O */
#define FD_CHUNKS (HEAD_DIM / 8)        /**< 16-byte chunks per key row */
#define FD_C4 (HEAD_DIM / 4)            /**< float4 columns of an fp32 state row */
#define FD_MERGE 16                     /**< chunks whose loads the merge has in flight at once */
#define FD_ROWB (HEAD_DIM * 2)          /**< bytes per key row */
#define FD_TILE_BYTES (FD_TK * FD_ROWB) /**< one K or V tile: 4 KiB at dim 128 */
#define FD_ROWS L10_UNIT_ROWS           /**< group rows of a unit: 4 row tiles */
#define FD_Q_BYTES (FD_ROWS * FD_ROWB)  /**< the unit's Q tile: 16 KiB at dim 128 */
/** The ring: tiles in flight per warp (lesson 07's shallow ring), two blocks per SM at dim 64 and
 * 128; at dim 256 three stages take 224 KiB, and an SM holds one block. */
#define FD_STAGES (HEAD_DIM == 64 ? 6 : 3)
/** 1 where the warp holds its Q fragments in registers (dim 64 and 128), 0 where it reads them
 * from shared memory at every k-step (dim 256: fd_q). */
#define FD_Q_IN_REGS (HEAD_DIM <= 128)
/** Bytes of one warp's slice: FD_STAGES buffers of K and V; the warp's fp32 16 x dim state reuses
 * it at the end (16 x dim x 4 = 2 tiles). */
#define FD_WARP_BYTES (FD_STAGES * 2 * FD_TILE_BYTES)
/** Dynamic shared memory: the Q tile, then the warps' slices. */
#define FD_SMEM_BYTES (FD_Q_BYTES + FD_WARPS * FD_WARP_BYTES)
#define FD_LOG2E 1.4426950408889634f /**< e^x = 2^(x log2 e) */
#define FD_LN2 0.6931471805599453f   /**< log x = log2(x) ln 2 */

/** Token pasting, after expanding `b`. */
#define FD_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FD_CAT(a, b) FD_CAT_(a, b)
/** This build's kernel: l10_draft_kernel_d64, _d128 or _d256. */
#define FD_KERNEL FD_CAT(l10_draft_kernel_d, HEAD_DIM)
/** This build's merge of the chunks: l10_draft_combine_d64, _d128 or _d256. */
#define FD_COMBINE FD_CAT(l10_draft_combine_d, HEAD_DIM)
/** This build's launcher: l10_draft_d64(), _d128() or _d256(), in serving_decode.h. */
#define FD_LAUNCH FD_CAT(l10_draft_d, HEAD_DIM)
/** This build's launcher of the chunks' merge: l10_draft_merge_d64(), _d128() or _d256(). */
#define FD_MERGE_LAUNCH FD_CAT(l10_draft_merge_d, HEAD_DIM)
/** This build's occupancy query: l10_draft_per_sm_d64(), _d128() or _d256(). */
#define FD_PER_SM FD_CAT(l10_draft_per_sm_d, HEAD_DIM)

/** Byte offset of 16-byte chunk `chunk` of tile row `row`: row-major, chunks XOR-swizzled so that
 * the 8 rows one ldmatrix reads fall in 8 different bank groups. */
static __device__ __forceinline__ uint32_t fd_off(int row, int chunk) {
  return (uint32_t)((row * FD_CHUNKS + (chunk ^ (row & 7))) * 16);
}

/* Chunks start at multiples of L06_CHUNK_ALIGN keys, so every 16-key tile starts at a multiple of
 * 16: with block_size >= 16 (a power of two) a tile lies in one page. */
#if L06_CHUNK_ALIGN % FD_TK != 0
#error "tiles must start at multiples of FD_TK keys"
#endif

/** The page geometry of one launch: block_size = 2^shift; a tile needs 2^le table entries
 * (le = 4 - shift below block size 16, else 0), so one load per lane covers 2^lt = 32 / 2^le of
 * the warp's tiles (a batch). */
typedef struct fd_geom {
  int shift; /**< log2 block_size */
  int le;    /**< log2 of the table entries one tile needs */
  int lt;    /**< log2 of the tiles one lane-wide load covers */
} fd_geom;

/** Lane's table entry in batch @p batch of the warp's tiles: entry (lane % 2^le) of tile
 * batch * 2^lt + lane / 2^le, the tile being the warp's (warp + FD_WARPS * t)-th of the chunk
 * that starts at key @p j0; -1 past @p end. One coalesced load serves 2^lt tiles. */
static __device__ __forceinline__ int fd_table_batch(const int *__restrict__ table, fd_geom gm,
                                                     int batch, int warp, int j0, int end,
                                                     int lane) {
  const int t = (batch << gm.lt) + (lane >> gm.le), part = lane & ((1 << gm.le) - 1);
  const long long key =
      j0 + ((long long)warp + (long long)FD_WARPS * t) * FD_TK + ((long long)part << gm.shift);
  return key < end ? __ldg(table + (int)(key >> gm.shift)) : -1;
}

/** The warp's look-ahead of table entries: batch `cur` in `now`, batch cur + 1 in `next` (its
 * load in flight while `now` is used). */
typedef struct fd_pages {
  int now;  /**< this lane's entry of batch `cur` */
  int next; /**< this lane's entry of batch cur + 1 (its load in flight) */
  int cur;  /**< the batch in `now` */
} fd_pages;

/** Before the copies of tile @p t: when it starts a new batch, the next batch becomes current
 * and the one after it is requested. Every lane calls it with the same @p t. */
static __device__ __forceinline__ void fd_pages_at(fd_pages *pg, int t, const int *table,
                                                   fd_geom gm, int warp, int j0, int end,
                                                   int lane) {
  if ((t >> gm.lt) != pg->cur) {
    pg->now = pg->next;
    pg->cur += 1;
    pg->next = fd_table_batch(table, gm, pg->cur + 1, warp, j0, end, lane);
  }
}

/** The warp's copies of its tile @p t (keys key0 ..) of K and V, its pages in @p now (current
 * batch): lane handles chunk idx % FD_CHUNKS of row idx / FD_CHUNKS for idx = lane, lane + 32,
 * ...; rows at or past @p end are zero-filled (the address given is row 0's, which exists). With
 * block_size >= 16 the tile lies in one page: one shuffle gives its number, and the addresses are
 * one base plus constants, as in the dense kernel; below, each row's page comes from its own
 * lane. Every lane calls it. */
static __device__ __forceinline__ void fd_load_tile(uint32_t sk, uint32_t sv, const attn_bf16 *kg,
                                                    const attn_bf16 *vg, size_t kv_stride, int now,
                                                    int t, fd_geom gm, int key0, int end,
                                                    int lane) {
  const int mask = (1 << gm.shift) - 1, first = (t & ((1 << gm.lt) - 1)) << gm.le;
  const int page0 = __shfl_sync(0xffffffffu, now, first); /* row 0's page: it exists */
  if (gm.le == 0) { /* one page: base + (row * kv_stride + chunk * 8) */
    const size_t base = (((size_t)page0 << gm.shift) | (size_t)(key0 & mask)) * kv_stride;
#pragma unroll
    for (int it = 0; it < FD_TK * FD_CHUNKS / 32; ++it) {
      const int idx = it * 32 + lane, row = idx / FD_CHUNKS, chunk = idx % FD_CHUNKS;
      const int ok = key0 + row < end;
      const size_t src = base + (ok ? row * kv_stride : 0) + chunk * 8;
      cp_async_16(sk + fd_off(row, chunk), kg + src, ok ? 16 : 0);
      cp_async_16(sv + fd_off(row, chunk), vg + src, ok ? 16 : 0);
    }
    return;
  }
#pragma unroll
  for (int it = 0; it < FD_TK * FD_CHUNKS / 32; ++it) {
    const int idx = it * 32 + lane, row = idx / FD_CHUNKS, chunk = idx % FD_CHUNKS;
    const int page = __shfl_sync(0xffffffffu, now, first + (row >> gm.shift));
    const int ok = key0 + row < end;
    const size_t slot = ok ? ((size_t)page << gm.shift) | (size_t)((key0 + row) & mask)
                           : ((size_t)page0 << gm.shift) | (size_t)(key0 & mask);
    const size_t src = slot * kv_stride + chunk * 8;
    cp_async_16(sk + fd_off(row, chunk), kg + src, ok ? 16 : 0);
    cp_async_16(sv + fd_off(row, chunk), vg + src, ok ? 16 : 0);
  }
}

/** Float index of column @p c of row @p rr in a warp's fp32 16 x dim state: row-major, the groups
 * of 8 columns XOR-swizzled by the row, so that the float2 stores of a half-warp (rows g, columns
 * dt * 8 + 2 t4) and the float4 loads of 8 threads along a row each fall in distinct banks. */
static __device__ __forceinline__ int fd_sidx(int rr, int c) {
  return rr * HEAD_DIM + (c ^ ((rr & 3) << 3));
}

/** Where a warp's Q fragments (the A operand of S = Q K^T, one per k-step) come from. At dim 64
 * and 128 they are loaded once and held in registers (16 and 32 of them). At dim 256 they would
 * be 64 registers beside O's 128, and ptxas spills: there each k-step reads its fragment from the
 * row tile in shared memory, one more ldmatrix per k-step. */
typedef struct fd_q {
#if FD_Q_IN_REGS
  uint32_t f[FD_KS][4]; /**< the fragments, k-step by k-step */
#else
  uint32_t tile;   /**< shared-memory address of the warp's 16-row tile of Q */
  uint32_t off[4]; /**< this lane's ldmatrix row offsets in it (fd_ldmatrix_offsets()) */
#endif
} fd_q;

/** The Q fragment of k-step @p ks into @p a: a copy of registers (which the compiler removes), or
 * one ldmatrix. */
static __device__ __forceinline__ void fd_q_frag(uint32_t a[4], const fd_q *q, int ks) {
#if FD_Q_IN_REGS
  a[0] = q->f[ks][0], a[1] = q->f[ks][1], a[2] = q->f[ks][2], a[3] = q->f[ks][3];
#else
  ldmatrix_x4(a, q->tile + q->off[ks & 3] + (uint32_t)(ks >> 2) * 128u);
#endif
}

/** The tile's scores, S = Q K^T for 16 rows x 16 keys (one of the loop's three steps): two n8
 * tiles, FD_KS k-steps; @p sc holds zeros on entry. */
static __device__ __forceinline__ void fd_qk_scores(float sc[2][4], const fd_q *q, uint32_t sk,
                                                    const uint32_t k_off[4]) {
#if !FD_Q_IN_REGS
#pragma unroll 1 /* 64 columns at a time: ptxas would otherwise load every k-step's operands */
#endif
  for (int k0 = 0; k0 < FD_KS; k0 += 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int ks = k0 + i;
      uint32_t kb[4], qa[4];
      fd_q_frag(qa, q, ks);
      ldmatrix_x4(kb, sk + k_off[i] + (ks >> 2) * 128);
      mma_bf16_16816(sc[0], qa, kb[0], kb[1]);
      mma_bf16_16816(sc[1], qa, kb[2], kb[3]);
    }
  }
}

/** O += P V (the third step): the two n8 tiles of P are one A fragment; V through
 * ldmatrix.trans. */
static __device__ __forceinline__ void fd_pv_accumulate(float acc[FD_DT][4], const float sc[2][4],
                                                        uint32_t sv, const uint32_t v_off[4]) {
  uint32_t pa[4];
  pa[0] = pack_bf16x2(sc[0][0], sc[0][1]);
  pa[1] = pack_bf16x2(sc[0][2], sc[0][3]);
  pa[2] = pack_bf16x2(sc[1][0], sc[1][1]);
  pa[3] = pack_bf16x2(sc[1][2], sc[1][3]);
#pragma unroll
  for (int dp = 0; dp < FD_DT / 2; ++dp) {
    uint32_t vb[4];
    ldmatrix_x4_trans(vb, sv + v_off[dp & 3] + (dp >> 2) * 128);
    mma_bf16_16816(acc[2 * dp], pa, vb[0], vb[1]);
    mma_bf16_16816(acc[2 * dp + 1], pa, vb[2], vb[3]);
  }
}

/** The warp's state into shared memory (after its last tile): m and l of its 16 rows into @p pm
 * and @p pl (l summed over the quad), O unnormalised into its slice @p wstate, swizzled. */
static __device__ __forceinline__ void fd_store_warp_state(float *pm, float *pl, float *wstate,
                                                           const float row_m[2],
                                                           const float row_l[2],
                                                           const float acc[FD_DT][4], int g,
                                                           int t4) {
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float l = row_l[hf];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int rr = g + 8 * hf;
    if (t4 == 0) pm[rr] = row_m[hf], pl[rr] = l;
#pragma unroll
    for (int dt = 0; dt < FD_DT; ++dt)
      *(float2 *)&wstate[fd_sidx(rr, dt * 8 + t4 * 2)] =
          make_float2(acc[dt][2 * hf], acc[dt][2 * hf + 1]);
  }
}

/** ldmatrix row addresses (lesson 04's) of this lane: Q as the A operand, K as B of S, V (.trans)
 * as B of PV; entry i serves 16-byte chunks 2i and 2i + 1 of a row. */
static __device__ __forceinline__ void fd_ldmatrix_offsets(uint32_t q_off[4], uint32_t k_off[4],
                                                           uint32_t v_off[4], int lane) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    q_off[i] = fd_off(lane & 15, 2 * i + (lane >> 4));
    k_off[i] = fd_off((lane & 7) + ((lane >> 4) << 3), 2 * i + ((lane >> 3) & 1));
    v_off[i] = fd_off((lane & 7) + (((lane >> 3) & 1) << 3), 2 * i + (lane >> 4));
  }
}

/** Wait until at most FD_STAGES - 2 of this thread's cp.async groups are in flight: the tile about
 * to be read has landed. */
static __device__ __forceinline__ void fd_wait_stages(void) {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(FD_STAGES - 2));
}

/** The online softmax of rows g and g + 8 over a tile's 16 keys from @p key0 (the second step). A
 * row sees key col when col < lim[hf], or when col < @p j1 is draft key d = col - base and bit d
 * of bits[hf] is set (the mask of l10_sees(); fd_row_mask() sets both); other keys are -inf. When
 * the tile ends at or before @p lim_warp (the smallest lim[] of the warp, the same on every lane)
 * every row sees all of it and the mask is not evaluated. The scores are scaled into base 2, m and
 * l moved on; O is rescaled by alpha = 2^(m_old - m_new) only when some row of the warp has a new
 * maximum (alpha is 1 for every other row, so the skipped products change nothing). On return
 * @p sc holds P. */
static __device__ __forceinline__ void fd_softmax_update(float sc[2][4], float row_m[2],
                                                         float row_l[2], float acc[FD_DT][4],
                                                         const int lim[2], const uint32_t bits[2],
                                                         int lim_warp, int base, int j1, int key0,
                                                         int t4, float scale_log2) {
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) sc[nt][e] *= scale_log2;
  /* The mask behind a branch that is the same on every lane of the warp: a tile that every row sees
   * whole (most of them) runs no mask code at all. Folded into the select, as this loop first had
   * it, the test cost every tile its instructions (16 draft tokens: 0.61x the one-token rate
   * against 0.79-0.80x with the branch, dev-v1-branch.log). */
  if (key0 + FD_TK > lim_warp) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int hf = e >> 1, col = key0 + nt * 8 + t4 * 2 + (e & 1), d = col - base;
        const int seen =
            col < lim[hf] || (col < j1 && d >= 0 && d < 32 && ((bits[hf] >> (d & 31)) & 1u) != 0u);
        if (!seen) sc[nt][e] = -INFINITY;
      }
  }
  float m_use[2], alpha[2];
  int grew = 0;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float mx =
        fmaxf(fmaxf(sc[0][2 * hf], sc[0][2 * hf + 1]), fmaxf(sc[1][2 * hf], sc[1][2 * hf + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(row_m[hf], mx);
    m_use[hf] = m_new == -INFINITY ? 0.f : m_new; /* nothing visible yet */
    alpha[hf] = fast_exp2(row_m[hf] - m_use[hf]);
    grew |= m_new > row_m[hf];
    row_m[hf] = m_new;
  }
  if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
    for (int dt = 0; dt < FD_DT; ++dt) {
      acc[dt][0] *= alpha[0], acc[dt][1] *= alpha[0];
      acc[dt][2] *= alpha[1], acc[dt][3] *= alpha[1];
    }
  }
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
        const float p = fast_exp2(sc[nt][e] - m_use[hf]); /* 0 for a masked key */
        sc[nt][e] = p;
        sum += p;
      }
    row_l[hf] = row_l[hf] * alpha[hf] + sum;
  }
}

/** One step of a warp: the @p nsub tiles of 16 keys from @p key0 (K of tile j at @p sk0 + j *
 * @p wbytes, in the slice of the stream's warp j; V a tile after it), in turn, each with lesson
 * 07's three steps: S = Q_p K^T, the online softmax, O += P V. @p sub is a literal (1, 2 or 4: the
 * stream's warps), so that the loop unrolls to the tiles a step can have. */
static __device__ __forceinline__ void fd_step(
    int sub, int nsub, uint32_t sk0, int wbytes, const fd_q *q, const uint32_t k_off[4],
    const uint32_t v_off[4], float row_m[2], float row_l[2], float acc[FD_DT][4], const int lim[2],
    const uint32_t bits[2], int lim_warp, int base, int j1, int key0, int t4, float scale_log2) {
#pragma unroll
  for (int j = 0; j < sub; ++j) {
    if (j >= nsub) break;
    const uint32_t sk = sk0 + j * wbytes;
    float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    fd_qk_scores(sc, q, sk, k_off);
    fd_softmax_update(sc, row_m, row_l, acc, lim, bits, lim_warp, base, j1, key0 + j * FD_TK, t4,
                      scale_log2);
    fd_pv_accumulate(acc, sc, sk + FD_TILE_BYTES, v_off);
  }
}

/** Where a row of the unit stands: the end of the keys it sees from the start (@p lim, within the
 * chunk's end @p j1) and the word of draft keys it sees past them (@p bits), for group row @p gr of
 * a sequence with @p n_b keys and @p q_b draft tokens. The
 * l10_sees() rule in two numbers: none: lim = n_b; causal: lim = base + i + 1; tree: lim = base
 * and the token's word, base = n_b - q_b. A row past G x q_b (its Q is zero, its output is never
 * written) is given the chunk's keys, so that it does not keep its warp on the masked path. */
static __device__ __forceinline__ void fd_row_mask(int *lim, uint32_t *bits, int gr, int G, int q_b,
                                                   int n_b, int j1, int mask,
                                                   const uint32_t *__restrict__ tree, int q0) {
  const int base = n_b - q_b, i = gr / G;
  *lim = j1, *bits = 0u; /* a row past the sequence's: zero Q, never written; no mask */
  if (gr >= G * q_b) return;
  if (mask == L10_MASK_CAUSAL)
    *lim = min(j1, base + i + 1);
  else if (mask == L10_MASK_TREE)
    *lim = min(j1, base), *bits = __ldg(tree + q0 + i) & ((1u << q_b) - 1u);
  else
    *lim = j1;
}

/** Columns 4 c4 .. 4 c4 + 3 of row @p rr of row tile @p p merged over the @p ns key streams that
 * read it (warp s * rw + p of stream s; m and l in @p pm and @p pl, O in each warp's slice, warp
 * w's at @p slices + w * @p slice_bytes): returns O / l, and the natural-log log-sum-exp in
 * @p lse_r (a row that saw no key: O = 0, -inf). */
static __device__ __forceinline__ float4 fd_merge_warps(const float (*pm)[16],
                                                        const float (*pl)[16],
                                                        const unsigned char *slices,
                                                        int slice_bytes, int p, int rw, int ns,
                                                        int rr, int c4, float *lse_r) {
  float mm = -INFINITY;
  for (int s = 0; s < ns; ++s) mm = fmaxf(mm, pm[s * rw + p][rr]);
  const float mu = mm == -INFINITY ? 0.f : mm;
  float4 y4 = make_float4(0.f, 0.f, 0.f, 0.f);
  float ll = 0.f;
  for (int s = 0; s < ns; ++s) {
    const int w = s * rw + p;
    const float wt = fast_exp2(pm[w][rr] - mu);
    const float *ws = (const float *)(slices + w * slice_bytes);
    const float4 y = *(const float4 *)&ws[fd_sidx(rr, c4 * 4)];
    ll += wt * pl[w][rr];
    y4.x += wt * y.x, y4.y += wt * y.y, y4.z += wt * y.z, y4.w += wt * y.w;
  }
  const float inv = ll > 0.f ? 1.f / ll : 0.f; /* a row that saw no key: O = 0 */
  *lse_r = ll > 0.f ? (mm + log2f(ll)) * FD_LN2 : -INFINITY;
  y4.x *= inv, y4.y *= inv, y4.z *= inv, y4.w *= inv;
  return y4;
}

/** The unit's Q tile into shared memory at @p sq: row r is group row u * FD_ROWS + r (draft token
 * gr / G of query head kvh * G + gr % G, packed row q0 + gr / G), zeros past the @p rows the
 * sequence has; FD_ROWS rows x FD_CHUNKS 16-byte chunks, swizzled. */
static __device__ __forceinline__ void fd_load_q_tile(uint32_t sq, const attn_bf16 *__restrict__ q,
                                                      int q0, int u, int kvh, int G, int rows,
                                                      int heads) {
  for (int idx = threadIdx.x; idx < FD_ROWS * FD_CHUNKS; idx += L06_THREADS) {
    const int r = idx / FD_CHUNKS, c = idx % FD_CHUNKS, gr = u * FD_ROWS + r, ok = r < rows;
    const attn_bf16 *src =
        ok ? q + (((size_t)q0 + gr / G) * heads + kvh * G + gr % G) * HEAD_DIM + c * 8 : q;
    cp_async_16(sq + fd_off(r, c), src, ok ? 16 : 0);
  }
}

/* The loop on a whiteboard (lesson 07's version 5, a unit of 64 rows shared by key streams):
 *
 *   block i = (item * kv_heads + kvh) * units + u: KV head kvh, group rows [64 u, 64 u + 64)
 *   (query heads of the group x draft tokens, token-major), and the step's item `item`:
 *     items > batch: chunk = sum_b n_b / (items - batch), up to x64, >= 256; item -> sequence b,
 *       its chunk s (a prefix sum of the counts ceil(n_b / chunk)); past the last: exit;
 *       s = 0, kvh = u = 0: plan[b] = (b's first item, its count), for the merge
 *     items = batch: b = item, one chunk (s = 0, chunk = max_seq_kv)
 *     q_b = q_lens[b], n_b = seq_lens[b] (clamped);  rows = min(64, G q_b - 64 u) <= 0: exit
 *     keys [s chunk, (s + 1) chunk) clipped to n_b
 *     rt = row tiles of the rows (1..4), rw = 1, 2, 4, 4 for rt = 1..4, ns = 4 / rw
 *     warp w: row tile p = w % rw of key stream w / rw; loads the 16-key tiles w, w + 4, ...
 *     Q tile (64 rows, zeros past `rows`) -> shared by cp.async, a group of its own
 *     warp w: table entries, then cp.async of its first FD_STAGES - 1 tiles, one commit each
 *     cp.async.wait_group FD_STAGES - 2; __syncthreads();  Q rows of tile p -> mma fragments
 *     for each step t (as many as warp 0 has tiles; stream s reads tiles s rw + 4 t + j, j < rw):
 *       cp.async.wait_group FD_STAGES - 2 (my tile of step t has landed)
 *       __syncthreads()                   (every warp's has; every warp is past step t - 1)
 *       cp.async my tile of step t + FD_STAGES - 1 into the slot of step t - 1; commit
 *       for j < rw, in turn: S = Q_p K_j^T, online softmax (mask: lim, bits; no test for a tile
 *       below every row's lim; O rescaled only when a maximum grew), O += P V_j
 *     cp.async.wait_all; __syncthreads(); each warp's (m, l, O) -> shared; __syncthreads()
 *     a float4 of a row per thread: merge the ns streams of its row tile -> O / l, lse
 *     one chunk: -> O, lse.  More: -> part_O, part_lse, merged by FD_COMBINE, a second kernel:
 *     a thread per (unit, row, float4) merges the row's chunks by lse -> O, lse; or, with one
 *     float4 a thread, or a few with few chunks (l10_merge_inside()), here: __threadfence(); the
 *     group's counter; the last block of a group of ~sqrt(n) chunks merges them into the group's
 *     slot, the last group merger merges the groups -> O, lse (one group up to 16 chunks)
 */
/** The kernel's body. */
static __device__ __forceinline__ void fd_body(
    const attn_bf16 *__restrict__ q,      // [total_q, heads, HEAD_DIM]
    const attn_bf16 *__restrict__ k,      // [num_blocks, block_size, kv_heads, HEAD_DIM]
    const attn_bf16 *__restrict__ v,      // [num_blocks, block_size, kv_heads, HEAD_DIM]
    const int *__restrict__ block_table,  // [batch, max_blocks]
    attn_bf16 *__restrict__ o,            // [total_q, heads, HEAD_DIM]
    float *__restrict__ lse,              // [total_q, heads]
    float *__restrict__ part_o,           // [items, kv_heads, units, 64, HEAD_DIM]
    float *__restrict__ part_lse,         // [items, kv_heads, units, 64]
    int2 *__restrict__ plan,              // [batch]: first item, count
    int *__restrict__ count,              // [2, items, kv_heads, units]: the merge's counters
    const int *__restrict__ q_start,      // [batch]
    const int *__restrict__ q_lens,       // [batch]
    const uint32_t *__restrict__ tree,    // [total_q] or NULL
    const int *__restrict__ seq_lens,     // [batch]
    int heads, int kv_heads, int max_q, int max_seq_kv, int max_blocks, int shift, int mask,
    float scale_log2, int units, int batch, int items) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ float part_m[FD_WARPS][16], part_l[FD_WARPS][16];
  const uint32_t sq = smem_u32(smem);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3; /* fragment row (and row + 8), column pair */
  const int wbytes = FD_WARP_BYTES;
  const uint32_t sw0 = sq + FD_Q_BYTES, sw = sw0 + warp * wbytes; /* the slices; this warp's */
  float *wstate = (float *)(smem + FD_Q_BYTES + warp * wbytes);

  unsigned rest = blockIdx.x;
  const int u = (int)(rest % (unsigned)units);
  rest /= (unsigned)units;
  const int kvh = (int)(rest % (unsigned)kv_heads), item = (int)(rest / (unsigned)kv_heads);

  /* My item's sequence and chunk, cut here from the lengths (split_device.cuh; every warp alike,
   * the same in the whole block), and the sequence's shape, clamped to the launch's limits:
   * nothing past them is read. */
  const l10_item it =
      l10_split_dev(seq_lens, q_lens, q_start, batch, max_q, max_seq_kv, items, item);
  if (it.b < 0) return; /* past the step's last item */
  const int b = it.b, s = it.s, chunk = it.chunk, n_chunks = it.n_chunks;
  l10_split_plan(plan, &it, items, batch, kvh == 0 && u == 0); /* the merge kernel's */
  const int G = heads / kv_heads;
  const int q_b = it.q_b, n_b = it.n_b;
  const int q0 = it.q0, rows = min(FD_ROWS, G * q_b - u * FD_ROWS);
  if (rows <= 0) return; /* the same in the whole block */
  const int j0 = s * chunk, j1 = min(n_b, j0 + chunk), base = n_b - q_b;
  const int rt = attn_cdiv(rows, 16), rw = rt == 1 ? 1 : rt == 2 ? 2 : 4, ns = FD_WARPS / rw;
  const int stream = warp / rw, p = warp % rw; /* my key stream, my row tile */

  const size_t kv_stride = (size_t)kv_heads * HEAD_DIM;
  const attn_bf16 *kg = k + (size_t)kvh * HEAD_DIM; /* slot 0 of the pool, this KV head */
  const attn_bf16 *vg = v + (size_t)kvh * HEAD_DIM;
  const int *table = block_table + (size_t)b * max_blocks; /* this sequence's pages */
  fd_geom gm;
  gm.shift = shift;
  gm.le = shift >= 4 ? 0 : 4 - shift;
  gm.lt = 5 - gm.le;

  /* What rows g and g + 8 of my row tile see. */
  int lim[2];
  uint32_t bits[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf)
    fd_row_mask(&lim[hf], &bits[hf], u * FD_ROWS + p * 16 + g + 8 * hf, G, q_b, n_b, j1, mask, tree,
                q0);
  /* The keys every row of my tile sees from the start: tiles below it need no mask. */
  const int lim_warp = __reduce_min_sync(0xffffffffu, min(lim[0], lim[1]));

  fd_load_q_tile(sq, q, q0, u, kvh, G, rows, heads);
  cp_async_commit();

  /* My tiles: t = warp, warp + FD_WARPS, ... of the chunk's n_tiles (lesson 07's); the block's
   * steps: as many as warp 0 has tiles (a stream with fewer has nothing to read in its last). */
  const int n_tiles = attn_cdiv(j1 - j0, FD_TK);
  const int mine = n_tiles > warp ? attn_cdiv(n_tiles - warp, FD_WARPS) : 0;
  const int first = stream * rw;
  const int steps = attn_cdiv(n_tiles, FD_WARPS);
  fd_pages pg;
  pg.cur = 0;
  pg.now = fd_table_batch(table, gm, 0, warp, j0, j1, lane);
  pg.next = fd_table_batch(table, gm, 1, warp, j0, j1, lane);
  for (int st = 0; st < FD_STAGES - 1; ++st) {
    if (st < mine) {
      fd_pages_at(&pg, st, table, gm, warp, j0, j1, lane);
      fd_load_tile(sw + st * 2 * FD_TILE_BYTES, sw + (st * 2 + 1) * FD_TILE_BYTES, kg, vg,
                   kv_stride, pg.now, st, gm, j0 + (warp + st * FD_WARPS) * FD_TK, j1, lane);
    }
    cp_async_commit();
  }
  fd_wait_stages();                      /* Q's group and my first tile have landed */
  uint32_t q_off[4], k_off[4], v_off[4]; /* ldmatrix row addresses */
  fd_ldmatrix_offsets(q_off, k_off, v_off, lane);
  __syncthreads(); /* the Q tile is in place */
  fd_q qs;
  const uint32_t sqp = sq + p * 16 * FD_ROWB; /* my row tile's 16 rows */
#if FD_Q_IN_REGS
#pragma unroll
  for (int ks = 0; ks < FD_KS; ++ks) ldmatrix_x4(qs.f[ks], sqp + q_off[ks & 3] + (ks >> 2) * 128);
#else
  qs.tile = sqp;
#pragma unroll
  for (int i = 0; i < 4; ++i) qs.off[i] = q_off[i];
#endif

  float acc[FD_DT][4], row_m[2] = {-INFINITY, -INFINITY}, row_l[2] = {0.f, 0.f};
#pragma unroll
  for (int dt = 0; dt < FD_DT; ++dt) acc[dt][0] = acc[dt][1] = acc[dt][2] = acc[dt][3] = 0.f;

  const int live =
      p < rt; /* a warp whose row tile is empty loads and waits, but computes nothing */
  int rbuf = 0, wbuf = FD_STAGES - 1; /* the ring slots of steps it and it + FD_STAGES - 1 */
  for (int it = 0; it < steps; ++it) {
    fd_wait_stages(); /* my copies of step `it` have landed */
    __syncthreads();  /* and every warp's; every warp is past step it - 1 */
    {
      const int ahead = it + FD_STAGES - 1, buf = wbuf;
      if (ahead < mine) {
        fd_pages_at(&pg, ahead, table, gm, warp, j0, j1, lane);
        fd_load_tile(sw + buf * 2 * FD_TILE_BYTES, sw + (buf * 2 + 1) * FD_TILE_BYTES, kg, vg,
                     kv_stride, pg.now, ahead, gm, j0 + (warp + ahead * FD_WARPS) * FD_TK, j1,
                     lane);
      }
      cp_async_commit(); /* possibly empty: keeps one group per step */
    }
    /* The step's tiles stream * rw + 4 it + j, j < nsub, loaded by warps first + j: 16 nsub
     * consecutive keys from key0, read in turn. */
    const int nsub = min(rw, n_tiles - (first + it * FD_WARPS));
    if (live) {
      const int key0 = j0 + (first + it * FD_WARPS) * FD_TK;
      const uint32_t sk0 = sw0 + first * wbytes + rbuf * 2 * FD_TILE_BYTES;
      if (rw == 1)
        fd_step(1, nsub, sk0, wbytes, &qs, k_off, v_off, row_m, row_l, acc, lim, bits, lim_warp,
                base, j1, key0, t4, scale_log2);
      else if (rw == 2)
        fd_step(2, nsub, sk0, wbytes, &qs, k_off, v_off, row_m, row_l, acc, lim, bits, lim_warp,
                base, j1, key0, t4, scale_log2);
      else
        fd_step(4, nsub, sk0, wbytes, &qs, k_off, v_off, row_m, row_l, acc, lim, bits, lim_warp,
                base, j1, key0, t4, scale_log2);
    }
    rbuf = rbuf + 1 == FD_STAGES ? 0 : rbuf + 1;
    wbuf = wbuf + 1 == FD_STAGES ? 0 : wbuf + 1;
  }
  asm volatile("cp.async.wait_all;\n" ::); /* no copy may land on the state written below */
  __syncthreads(); /* and no warp still reads a slice another warp's state will overwrite */

  fd_store_warp_state(part_m[warp], part_l[warp], wstate, row_m, row_l, acc, g, t4);
  __syncthreads();

  /* The streams' states merged: a float4 of a live row per thread and step. */
  for (int e = threadIdx.x; e < rows * FD_C4; e += L06_THREADS) {
    const int r = e / FD_C4, c4 = e % FD_C4, gr = u * FD_ROWS + r;
    float lse_r;
    const float4 y4 = fd_merge_warps(part_m, part_l, smem + FD_Q_BYTES, wbytes, r >> 4, rw, ns,
                                     r & 15, c4, &lse_r);
    const size_t orow = ((size_t)q0 + gr / G) * heads + kvh * G + gr % G;
    if (n_chunks == 1) {
      *(uint2 *)(o + orow * HEAD_DIM + c4 * 4) =
          make_uint2(pack_bf16x2(y4.x, y4.y), pack_bf16x2(y4.z, y4.w));
      if (c4 == 0) lse[orow] = lse_r;
    } else {
      const size_t slot = (((size_t)item * kv_heads + kvh) * units + u) * FD_ROWS + r;
      *(float4 *)(part_o + slot * HEAD_DIM + c4 * 4) = y4;
      if (c4 == 0) part_lse[slot] = lse_r;
    }
  }
  /* More than one chunk and the merge is the kernel's own (count set: few rows, or few chunks, see
   * l10_merge_inside()): by the last blocks to finish; the Q tile's memory is free for its scratch.
   * Else FD_COMBINE, a kernel of its own, merges the states. */
  if (n_chunks > 1 && count)
    l10_merge_chunks(part_o, part_lse, count, item, s, n_chunks, q0, kvh, u, kv_heads, units, rows,
                     heads, (size_t)items * kv_heads * units, o, lse, smem);
}

/** The kernels' arguments, as fd_body() takes them. */
#define FD_PARAMS                                                                     \
  const attn_bf16 *__restrict__ q, const attn_bf16 *__restrict__ k,                   \
      const attn_bf16 *__restrict__ v, const int *__restrict__ block_table,           \
      attn_bf16 *__restrict__ o, float *__restrict__ lse, float *__restrict__ part_o, \
      float *__restrict__ part_lse, int2 *__restrict__ plan, int *__restrict__ count, \
      const int *__restrict__ q_start, const int *__restrict__ q_lens,                \
      const uint32_t *__restrict__ tree, const int *__restrict__ seq_lens, int heads, \
      int kv_heads, int max_q, int max_seq_kv, int max_blocks, int shift, int mask,   \
      float scale_log2, int units, int batch, int items
/** The same names, passed on. */
#define FD_ARGS                                                                                 \
  q, k, v, block_table, o, lse, part_o, part_lse, plan, count, q_start, q_lens, tree, seq_lens, \
      heads, kv_heads, max_q, max_seq_kv, max_blocks, shift, mask, scale_log2, units, batch, items

/** The kernel: two blocks per SM. */
static __global__ void __launch_bounds__(L06_THREADS, 2) FD_KERNEL(FD_PARAMS) {
  fd_body(FD_ARGS);
}

/** Blocks of the kernel one SM holds, queried once; 0 without a device. */
extern "C" int FD_PER_SM(void) {
  static int per_sm = 0;
  if (per_sm > 0) return per_sm;
  int n = 0;
  if (cudaFuncSetAttribute(FD_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, FD_SMEM_BYTES) !=
          cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, FD_KERNEL, L06_THREADS, FD_SMEM_BYTES) !=
          cudaSuccess) {
    (void)cudaGetLastError(); /* no device: leave no error behind */
    return 0;
  }
  per_sm = n;
  return n;
}

/** The chunks' merge, a kernel of its own over the whole GPU: thread e of the blocks of unit
 * (b, kvh, u) takes float4 column e % FD_C4 of row e / FD_C4 and merges that row's partial states
 * over the sequence's chunks, FD_MERGE at a time, all their loads in flight at once
 * (l10_merge_states() in merge_device.cuh): lesson 02's online softmax with chunks for keys. The
 * running (max, sum, O) is rescaled when a batch raises the max; an empty chunk (lse -inf) weighs
 * 0, and a row whose every chunk is empty ends with sum 0: O = 0, lse = -inf. The kernel left
 * sequence b's first item and count in plan[b]; chunk c's slot of row r: (((first + c) * kv_heads +
 * kvh) * units + u) * 64 + r. A sequence of one chunk was written by the main kernel and is
 * skipped. */
static __global__ void __launch_bounds__(L06_THREADS)
    FD_COMBINE(const float *__restrict__ part_o, const float *__restrict__ part_lse,
               const int2 *__restrict__ plan, attn_bf16 *__restrict__ o, float *__restrict__ lse,
               const int *__restrict__ q_start, const int *__restrict__ q_lens, int heads,
               int kv_heads, int max_q, int units) {
#if __CUDA_ARCH__ >= 900
  /* Launched as a programmatic dependent of the main kernel (the launcher, sm_90): the blocks may
   * be placed while the main kernel's last blocks still run; every thread waits here until that
   * grid has finished and its partial states are visible. */
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
  const int per_unit = FD_ROWS * FD_C4 / L06_THREADS; /* blocks of a unit */
  unsigned rest = blockIdx.x / (unsigned)per_unit;
  const int e = (int)(blockIdx.x % (unsigned)per_unit) * L06_THREADS + threadIdx.x;
  const int u = (int)(rest % (unsigned)units);
  rest /= (unsigned)units;
  const int kvh = (int)(rest % (unsigned)kv_heads), b = (int)(rest / (unsigned)kv_heads);
  const int G = heads / kv_heads;
  const int q_b = min(max(q_lens[b], 1), max_q);
  const int rows = min(FD_ROWS, G * q_b - u * FD_ROWS);
  const int2 pl = __ldcg(plan + b); /* the sequence's first item and count */
  const int n_chunks = pl.y;
  const int r = e / FD_C4, c4 = e % FD_C4, gr = u * FD_ROWS + r;
  if (n_chunks == 1 || r >= rows) return;
  const size_t orow = ((size_t)q_start[b] + gr / G) * heads + kvh * G + gr % G;
  const size_t cstride = (size_t)kv_heads * units * FD_ROWS; /* from chunk c to c + 1 */
  const size_t slot0 = (((size_t)pl.x * kv_heads + kvh) * units + u) * FD_ROWS + r;
  float4 y;
  const float l = l10_merge_states(part_o, part_lse, slot0, cstride, n_chunks, FD_MERGE, c4, &y);
  *(uint2 *)(o + orow * HEAD_DIM + c4 * 4) =
      make_uint2(pack_bf16x2(y.x, y.y), pack_bf16x2(y.z, y.w));
  if (c4 == 0) lse[orow] = l;
}

/** The chunks' merge, l10_draft_merge_d64(), _d128() or _d256(): FD_COMBINE over every (unit,
 * row, float4), one thread each (versions 2 and 4 use it too). See serving_decode.h. */
extern "C" cudaError_t FD_MERGE_LAUNCH(const l10_step *st, const float *part_o,
                                       const float *part_lse, const int *plan, void *o, float *lse,
                                       int units, cudaStream_t stream) {
  const size_t n_units = (size_t)st->batch * st->kv_heads * units;
  const long long cblocks = (long long)n_units * (FD_ROWS * FD_C4 / L06_THREADS);
  /* On sm_90 the merge is a programmatic dependent launch (pdl_launch.cuh): its blocks may be
   * placed before the main kernel (the launch before it on the stream) has finished, and the
   * kernel's griddepcontrol.wait holds them until it has. */
  static int pdl = -1; /* asked once, before any capture (the launchers' first call) */
  if (pdl < 0) {
    int dev = 0, major = 0;
    ATTN_TRY(cudaGetDevice(&dev));
    ATTN_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    pdl = major >= 9;
  }
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg =
      l10_launch_config(dim3((unsigned)cblocks), dim3(L06_THREADS), 0, stream, pdl, &attr);
  /* The C form of the launch: the kernel's address and an array of pointers to its arguments. */
  attn_bf16 *o16 = (attn_bf16 *)o;
  const int2 *plan2 = (const int2 *)plan;
  int heads = st->heads, kv_heads = st->kv_heads, max_q = st->max_q;
  void *args[] = {(void *)&part_o,   (void *)&part_lse,    (void *)&plan2,      (void *)&o16,
                  (void *)&lse,      (void *)&st->q_start, (void *)&st->q_lens, (void *)&heads,
                  (void *)&kv_heads, (void *)&max_q,       (void *)&units};
  ATTN_TRY(cudaLaunchKernelExC(&cfg, (const void *)FD_COMBINE, args));
  return cudaSuccess;
}

/** The launcher, l10_draft_d64(), _d128() or _d256(): items x KV heads x units blocks in one
 * launch, the items of l10_draft_items(); when a sequence can be cut (items > batch), its chunks
 * are merged inside it when a unit has few rows, or few chunks (l10_merge_inside()), else by
 * FD_COMBINE after it.
 * See serving_decode.h. */
extern "C" cudaError_t FD_LAUNCH(const l10_step *st, void *o, float *lse, void *workspace,
                                 size_t workspace_bytes, cudaStream_t stream) {
  char err[160];
  if (!st || !o || !lse || l10_step_check(st, err, sizeof err) != 0 || st->dim != HEAD_DIM ||
      st->k_scale) /* an FP8 cache is version 2's */
    return cudaErrorInvalidValue;
  int shift = 0; /* block_size = 2^shift */
  while ((1 << shift) < st->block_size) ++shift;
  const int units = l10_units_per_kv_head(st->heads, st->kv_heads, st->max_q);
  const int items = l10_draft_items(st);
  const long long blocks = (long long)items * st->kv_heads * units;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  const size_t need = l10_draft_workspace_bytes(st);
  if (need && (!workspace || workspace_bytes < need)) return cudaErrorInvalidValue;
  float *part_o, *part_lse;
  int *count;
  int2 *plan;
  l10_merge_workspace(need ? workspace : NULL, (size_t)blocks, &part_o, &part_lse, &count, &plan);
  /* 1: the chunks merged inside the kernel; 0: by FD_COMBINE after it */
  const int here = l10_merge_inside(st->heads, st->kv_heads, st->max_q, items, st->batch);
  const float scale_log2 = st->scale * FD_LOG2E;
  const attn_bf16 *q = (const attn_bf16 *)st->q, *k = (const attn_bf16 *)st->k_cache,
                  *v = (const attn_bf16 *)st->v_cache;
  static int smem_set = 0; /* once, so that a launch being captured into a CUDA graph makes no
                              other CUDA call than the launches and their error checks */
  if (!smem_set) {
    ATTN_TRY(cudaFuncSetAttribute(FD_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  FD_SMEM_BYTES));
    smem_set = 1;
  }
  FD_KERNEL<<<(unsigned)blocks, L06_THREADS, FD_SMEM_BYTES, stream>>>(
      q, k, v, st->block_table, (attn_bf16 *)o, lse, part_o, part_lse, plan, here ? count : NULL,
      st->q_start, st->q_lens, st->tree, st->seq_lens, st->heads, st->kv_heads, st->max_q,
      st->max_seq_kv, st->max_blocks, shift, (int)st->mask, scale_log2, units, st->batch, items);
  ATTN_TRY_LAUNCH();
  if (items > st->batch && !here)
    return FD_MERGE_LAUNCH(st, part_o, part_lse, (const int *)plan, o, lse, units, stream);
  return cudaSuccess;
}
