// clang-format off
/** @file
 * @brief Version 3's prefix pass on lesson 05's version 5: the shared pages are prefill-shaped
 * work (the draft tokens of every forked sequence, 128 rows a KV head at 32 sequences of one token
 * and 32/8 heads, over the same keys), so they run on the prefill kernel of lesson 05 with a
 * producer that reads pages.
 *
 * What changed against lesson 05's version 5 (its consumers are that file's overlap_turns(),
 * included here, unchanged):
 *  - a block is (run of forked sequences, chunk of the shared keys, KV head, unit of 128 group
 *    rows): its Q tile is 128 packed rows of one KV head's group (draft token gr / G of query head
 *    kvh G + gr % G), loaded by the consumers themselves (cp.async), zeros past the run's rows;
 *  - the producer's TMA reads a 128-key tile page by page: one box of min(block_size, 128) key rows
 *    per page and 64-column panel, each from the page the block table names, into the rows of the
 *    tile it covers; lane b of the producer warp looks up and copies box b, so a tile's pages are
 *    read from the table together. The tile in shared memory is the one lesson 05's single box writes: a box of
 *    16 rows is 2 KiB, whole swizzle atoms of 1 KiB, so the 128-byte swizzle lands every row where
 *    the consumers' descriptors expect it;
 *  - a ring of three tiles, where version 5 has two: every tile comes from memory once, so the
 *    producer needs more bytes in flight than when the Q tiles of a head share them through L2;
 *  - the keys are cut into chunks so that the blocks fill the GPU once, and every block writes its
 *    rows' O / l (fp32) and log-sum-exp; v3_cascade.cu merges the chunks and the suffix pass's
 *    state of each row in one kernel.
 *
 * Why: version 4's blocks are one warpgroup that waits for S, then for P V, tile after tile; at the
 * cascade's shape its prefix pass ran at about half the pages' speed (the README's "Both passes
 * in one launch"). Version 5's turns keep the tensor cores fed from two warpgroups, and a 128-row
 * block reads each tile once for both.
 *
 * Built for dims 64 and 128 (sm_90a, where the build has lesson 05); dim 256, an FP8 cache and
 * pages of fewer than 8 tokens keep version 4's prefix pass (l10_cascade_make()).
 */
// clang-format on
/* Built twice by CMake (lessons/10_serving_decode/CMakeLists.txt, sm_90a only), with -DHEAD_DIM=64
 * and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

/* Lesson 05's version 5 without its kernel: the consumers' turns (overlap_turns()), the ring's
 * sizes (FA_*) and the PTX wrappers (USES 5). */
/** Lesson 05's v5_overlap.cu without its kernel and launcher: the pieces its consumers use. */
#define L05_OVERLAP_TURNS_ONLY
/** A ring of three tiles, where version 5 has two: every tile comes from memory, none from L2. */
#define FA_STAGES 3
#include "v5_overlap.cu"

#include "serving_decode.h"

/** This build's kernel: l10_prefill_kernel_d64 or _d128. */
#define PF_KERNEL FA_CAT(l10_prefill_kernel_d, HEAD_DIM)
/** This build's launcher: l10_prefill_d64() or _d128(), in serving_decode.h. */
#define PF_LAUNCH FA_CAT(l10_prefill_d, HEAD_DIM)
/** This build's occupancy query: l10_prefill_per_sm_d64() or _d128(). */
#define PF_PER_SM FA_CAT(l10_prefill_per_sm_d, HEAD_DIM)
/** Named barrier PF_Q_BAR + wg: a consumer warpgroup's rows of Q have landed (1 and 2 are the
 * turns). */
#define PF_Q_BAR 3
/** Dynamic shared memory: Q, FA_STAGES stages of K and of V, the barriers (at most 128 bytes), and
 * 1024 bytes to align the start to a swizzle atom: 225 KiB at dim 128. */
#define PF_SMEM_BYTES (FA_Q_BYTES + 2 * FA_STAGES * FA_TILE_BYTES + 128 + 1024)

/** What a launch reads and writes (the kernel's parameter, __grid_constant__). */
typedef struct pf_args {
  const attn_bf16 *q;     /**< [total_q, heads, HEAD_DIM] */
  const int *q_start;     /**< [runs] first packed row of each run */
  const int *q_lens;      /**< [runs] its draft tokens */
  const int *seq_lens;    /**< [runs] its shared keys, whole pages */
  const int *block_table; /**< [runs, max_blocks] its shared pages */
  float *part_o;          /**< [blocks, 128, HEAD_DIM]: O / l of every row of every block */
  float *part_lse;        /**< [blocks, 128]: its log-sum-exp, -inf where it saw no key */
  int heads;              /**< query heads */
  int kv_heads;           /**< KV heads */
  int max_blocks;         /**< block-table columns */
  int shift;              /**< log2 of the page size */
  int box_rows;           /**< key rows a TMA box brings: min(page size, 128) */
  int units;              /**< 128-row units per KV head */
  int n_chunks;           /**< chunks of the keys per (run, KV head, unit) */
  int chunk_tiles;        /**< 128-key tiles a chunk holds */
  float scale_log2;       /**< softmax scale x log2 e */
} pf_args;

/** The producer warp's share of one 128-key tile, already announced on @p bar: lane b < 128 /
 * box_rows copies box b (key rows 128 j + b box_rows ..) of each 64-column panel into the stage at
 * @p dst, from page @p page, rows from @p row0 (pf_page()). Each lane's box is one TMA of its own,
 * so the tile's pages are looked up in parallel, not one after the other. */
static __device__ __forceinline__ void pf_boxes(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                                int page, int row0, int kvh, int box_rows,
                                                int lane) {
  if (lane * box_rows < FA_BC) {
#pragma unroll
    for (int p = 0; p < FA_PANELS; ++p)
      tma_load_4d(dst + p * FA_BC * 128 + lane * box_rows * 128, map, bar, p * 64, kvh, row0, page);
  }
}

/** Lane b's box of the tile from @p key0: its page and first row in the page. Keys at or past
 * @p keys (a last tile cut short) are read from the run's first page, which every key of it owns,
 * so their values are finite; their scores are masked (an unowned slot may hold NaN, and 0 x NaN
 * would reach O through P V). */
static __device__ __forceinline__ void pf_page(int *page, int *row0, const int *__restrict__ table,
                                               int key0, int keys, int shift, int box_rows,
                                               int lane) {
  const int key = key0 + lane * box_rows, in = lane * box_rows < FA_BC && key < keys;
  *page = __ldg(table + (in ? key >> shift : 0));
  *row0 = in ? key & ((1 << shift) - 1) : 0;
}

/* The block on a whiteboard:
 *
 *   block = ((run x n_chunks + c) x kv_heads + kvh) x units + u: the run's shared keys
 *   [c chunk_tiles 128, ...) for group rows [128 u, 128 u + 128) of KV head kvh
 *     producer warp, setmaxnreg 24: version 5's ring, each tile a box per page, lane b looking up
 *       and copying box b (pf_page(), pf_boxes())
 *     consumer warpgroup wg, setmaxnreg 240: its 64 rows of Q (cp.async, zeros past the run's
 *       rows); named barrier 3 + wg; version 5's turns (overlap_turns()), no mask but the chunk's
 *       end; O / l and the log-sum-exp of every row -> part_o, part_lse of this block
 */
/** One block per (run, chunk, KV head, unit of 128 rows): a producer warpgroup and two consumers,
 * as lesson 05's version 5. */
static __global__ void __launch_bounds__(FA_THREADS, 1)
    PF_KERNEL(const __grid_constant__ CUtensorMap tm_k,  // the K pool, boxes of 64 x box_rows
              const __grid_constant__ CUtensorMap tm_v,  // the V pool, the same
              const __grid_constant__ pf_args a) {
  extern __shared__ unsigned char smem[];
  /* The launch behind this one (version 3's suffix pass, l10_wg_after()) may start once every
   * block of this grid has started: its blocks take what SMs this grid leaves free. */
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const uint32_t sQ_a = (smem_u32(smem) + 1023u) & ~1023u;  /* [panel][FA_BR][64] */
  const uint32_t sK_a = sQ_a + FA_Q_BYTES;                  /* [stage][panel][FA_BC][64] */
  const uint32_t sV_a = sK_a + FA_STAGES * FA_TILE_BYTES;   /* [stage][panel][FA_BC][64] */
  const uint32_t full_k = sV_a + FA_STAGES * FA_TILE_BYTES; /* [stage]: the tile landed */
  const uint32_t full_v = full_k + 8 * FA_STAGES;           /* [stage] */
  const uint32_t empty_k = full_v + 8 * FA_STAGES;          /* [stage]: both consumers done */
  const uint32_t empty_v = empty_k + 8 * FA_STAGES;         /* [stage] */

  unsigned rest = blockIdx.x;
  const int u = (int)(rest % (unsigned)a.units);
  rest /= (unsigned)a.units;
  const int kvh = (int)(rest % (unsigned)a.kv_heads);
  rest /= (unsigned)a.kv_heads;
  const int c = (int)(rest % (unsigned)a.n_chunks), run = (int)(rest / (unsigned)a.n_chunks);
  const int keys = a.seq_lens[run];
  const int j0 = c * a.chunk_tiles * FA_BC, j1 = min(keys, j0 + a.chunk_tiles * FA_BC);
  const int n_tiles = j1 > j0 ? attn_cdiv(j1 - j0, FA_BC) : 0;

  if (threadIdx.x == 0) {
    for (int st = 0; st < FA_STAGES; ++st) {
      mbar_init(full_k + 8 * st, 1);
      mbar_init(full_v + 8 * st, 1);
      mbar_init(empty_k + 8 * st, FA_CONSUMER_WARPS);
      mbar_init(empty_v + 8 * st, FA_CONSUMER_WARPS);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (threadIdx.x < 128) {
    setmaxnreg_dec_24();
    if (threadIdx.x < 32) { /* version 5's producer_load(), a tile a box per page and lane */
      const int *table = a.block_table + (size_t)run * a.max_blocks;
      const int lane = threadIdx.x;
      for (int j = 0; j < n_tiles; ++j) {
        const int st = FA_STAGE(j);
        const uint32_t parity = FA_PHASE(j) ^ 1, off = st * FA_TILE_BYTES; /* empty: a pass ahead */
        int page, row0; /* K's and V's tiles j have the same pages */
        pf_page(&page, &row0, table, j0 + j * FA_BC, keys, a.shift, a.box_rows, lane);
        mbar_wait(empty_k + 8 * st, parity);
        if (lane == 0) mbar_arrive_expect_tx(full_k + 8 * st, FA_BC * HEAD_DIM * 2);
        __syncwarp(); /* the bytes announced before any box lands */
        pf_boxes(sK_a + off, &tm_k, full_k + 8 * st, page, row0, kvh, a.box_rows, lane);
        mbar_wait(empty_v + 8 * st, parity);
        if (lane == 0) mbar_arrive_expect_tx(full_v + 8 * st, FA_BC * HEAD_DIM * 2);
        __syncwarp();
        pf_boxes(sV_a + off, &tm_v, full_v + 8 * st, page, row0, kvh, a.box_rows, lane);
      }
    }
  } else {
    setmaxnreg_inc_240();
    const int wg = (threadIdx.x >> 7) - 1;
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int wr0 = wg * L05_WG_ROWS + warp * 16;
    const int G = a.heads / a.kv_heads, rows = G * a.q_lens[run], q0 = a.q_start[run];
    /* my warpgroup's 64 rows of the Q tile, 128-byte swizzled as TMA would lay them */
    const int tid = threadIdx.x & 127;
    for (int idx = tid; idx < L05_WG_ROWS * (HEAD_DIM / 8); idx += 128) {
      const int r = wg * L05_WG_ROWS + idx / (HEAD_DIM / 8), ch = idx % (HEAD_DIM / 8);
      const int gr = u * FA_BR + r, ok = gr < rows;
      const attn_bf16 *src =
          ok ? a.q + (((size_t)q0 + gr / G) * a.heads + kvh * G + gr % G) * HEAD_DIM + ch * 8 : a.q;
      cp_async_16(sQ_a + sw128_off(r, ch, FA_BR), src, ok ? 16 : 0);
    }
    cp_async_commit();
    asm volatile("cp.async.wait_all;\n" ::);
    fence_proxy_async(); /* my copies, before the tensor cores read them */
    named_bar_sync(PF_Q_BAR + wg, 128);

    float acc[FA_NO];
    float row_m[2], row_l[2];
    overlap_turns(acc, row_m, row_l, sQ_a + wg * L05_WG_ROWS * 128, sK_a, sV_a, full_k, full_v,
                  empty_k, empty_v, n_tiles, (j1 - j0) / FA_BC, wg, lane, 0, wr0, j0, g, t4, j1, 0,
                  0, a.scale_log2, NULL);

    /* O / l and the log-sum-exp of my two rows, into this block's partial state */
    const size_t blk = blockIdx.x;
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float l = row_l[hf];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const size_t slot = blk * FA_BR + wr0 + g + 8 * hf;
      const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
      for (int dt = 0; dt < HEAD_DIM / 8; ++dt)
        *(float2 *)(a.part_o + slot * HEAD_DIM + dt * 8 + t4 * 2) =
            make_float2(acc[4 * dt + 2 * hf] * inv, acc[4 * dt + 2 * hf + 1] * inv);
      if (t4 == 0) a.part_lse[slot] = l > 0.f ? (row_m[hf] + log2f(l)) * FA_LN2 : -INFINITY;
    }
  }
}

/** Blocks of the kernel one SM holds (1), queried once; 0 without a device or on one that cannot
 * run sm_90a code. */
extern "C" int PF_PER_SM(void) {
  static int per_sm = -1;
  if (per_sm >= 0) return per_sm;
  int n = 0;
  if (cudaFuncSetAttribute(PF_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, PF_SMEM_BYTES) !=
          cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, PF_KERNEL, FA_THREADS, PF_SMEM_BYTES) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  per_sm = n;
  return n;
}

/** The launcher, l10_prefill_d64() or _d128(): see serving_decode.h. */
extern "C" cudaError_t PF_LAUNCH(const l10_step *s, int pool_pages, int units, int n_chunks,
                                 int chunk_tiles, float *part_o, float *part_lse,
                                 cudaStream_t stream) {
  if (!s || s->dim != HEAD_DIM || s->k_scale || s->mask != L10_MASK_NONE || s->batch < 1 ||
      pool_pages < 1 || units < 1 || n_chunks < 1 || chunk_tiles < 1 || !part_o || !part_lse ||
      s->block_size < 8 || (s->block_size & (s->block_size - 1)) || s->heads % s->kv_heads)
    return cudaErrorInvalidValue;
  const long long blocks = (long long)s->batch * n_chunks * s->kv_heads * units;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  int shift = 0;
  while ((1 << shift) < s->block_size) ++shift;
  pf_args a;
  a.q = (const attn_bf16 *)s->q, a.q_start = s->q_start, a.q_lens = s->q_lens;
  a.seq_lens = s->seq_lens, a.block_table = s->block_table;
  a.part_o = part_o, a.part_lse = part_lse;
  a.heads = s->heads, a.kv_heads = s->kv_heads, a.max_blocks = s->max_blocks;
  a.shift = shift, a.box_rows = s->block_size < FA_BC ? s->block_size : FA_BC;
  a.units = units, a.n_chunks = n_chunks, a.chunk_tiles = chunk_tiles;
  a.scale_log2 = s->scale * FA_LOG2E;
  /* The pools as lesson 05's 4-D maps: [pages, block_size, kv_heads, dim], a box of box_rows key
   * rows of one KV head and 64 columns. */
  CUtensorMap tm_k, tm_v;
  ATTN_TRY(l05_tensor_map(&tm_k, s->k_cache, pool_pages, s->block_size, s->kv_heads, HEAD_DIM,
                          a.box_rows));
  ATTN_TRY(l05_tensor_map(&tm_v, s->v_cache, pool_pages, s->block_size, s->kv_heads, HEAD_DIM,
                          a.box_rows));
  static int smem_set = 0;
  if (!smem_set) {
    ATTN_TRY(cudaFuncSetAttribute(PF_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  PF_SMEM_BYTES));
    smem_set = 1;
  }
  PF_KERNEL<<<(unsigned)blocks, FA_THREADS, PF_SMEM_BYTES, stream>>>(tm_k, tm_v, a);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
