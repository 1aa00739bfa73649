// clang-format off
/** @file
 * @brief Version 2: an FP8 cache. Version 1 over pages of e4m3 codes, one byte a value, with a
 * scale per key row: the step reads half the bytes, and the tensor cores still multiply in 16
 * bits (f16), the codes widened in registers.
 *
 * What changed: against version 1 (`diff lessons/10_serving_decode/v1_draft.cu
 * lessons/10_serving_decode/v2_fp8_cache.cu`):
 *  - the pools hold e4m3 codes, and each key row (a token's dim values of one KV head) its fp32
 *    scale, K and V apart (l10_fp8_append() writes both); a tile is 16 rows of dim bytes plus the
 *    16 scales of K and of V, each lane copying one scale (4 bytes, zero past the chunk's end);
 *  - three blocks per SM (the registers fit 170 a thread), each warp's ring 3 tiles deep at dim
 *    128 and 7 at 64; pages of at least 16 tokens, so that a tile lies in one page;
 *  - the mask test behind a branch the whole warp takes: a tile every row sees whole pays only
 *    the K scales (version 1's per-score `whole || ...` made the compiler test every tile);
 *  - S = Q K^T: one ldmatrix.x4 gives a lane 4 codes of a key row for each of two k-steps and two
 *    n8 tiles; cvt.rn.f16x2.e4m3x2 widens each pair exactly. The 4 codes are dims 4 t4 .. 4 t4 + 3
 *    of the k-step, where a bf16 B fragment holds dims 2 t4, 2 t4 + 1 and 2 t4 + 8, 2 t4 + 9: the
 *    dot product does not care in which order it adds, so Q's A fragment is loaded in the same
 *    order (dims 4 t4, 4 t4 + 1 where the fragment says 2 t4, 2 t4 + 1), rounded to f16 once per
 *    block with the softmax scale in it. A key's scale multiplies its score column in fp32;
 *  - O += P V: ldmatrix.x4.trans of 16-bit pairs gives a lane keys 2 t4, 2 t4 + 1 of two dims
 *    (2 g, 2 g + 1); a byte permute (prmt) of the two 8-key halves makes the 4 keys of one dim,
 *    which is a B fragment. The n8 tiles hold the even and the odd dims of 16, so a lane ends with
 *    dims 4 t4 .. 4 t4 + 3 of a row: one float4 of O;
 *  - a key's V scale goes into P (P' = P x scale_v / sigma, f16 range): sigma is the largest V
 *    scale the warp has seen, a running maximum like the softmax's own, and O is rescaled by
 *    sigma_old / sigma_new when it grows, with alpha; the warp's O is O x sigma at the end.
 *
 * Why: at one token and at 2-8 draft tokens version 1 is at 90-94% of HBM; the bytes are the
 * cost. e4m3 halves them, the scales add 4 bytes a row (dim 128: 2 x (128 + 4) = 264 bytes a key
 * and KV head against 512, 1.94x fewer; dim 64: 1.88x).
 *
 * The scales: one per key row, fixed when the row is appended (l10_fp8_append()): a page's rows
 * need not be rewritten when a later token brings a larger value, as a scale per page would
 * need, and an outlier spoils only its own row. Each value is rounded to e4m3 (3 mantissa bits:
 * half a step is 2^-4 of the value); the error of O is then that of the cache's rounding, which
 * the program prints beside the bf16 cache's.
 *
 * Prediction: 1.8-1.9x version 1's tokens per second where version 1 runs at the memory's speed
 * (2-8 tokens from batch 16, 32k keys), if the widening keeps up. Per 16-key tile and row tile a
 * warp now issues 64 cvt (f16x2 from two codes), 16 prmt and 8 ldmatrix besides its 32 mma; at
 * one row tile that fits a tile's time at 4.8 TB/s (about 230 SM cycles at dim 128), but each row
 * tile widens its own copy, so 8 and 16 tokens (2 and 4 row tiles at 32/8 heads) may run out of
 * issue slots first.
 *
 * Measured: H200, 2026-11-26 (docs/results/h200-l10c-2026-11-26, bench/lesson10_peers.py, causal,
 * 32/8 heads, dim 128): 1-4 draft tokens at batch 16-64 with 32k-128k keys 1.79-1.88x version 1
 * (4.09-4.39 TB/s of the bytes read, 85-91% of HBM); 8 and 16 tokens 1.27-1.32x; batch 1
 * 1.07-1.65x, 0.84-1.03x with 4k keys. Development runs of the same day (the archive's dev-*.log
 * and ncu-dev-v2-s4.txt): the first form (two blocks per SM, a ring of 5, the mask as version 1
 * wrote it) ran at 1.50x with 1-4 tokens at batch 16 and 32k keys, 515 warp instructions a tile at
 * 0.46 issued per cycle and scheduler; the branch around the mask took it to 1.82x, three blocks
 * per SM to 1.84x (8 tokens 1.18x to 1.29x). Widening by moving bits on the integer units lost
 * (1.35x for K, 1.20x for K and V, against cvt's 1.50x): that pipe was already the busiest. The
 * error of O is the cache's rounding and O's own added as independent errors (README). Against
 * version 1 with its mask behind the same branch (docs/results/h200-l10d-2026-11-26): 1-4 tokens
 * 1.78-1.87x, 8 tokens 1.25-1.31x, 16 tokens 0.89-0.97x (each row tile widens its own copy).
 *
 * Run: `./run 3`, `./run 3 --seq 16`, `./run --batch 16 --kv-seq 32768 --seq 4`.
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
#include "merge_device.cuh" /* the chunks' merge, inside the kernel (version 1's) */
#include "ptx.cuh"          /* lesson 04: one function per PTX instruction (USES 4) */
#include "serving_decode.h"
#include "split_device.cuh" /* the split of the keys into the grid's items, on the device */

#if L06_THREADS != L10_MERGE_THREADS
#error "l10_merge_chunks() spreads a unit's rows over blocks of L10_MERGE_THREADS threads"
#endif

#define FD_WARPS (L06_THREADS / 32)      /**< 4 warps */
#define FD_TK 16                         /**< keys per warp tile: one k-step of P V */
#define FD_KS (HEAD_DIM / 16)            /**< k-steps of S = Q K^T: 16 dims, one 16-byte chunk */
#define FD_DT (HEAD_DIM / 8)             /**< n8 tiles of O */
#define FD_CHUNKS (HEAD_DIM / 8)         /**< 16-byte chunks per bf16 row (the Q tile) */
#define FD_C8 (HEAD_DIM / 16)            /**< 16-byte chunks per e4m3 key row */
#define FD_C4 (HEAD_DIM / 4)             /**< float4 columns of an fp32 state row */
#define FD_ROWB (HEAD_DIM * 2)           /**< bytes per bf16 row (the Q tile) */
#define FD_TILE_BYTES (FD_TK * HEAD_DIM) /**< one K or V tile of codes: 2 KiB at dim 128 */
#define FD_SCALE_OFF (2 * FD_TILE_BYTES) /**< a stage's 16 K scales, then its 16 V scales */
#define FD_STAGE_BYTES (FD_SCALE_OFF + 2 * FD_TK * 4) /**< K, V and their scales */
#define FD_ROWS L10_UNIT_ROWS                         /**< group rows of a unit: 4 row tiles */
#define FD_Q_BYTES (FD_ROWS * FD_ROWB)                /**< the unit's Q tile: 16 KiB at dim 128 */
/** The ring: tiles per warp; three blocks per SM (about 66 KiB of shared memory each at dim 128);
 * at dim 256 a block takes about 130 KiB, and an SM holds one. */
#define FD_STAGES (HEAD_DIM == 64 ? 7 : 3)
/** Blocks per SM the kernel is compiled for: 3, and 1 at dim 256 (its shared memory), which leaves
 * it 255 registers a thread. */
#define FD_MIN_BLOCKS (HEAD_DIM <= 128 ? 3 : 1)
/** 1 where the warp holds its Q fragments in registers (dim 64 and 128), 0 where they are made once
 * into shared memory and read from there at every k-step (dim 256: fd_q). */
#define FD_Q_IN_REGS (HEAD_DIM <= 128)
/** Bytes of one warp's slice: FD_STAGES stages; the warp's fp32 16 x dim state reuses it at the
 * end (16 x dim x 4 bytes, two stages). */
#define FD_WARP_BYTES (FD_STAGES * FD_STAGE_BYTES)
/** Dynamic shared memory: the Q tile, then the warps' slices. */
#define FD_SMEM_BYTES (FD_Q_BYTES + FD_WARPS * FD_WARP_BYTES)
#define FD_LOG2E 1.4426950408889634f /**< e^x = 2^(x log2 e) */
#define FD_LN2 0.6931471805599453f   /**< log x = log2(x) ln 2 */
#define FD_F16_MAX 65504.f           /**< the largest finite f16 */

/** Token pasting, after expanding `b`. */
#define FD_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FD_CAT(a, b) FD_CAT_(a, b)
/** This build's kernel: l10_fp8_kernel_d64, _d128 or _d256. */
#define FD_KERNEL FD_CAT(l10_fp8_kernel_d, HEAD_DIM)
/** Version 1's launcher of the chunks' merge (the partial states are laid out as its are):
 * l10_draft_merge_d64(), _d128() or _d256(). */
#define FD_MERGE_LAUNCH FD_CAT(l10_draft_merge_d, HEAD_DIM)
/** This build's launcher: l10_fp8_d64(), _d128() or _d256(), in serving_decode.h. */
#define FD_LAUNCH FD_CAT(l10_fp8_d, HEAD_DIM)
/** This build's occupancy query: l10_fp8_per_sm_d64(), _d128() or _d256(). */
#define FD_PER_SM FD_CAT(l10_fp8_per_sm_d, HEAD_DIM)

#if FD_WARP_BYTES < FD_TK * HEAD_DIM * 4
#error "a warp's slice must hold its fp32 16 x dim state at the end"
#endif

/** Byte offset of 16-byte chunk `chunk` of bf16 row `row` (the Q tile): version 1's swizzle. */
static __device__ __forceinline__ uint32_t fd_off(int row, int chunk) {
  return (uint32_t)((row * FD_CHUNKS + (chunk ^ (row & 7))) * 16);
}

/** Byte offset of 16-byte chunk `chunk` of e4m3 key row `row` in a tile: rows of dim bytes, the
 * chunks XOR-swizzled so that the 8 rows one ldmatrix reads fall in 8 different bank groups (at
 * dim 64 two rows share 128 bytes: the row's low bit already separates them). */
static __device__ __forceinline__ uint32_t fd8_off(int row, int chunk) {
#if HEAD_DIM >= 128
  return (uint32_t)(row * HEAD_DIM + ((chunk ^ (row & 7)) << 4));
#else
  return (uint32_t)(row * HEAD_DIM + ((chunk ^ ((row >> 1) & 3)) << 4));
#endif
}

/** m16n8k16 on the tensor cores with f16 operands (two per register), fp32 accumulator: lesson
 * 04's mma_bf16_16816() with the other 16-bit type. */
static __device__ __forceinline__ void mma_f16_16816(float d[4], const uint32_t a[4], uint32_t b0,
                                                     uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/** Bytes of @p a (0..3) and @p b (4..7) chosen by the 4 nibbles of @p sel, lowest byte first. */
static __device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
}

/** Four e4m3 codes (the bytes of @p x, lowest first) widened to two f16x2: @p lo the low two
 * codes, @p hi the high two, the lower code in the lower half. Exact: every e4m3 value is an f16
 * value. sm_89 and later have the instruction (cvt takes a 16-bit half of the register as it is);
 * below, the bits are moved by hand so that the file builds for every architecture of the course:
 * each code under an f16's top byte (prmt), the 7 magnitude bits one place right, under f16's
 * exponent field, gives the value times 2^-8, subnormals included, which a multiply by 256
 * undoes. */
static __device__ __forceinline__ void e4m3x4_to_f16x2x2(uint32_t x, uint32_t *lo, uint32_t *hi) {
#if __CUDA_ARCH__ >= 890
  asm("{\n.reg .b16 a, b;\nmov.b32 {a, b}, %2;\ncvt.rn.f16x2.e4m3x2 %0, a;\n"
      "cvt.rn.f16x2.e4m3x2 %1, b;\n}\n"
      : "=r"(*lo), "=r"(*hi)
      : "r"(x));
#else
  uint32_t h[2] = {prmt(x, 0u, 0x1404u), prmt(x, 0u, 0x3424u)}, r[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const uint32_t bits = (h[i] & 0x80008000u) | ((h[i] >> 1) & 0x3F803F80u);
    asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(r[i]) : "r"(bits), "r"(0x5C005C00u)); /* x 256 */
  }
  *lo = r[0], *hi = r[1];
#endif
}

/** Two fp32 values rounded to f16 and packed: lo in the low half. */
static __device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/** Copy 4 bytes global -> shared (cp.async.ca: the only form below 16 bytes); @p src_bytes 0
 * writes zeros. */
static __device__ __forceinline__ void cp_async_4(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
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

/** The warp's copies of its tile @p t (keys key0 ..), its pages in @p now (current batch): 16
 * rows of dim codes of K and of V, lane handling chunk idx % FD_C8 of row idx / FD_C8 for idx =
 * lane, lane + 32, ...; and the rows' scales, lane l < 16 K's of row l, lanes 16.. V's. The tile
 * lies in one page (block_size >= 16): one shuffle gives its number. Rows at or past @p end are
 * zero-filled, codes and scales (the address given is row 0's, which exists). Every lane calls
 * it. */
static __device__ __forceinline__ void fd_load_tile(uint32_t st, const uint8_t *kg,
                                                    const uint8_t *vg, const float *ksg,
                                                    const float *vsg, size_t kv_stride,
                                                    int kv_heads, int now, int t, fd_geom gm,
                                                    int key0, int end, int lane) {
  const int mask = (1 << gm.shift) - 1, first = (t & ((1 << gm.lt) - 1)) << gm.le;
  const int page0 = __shfl_sync(0xffffffffu, now, first); /* the tile's page */
  const size_t slot0 = ((size_t)page0 << gm.shift) | (size_t)(key0 & mask);
  const size_t base = slot0 * kv_stride; /* row 0's codes; + row * kv_stride + chunk * 16 */
#pragma unroll
  for (int it = 0; it < FD_TK * FD_C8 / 32; ++it) {
    const int idx = it * 32 + lane, row = idx / FD_C8, chunk = idx % FD_C8;
    const int ok = key0 + row < end;
    const size_t src = base + (ok ? row * kv_stride : 0) + chunk * 16;
    cp_async_16(st + fd8_off(row, chunk), kg + src, ok ? 16 : 0);
    cp_async_16(st + FD_TILE_BYTES + fd8_off(row, chunk), vg + src, ok ? 16 : 0);
  }
  /* scales [page, kv_heads, block_size]: ksg and vsg are this KV head's of page 0 */
  const int row = lane & 15, ok = key0 + row < end;
  const size_t sidx =
      (size_t)page0 * kv_heads * ((size_t)mask + 1) + (key0 & mask) + (ok ? row : 0);
  cp_async_4(st + FD_SCALE_OFF + lane * 4, (lane < 16 ? ksg : vsg) + sidx, ok ? 4 : 0);
}

/** Float index of column @p c of row @p rr in a warp's fp32 16 x dim state: row-major, the groups
 * of 8 columns XOR-swizzled by the row, so that the float4 stores of a quad (row g, columns
 * 16 c + 4 t4) and the float4 loads of 8 threads along a row spread over the banks. */
static __device__ __forceinline__ int fd_sidx(int rr, int c) {
  return rr * HEAD_DIM + (c ^ ((rr & 3) << 3));
}

/** Where a warp's Q fragments (f16, scaled, in the e4m3 B fragments' dim order: fd_load_q_frags())
 * come from. At dim 64 and 128 they are made once and held in registers (16 and 32 of them). At
 * dim 256 they would be 64 registers beside O's 128: there the warps of the first key stream make
 * them once into their row tile of shared memory, in place of its bf16 rows (the same 8 KiB: 16
 * k-steps x 32 lanes x 16 bytes), and each k-step reads the lane's four with one 16-byte load. */
typedef struct fd_q {
#if FD_Q_IN_REGS
  uint32_t f[FD_KS][4]; /**< the fragments, k-step by k-step */
#else
  uint32_t
      at; /**< shared-memory address of this lane's fragment of k-step 0; k-step c at + 512 c */
#endif
} fd_q;

/** The Q fragment of k-step @p c into @p a: a copy of registers (which the compiler removes), or
 * one 16-byte load from shared memory. */
static __device__ __forceinline__ void fd_q_frag(uint32_t a[4], const fd_q *q, int c) {
#if FD_Q_IN_REGS
  a[0] = q->f[c][0], a[1] = q->f[c][1], a[2] = q->f[c][2], a[3] = q->f[c][3];
#else
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(q->at + (uint32_t)c * 512u));
#endif
}

/** The tile's scores, S = Q K^T for 16 rows x 16 keys (one of the loop's three steps), before the
 * keys' scales: two n8 tiles, FD_KS k-steps of 16 dims. ldmatrix.x4 at @p k_off[c / 2] gives the
 * lane 4 codes (dims 4 t4 .. 4 t4 + 3 of the k-step) of key g, then key 8 + g, for k-steps c and
 * c + 1; each pair widened is a B register in Q's dim order (fd_load_q_frags()). @p sc holds zeros
 * on entry. */
static __device__ __forceinline__ void fd_qk_scores(float sc[2][4], const fd_q *q, uint32_t sk,
                                                    const uint32_t k_off[FD_KS / 2]) {
#pragma unroll
  for (int c = 0; c < FD_KS; c += 2) {
    uint32_t kb[4];
    ldmatrix_x4(kb, sk + k_off[c / 2]);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t b[4];
      e4m3x4_to_f16x2x2(kb[2 * h], &b[0], &b[1]);
      e4m3x4_to_f16x2x2(kb[2 * h + 1], &b[2], &b[3]);
      uint32_t qa[4];
      fd_q_frag(qa, q, c + h);
      mma_f16_16816(sc[0], qa, b[0], b[1]);
      mma_f16_16816(sc[1], qa, b[2], b[3]);
    }
  }
}

/** O += P V (the third step), P already times each key's V scale over sigma: the two n8 tiles of P
 * are one f16 A fragment. ldmatrix.x4.trans at @p v_off[c / 2] gives the lane, per 8 keys and
 * k-step, keys 2 t4 and 2 t4 + 1 of dims 2 g and 2 g + 1 (4 codes); prmt of the two halves' words
 * makes keys 2 t4, 2 t4 + 1, 2 t4 + 8, 2 t4 + 9 of dim 2 g (bytes 0, 2 of each) and of dim 2 g + 1
 * (bytes 1, 3): the B fragments of the n8 tiles of the even and the odd dims, acc[2 c] and
 * acc[2 c + 1]. */
static __device__ __forceinline__ void fd_pv_accumulate(float acc[FD_DT][4], const float sc[2][4],
                                                        uint32_t sv,
                                                        const uint32_t v_off[FD_KS / 2]) {
  uint32_t pa[4];
  pa[0] = pack_f16x2(sc[0][0], sc[0][1]);
  pa[1] = pack_f16x2(sc[0][2], sc[0][3]);
  pa[2] = pack_f16x2(sc[1][0], sc[1][1]);
  pa[3] = pack_f16x2(sc[1][2], sc[1][3]);
#pragma unroll
  for (int c = 0; c < FD_KS; c += 2) {
    uint32_t vb[4];
    ldmatrix_x4_trans(vb, sv + v_off[c / 2]);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t ev = prmt(vb[2 * h], vb[2 * h + 1], 0x6420u);
      const uint32_t od = prmt(vb[2 * h], vb[2 * h + 1], 0x7531u);
      uint32_t b[4];
      e4m3x4_to_f16x2x2(ev, &b[0], &b[1]);
      e4m3x4_to_f16x2x2(od, &b[2], &b[3]);
      mma_f16_16816(acc[2 * (c + h)], pa, b[0], b[1]);
      mma_f16_16816(acc[2 * (c + h) + 1], pa, b[2], b[3]);
    }
  }
}

/** The warp's state into shared memory (after its last tile): m and l of its 16 rows into @p pm
 * and @p pl (l summed over the quad), O times @p sigma (unnormalised) into its slice @p wstate,
 * swizzled: the lane's dims 16 c + 4 t4 .. + 3 of row g are acc[2 c][0], acc[2 c + 1][0],
 * acc[2 c][1], acc[2 c + 1][1] (rows g + 8: elements 2 and 3). */
static __device__ __forceinline__ void fd_store_warp_state(float *pm, float *pl, float *wstate,
                                                           const float row_m[2],
                                                           const float row_l[2],
                                                           const float acc[FD_DT][4], float sigma,
                                                           int g, int t4) {
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float l = row_l[hf];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int rr = g + 8 * hf;
    if (t4 == 0) pm[rr] = row_m[hf], pl[rr] = l;
#pragma unroll
    for (int c = 0; c < FD_KS; ++c)
      *(float4 *)&wstate[fd_sidx(rr, 16 * c + 4 * t4)] =
          make_float4(acc[2 * c][2 * hf] * sigma, acc[2 * c + 1][2 * hf] * sigma,
                      acc[2 * c][2 * hf + 1] * sigma, acc[2 * c + 1][2 * hf + 1] * sigma);
  }
}

/** ldmatrix row addresses of this lane in an e4m3 tile, one per pair of k-steps (c, c + 1):
 * matrices (keys 0-7, chunk c), (keys 8-15, chunk c), (keys 0-7, chunk c + 1), (keys 8-15, chunk
 * c + 1), lanes 8 i .. 8 i + 7 giving matrix i's rows. The same addresses serve K (plain) and V
 * (.trans). */
static __device__ __forceinline__ void fd_ldmatrix_offsets(uint32_t kv_off[FD_KS / 2], int lane) {
  const int row = (lane & 7) + (((lane >> 3) & 1) << 3), hi = lane >> 4;
#pragma unroll
  for (int i = 0; i < FD_KS / 2; ++i) kv_off[i] = fd8_off(row, 2 * i + hi);
}

/** Q's A fragments for this lane's rows g and g + 8 of the row tile at @p sqp (bf16, version 1's
 * swizzled rows), in the dim order the e4m3 B fragments have: k-step c's qf[c][0] holds dims
 * 16 c + 4 t4 and + 1 of row g (where an mma fragment holds k 2 t4 and 2 t4 + 1), qf[c][2] dims
 * + 2 and + 3 (the fragment's k 2 t4 + 8, + 9), [1] and [3] the same of row g + 8. Each value
 * times @p scale_log2, clamped to the f16 range and rounded to f16. */
static __device__ __forceinline__ void fd_load_q_frags(uint32_t qf[FD_KS][4], uint32_t sqp, int g,
                                                       int t4, float scale_log2) {
#pragma unroll
  for (int c = 0; c < FD_KS; ++c)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      uint32_t w0, w1; /* 4 bf16: dims 16 c + 4 t4 .. + 3 */
      asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                   : "=r"(w0), "=r"(w1)
                   : "r"(sqp + fd_off(g + 8 * hf, 2 * c + (t4 >> 1)) + (t4 & 1) * 8));
      float x[4] = {__uint_as_float(w0 << 16), __uint_as_float(w0 & 0xFFFF0000u),
                    __uint_as_float(w1 << 16), __uint_as_float(w1 & 0xFFFF0000u)};
#pragma unroll
      for (int j = 0; j < 4; ++j) x[j] = fminf(fmaxf(x[j] * scale_log2, -FD_F16_MAX), FD_F16_MAX);
      qf[c][hf] = pack_f16x2(x[0], x[1]);
      qf[c][2 + hf] = pack_f16x2(x[2], x[3]);
    }
}

/** Wait until at most FD_STAGES - 2 of this thread's cp.async groups are in flight: the tile about
 * to be read has landed. */
static __device__ __forceinline__ void fd_wait_stages(void) {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(FD_STAGES - 2));
}

/** The online softmax of rows g and g + 8 over a tile's 16 keys from @p key0 (the second step), as
 * version 1's, with the keys' scales: the lane's keys 2 t4, 2 t4 + 1 (n8 tile 0) and 8 + 2 t4,
 * 9 + 2 t4 (tile 1) have K scales @p ks[nt][0..1] and V scales @p vs[nt][0..1]. A score is its
 * column's K scale times Q K^T (Q already carries the softmax scale in base 2). sigma, the largest
 * V scale the warp has seen (the same on every lane), grows to the tile's when that is larger, and
 * O is rescaled by sigma_old / sigma_new with alpha. On return @p sc holds P x V scale / sigma (at
 * most 1, so f16 keeps its precision whatever the scales); l sums P itself. */
static __device__ __forceinline__ void fd_softmax_update(
    float sc[2][4], float row_m[2], float row_l[2], float acc[FD_DT][4], float *sigma,
    float *inv_sigma, const float2 ks[2], const float2 vs[2], const int lim[2],
    const uint32_t bits[2], int lim_warp, int base, int j1, int key0, int t4) {
  /* the keys' K scales, then the mask where some row of the warp does not see the whole tile */
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) sc[nt][e] *= (e & 1) ? ks[nt].y : ks[nt].x;
  if (key0 + FD_TK > lim_warp) { /* the same on every lane */
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
  /* the tile's largest V scale (zero past the chunk's end): every quad holds all 16 keys */
  float vmax = fmaxf(fmaxf(vs[0].x, vs[0].y), fmaxf(vs[1].x, vs[1].y));
  vmax = fmaxf(vmax, __shfl_xor_sync(0xffffffffu, vmax, 1));
  vmax = fmaxf(vmax, __shfl_xor_sync(0xffffffffu, vmax, 2));
  float r = 1.f;       /* O's factor for sigma: sigma_old / sigma_new (l has no sigma in it) */
  if (vmax > *sigma) { /* the same on every lane */
    r = *sigma / vmax;
    *sigma = vmax, *inv_sigma = 1.f / vmax;
    grew = 1;
  }
  if (__any_sync(0xffffffffu, grew)) {
    const float a0 = alpha[0] * r, a1 = alpha[1] * r;
#pragma unroll
    for (int dt = 0; dt < FD_DT; ++dt) {
      acc[dt][0] *= a0, acc[dt][1] *= a0;
      acc[dt][2] *= a1, acc[dt][3] *= a1;
    }
  }
  const float w[2][2] = {{vs[0].x * *inv_sigma, vs[0].y * *inv_sigma},
                         {vs[1].x * *inv_sigma, vs[1].y * *inv_sigma}};
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
        const float p = fast_exp2(sc[nt][e] - m_use[hf]); /* 0 for a masked key */
        sum += p;
        sc[nt][e] = p * w[nt][e & 1];
      }
    row_l[hf] = row_l[hf] * alpha[hf] + sum;
  }
}

/** One step of a warp: the @p nsub tiles of 16 keys from @p key0 (stage of tile j at @p st0 + j *
 * @p wbytes, in the slice of the stream's warp j), in turn, each with version 1's three steps and
 * the keys' scales read from the stage. @p sub is a literal (1, 2 or 4). */
static __device__ __forceinline__ void fd_step(int sub, int nsub, uint32_t st0, int wbytes,
                                               const fd_q *q, const uint32_t kv_off[FD_KS / 2],
                                               float row_m[2], float row_l[2], float acc[FD_DT][4],
                                               float *sigma, float *inv_sigma, const int lim[2],
                                               const uint32_t bits[2], int lim_warp, int base,
                                               int j1, int key0, int t4) {
#pragma unroll
  for (int j = 0; j < sub; ++j) {
    if (j >= nsub) break;
    const uint32_t st = st0 + j * wbytes;
    float2 ks[2], vs[2];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const uint32_t a = st + FD_SCALE_OFF + (nt * 8 + 2 * t4) * 4;
      asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(ks[nt].x), "=f"(ks[nt].y) : "r"(a));
      asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n"
                   : "=f"(vs[nt].x), "=f"(vs[nt].y)
                   : "r"(a + FD_TK * 4));
    }
    float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    fd_qk_scores(sc, q, st, kv_off);
    fd_softmax_update(sc, row_m, row_l, acc, sigma, inv_sigma, ks, vs, lim, bits, lim_warp, base,
                      j1, key0 + j * FD_TK, t4);
    fd_pv_accumulate(acc, sc, st + FD_TILE_BYTES, kv_off);
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

/* The loop on a whiteboard (version 1's, over e4m3 tiles with their scales):
 *
 *   block i = (item * kv_heads + kvh) * units + u: KV head kvh, group rows [64 u, 64 u + 64), and
 *   the step's item `item`; the split on the device, the exits, the key streams and the ring as
 *   in version 1
 *     Q tile (bf16) -> shared; each warp's A fragments from it: times scale log2 e, f16, in the
 *     dim order of the widened codes
 *     for each step t: wait; __syncthreads(); cp.async my tile t + FD_STAGES - 1 (codes of K and
 *     V, 16 + 16 scales); then for each tile j of my stream, in turn:
 *       S = Q_p K_j^T (codes widened to f16 as they leave ldmatrix), times each key's K scale
 *       online softmax (m, l on P); sigma = max(sigma, the tile's V scales), O rescaled by
 *       alpha x sigma_old / sigma_new when either moved; P' = P x v_scale / sigma in f16
 *       O += P' V_j (codes permuted into B fragments by prmt, widened)
 *     each warp's (m, l, O x sigma) -> shared; the streams merged; one chunk: -> O, lse; more:
 *     -> part_O, part_lse, merged as version 1 merges them (merge_device.cuh or its kernel)
 */
/** The kernel's body. */
static __device__ __forceinline__ void fd_body(
    const attn_bf16 *__restrict__ q,      // [total_q, heads, HEAD_DIM]
    const uint8_t *__restrict__ k,        // [num_blocks, block_size, kv_heads, HEAD_DIM] e4m3
    const uint8_t *__restrict__ v,        // [num_blocks, block_size, kv_heads, HEAD_DIM] e4m3
    const float *__restrict__ k_scale,    // [num_blocks, kv_heads, block_size]
    const float *__restrict__ v_scale,    // [num_blocks, kv_heads, block_size]
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
  /* q_b and n_b read again (L1), not kept from the split: held in registers across the loop they
   * pushed this kernel past its three-blocks-an-SM budget (168 registers, 12 bytes spilled) */
  const int q_b = min(max(q_lens[b], 1), max_q);
  const int n_b = min(max(seq_lens[b], q_b), max_seq_kv);
  const int q0 = it.q0, rows = min(FD_ROWS, G * q_b - u * FD_ROWS);
  if (rows <= 0) return; /* the same in the whole block */
  const int j0 = s * chunk, j1 = min(n_b, j0 + chunk), base = n_b - q_b;
  const int rt = attn_cdiv(rows, 16), rw = rt == 1 ? 1 : rt == 2 ? 2 : 4, ns = FD_WARPS / rw;
  const int stream = warp / rw, p = warp % rw; /* my key stream, my row tile */

  const size_t kv_stride = (size_t)kv_heads * HEAD_DIM; /* bytes from one slot to the next */
  const uint8_t *kg = k + (size_t)kvh * HEAD_DIM;       /* slot 0 of the pool, this KV head */
  const uint8_t *vg = v + (size_t)kvh * HEAD_DIM;
  const float *ksg = k_scale + ((size_t)kvh << shift); /* page 0's scales, this KV head */
  const float *vsg = v_scale + ((size_t)kvh << shift);
  const int *table = block_table + (size_t)b * max_blocks; /* this sequence's pages */
  fd_geom gm;
  gm.shift = shift;
  gm.le = 0; /* block_size >= 16: a tile needs one table entry */
  gm.lt = 5;

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

  /* My tiles: t = warp, warp + FD_WARPS, ... of the chunk's n_tiles; the block's steps: as many
   * as warp 0 has tiles. */
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
      fd_load_tile(sw + st * FD_STAGE_BYTES, kg, vg, ksg, vsg, kv_stride, kv_heads, pg.now, st, gm,
                   j0 + (warp + st * FD_WARPS) * FD_TK, j1, lane);
    }
    cp_async_commit();
  }
  fd_wait_stages();           /* Q's group and my first tile have landed */
  uint32_t kv_off[FD_KS / 2]; /* ldmatrix row addresses in a tile */
  fd_ldmatrix_offsets(kv_off, lane);
  __syncthreads(); /* the Q tile is in place */
  fd_q qs;
#if FD_Q_IN_REGS
  fd_load_q_frags(qs.f, sq + p * 16 * FD_ROWB, g, t4, scale_log2);
#else
  qs.at = sq + p * 16 * FD_ROWB + lane * 16;
  if (stream == 0) { /* warp p makes row tile p's fragments, in place of its rows */
    uint32_t f[FD_KS][4];
    fd_load_q_frags(f, sq + p * 16 * FD_ROWB, g, t4, scale_log2);
    __syncwarp(); /* every lane has read the rows before any overwrites them */
#pragma unroll
    for (int c = 0; c < FD_KS; ++c)
      asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(qs.at + c * 512u),
                   "r"(f[c][0]), "r"(f[c][1]), "r"(f[c][2]), "r"(f[c][3])
                   : "memory");
  }
  __syncthreads(); /* every row tile's fragments are in place */
#endif

  float acc[FD_DT][4], row_m[2] = {-INFINITY, -INFINITY}, row_l[2] = {0.f, 0.f};
  float sigma = 0.f, inv_sigma = 0.f; /* the largest V scale seen (0: none yet) */
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
        fd_load_tile(sw + buf * FD_STAGE_BYTES, kg, vg, ksg, vsg, kv_stride, kv_heads, pg.now,
                     ahead, gm, j0 + (warp + ahead * FD_WARPS) * FD_TK, j1, lane);
      }
      cp_async_commit(); /* possibly empty: keeps one group per step */
    }
    const int nsub = min(rw, n_tiles - (first + it * FD_WARPS));
    if (live) {
      const int key0 = j0 + (first + it * FD_WARPS) * FD_TK;
      const uint32_t st0 = sw0 + first * wbytes + rbuf * FD_STAGE_BYTES;
      if (rw == 1)
        fd_step(1, nsub, st0, wbytes, &qs, kv_off, row_m, row_l, acc, &sigma, &inv_sigma, lim, bits,
                lim_warp, base, j1, key0, t4);
      else if (rw == 2)
        fd_step(2, nsub, st0, wbytes, &qs, kv_off, row_m, row_l, acc, &sigma, &inv_sigma, lim, bits,
                lim_warp, base, j1, key0, t4);
      else
        fd_step(4, nsub, st0, wbytes, &qs, kv_off, row_m, row_l, acc, &sigma, &inv_sigma, lim, bits,
                lim_warp, base, j1, key0, t4);
    }
    rbuf = rbuf + 1 == FD_STAGES ? 0 : rbuf + 1;
    wbuf = wbuf + 1 == FD_STAGES ? 0 : wbuf + 1;
  }
  asm volatile("cp.async.wait_all;\n" ::); /* no copy may land on the state written below */
  __syncthreads(); /* and no warp still reads a slice another warp's state will overwrite */

  fd_store_warp_state(part_m[warp], part_l[warp], wstate, row_m, row_l, acc, sigma, g, t4);
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
  /* More than one chunk and the merge is the kernel's own (count set: few rows, or few chunks,
   * l10_merge_inside());
   * else version 1's merge kernel runs after this one. */
  if (n_chunks > 1 && count)
    l10_merge_chunks(part_o, part_lse, count, item, s, n_chunks, q0, kvh, u, kv_heads, units, rows,
                     heads, (size_t)items * kv_heads * units, o, lse, smem);
}

/** The kernels' arguments, as fd_body() takes them. */
#define FD_PARAMS                                                                                \
  const attn_bf16 *__restrict__ q, const uint8_t *__restrict__ k, const uint8_t *__restrict__ v, \
      const float *__restrict__ k_scale, const float *__restrict__ v_scale,                      \
      const int *__restrict__ block_table, attn_bf16 *__restrict__ o, float *__restrict__ lse,   \
      float *__restrict__ part_o, float *__restrict__ part_lse, int2 *__restrict__ plan,         \
      int *__restrict__ count, const int *__restrict__ q_start, const int *__restrict__ q_lens,  \
      const uint32_t *__restrict__ tree, const int *__restrict__ seq_lens, int heads,            \
      int kv_heads, int max_q, int max_seq_kv, int max_blocks, int shift, int mask,              \
      float scale_log2, int units, int batch, int items
/** The same names, passed on. */
#define FD_ARGS                                                                                   \
  q, k, v, k_scale, v_scale, block_table, o, lse, part_o, part_lse, plan, count, q_start, q_lens, \
      tree, seq_lens, heads, kv_heads, max_q, max_seq_kv, max_blocks, shift, mask, scale_log2,    \
      units, batch, items

/** The kernel: three blocks per SM. */
static __global__ void __launch_bounds__(L06_THREADS, FD_MIN_BLOCKS) FD_KERNEL(FD_PARAMS) {
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

/** The launcher, l10_fp8_d64(), _d128() or _d256(): version 1's, over the e4m3 pools and their
 * scales. See serving_decode.h. */
extern "C" cudaError_t FD_LAUNCH(const l10_step *st, void *o, float *lse, void *workspace,
                                 size_t workspace_bytes, cudaStream_t stream) {
  char err[160];
  if (!st || !o || !lse || l10_step_check(st, err, sizeof err) != 0 || st->dim != HEAD_DIM ||
      !st->k_scale || !st->v_scale || st->block_size < L10_FP8_MIN_BLOCK)
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
  /* 1: the chunks merged inside the kernel; 0: by version 1's merge kernel after it */
  const int here = l10_merge_inside(st->heads, st->kv_heads, st->max_q, items, st->batch);
  const float scale_log2 = st->scale * FD_LOG2E;
  const attn_bf16 *q = (const attn_bf16 *)st->q;
  const uint8_t *k = (const uint8_t *)st->k_cache, *v = (const uint8_t *)st->v_cache;
  static int smem_set = 0; /* once, so that a launch being captured into a CUDA graph makes no
                              other CUDA call than the launches and their error checks */
  if (!smem_set) {
    ATTN_TRY(cudaFuncSetAttribute(FD_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  FD_SMEM_BYTES));
    smem_set = 1;
  }
  FD_KERNEL<<<(unsigned)blocks, L06_THREADS, FD_SMEM_BYTES, stream>>>(
      q, k, v, st->k_scale, st->v_scale, st->block_table, (attn_bf16 *)o, lse, part_o, part_lse,
      plan, here ? count : NULL, st->q_start, st->q_lens, st->tree, st->seq_lens, st->heads,
      st->kv_heads, st->max_q, st->max_seq_kv, st->max_blocks, shift, (int)st->mask, scale_log2,
      units, st->batch, items);
  ATTN_TRY_LAUNCH();
  if (items > st->batch && !here) /* the chunks' merge: version 1's kernel */
    return FD_MERGE_LAUNCH(st, part_o, part_lse, (const int *)plan, o, lse, units, stream);
  return cudaSuccess;
}
