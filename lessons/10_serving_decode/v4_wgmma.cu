// clang-format off
/** @file
 * @brief Version 4: many draft tokens on Hopper's warpgroup. Version 1's unit of 64 group rows is
 * exactly the M of one `wgmma`: the block is one warpgroup, S = Q K^T and O += P V are each one
 * batch of `wgmma` over a 64-key tile, and the four warps no longer read each other's tiles
 * through ldmatrix.
 *
 * What changed: against version 1 (`diff lessons/10_serving_decode/v1_draft.cu
 * lessons/10_serving_decode/v4_wgmma.cu`):
 *  - the block's four warps are one warpgroup working on one 64 x 64 tile of S at a time: 64 keys
 *    of K and V per tile, copied by all 128 threads (cp.async, each key row's page looked up in
 *    the block table) into lesson 05's 128-byte-swizzled layout, which the tensor cores read
 *    through descriptors; a ring of WG_STAGES tiles;
 *  - S = Q K^T: m64n64k16 `wgmma` with both operands in shared memory; O += P V: P from
 *    registers (the accumulator's layout is the A fragment's), V through an MN-major descriptor;
 *  - no key streams and no merge of the warps' states at the end: every row has one state;
 *  - sm_90a only, built where the build has lesson 05 (whose hopper.cuh it uses); at dim 256 the
 *    tiles are 32 keys (S is m64n32, P V m64n256), so that two blocks fit an SM; the chunks are
 *    cut by version 1's rule for version 4's blocks per SM, and merged as version 1 merges them.
 *
 * Why: with 16 draft tokens at 32/8 heads a unit is four 16-row tiles, and version 1's four
 * warps each read all four 16-key tiles of a step for their own 16 rows (16 mma.sync per tile
 * and row tile for S, 16 for P V), 0.63-0.82x the one-token rate: short of the memory's speed, the
 * warps' chains of dependent mma.sync set the pace. One wgmma does a 64 x 64 x 16 product for the
 * whole warpgroup from shared memory, and the tensor cores need about 512 cycles per 64-key tile
 * at dim 128 (S and P V), against about 1800 cycles of HBM time per SM for its 32 KiB (4.8 TB/s
 * over 132 SMs at 1.98 GHz is 18 bytes a cycle).
 *
 * Prediction: 16 draft tokens at the memory's speed, near the one-token rate: a 64-key tile at
 * dim 128 is 32 KiB, which an SM's share of HBM brings in about 1800 cycles, and about 512
 * tensor-core cycles of wgmma.
 *
 * Measured: H200, 2026-11-26 (docs/results/h200-l10h-2026-11-26/bench.log, causal, 32/8 heads,
 * batch 1-64, 4k-128k keys), over version 1's one-token rate: 16 tokens at 0.89-0.98x at dim 128
 * (version 1: 0.63-0.82x), 0.94-1.09x at dim 256 (version 1: 0.52-0.64x), 0.76-1.02x at dim 64;
 * 1.20-1.94x version 1's speed at 16 tokens. Dim 256 at 0.90-1.44x dim 128's rate. Batch 1, 32k
 * keys, 8 tokens: 3.02 TB/s (version 1: 2.78). With one token at dim 64, 0.88-1.01x version 1.
 *
 * Run: `./run 7 --seq 16`, `./run 7 --batch 16 --kv-seq 32768 --seq 16 --causal`.
 */
// clang-format on
/* Built three times by CMake (lessons/10_serving_decode/CMakeLists.txt, for sm_90a only), with
 * -DHEAD_DIM=64, 128 and 256. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

#include <limits.h>
#include <math.h>
#include <string.h>

#include "attn_cuda.cuh"
#include "flash_decoding.h" /* lesson 06: the split plan (USES 6) */
#include "hopper.cuh"       /* lesson 05: wgmma and its descriptors (USES 5) */
#include "merge_device.cuh" /* the chunks' merge, inside the kernel (version 1's) */
#include "pdl_launch.cuh"   /* the launch behind the cascade's prefix pass */
#include "serving_decode.h"
#include "split_device.cuh" /* the split of the keys into the grid's items, on the device */

#define WG_THREADS 128 /**< one warpgroup */
#if WG_THREADS != L10_MERGE_THREADS
#error "l10_merge_chunks() spreads a unit's rows over blocks of L10_MERGE_THREADS threads"
#endif
/** Keys per tile, the N of S: 64, and 32 at dim 256, where a 64-key tile of K and V would take
 * 64 KiB and two blocks would not fit an SM. */
#define WG_BN (HEAD_DIM == 256 ? 32 : 64)
#define WG_ROWS L10_UNIT_ROWS                /**< group rows of a unit: the M of one wgmma */
#define WG_KS (HEAD_DIM / 16)                /**< k-steps of S = Q K^T */
#define WG_PK (WG_BN / 16)                   /**< k-steps of O += P V */
#define WG_NO (HEAD_DIM / 2)                 /**< O floats per thread: 64 x dim / 128 */
#define WG_NS (WG_BN / 2)                    /**< S floats per thread: 64 x WG_BN / 128 */
#define WG_CHUNKS (HEAD_DIM / 8)             /**< 16-byte chunks per key row */
#define WG_TILE_BYTES (WG_BN * HEAD_DIM * 2) /**< one K or V tile */
#define WG_Q_BYTES (WG_ROWS * HEAD_DIM * 2)  /**< the unit's Q tile */
/** The ring: three blocks per SM at dim 64 (8 + 4 x 16 KiB), two at dim 128 (16 + 3 x 32 KiB)
 * and at dim 256 (32 + 2 x 32 KiB). */
#define WG_STAGES (HEAD_DIM == 64 ? 4 : HEAD_DIM == 128 ? 3 : 2)
#define WG_MIN_BLOCKS (HEAD_DIM == 64 ? 3 : 2) /**< blocks per SM the kernel is compiled for */
/** Dynamic shared memory: Q, the ring of K and V tiles, and 1024 bytes to align the start to a
 * swizzle atom. */
#define WG_SMEM_BYTES (WG_Q_BYTES + WG_STAGES * 2 * WG_TILE_BYTES + 1024)
#define WG_LOG2E 1.4426950408889634f /**< e^x = 2^(x log2 e) */
#define WG_LN2 0.6931471805599453f   /**< log x = log2(x) ln 2 */

/** Token pasting, after expanding `b`. */
#define WG_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define WG_CAT(a, b) WG_CAT_(a, b)
/** This build's kernel: l10_wg_kernel_d64, _d128 or _d256. */
#define WG_KERNEL WG_CAT(l10_wg_kernel_d, HEAD_DIM)
/** This build's kernel for two steps in one launch: l10_wg_pair_kernel_d64, _d128 or _d256. */
#define WG_PAIR_KERNEL WG_CAT(l10_wg_pair_kernel_d, HEAD_DIM)
/** This build's launcher: l10_wg_d64(), _d128() or _d256(), in serving_decode.h. */
#define WG_LAUNCH WG_CAT(l10_wg_d, HEAD_DIM)
/** This build's occupancy query: l10_wg_per_sm_d64(), _d128() or _d256(). */
#define WG_PER_SM WG_CAT(l10_wg_per_sm_d, HEAD_DIM)
/** This build's two-step launcher: l10_wg_pair_d64(), _d128() or _d256(). */
#define WG_PAIR WG_CAT(l10_wg_pair_d, HEAD_DIM)
/** This build's launcher behind the kernel before it: l10_wg_after_d64(), _d128() or _d256(). */
#define WG_AFTER WG_CAT(l10_wg_after_d, HEAD_DIM)
/** Version 1's merge of the chunks, for this head dimension. */
#define WG_MERGE WG_CAT(l10_draft_merge_d, HEAD_DIM)

#if HEAD_DIM == 256 /* the two shapes only dim 256 uses */
/** D (+)= A B, m64n32k16, A and B from shared memory, both K-major (lesson 05's wgmma_ss_n64()
 * with half the columns; dim 256's 32-key tiles). */
static __device__ __forceinline__ void wg_ss_n32(float d[16], uint64_t desc_a, uint64_t desc_b,
                                                 int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "%16, %17, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/** D (+)= A B, m64n256k16, A from registers (mma.sync's A fragment), B from shared memory,
 * MN-major (lesson 05's wgmma_rs_n128() with twice the columns: O += P V at dim 256). */
static __device__ __forceinline__ void wg_rs_n256(float d[128], const uint32_t a[4],
                                                  uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
      "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
      "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
      "%123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
#endif

/** S = Q K^T for one k-step: N = WG_BN keys, both operands from shared memory. */
#if WG_BN == 64
#define WG_WGMMA_S wgmma_ss_n64
#else
#define WG_WGMMA_S wg_ss_n32
#endif
/** O += P V for one k-step: N = HEAD_DIM, A from registers, B MN-major. */
#if HEAD_DIM == 256
#define WG_WGMMA_PV wg_rs_n256
#else
#define WG_WGMMA_PV WG_CAT(wgmma_rs_n, HEAD_DIM)
#endif

#define WG_ROWS_PER_THREAD (WG_BN * WG_CHUNKS / WG_THREADS) /**< key rows a thread copies */

/** The pages of the key rows this thread copies for the tile from @p key0 (row idx / WG_CHUNKS
 * for idx = i, i + 128, ...), read from the block table one tile before their copies, so that the
 * copies never wait for the table; 0 past @p end. */
static __device__ __forceinline__ void wg_pages(int pages[WG_ROWS_PER_THREAD],
                                                const int *__restrict__ table, int shift, int key0,
                                                int end) {
#pragma unroll
  for (int it = 0; it < WG_ROWS_PER_THREAD; ++it) {
    const int key = key0 + (it * WG_THREADS + (int)threadIdx.x) / WG_CHUNKS;
    pages[it] = key < end ? __ldg(table + (key >> shift)) : 0;
  }
}

/** The copies of the tile of keys key0 .. key0 + WG_BN - 1 into the K and V buffers at @p sk and @p
 * sv, 128-byte swizzled: WG_BN rows x WG_CHUNKS 16-byte chunks each, thread i taking chunk idx %
 * WG_CHUNKS of row idx / WG_CHUNKS for idx = i, i + 128, ... (its chunk is i % WG_CHUNKS in every
 * row: 128 is a multiple of WG_CHUNKS), its rows' pages in @p pages (wg_pages()); rows at or past
 * @p end zero-filled (their scores are masked). @p kc and @p vc: this thread's chunk of slot 0 of
 * the KV head, in bytes; @p stride: bytes from one slot to the next. A row's slot (page x
 * block_size + its place in the page) is 32-bit (a pool of 2^32 slots would be 512 GB at the
 * smallest slot, one KV head of dim 64), and its address one wide multiply-add: the copies are
 * most of a tile's instructions, and 64-bit shifts and products per row doubled them. */
static __device__ __forceinline__ void wg_load_tile(uint32_t sk, uint32_t sv, const char *kc,
                                                    const char *vc, uint32_t stride,
                                                    const int pages[WG_ROWS_PER_THREAD], int shift,
                                                    int key0, int end) {
  const uint32_t mask = (1u << shift) - 1u;
  const int chunk = (int)threadIdx.x % WG_CHUNKS;
#pragma unroll
  for (int it = 0; it < WG_ROWS_PER_THREAD; ++it) {
    const int row = (it * WG_THREADS + (int)threadIdx.x) / WG_CHUNKS, key = key0 + row;
    const int ok = key < end;
    const uint32_t slot = ok ? ((uint32_t)pages[it] << shift) | ((uint32_t)key & mask) : 0u;
    const size_t at = (size_t)slot * stride;
    const uint32_t off = sw128_off(row, chunk, WG_BN);
    cp_async_16(sk + off, kc + at, ok ? 16 : 0);
    cp_async_16(sv + off, vc + at, ok ? 16 : 0);
  }
}

/** The unit's Q tile into shared memory at @p sq, 128-byte swizzled: row r is group row u * 64 + r
 * (draft token gr / G of query head kvh * G + gr % G, packed row q0 + gr / G), zeros past the
 * @p rows the sequence has. */
static __device__ __forceinline__ void wg_load_q(uint32_t sq, const attn_bf16 *__restrict__ q,
                                                 int q0, int u, int kvh, int G, int rows,
                                                 int heads) {
  for (int idx = threadIdx.x; idx < WG_ROWS * WG_CHUNKS; idx += WG_THREADS) {
    const int r = idx / WG_CHUNKS, c = idx % WG_CHUNKS, gr = u * WG_ROWS + r, ok = r < rows;
    const attn_bf16 *src =
        ok ? q + (((size_t)q0 + gr / G) * heads + kvh * G + gr % G) * HEAD_DIM + c * 8 : q;
    cp_async_16(sq + sw128_off(r, c, WG_ROWS), src, ok ? 16 : 0);
  }
}

/** Where a row stands (version 1's fd_row_mask()): the end of the keys it sees from the start
 * (@p lim, within the chunk's end @p j1) and the word of draft keys it sees past them (@p bits).
 * A row past G x q_b (zero Q, never written) is given the chunk's keys. */
static __device__ __forceinline__ void wg_row_mask(int *lim, uint32_t *bits, int gr, int G, int q_b,
                                                   int n_b, int j1, int mask,
                                                   const uint32_t *__restrict__ tree, int q0) {
  const int base = n_b - q_b, i = gr / G;
  *lim = j1, *bits = 0u;
  if (gr >= G * q_b) return;
  if (mask == L10_MASK_CAUSAL)
    *lim = min(j1, base + i + 1);
  else if (mask == L10_MASK_TREE)
    *lim = min(j1, base), *bits = __ldg(tree + q0 + i) & ((1u << q_b) - 1u);
}

/** The online softmax of my two rows (g and g + 8 of my warp's 16) over one tile of WG_BN keys from
 * @p key0: the accumulator's layout is mma.sync's per n8 block, s[4 nt + e] being row g + 8 (e /
 * 2), key key0 + 8 nt + 2 t4 + e % 2. The mask only when some row of the warp does not see the
 * whole tile (a branch the warp takes together); O rescaled when a row of the warp has a new
 * maximum; P packed into the A fragments of the P V k-steps. */
static __device__ __forceinline__ void wg_softmax(float s[WG_NS], float row_m[2], float row_l[2],
                                                  float acc[WG_NO], uint32_t pa[WG_PK][4],
                                                  const int lim[2], const uint32_t bits[2],
                                                  int lim_warp, int base, int j1, int key0, int t4,
                                                  float scale_log2) {
  if (key0 + WG_BN > lim_warp) {
#pragma unroll
    for (int nt = 0; nt < WG_BN / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int hf = e >> 1, col = key0 + nt * 8 + t4 * 2 + (e & 1), d = col - base;
        const int seen =
            col < lim[hf] || (col < j1 && d >= 0 && d < 32 && ((bits[hf] >> (d & 31)) & 1u) != 0u);
        if (!seen) s[4 * nt + e] = -INFINITY;
      }
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int nt = 0; nt < WG_BN / 8; ++nt) {
    mx[0] = fmaxf(mx[0], fmaxf(s[4 * nt], s[4 * nt + 1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[4 * nt + 2], s[4 * nt + 3]));
  }
  float m_use[2], alpha[2];
  int grew = 0;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    mx[hf] = fmaxf(mx[hf], __shfl_xor_sync(0xffffffffu, mx[hf], 1));
    mx[hf] = fmaxf(mx[hf], __shfl_xor_sync(0xffffffffu, mx[hf], 2));
    const float m_new = fmaxf(row_m[hf], mx[hf] * scale_log2);
    m_use[hf] = m_new == -INFINITY ? 0.f : m_new; /* nothing visible yet */
    alpha[hf] = fast_exp2(row_m[hf] - m_use[hf]);
    grew |= m_new > row_m[hf];
    row_m[hf] = m_new;
  }
  if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
    for (int dt = 0; dt < HEAD_DIM / 8; ++dt) {
      acc[4 * dt] *= alpha[0], acc[4 * dt + 1] *= alpha[0];
      acc[4 * dt + 2] *= alpha[1], acc[4 * dt + 3] *= alpha[1];
    }
  }
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < WG_NS; ++i) {
    const int hf = (i >> 1) & 1;
    const float p = fast_exp2(fmaf(s[i], scale_log2, -m_use[hf])); /* 0 for a masked key */
    s[i] = p;
    sum[hf] += p;
  }
  row_l[0] = row_l[0] * alpha[0] + sum[0];
  row_l[1] = row_l[1] * alpha[1] + sum[1];
  /* k-step kk covers keys 16 kk .. 16 kk + 15: n8 blocks 2 kk and 2 kk + 1 */
#pragma unroll
  for (int kk = 0; kk < WG_PK; ++kk) {
    const float *b = s + 8 * kk;
    pa[kk][0] = pack_bf16x2(b[0], b[1]);
    pa[kk][1] = pack_bf16x2(b[2], b[3]);
    pa[kk][2] = pack_bf16x2(b[4], b[5]);
    pa[kk][3] = pack_bf16x2(b[6], b[7]);
  }
}

/* The loop on a whiteboard (version 1's grid and plan; one warpgroup a block):
 *
 *   block i = (item * kv_heads + kvh) * units + u: KV head kvh, group rows [64 u, 64 u + 64), the
 *   step's item `item` cut on the device as version 1's; exits past the last item or the rows
 *     Q tile (64 rows, zeros past `rows`) -> shared by cp.async, 128-byte swizzled; one group
 *     tiles 0 .. WG_STAGES - 2 of 64 keys -> the ring, one group each (each row's page from the
 *     block table, read one tile ahead of its copies)
 *     for each tile t:
 *       cp.async.wait_group WG_STAGES - 2; fence.proxy.async; __syncthreads()
 *       cp.async tile t + WG_STAGES - 1 into the slot of tile t - 1; commit
 *       S = Q K_t^T        WG_KS wgmma m64n{WG_BN}k16 from shared memory; wait
 *       online softmax     mask when a row of the warp does not see the whole tile; P -> bf16
 *       O += P V_t         WG_PK wgmma m64nDk16, P from registers; wait
 *     O / l and lse per row -> O (one chunk) or the partial states, merged as version 1 merges them
 */
/** One step's share of a launch: what the kernel reads and writes for it, and its blocks. A
 * launch runs one step (l10_wg()) or two (l10_wg_pair(), version 3's passes): the first's blocks,
 * then the second's. */
typedef struct wg_part {
  const attn_bf16 *q;     /**< [total_q, heads, HEAD_DIM] */
  const attn_bf16 *k;     /**< [num_blocks, block_size, kv_heads, HEAD_DIM] */
  const attn_bf16 *v;     /**< the same for V */
  const int *block_table; /**< [batch, max_blocks] */
  attn_bf16 *o;           /**< [total_q, heads, HEAD_DIM] */
  float *lse;             /**< [total_q, heads] */
  float *part_o;          /**< [items, kv_heads, units, 64, dim] */
  float *part_lse;        /**< [items, kv_heads, units, 64] */
  int2 *plan;             /**< [batch]: first item, count */
  int *count;             /**< [2, items, kv_heads, units]: counters; NULL: the merge kernel's */
  const int *q_start;     /**< the step's q_start */
  const int *q_lens;      /**< the step's q_lens */
  const int *seq_lens;    /**< the step's seq_lens */
  const uint32_t *tree;   /**< the step's tree words, or NULL */
  int heads;              /**< query heads */
  int kv_heads;           /**< KV heads */
  int max_q;              /**< the step's limit on draft tokens */
  int max_seq_kv;         /**< the step's limit on keys */
  int max_blocks;         /**< block-table columns */
  int shift;              /**< log2 of the page size */
  int mask;               /**< l10_mask */
  float scale_log2;       /**< softmax scale x log2 e */
  int units;              /**< units per KV head */
  int batch;              /**< sequences */
  int items;              /**< items of the grid */
  int blocks;             /**< items x kv_heads x units */
  int after;              /**< 1: launched behind the kernel before it (l10_wg_after()) */
} wg_part;

/** The parts of one launch: a step's blocks (l10_wg()), or two steps' one after the other
 * (l10_wg_pair(), version 3's passes). */
typedef struct wg_parts {
  wg_part p[2]; /**< the first step's, then the second's (blocks 0: none) */
} wg_parts;

/** One block of part @p my: block @p rest of its (item, KV head, unit) blocks. */
static __device__ __forceinline__ void wg_block(const wg_part *my, unsigned rest) {
  const attn_bf16 *__restrict__ q = my->q;
  const attn_bf16 *__restrict__ k = my->k;
  const attn_bf16 *__restrict__ v = my->v;
  const int *__restrict__ block_table = my->block_table;
  attn_bf16 *__restrict__ o = my->o;
  float *__restrict__ lse = my->lse;
  float *__restrict__ part_o = my->part_o;
  float *__restrict__ part_lse = my->part_lse;
  int2 *__restrict__ plan = my->plan;
  int *__restrict__ count = my->count;
  const int *__restrict__ q_start = my->q_start;
  const int *__restrict__ q_lens = my->q_lens;
  const uint32_t *__restrict__ tree = my->tree;
  const int *__restrict__ seq_lens = my->seq_lens;
  const int heads = my->heads, kv_heads = my->kv_heads, max_q = my->max_q;
  const int max_seq_kv = my->max_seq_kv, max_blocks = my->max_blocks;
  const int shift = my->shift, mask = my->mask;
  const float scale_log2 = my->scale_log2;
  const int units = my->units, batch = my->batch, items = my->items;
  extern __shared__ unsigned char smem[];
  const uint32_t sq = (smem_u32(smem) + 1023u) & ~1023u; /* swizzle atoms: 1024-byte aligned */
  const uint32_t sring = sq + WG_Q_BYTES;                /* [stage][K, V] */
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3;

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
  const int q0 = it.q0, rows = min(WG_ROWS, G * q_b - u * WG_ROWS);
  if (rows <= 0) return; /* the same in the whole block */
  const int j0 = s * chunk, j1 = min(n_b, j0 + chunk), base = n_b - q_b;

  /* my chunk of slot 0 of this KV head, in bytes, and the bytes from one slot to the next */
  const uint32_t stride = (uint32_t)kv_heads * HEAD_DIM * (uint32_t)sizeof(attn_bf16);
  const int my_chunk = (int)threadIdx.x % WG_CHUNKS;
  const char *kc = (const char *)(k + (size_t)kvh * HEAD_DIM + my_chunk * 8);
  const char *vc = (const char *)(v + (size_t)kvh * HEAD_DIM + my_chunk * 8);
  const int *table = block_table + (size_t)b * max_blocks;
  asm("" : "+l"(table)); /* kept in a register: else rebuilt from the parameters for every row */

  /* My rows: 16 warp + g and + 8 of the unit. */
  int lim[2];
  uint32_t bits[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf)
    wg_row_mask(&lim[hf], &bits[hf], u * WG_ROWS + warp * 16 + g + 8 * hf, G, q_b, n_b, j1, mask,
                tree, q0);
  const int lim_warp = __reduce_min_sync(0xffffffffu, min(lim[0], lim[1]));

  wg_load_q(sq, q, q0, u, kvh, G, rows, heads);
  cp_async_commit();
  const int n_tiles = attn_cdiv(j1 - j0, WG_BN);
  int pages[WG_ROWS_PER_THREAD]; /* of the next tile to copy */
  for (int st = 0; st < WG_STAGES - 1; ++st) {
    if (st < n_tiles) {
      wg_pages(pages, table, shift, j0 + st * WG_BN, j1);
      wg_load_tile(sring + st * 2 * WG_TILE_BYTES, sring + (st * 2 + 1) * WG_TILE_BYTES, kc, vc,
                   stride, pages, shift, j0 + st * WG_BN, j1);
    }
    cp_async_commit();
  }
  wg_pages(pages, table, shift, j0 + (WG_STAGES - 1) * WG_BN, j1);

  float acc[WG_NO], row_m[2] = {-INFINITY, -INFINITY}, row_l[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < WG_NO; ++i) acc[i] = 0.f;

  const uint64_t dq = wgmma_desc(sq, 16, 1024); /* Q's first k-step: the same for every tile */
  int slot = 0;
  for (int t = 0; t < n_tiles; ++t) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(WG_STAGES - 2));
    fence_proxy_async(); /* my copies, ordered before the tensor cores read them */
    __syncthreads();     /* every thread's copies of tile t; every thread is past tile t - 1 */
    {
      const int ahead = t + WG_STAGES - 1;
      const int ws = slot == 0 ? WG_STAGES - 1 : slot - 1; /* tile t - 1's slot */
      if (ahead < n_tiles) {
        wg_load_tile(sring + ws * 2 * WG_TILE_BYTES, sring + (ws * 2 + 1) * WG_TILE_BYTES, kc, vc,
                     stride, pages, shift, j0 + ahead * WG_BN, j1);
        wg_pages(pages, table, shift, j0 + (ahead + 1) * WG_BN, j1); /* used next tile */
      }
      cp_async_commit(); /* possibly empty: one group per tile */
    }
    const uint32_t sk = sring + slot * 2 * WG_TILE_BYTES, sv = sk + WG_TILE_BYTES;

    float sc[WG_NS];
#pragma unroll
    for (int i = 0; i < WG_NS; ++i) sc[i] = 0.f;
    wgmma_fence();
    const uint64_t dk = wgmma_desc(sk, 16, 1024);
#pragma unroll
    for (int ks = 0; ks < WG_KS; ++ks) {
      const uint32_t col = (ks & 3) * 32; /* bytes along the row, inside the panel */
      const uint64_t da = wgmma_desc_at(dq, (ks >> 2) * WG_ROWS * 128 + col);
      const uint64_t db = wgmma_desc_at(dk, (ks >> 2) * WG_BN * 128 + col);
      WG_WGMMA_S(sc, da, db, ks > 0);
    }
    wgmma_commit();
    wgmma_wait0();
    reg_fence(sc, WG_NS);

    uint32_t pa[WG_PK][4];
    wg_softmax(sc, row_m, row_l, acc, pa, lim, bits, lim_warp, base, j1, j0 + t * WG_BN, t4,
               scale_log2);

    wgmma_fence();
    const uint64_t dv0 = wgmma_desc(sv, WG_BN * 128, 1024);
#pragma unroll
    for (int kk = 0; kk < WG_PK; ++kk) {
      const uint64_t dv = wgmma_desc_at(dv0, kk * 16 * 128);
      WG_WGMMA_PV(acc, pa[kk], dv, 1);
    }
    wgmma_commit();
    wgmma_wait0();
    reg_fence(acc, WG_NO);
    slot = slot + 1 == WG_STAGES ? 0 : slot + 1;
  }
  asm volatile("cp.async.wait_all;\n" ::);

  /* O / l and the log-sum-exp of my two rows: into O when the sequence is one chunk, else into
   * the chunk's partial state (fp32), merged as version 1 merges them. */
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float l = row_l[hf];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int r = warp * 16 + g + 8 * hf, gr = u * WG_ROWS + r;
    if (r >= rows) continue;
    const float inv = l > 0.f ? 1.f / l : 0.f; /* a row that saw no key: O = 0 */
    const float lse_r = l > 0.f ? (row_m[hf] + log2f(l)) * WG_LN2 : -INFINITY;
    const size_t orow = ((size_t)q0 + gr / G) * heads + kvh * G + gr % G;
    if (n_chunks == 1) {
#pragma unroll
      for (int dt = 0; dt < HEAD_DIM / 8; ++dt)
        *(uint32_t *)(o + orow * HEAD_DIM + dt * 8 + t4 * 2) =
            pack_bf16x2(acc[4 * dt + 2 * hf] * inv, acc[4 * dt + 2 * hf + 1] * inv);
      if (t4 == 0) lse[orow] = lse_r;
    } else {
      const size_t slot_r = (((size_t)item * kv_heads + kvh) * units + u) * WG_ROWS + r;
#pragma unroll
      for (int dt = 0; dt < HEAD_DIM / 8; ++dt)
        *(float2 *)(part_o + slot_r * HEAD_DIM + dt * 8 + t4 * 2) =
            make_float2(acc[4 * dt + 2 * hf] * inv, acc[4 * dt + 2 * hf + 1] * inv);
      if (t4 == 0) part_lse[slot_r] = lse_r;
    }
  }
  /* More than one chunk and the merge is the kernel's own (count set: few rows, or few chunks,
   * l10_merge_inside());
   * else version 1's merge kernel runs after this one. */
  if (n_chunks > 1 && count)
    l10_merge_chunks(part_o, part_lse, count, item, s, n_chunks, q0, kvh, u, kv_heads, units, rows,
                     heads, (size_t)items * kv_heads * units, o, lse, smem);
}

/** One block per (item, KV head, unit), one warpgroup: one step (l10_wg()). The part stays in
 * the kernel's parameter space (__grid_constant__), read where it is used. Launched behind the
 * kernel before it (l10_wg_after()), the grid's last block waits for that kernel before it exits:
 * then this grid ends after it, and a launch behind this one may read both grids' outputs. The
 * other blocks do not wait, so they run beside it wherever it leaves room. */
static __global__ void __launch_bounds__(WG_THREADS, WG_MIN_BLOCKS)
    WG_KERNEL(const __grid_constant__ wg_parts parts) {
  wg_block(&parts.p[0], blockIdx.x);
  if (parts.p[0].after && blockIdx.x + 1 == gridDim.x)
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

/** The same for two steps in one launch (l10_wg_pair()): part 0's blocks, then part 1's; each
 * branch reads its own part's fields. A kernel of its own, so that a one-step launch runs the
 * code it ran before. */
static __global__ void __launch_bounds__(WG_THREADS, WG_MIN_BLOCKS)
    WG_PAIR_KERNEL(const __grid_constant__ wg_parts parts) {
  if (blockIdx.x < (unsigned)parts.p[0].blocks)
    wg_block(&parts.p[0], blockIdx.x);
  else
    wg_block(&parts.p[1], blockIdx.x - (unsigned)parts.p[0].blocks);
}

/** Blocks of the kernel one SM holds, queried once; 0 without a device. */
extern "C" int WG_PER_SM(void) {
  static int per_sm = 0;
  if (per_sm > 0) return per_sm;
  int n = 0;
  if (cudaFuncSetAttribute(WG_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM_BYTES) !=
          cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, WG_KERNEL, WG_THREADS, WG_SMEM_BYTES) !=
          cudaSuccess) {
    (void)cudaGetLastError(); /* no device: leave no error behind */
    return 0;
  }
  per_sm = n;
  return n;
}

/** Part @p p of a launch from step @p st (checked), its outputs and workspace; @p here: the
 * chunks merged inside the kernel. */
static cudaError_t wg_part_make(const l10_step *st, void *o, float *lse, void *workspace,
                                size_t workspace_bytes, wg_part *p, int *here) {
  char err[160];
  if (!st || !o || !lse || l10_step_check(st, err, sizeof err) != 0 || st->dim != HEAD_DIM ||
      st->k_scale)
    return cudaErrorInvalidValue;
  int shift = 0;
  while ((1 << shift) < st->block_size) ++shift;
  const int units = l10_units_per_kv_head(st->heads, st->kv_heads, st->max_q);
  const int items = l10_wg_items(st);
  const long long blocks = (long long)items * st->kv_heads * units;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  const size_t need = l10_wg_workspace_bytes(st);
  if (need && (!workspace || workspace_bytes < need)) return cudaErrorInvalidValue;
  l10_merge_workspace(need ? workspace : NULL, (size_t)blocks, &p->part_o, &p->part_lse, &p->count,
                      &p->plan);
  /* 1: the chunks merged inside the kernel; 0: by version 1's merge kernel after it */
  *here = l10_merge_inside(st->heads, st->kv_heads, st->max_q, items, st->batch);
  if (!*here) p->count = NULL;
  p->q = (const attn_bf16 *)st->q, p->k = (const attn_bf16 *)st->k_cache;
  p->v = (const attn_bf16 *)st->v_cache, p->block_table = st->block_table;
  p->o = (attn_bf16 *)o, p->lse = lse;
  p->q_start = st->q_start, p->q_lens = st->q_lens, p->seq_lens = st->seq_lens, p->tree = st->tree;
  p->heads = st->heads, p->kv_heads = st->kv_heads, p->max_q = st->max_q;
  p->max_seq_kv = st->max_seq_kv, p->max_blocks = st->max_blocks, p->shift = shift;
  p->mask = (int)st->mask, p->scale_log2 = st->scale * WG_LOG2E;
  p->units = units, p->batch = st->batch, p->items = items, p->blocks = (int)blocks;
  p->after = 0;
  return cudaSuccess;
}

/** One launch of parts @p a and @p b (b.blocks 0: one step), then each part's merge kernel where
 * its chunks are not merged inside. */
static cudaError_t wg_launch(const l10_step *sa, const wg_part *a, int here_a, const l10_step *sb,
                             const wg_part *b, int here_b, cudaStream_t stream) {
  if ((long long)a->blocks + b->blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  static int smem_set = 0; /* once: a launch being captured makes no other CUDA call */
  if (!smem_set) {
    ATTN_TRY(cudaFuncSetAttribute(WG_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  WG_SMEM_BYTES));
    ATTN_TRY(cudaFuncSetAttribute(WG_PAIR_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  WG_SMEM_BYTES));
    smem_set = 1;
  }
  if (a->after) { /* one step, a programmatic dependent launch (l10_wg_after()) */
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = l10_launch_config(dim3((unsigned)a->blocks), dim3(WG_THREADS),
                                                     WG_SMEM_BYTES, stream, 1, &attr);
    wg_parts parts;
    memset(&parts, 0, sizeof parts);
    parts.p[0] = *a;
    ATTN_TRY(cudaLaunchKernelEx(&cfg, WG_KERNEL, parts));
    if (a->items > sa->batch && !here_a)
      ATTN_TRY(WG_MERGE(sa, a->part_o, a->part_lse, (const int *)a->plan, a->o, a->lse, a->units,
                        stream));
    return cudaSuccess;
  }
  wg_parts parts;
  parts.p[0] = *a, parts.p[1] = *b;
  if (b->blocks > 0)
    WG_PAIR_KERNEL<<<(unsigned)(a->blocks + b->blocks), WG_THREADS, WG_SMEM_BYTES, stream>>>(parts);
  else
    WG_KERNEL<<<(unsigned)a->blocks, WG_THREADS, WG_SMEM_BYTES, stream>>>(parts);
  ATTN_TRY_LAUNCH();
  if (a->items > sa->batch && !here_a)
    ATTN_TRY(
        WG_MERGE(sa, a->part_o, a->part_lse, (const int *)a->plan, a->o, a->lse, a->units, stream));
  if (sb && b->blocks > 0 && b->items > sb->batch && !here_b)
    ATTN_TRY(
        WG_MERGE(sb, b->part_o, b->part_lse, (const int *)b->plan, b->o, b->lse, b->units, stream));
  return cudaSuccess;
}

/** One step: its part, then its launch (@p after: behind the kernel before it). */
static cudaError_t wg_one(const l10_step *st, void *o, float *lse, void *workspace,
                          size_t workspace_bytes, int after, cudaStream_t stream) {
  wg_part a, none;
  int here = 0;
  /* a step it refuses is the caller's answer, as version 1's launcher gives it: no report */
  const cudaError_t e = wg_part_make(st, o, lse, workspace, workspace_bytes, &a, &here);
  if (e != cudaSuccess) return e;
  a.after = after;
  memset(&none, 0, sizeof none);
  return wg_launch(st, &a, here, NULL, &none, 0, stream);
}

/** The launcher, l10_wg_d64(), _d128() or _d256(): version 1's grid, its items for version 4's
 * blocks per SM (l10_wg_items(), l10_wg_workspace_bytes()); the chunks merged as version 1
 * merges them (inside the kernel with few rows, else version 1's merge kernel after it). See
 * serving_decode.h. */
extern "C" cudaError_t WG_LAUNCH(const l10_step *st, void *o, float *lse, void *workspace,
                                 size_t workspace_bytes, cudaStream_t stream) {
  return wg_one(st, o, lse, workspace, workspace_bytes, 0, stream);
}

/** The same behind the kernel before it on @p stream, l10_wg_after_d64(), _d128() or _d256(): see
 * serving_decode.h. */
extern "C" cudaError_t WG_AFTER(const l10_step *st, void *o, float *lse, void *workspace,
                                size_t workspace_bytes, cudaStream_t stream) {
  return wg_one(st, o, lse, workspace, workspace_bytes, 1, stream);
}

/** Two steps in one launch, l10_wg_pair_d64(), _d128() or _d256(): see serving_decode.h. */
extern "C" cudaError_t WG_PAIR(const l10_step *sa, void *o_a, float *lse_a, void *ws_a,
                               size_t ws_a_bytes, const l10_step *sb, void *o_b, float *lse_b,
                               void *ws_b, size_t ws_b_bytes, cudaStream_t stream) {
  wg_part a, b;
  int here_a = 0, here_b = 0;
  cudaError_t e = wg_part_make(sa, o_a, lse_a, ws_a, ws_a_bytes, &a, &here_a);
  if (e == cudaSuccess) e = wg_part_make(sb, o_b, lse_b, ws_b, ws_b_bytes, &b, &here_b);
  if (e != cudaSuccess) return e;
  return wg_launch(sa, &a, here_a, sb, &b, here_b, stream);
}
