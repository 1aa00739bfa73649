// clang-format off
/** @file
 * @brief Version 4: the block's start overlapped. Version 3 with nothing waiting on the block
 * table that does not need it, and two blocks per SM when the batch needs several waves, so that
 * one block's dependent start runs under the other's stream.
 *
 * What changed: a block of version 3 starts with a chain: the table entries (a DRAM round trip),
 * then the copies of the first tiles, which need them, and only after those are issued the Q tile,
 * whose loads wait behind the same shuffle. Here:
 *  - the Q tile goes first, by cp.async in a group of its own, before the table is read: its
 *    latency runs under the table's; the loop's waits still count one group per tile;
 *  - two kernels of one body, one per ring depth: FD_STAGES tiles per warp (one block per SM,
 *    196 KiB at dim 128) when the whole batch's blocks fit in one wave of those, half of it (two
 *    blocks per SM, 100 KiB) when they do not. Two resident blocks keep the same bytes in flight
 *    per SM, and when one of them ends, the block that replaces it waits for its table and its
 *    first tiles while the other streams, instead of leaving the SM idle for two round trips once
 *    per wave:
 *
 *        one per SM:  [table][first tiles][stream .........][merge][table][first tiles][stream ..
 *        two per SM:  [table][first tiles][stream ..................][merge][table][first tiles]..
 *                       [table][first tiles][stream ...........][merge][table][first tiles][str..
 *
 * Why: in development runs (H200, batch 1 to 128, kv 1k to 128k, block size 16) version 3 lost
 * 3-10% to the dense kernel wherever the work was short or came in several waves, and per-block
 * timestamps put the loss at the start: each block's first tile landed about a microsecond later
 * than the dense kernel's, once per wave, while the stream itself ran at the same rate.
 *
 * Prediction: the first tile lands as early as in the dense kernel; at batch 32 and 128 with 1k
 * keys (2 and 8 waves of one-per-SM blocks) version 4 gains 5-7% over version 3, and at batch 1
 * to 8, one wave, about a microsecond.
 *
 * Measured: (H200, 2026-11-25, docs/results/h200-l07d-2026-11-25) 3429 GB/s at the default shape,
 * 94.5% of lesson 06's version 5 on the same values, as version 3; batch 128 with 1k keys
 * 4.14 TB/s, 98.4% (version 3: 94.3%); batch 32 with 8k keys 4.46 TB/s, 99.3% (96.4%); dim 64
 * 94.0% (91.9%). In the peer run, at 1k keys: 0.41 TB/s at batch 1 (version 3: 0.28), 3.69 at
 * batch 32 (3.28); against cuDNN's paged graph 1.07x to 1.19x at 1k keys up to batch 32, 0.99x
 * to 1.01x at batch 128. A first form that passed the depth as a kernel argument measured 1-2%
 * slower than version 3 at batch 128 with 8k and 32k keys; with the depth a literal per kernel it
 * was 2-3% faster there (2026-11-24, docs/results/h200-l07c-2026-11-24).
 *
 * Run: `./run 4`, `./run 4 --batch 128 --kv-seq 1024`, `make diff-7 A=3 B=4`.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <limits.h>
#include <math.h>

#include "attn_causal.h"
#include "attn_cuda.cuh"
#include "flash_decoding.h" /* lesson 06: the split plan and the combine (USES 6) */
#include "paged_attention.h"
#include "ptx.cuh" /* lesson 04: one function per PTX instruction (USES 4) */

#define FD_WARPS (L06_THREADS / 32)     /**< 4 warps, each its own stream of key tiles */
#define FD_TK 16                        /**< keys per warp tile: one k-step of P V */
#define FD_KS (HEAD_DIM / 16)           /**< k-steps of S = Q K^T */
#define FD_DT (HEAD_DIM / 8)            /**< n8 tiles of O */
#define FD_CHUNKS (HEAD_DIM / 8)        /**< 16-byte chunks per key row */
#define FD_C4 (HEAD_DIM / 4)            /**< float4 columns of an fp32 state row */
#define FD_MERGE 16                     /**< chunks whose loads the merge has in flight at once */
#define FD_ROWB (HEAD_DIM * 2)          /**< bytes per key row */
#define FD_TILE_BYTES (FD_TK * FD_ROWB) /**< one K or V tile: 4 KiB at dim 128 */
/** The deep ring: tiles in flight per warp, 48 KiB of K and V. */
#define FD_STAGES (HEAD_DIM == 64 ? 12 : 6)
/** The shallow ring: half the deep one, two blocks per SM. */
#define FD_SHALLOW (FD_STAGES / 2)
/** Bytes of one warp's slice for a ring of @p st tiles: st buffers of K and V; the warp's fp32
 * 16 x dim state reuses it at the end (16 x dim x 4 = 2 tiles). */
#define FD_WARP_BYTES(st) ((st)*2 * FD_TILE_BYTES)
/** Dynamic shared memory for a ring of @p st tiles: the Q tile, then the warps' slices. */
#define FD_SMEM_BYTES(st) (FD_TILE_BYTES + FD_WARPS * FD_WARP_BYTES(st))
#define FD_LOG2E 1.4426950408889634f /**< e^x = 2^(x log2 e) */
#define FD_LN2 0.6931471805599453f   /**< log x = log2(x) ln 2 */

/** Token pasting, after expanding `b`. */
#define FD_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FD_CAT(a, b) FD_CAT_(a, b)
/** This build's kernel with the deep ring: l07_paged_overlap_deep_d64 or _d128. */
#define FD_KERNEL_DEEP FD_CAT(l07_paged_overlap_deep_d, HEAD_DIM)
/** This build's kernel with the shallow ring: l07_paged_overlap_shallow_d64 or _d128. */
#define FD_KERNEL_SHALLOW FD_CAT(l07_paged_overlap_shallow_d, HEAD_DIM)
/** This build's launcher: l07_paged_overlap_d64() or l07_paged_overlap_d128(), in
 * paged_attention.h. */
#define FD_LAUNCH FD_CAT(l07_paged_overlap_d, HEAD_DIM)
/** This build's occupancy query: l07_paged_overlap_per_sm_d64() or
 * l07_paged_overlap_per_sm_d128(). */
#define FD_PER_SM FD_CAT(l07_paged_overlap_per_sm_d, HEAD_DIM)
/** This build's choice of ring: l07_paged_overlap_ring_d64() or l07_paged_overlap_ring_d128(). */
#define FD_RING FD_CAT(l07_paged_overlap_ring_d, HEAD_DIM)

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

/** Wait until at most @p stages - 1 of this thread's cp.async groups are in flight (the count
 * is an immediate: one instruction per ring depth). */
static __device__ __forceinline__ void fd_wait_stages(int stages) {
  if (stages == FD_STAGES)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(FD_STAGES - 1));
  else
    asm volatile("cp.async.wait_group %0;\n" ::"n"(FD_SHALLOW - 1));
}

/** Float index of column @p c of row @p rr in a warp's fp32 16 x dim state: row-major, the groups
 * of 8 columns XOR-swizzled by the row, so that the float2 stores of a half-warp (rows g, columns
 * dt * 8 + 2 t4) and the float4 loads of 8 threads along a row each fall in distinct banks. */
static __device__ __forceinline__ int fd_sidx(int rr, int c) {
  return rr * HEAD_DIM + (c ^ ((rr & 3) << 3));
}

/** The O row of tile row @p rr: group row gr = rt * 16 + rr is token gr / G of query head
 * kvh * G + gr % G. */
static __device__ __forceinline__ size_t fd_orow(int b, int rt, int rr, int kvh, int G, int seq_q,
                                                 int heads) {
  const int gr = rt * 16 + rr;
  return ((size_t)b * seq_q + gr / G) * heads + kvh * G + gr % G;
}

/** The log-sum-exp of tile row @p rr: [batch, heads, seq_q]. */
static __device__ __forceinline__ size_t fd_lrow(int b, int rt, int rr, int kvh, int G, int seq_q,
                                                 int heads) {
  const int gr = rt * 16 + rr;
  return ((size_t)b * heads + kvh * G + gr % G) * seq_q + gr / G;
}

/** The tile's scores, S = Q K^T for 16 rows x 16 keys (one of the loop's three steps): two n8
 * tiles, FD_KS k-steps; @p sc holds zeros on entry. */
static __device__ __forceinline__ void fd_qk_scores(float sc[2][4], const uint32_t qf[FD_KS][4],
                                                    uint32_t sk, const uint32_t k_off[4]) {
#pragma unroll
  for (int ks = 0; ks < FD_KS; ++ks) {
    uint32_t kb[4];
    ldmatrix_x4(kb, sk + k_off[ks & 3] + (ks >> 2) * 128);
    mma_bf16_16816(sc[0], qf[ks], kb[0], kb[1]);
    mma_bf16_16816(sc[1], qf[ks], kb[2], kb[3]);
  }
}

/** The online softmax of rows g and g + 8 over the tile's keys (the second step): keys past a
 * row's limit @p lim masked to -inf, the scores scaled into base 2, m and l moved on, O rescaled
 * by alpha = 2^(m_old - m_new); on return @p sc holds P. */
static __device__ __forceinline__ void fd_softmax_update(float sc[2][4], float row_m[2],
                                                         float row_l[2], float acc[FD_DT][4],
                                                         const int lim[2], int key0, int t4,
                                                         float scale_log2) {
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float mx = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
        const int col = key0 + nt * 8 + t4 * 2 + (e & 1);
        sc[nt][e] = col < lim[hf] ? sc[nt][e] * scale_log2 : -INFINITY;
        mx = fmaxf(mx, sc[nt][e]);
      }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(row_m[hf], mx);
    const float m_use = m_new == -INFINITY ? 0.f : m_new; /* nothing visible yet */
    const float alpha = fast_exp2(row_m[hf] - m_use);
    row_m[hf] = m_new;
    float sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
        const float p = fast_exp2(sc[nt][e] - m_use); /* 0 for a masked key */
        sc[nt][e] = p;
        sum += p;
      }
    row_l[hf] = row_l[hf] * alpha + sum;
#pragma unroll
    for (int dt = 0; dt < FD_DT; ++dt) acc[dt][2 * hf] *= alpha, acc[dt][2 * hf + 1] *= alpha;
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

/** The keys of chunk @p s (keys [s chunk, (s + 1) chunk)) that any row of row tile @p rt sees,
 * [*j0, *j1), and lim[hf], the end of what row g + 8 hf of the tile sees (0 past the R rows). */
static __device__ __forceinline__ void fd_chunk_bounds(int *j0, int *j1, int lim[2], int s,
                                                       int chunk, int rt, int g, int G, int R,
                                                       int seq_q, int seq_kv, int causal) {
  const int last_i = min(seq_q - 1, (rt * 16 + 15) / G);
  const int n_any = attn_keys_seen(last_i, seq_q, seq_kv, causal);
  const long long c0 = (long long)s * chunk;
  *j0 = (int)min((long long)n_any, c0), *j1 = (int)min((long long)n_any, c0 + chunk);
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int gr = rt * 16 + g + 8 * hf;
    lim[hf] = gr < R ? min(*j1, attn_keys_seen(gr / G, seq_q, seq_kv, causal)) : 0;
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

/** Columns 4 c4 .. 4 c4 + 3 of tile row @p rr merged over the FD_WARPS warps' states (m and l in
 * @p pm and @p pl, O in each warp's slice, warp w's at @p slices + w * @p slice_bytes): returns
 * O / l, and the natural-log log-sum-exp in @p lse_r (a row that saw no key: O = 0, -inf). */
static __device__ __forceinline__ float4 fd_merge_warps(const float (*pm)[16],
                                                        const float (*pl)[16],
                                                        const unsigned char *slices,
                                                        int slice_bytes, int rr, int c4,
                                                        float *lse_r) {
  float mm = -INFINITY;
#pragma unroll
  for (int w = 0; w < FD_WARPS; ++w) mm = fmaxf(mm, pm[w][rr]);
  const float mu = mm == -INFINITY ? 0.f : mm;
  float4 y4 = make_float4(0.f, 0.f, 0.f, 0.f);
  float ll = 0.f;
#pragma unroll
  for (int w = 0; w < FD_WARPS; ++w) {
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

/** Counts the block's chunk in on the counter of sequence @p b's unit @p u; true in the block that
 * brings the count to @p splits, which sets it back to 0 for the next call and, past the second
 * fence, sees every other chunk's partial state. @p last: a flag in shared memory, thread 0's
 * answer to the block. Every thread of the block calls it (it has barriers). */
static __device__ __forceinline__ int fd_last_block(int *last, int *count, int b, int units, int u,
                                                    int splits) {
  __threadfence(); /* my partial state is visible to every block before I am counted */
  __syncthreads();
  if (threadIdx.x == 0) {
    int *cnt = &count[(size_t)b * units + u]; /* this sequence's chunks of unit u */
    *last = atomicAdd(cnt, 1) == splits - 1;
    if (*last) *cnt = 0; /* every chunk is in: ready for the next call */
  }
  __syncthreads();
  if (!*last) return 0;
  __threadfence(); /* the other chunks' writes, made visible before their counts, are seen */
  return 1;
}

/** The Q tile into shared memory at @p sq: row rr is group row rt * 16 + rr (token gr / G of
 * query head kvh * G + gr % G), zeros past R; 16 rows x FD_CHUNKS 16-byte chunks, swizzled. */
static __device__ __forceinline__ void fd_load_q_tile(uint32_t sq, const attn_bf16 *__restrict__ q,
                                                      int b, int rt, int kvh, int G, int R,
                                                      int seq_q, int heads) {
  for (int idx = threadIdx.x; idx < 16 * FD_CHUNKS; idx += L06_THREADS) {
    const int rr = idx / FD_CHUNKS, c = idx % FD_CHUNKS, gr = rt * 16 + rr, ok = gr < R;
    const attn_bf16 *src =
        ok ? q + (((size_t)b * seq_q + gr / G) * heads + kvh * G + gr % G) * HEAD_DIM + c * 8 : q;
    cp_async_16(sq + fd_off(rr, c), src, ok ? 16 : 0);
  }
}

/* The loop on a whiteboard: lesson 06's version 6 (the G query heads x seq_q tokens of a KV head
 * as one 16-row Q tile on tensor cores, chunks by length, one launch) over a paged cache.
 *
 *   block (chunk x of the batch, unit u = (KV head, row tile)):  warp 0 finds the sequence b of
 *   chunk x (a prefix sum of chunk counts by shuffles);  __syncthreads();  s = x - b's first
 *   keys [j0, j1) = [s chunk, (s + 1) chunk), clipped to what the tile's last row of b sees
 *     warp w takes the 16-key tiles t = w, w + 4, ...; `stages` of them in its ring (FD_RING()):
 *     FD_STAGES (one block per SM) if the batch fits one wave, or mixed lengths one wave of the
 *     half ring; else half (two per SM; fd_body() twice)
 *     Q tile (zeros past the group's rows) -> shared by cp.async, a group of its own; commit
 *     warp w: the table entries of its first two batches of tiles -> registers
 *     warp w: cp.async its first stages - 1 tiles of K and V, one commit each
 *     cp.async.wait_group stages - 1 (Q's group);  __syncthreads();  Q -> mma fragments
 *     warp w, rows of the tile:  m = -inf, l = 0, O = 0          (16 x d in mma fragments)
 *     for each tile t of warp w:
 *       cp.async tile t + 4 (stages - 1) into its ring buffer; commit (empty past the end)
 *         a new batch of tiles: the next batch's table entries -> registers (not waited on)
 *         row r, key k: page by __shfl_sync from the lane holding it -> pool[page << shift | k & m]
 *       cp.async.wait_group stages - 1;  __syncwarp()             (tile t has landed)
 *       S = Q K_t^T * scale * log2(e)      (mma m16n8k16; keys past a row's window: -inf)
 *       m_new = max(m, rowmax S),  alpha = 2^(m - m_new),  P = 2^(S - m_new)
 *       l = alpha l + rowsum P,  O = alpha O + P V_t  (V by ldmatrix.trans),  m = m_new
 *       __syncwarp()                                             (the buffer may be refilled)
 *     cp.async.wait_all;  each warp's (m, l, O) -> shared memory;  __syncthreads()
 *     a float4 of a row per thread: merge the 4 warps' (m, l, O) -> O / l, lse = (m + log2 l) ln 2
 *     b in one chunk: -> O, lse.  More: -> part_O[x], part_lse[x];  __threadfence();  the last
 *     block of (b, u) to count in (atomicAdd on count[b, u]) merges b's chunks by lse -> O, lse
 */
/** One block per chunk of the batch along x and (KV head, row tile) of its sequence along y. The
 * tile's rows are group rows rt * 16 + rr, r = i * G + hg for token i and query head kvh * G + hg.
 * A sequence of one chunk writes O and the log-sum-exp; with more, each block's partial state
 * (normalised O, lse) goes to its slot of the workspace and the last block of the (sequence, unit)
 * to finish merges them. The body of both kernels below: each passes its ring depth as a literal,
 * so that after inlining @p stages is a constant (the waits, the ring slots, the prologue's trip
 * count), as FD_STAGES is in version 3. */
static __device__ __forceinline__ void fd_body(
    const attn_bf16 *__restrict__ q,      // [batch, seq_q, heads, HEAD_DIM]
    const attn_bf16 *__restrict__ k,      // [num_blocks, block_size, kv_heads, HEAD_DIM]
    const attn_bf16 *__restrict__ v,      // [num_blocks, block_size, kv_heads, HEAD_DIM]
    const int *__restrict__ block_table,  // [batch, max_blocks]
    attn_bf16 *__restrict__ o,            // [batch, seq_q, heads, HEAD_DIM]
    float *__restrict__ lse,              // [batch, heads, seq_q]
    float *__restrict__ part_o,           // [chunks, units, 16, HEAD_DIM]
    float *__restrict__ part_lse,         // [chunks, units, 16]
    int *__restrict__ count,              // [batch, units], 0 between calls
    const int *__restrict__ seq_lens,     // [batch]
    int batch, int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
    int n_rt, int chunk, int max_blocks, int shift, int stages) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ float part_m[FD_WARPS][16], part_l[FD_WARPS][16];
  const uint32_t sq = smem_u32(smem);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3; /* fragment row (and row + 8), column pair */
  const int wbytes = FD_WARP_BYTES(stages);
  const uint32_t sw = sq + FD_TILE_BYTES + warp * wbytes; /* this warp's slice */
  float *wstate = (float *)(smem + FD_TILE_BYTES + warp * wbytes);

  const int u = blockIdx.y, units = gridDim.y; /* (KV head, row tile) of a sequence */
  const int rt = u % n_rt, kvh = u / n_rt;
  const int x = blockIdx.x; /* the chunk of the batch */
  const int G = heads / kv_heads, R = G * seq_q;

  /* Which sequence chunk x belongs to: warp 0 counts the chunks of 32 sequences at a time
   * (a prefix sum by shuffles) until the count passes x. */
  __shared__ int seq_b, seq_first, seq_chunks;
  if (warp == 0) {
    int before = 0; /* chunks of the sequences already passed */
    for (int b0 = 0; b0 < batch; b0 += 32) {
      const int bb = b0 + lane;
      const int len = bb < batch ? (seq_lens ? seq_lens[bb] : seq_kv) : 0;
      const int n = bb < batch ? (len > chunk ? attn_cdiv(len, chunk) : 1) : 0;
      int incl = n;
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, incl, off);
        if (lane >= off) incl += y;
      }
      const int first = before + incl - n;
      if (n > 0 && x >= first && x < first + n) seq_b = bb, seq_first = first, seq_chunks = n;
      before += __shfl_sync(0xffffffffu, incl, 31);
      if (before > x) break; /* the same on every lane */
    }
  }
  __syncthreads();
  const int b = seq_b, s = x - seq_first, splits = seq_chunks;
  const int len_b = seq_lens ? seq_lens[b] : seq_kv;
  const size_t kv_stride = (size_t)kv_heads * HEAD_DIM;
  const attn_bf16 *kg = k + (size_t)kvh * HEAD_DIM; /* slot 0 of the pool, this KV head */
  const attn_bf16 *vg = v + (size_t)kvh * HEAD_DIM;
  const int *table = block_table + (size_t)b * max_blocks; /* this sequence's pages */
  fd_geom gm;
  gm.shift = shift;
  gm.le = shift >= 4 ? 0 : 4 - shift;
  gm.lt = 5 - gm.le;

  /* The keys of this chunk that any row of the tile sees; row g and g + 8 each see up to lim[]. */
  int j0, j1, lim[2];
  fd_chunk_bounds(&j0, &j1, lim, s, chunk, rt, g, G, R, seq_q, len_b, causal);

  /* The Q tile first, by cp.async in a group of its own: nothing it needs waits on the table.
   * Row rr is group row rt * 16 + rr, zeros past R. 16 rows x FD_CHUNKS chunks. */
  fd_load_q_tile(sq, q, b, rt, kvh, G, R, seq_q, heads);
  cp_async_commit();

  /* This warp's tiles: t = warp, warp + FD_WARPS, ... of the chunk's n_tiles. The table entries
   * of its first two batches are requested together (one latency for both, under the Q tile's),
   * then the copies of the first stages - 1 tiles. */
  const int n_tiles = attn_cdiv(j1 - j0, FD_TK);
  const int mine = n_tiles > warp ? attn_cdiv(n_tiles - warp, FD_WARPS) : 0;
  fd_pages pg;
  pg.cur = 0;
  pg.now = fd_table_batch(table, gm, 0, warp, j0, j1, lane);
  pg.next = fd_table_batch(table, gm, 1, warp, j0, j1, lane);
  for (int st = 0; st < stages - 1; ++st) {
    if (st < mine) {
      fd_pages_at(&pg, st, table, gm, warp, j0, j1, lane);
      fd_load_tile(sw + st * 2 * FD_TILE_BYTES, sw + (st * 2 + 1) * FD_TILE_BYTES, kg, vg,
                   kv_stride, pg.now, st, gm, j0 + (warp + st * FD_WARPS) * FD_TK, j1, lane);
    }
    cp_async_commit();
  }
  /* Q's group, the oldest, has landed once at most stages - 1 groups are in flight. */
  fd_wait_stages(stages);
  uint32_t q_off[4], k_off[4], v_off[4]; /* ldmatrix row addresses */
  fd_ldmatrix_offsets(q_off, k_off, v_off, lane);
  __syncthreads(); /* the Q tile is in place */
  uint32_t qf[FD_KS][4];
#pragma unroll
  for (int ks = 0; ks < FD_KS; ++ks) ldmatrix_x4(qf[ks], sq + q_off[ks & 3] + (ks >> 2) * 128);

  float acc[FD_DT][4], row_m[2] = {-INFINITY, -INFINITY}, row_l[2] = {0.f, 0.f};
#pragma unroll
  for (int dt = 0; dt < FD_DT; ++dt) acc[dt][0] = acc[dt][1] = acc[dt][2] = acc[dt][3] = 0.f;

  int rbuf = 0, wbuf = stages - 1; /* the ring slots of tiles it and it + stages - 1 */
  for (int it = 0; it < mine; ++it) {
    {
      const int ahead = it + stages - 1, buf = wbuf;
      if (ahead < mine) {
        fd_pages_at(&pg, ahead, table, gm, warp, j0, j1, lane);
        fd_load_tile(sw + buf * 2 * FD_TILE_BYTES, sw + (buf * 2 + 1) * FD_TILE_BYTES, kg, vg,
                     kv_stride, pg.now, ahead, gm, j0 + (warp + ahead * FD_WARPS) * FD_TK, j1,
                     lane);
      }
      cp_async_commit(); /* possibly empty: keeps one group per iteration */
    }
    fd_wait_stages(stages); /* my copies of tile `it` have landed */
    __syncwarp();           /* and the other lanes' */
    const int key0 = j0 + (warp + it * FD_WARPS) * FD_TK;
    const uint32_t sk = sw + rbuf * 2 * FD_TILE_BYTES, sv = sk + FD_TILE_BYTES;
    rbuf = rbuf + 1 == stages ? 0 : rbuf + 1;
    wbuf = wbuf + 1 == stages ? 0 : wbuf + 1;

    float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    fd_qk_scores(sc, qf, sk, k_off);
    fd_softmax_update(sc, row_m, row_l, acc, lim, key0, t4, scale_log2);
    fd_pv_accumulate(acc, sc, sv, v_off);
    __syncwarp(); /* every lane is done with this buffer before it is refilled */
  }
  asm volatile("cp.async.wait_all;\n" ::); /* no copy may land on the state written below */
  __syncwarp();

  fd_store_warp_state(part_m[warp], part_l[warp], wstate, row_m, row_l, acc, g, t4);
  __syncthreads();

  /* The warps' states merged: a float4 of a live row per thread and step, the tile's n_live rows
   * x FD_C4 columns spread over the whole block (4 live rows keep every warp busy). */
  const int n_live = min(16, R - rt * 16);
  for (int e = threadIdx.x; e < n_live * FD_C4; e += L06_THREADS) {
    const int rr = e / FD_C4, c4 = e % FD_C4;
    float lse_r;
    const float4 y4 = fd_merge_warps(part_m, part_l, smem + FD_TILE_BYTES, wbytes, rr, c4, &lse_r);
    const size_t r = fd_orow(b, rt, rr, kvh, G, seq_q, heads);
    if (splits == 1) {
      *(uint2 *)(o + r * HEAD_DIM + c4 * 4) =
          make_uint2(pack_bf16x2(y4.x, y4.y), pack_bf16x2(y4.z, y4.w));
      if (c4 == 0) lse[fd_lrow(b, rt, rr, kvh, G, seq_q, heads)] = lse_r;
    } else {
      const size_t slot = ((size_t)x * units + u) * 16 + rr; /* chunk x, unit u, tile row rr */
      *(float4 *)(part_o + slot * HEAD_DIM + c4 * 4) = y4;
      if (c4 == 0) part_lse[slot] = lse_r;
    }
  }
  if (splits == 1) return;

  /* Count this chunk in; the last of the unit's chunks merges them all. */
  __shared__ int last;
  if (!fd_last_block(&last, count, b, units, u, splits)) return;

  /* The merge: every float4 of the live rows, each thread its own, over the unit's chunks FD_MERGE
   * at a time, all their loads in flight at once: lesson 02's online softmax with chunks for keys.
   * The running (max, sum, O) is rescaled when a batch raises the max; an empty chunk (lse -inf)
   * weighs 0, and a row whose every chunk is empty ends with sum 0: O = 0, lse = -inf. */
  const size_t slot0 =
      (size_t)seq_first * units + u; /* chunk c of the sequence, unit u, row rr:
                                      * slot ((seq_first + c) * units + u) * 16 + rr */
  for (int e = threadIdx.x; e < n_live * FD_C4; e += L06_THREADS) {
    const int rr = e / FD_C4, c4 = e % FD_C4;
    const size_t r = fd_orow(b, rt, rr, kvh, G, seq_q, heads); /* the O row */
    float mx = -INFINITY, sum = 0.f;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int c0 = 0; c0 < splits; c0 += FD_MERGE) {
      float lb[FD_MERGE];
      float4 xb[FD_MERGE];
#pragma unroll
      for (int k = 0; k < FD_MERGE; ++k) {
        const int c = c0 + k;
        lb[k] = c < splits ? __ldcg(part_lse + (slot0 + (size_t)c * units) * 16 + rr) : -INFINITY;
        xb[k] = c < splits
                    ? __ldcg((const float4 *)(part_o +
                                              ((slot0 + (size_t)c * units) * 16 + rr) * HEAD_DIM) +
                             c4)
                    : make_float4(0.f, 0.f, 0.f, 0.f);
      }
      float bm = mx;
#pragma unroll
      for (int k = 0; k < FD_MERGE; ++k) bm = fmaxf(bm, lb[k]);
      if (bm == -INFINITY) continue;    /* no chunk so far saw a key */
      const float sc = __expf(mx - bm); /* 0 while mx is -inf */
      sum *= sc, a.x *= sc, a.y *= sc, a.z *= sc, a.w *= sc;
#pragma unroll
      for (int k = 0; k < FD_MERGE; ++k) {
        const float w = __expf(lb[k] - bm);
        sum += w;
        a.x += w * xb[k].x, a.y += w * xb[k].y, a.z += w * xb[k].z, a.w += w * xb[k].w;
      }
      mx = bm;
    }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    *(uint2 *)(o + r * HEAD_DIM + c4 * 4) =
        make_uint2(pack_bf16x2(a.x * inv, a.y * inv), pack_bf16x2(a.z * inv, a.w * inv));
    if (c4 == 0)
      lse[fd_lrow(b, rt, rr, kvh, G, seq_q, heads)] = sum > 0.f ? mx + logf(sum) : -INFINITY;
  }
}

/** The kernel with the deep ring (one block per SM). */
static __global__ void __launch_bounds__(L06_THREADS, 2)
    FD_KERNEL_DEEP(const attn_bf16 *__restrict__ q, const attn_bf16 *__restrict__ k,
                   const attn_bf16 *__restrict__ v, const int *__restrict__ block_table,
                   attn_bf16 *__restrict__ o, float *__restrict__ lse, float *__restrict__ part_o,
                   float *__restrict__ part_lse, int *__restrict__ count,
                   const int *__restrict__ seq_lens, int batch, int heads, int kv_heads, int seq_q,
                   int seq_kv, int causal, float scale_log2, int n_rt, int chunk, int max_blocks,
                   int shift) {
  fd_body(q, k, v, block_table, o, lse, part_o, part_lse, count, seq_lens, batch, heads, kv_heads,
          seq_q, seq_kv, causal, scale_log2, n_rt, chunk, max_blocks, shift, FD_STAGES);
}

/** The kernel with the shallow ring (two blocks per SM). */
static __global__ void __launch_bounds__(L06_THREADS, 2)
    FD_KERNEL_SHALLOW(const attn_bf16 *__restrict__ q, const attn_bf16 *__restrict__ k,
                      const attn_bf16 *__restrict__ v, const int *__restrict__ block_table,
                      attn_bf16 *__restrict__ o, float *__restrict__ lse,
                      float *__restrict__ part_o, float *__restrict__ part_lse,
                      int *__restrict__ count, const int *__restrict__ seq_lens, int batch,
                      int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
                      int n_rt, int chunk, int max_blocks, int shift) {
  fd_body(q, k, v, block_table, o, lse, part_o, part_lse, count, seq_lens, batch, heads, kv_heads,
          seq_q, seq_kv, causal, scale_log2, n_rt, chunk, max_blocks, shift, FD_SHALLOW);
}

/** Blocks of the kernel one SM holds with a ring of @p stages tiles per warp (FD_STAGES or
 * FD_SHALLOW; l07_paged_overlap_per_sm_d64() or _d128()), queried once per depth; 0 for another
 * depth or without a device. */
extern "C" int FD_PER_SM(int stages) {
  static int per_sm[2] = {0, 0};
  if (stages != FD_STAGES && stages != FD_SHALLOW) return 0;
  const int i = stages == FD_STAGES;
  if (per_sm[i] > 0) return per_sm[i];
  int n = 0;
  const void *kernel = i ? (const void *)FD_KERNEL_DEEP : (const void *)FD_KERNEL_SHALLOW;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           FD_SMEM_BYTES(stages)) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, L06_THREADS,
                                                    FD_SMEM_BYTES(stages)) != cudaSuccess) {
    (void)cudaGetLastError(); /* no device: leave no error behind */
    return 0;
  }
  per_sm[i] = n;
  return n;
}

/** The ring for @p batch sequences of @p units blocks each (l07_paged_overlap_ring_d64() or
 * _d128()): the deep one (one block per SM) when those blocks fit in one wave of it; the shallow
 * one (two per SM) when they do not, unless the lengths differ (@p varlen) and the shallow ring's
 * slots would hold every sequence as one chunk: lesson 06's plan then keeps one wave and cuts no
 * sequence, however long, where the deep ring's slots make it balance chunks over several waves. */
extern "C" int FD_RING(int batch, int units, int varlen) {
  const long long blocks = (long long)batch * units, sms = l06_sm_count();
  const int deep = FD_PER_SM(FD_STAGES), shallow = FD_PER_SM(FD_SHALLOW);
  if (blocks <= sms * deep || shallow < 2 * deep) return FD_STAGES;
  return varlen && blocks <= sms * shallow ? FD_STAGES : FD_SHALLOW;
}

/** The launcher, l07_paged_overlap_d64() or l07_paged_overlap_d128(): (chunks of the batch, units
 * of a sequence) blocks in one launch, on the ring FD_RING() picks; see l07_paged_fn in
 * paged_attention.h. */
extern "C" cudaError_t FD_LAUNCH(const void *q, const void *k_cache, const void *v_cache,
                                 const int *block_table, const int *seq_lens,
                                 const int *seq_lens_host, void *o, float *lse, float *workspace,
                                 size_t workspace_bytes, int batch, int heads, int kv_heads,
                                 int seq_q, int seq_kv, int max_blocks, int block_size, int causal,
                                 float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  if (seq_q > L06_MAX_SEQ_Q || !block_table || !seq_lens || block_size < 1 ||
      (block_size & (block_size - 1)) || (long long)max_blocks * block_size < seq_kv)
    return cudaErrorInvalidValue;
  int shift = 0; /* block_size = 2^shift */
  while ((1 << shift) < block_size) ++shift;
  if (seq_lens_host) /* NULL: every sequence has seq_kv keys (seq_lens on the device says so) */
    for (int b = 0; b < batch; ++b)
      if (seq_lens_host[b] < 1 || seq_lens_host[b] > seq_kv) return cudaErrorInvalidValue;
  const int n_rt = attn_cdiv(heads / kv_heads * seq_q, 16);
  const long long units = (long long)kv_heads * n_rt;
  if (units > 65535) return cudaErrorInvalidConfiguration;
  const int stages = FD_RING(batch, (int)units, seq_lens_host != NULL);
  const int chunk =
      l07_paged_chunk_for(4, batch, heads, kv_heads, seq_q, seq_kv, seq_lens_host, HEAD_DIM);
  const int chunks = l06_varlen_chunks(chunk, seq_lens_host, batch, seq_kv);
  const size_t need =
      l07_paged_workspace_bytes(4, batch, heads, kv_heads, seq_q, seq_kv, seq_lens_host, HEAD_DIM);
  if (need && (!workspace || workspace_bytes < need)) return cudaErrorInvalidValue;
  int *count = (int *)workspace; /* [batch, units], then the partial states */
  float *part_o =
      workspace ? (float *)((char *)workspace + l06_counter_bytes((int)(batch * units))) : NULL;
  float *part_lse = part_o ? part_o + (size_t)chunks * units * 16 * HEAD_DIM : NULL;
  const dim3 grid((unsigned)chunks, (unsigned)units);
  if (stages == FD_STAGES) {
    ATTN_TRY(cudaFuncSetAttribute(FD_KERNEL_DEEP, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  FD_SMEM_BYTES(FD_STAGES)));
    FD_KERNEL_DEEP<<<grid, L06_THREADS, FD_SMEM_BYTES(FD_STAGES), stream>>>(
        (const attn_bf16 *)q, (const attn_bf16 *)k_cache, (const attn_bf16 *)v_cache, block_table,
        (attn_bf16 *)o, lse, part_o, part_lse, count, seq_lens_host ? seq_lens : NULL, batch, heads,
        kv_heads, seq_q, seq_kv, causal, scale * FD_LOG2E, n_rt, chunk, max_blocks, shift);
  } else {
    ATTN_TRY(cudaFuncSetAttribute(FD_KERNEL_SHALLOW, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  FD_SMEM_BYTES(FD_SHALLOW)));
    FD_KERNEL_SHALLOW<<<grid, L06_THREADS, FD_SMEM_BYTES(FD_SHALLOW), stream>>>(
        (const attn_bf16 *)q, (const attn_bf16 *)k_cache, (const attn_bf16 *)v_cache, block_table,
        (attn_bf16 *)o, lse, part_o, part_lse, count, seq_lens_host ? seq_lens : NULL, batch, heads,
        kv_heads, seq_q, seq_kv, causal, scale * FD_LOG2E, n_rt, chunk, max_blocks, shift);
  }
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
