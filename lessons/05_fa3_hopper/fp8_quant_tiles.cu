/* Lesson 05, version 7's conversion: bf16 Q, K, V to e4m3 in one pass, one power-of-two scale per
 * tile of 128 rows (the tiles the attention kernel loads), V transposed and its keys permuted as in
 * version 6 (fp8_workspace.cuh); then the flat entry points of version 7, and version 12's pass,
 * the same kernel over K and V alone.
 *
 * Version 6 needs each tensor's largest |x| before it can convert a single value, so it reads Q, K
 * and V twice. Here a block owns one tile: TMA brings the tile into shared memory, the block
 * reduces its largest |x|, picks the scale, and converts and writes it from there. Every byte is
 * read once and written once (the floor: 2 bytes in and 1 out per value). */
#include <cuda.h>
#include <limits.h>
#include <string.h>

#include "attn_cuda.cuh"
#include "fa3_hopper.h"
#include "fp8_convert.cuh"

/** Threads per block: 4 warps convert a tile of 128 rows x 128 values (2048 chunks of 8 bf16). */
#define QT_THREADS 128
/** Chunks of 8 values per thread. */
#define QT_CHUNKS (L05_FP8_KEY_PAD * 16 / QT_THREADS)
/** A tile in shared memory: 128 rows of bf16, two 64-column panels, 128-byte swizzled (TMA). */
#define QT_TILE_BYTES (L05_FP8_KEY_PAD * 128 * 2)
/** Dynamic shared memory: the tile, its mbarrier, the warps' maxima, and 1024 bytes to align the
 * tile to a swizzle atom. */
#define QT_SMEM_BYTES (QT_TILE_BYTES + 64 + 1024)

/** The block's largest |x| from each thread's, as bf16 bits two at a time (non-negative floats
 * order as integers): the warps' by shuffles, then the 4 warps' through shared memory. */
static __device__ __forceinline__ float block_max(uint32_t m, uint32_t *red) {
#pragma unroll
  for (int o = 16; o; o >>= 1) m = __vmaxu2(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
  __syncthreads();
  uint32_t a = red[0];
#pragma unroll
  for (int w = 1; w < QT_THREADS / 32; ++w) a = __vmaxu2(a, red[w]);
  return __uint_as_float(max(a & 0xFFFFu, a >> 16) << 16);
}

/** |x| of 8 bf16 values (one chunk), folded into @p m two at a time. */
static __device__ __forceinline__ uint32_t absmax_bits(uint32_t m, uint4 c) {
  return __vmaxu2(m, __vmaxu2(__vmaxu2(c.x & 0x7FFF7FFFu, c.y & 0x7FFF7FFFu),
                              __vmaxu2(c.z & 0x7FFF7FFFu, c.w & 0x7FFF7FFFu)));
}

/** One tile of Q or K, landed at @p tile (rows past seq as zeros): its rows r0 .. r0 + 127 below
 * seq to e4m3 at the same place of `y` (head `h` of a [batch, seq, nh, 128] tensor), its descale
 * in `*ds`. A thread's chunks are i = tid + 128 u: row i / 16, chunk i % 16, so a warp stores two
 * whole 128-byte rows of codes at a time. */
static __device__ __forceinline__ void qk_tile(uint32_t tile, uint2 *__restrict__ y,
                                               float *__restrict__ ds, int b, int h, int nh,
                                               int seq, int r0, uint32_t *red) {
  uint32_t mb = 0;
#pragma unroll
  for (int u = 0; u < QT_CHUNKS; ++u) {
    const int i = threadIdx.x + u * QT_THREADS;
    mb = absmax_bits(mb, ld_shared_v4(tile + sw128_off(i >> 4, i & 15, L05_FP8_KEY_PAD)));
  }
  const int e = l05_tile_exponent(block_max(mb, red));
  const float f = l05_pow2f(e);
  if (threadIdx.x == 0) *ds = l05_pow2f(-e);
#pragma unroll 4
  for (int u = 0; u < QT_CHUNKS; ++u) {
    const int i = threadIdx.x + u * QT_THREADS, row = i >> 4;
    if (r0 + row >= seq) break; /* rows only grow with u */
    const uint4 c = ld_shared_v4(tile + sw128_off(row, i & 15, L05_FP8_KEY_PAD));
    y[((((size_t)b * seq + r0 + row) * nh + h) * 128 + (i & 15) * 8) / 8] = l05_e4m3x8(c, f);
  }
}

/** One tile of V, landed at @p tile (keys past seq_kv as zeros): written transposed (one 128-byte
 * row per head-dimension index, keys permuted by l05_fp8_key()) with the tile's own scale. A word
 * of the output holds one dim of the four keys 2 t, 2 t + 1, 2 t + 8, 2 t + 9 of a group of 16
 * (word `quad` = 4 G + t, for group G: l05_vt_key()), so a thread takes those four keys, 8 dims of
 * each (one chunk per key), and turns the 4 x 8 codes into 8 words with byte permutes
 * (l05_vt_words()). A warp's lanes are 8 quads by 4
 * chunks, so that one store writes 32 contiguous bytes (8 words) of 4 dim rows. */
static __device__ __forceinline__ void v_tile(uint32_t tile, uint32_t *__restrict__ vt,
                                              float *__restrict__ ds, int b, int kvh, int kv_heads,
                                              int seq_pad, int k0, uint32_t *red) {
  uint32_t mb = 0;
#pragma unroll
  for (int u = 0; u < QT_CHUNKS; ++u) {
    const int i = threadIdx.x + u * QT_THREADS;
    mb = absmax_bits(mb, ld_shared_v4(tile + sw128_off(i >> 4, i & 15, L05_FP8_KEY_PAD)));
  }
  const int e = l05_tile_exponent(block_max(mb, red));
  const float f = l05_pow2f(e);
  if (threadIdx.x == 0) *ds = l05_pow2f(-e);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int quad = warp * 8 + (lane & 7);    /* 0 .. 31: word `quad` of each dim row */
  const uint32_t rs = (uint32_t)seq_pad / 4; /* words per dim row */
  uint32_t *out = vt + ((size_t)b * kv_heads + kvh) * 128 * rs + k0 / 4 + quad;
#pragma unroll 1
  for (int it = 0; it < 4; ++it) {
    const int ch = (lane >> 3) + 4 * it; /* dims 8 ch .. 8 ch + 7 */
    uint2 x[4]; /* key u's 8 codes: dims 8 ch .. 8 ch + 3 in .x, the next 4 in .y, lowest first */
#pragma unroll
    for (int u = 0; u < 4; ++u)
      x[u] =
          l05_e4m3x8(ld_shared_v4(tile + sw128_off(l05_vt_key(quad, u), ch, L05_FP8_KEY_PAD)), f);
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      uint32_t w[4];
      if (hf)
        l05_vt_words(x[0].y, x[1].y, x[2].y, x[3].y, w);
      else
        l05_vt_words(x[0].x, x[1].x, x[2].x, x[3].x, w);
      const int d0 = 8 * ch + 4 * hf;
#pragma unroll
      for (int j = 0; j < 4; ++j) out[(uint32_t)(d0 + j) * rs] = w[j];
    }
  }
}

/** One launch for the three tensors: blockIdx.x counts Q's tiles (head-major), then K's, then V's;
 * blockIdx.y is the batch index. Thread 0 brings the block's tile into shared memory with TMA (two
 * 64-column boxes; rows past the tensor's end arrive as zeros), and the four warps convert it from
 * there: with the copies in flight on an mbarrier rather than in registers, an SM holds six tiles
 * on their way at once. */
static __global__ void __launch_bounds__(QT_THREADS)
    l05_quant_tiles_kernel(const __grid_constant__ CUtensorMap tm_q,
                           const __grid_constant__ CUtensorMap tm_k,
                           const __grid_constant__ CUtensorMap tm_v, unsigned char *__restrict__ ws,
                           l05_fp8_layout l, int heads, int kv_heads, int seq_q, int seq_kv) {
  extern __shared__ unsigned char qt_smem[];
  const uint32_t tile = (smem_u32(qt_smem) + 1023u) & ~1023u;
  const uint32_t bar = tile + QT_TILE_BYTES;
  uint32_t *red = (uint32_t *)(qt_smem + (tile - smem_u32(qt_smem)) + QT_TILE_BYTES + 16);
  const int b = blockIdx.y;
  int t = blockIdx.x;
  const int nq = heads * l.q_tiles, nk = kv_heads * l.kv_tiles;
  /* which tensor, head and tile */
  const CUtensorMap *map = &tm_q;
  int h = 0, r0 = 0;
  if (t < nq) {
    h = t / l.q_tiles, r0 = (t % l.q_tiles) * L05_FP8_KEY_PAD;
  } else {
    const int u = t - nq;
    map = u < nk ? &tm_k : &tm_v;
    h = (u % nk) / l.kv_tiles, r0 = (u % l.kv_tiles) * L05_FP8_KEY_PAD;
  }
  if (threadIdx.x == 0) {
    mbar_init(bar, 1);
    mbar_init_fence();
    mbar_arrive_expect_tx(bar, QT_TILE_BYTES);
    tma_load_4d(tile, map, bar, 0, h, r0, b);
    tma_load_4d(tile + QT_TILE_BYTES / 2, map, bar, 64, h, r0, b);
  }
  __syncthreads(); /* the barrier exists before anyone waits on it */
  mbar_wait(bar, 0);
  if (t < nq) {
    qk_tile(tile, (uint2 *)(ws + l.q),
            (float *)(ws + l.dq) + ((size_t)b * heads + h) * l.q_tiles + r0 / L05_FP8_KEY_PAD, b, h,
            heads, seq_q, r0, red);
    return;
  }
  t -= nq;
  const size_t at = ((size_t)b * kv_heads + h) * l.kv_tiles + r0 / L05_FP8_KEY_PAD;
  float *rec = (float *)(ws + l.dkv) + 2 * at; /* {K's descale, V's} */
  if (t < nk)
    qk_tile(tile, (uint2 *)(ws + l.k), rec, b, h, kv_heads, seq_kv, r0, red);
  else
    v_tile(tile, (uint32_t *)(ws + l.vt), rec + 1, b, h, kv_heads, l.seq_pad, r0, red);
}

/* The launch: Q's, K's and V's tensor maps (lesson 05's bf16 map, boxes of 64 columns x 128 rows;
 * Q's only when there are Q rows), then one block per tile. */
static cudaError_t launch_tiles(const void *q, const void *k, const void *v, int batch, int heads,
                                int kv_heads, int seq_q, int seq_kv, void *workspace,
                                const l05_fp8_layout *l, cudaStream_t stream) {
  CUtensorMap tm_q, tm_k, tm_v;
  memset(&tm_q, 0, sizeof tm_q);
  if (seq_q > 0) ATTN_TRY(l05_tensor_map(&tm_q, q, batch, seq_q, heads, 128, L05_FP8_KEY_PAD));
  ATTN_TRY(l05_tensor_map(&tm_k, k, batch, seq_kv, kv_heads, 128, L05_FP8_KEY_PAD));
  ATTN_TRY(l05_tensor_map(&tm_v, v, batch, seq_kv, kv_heads, 128, L05_FP8_KEY_PAD));
  const long long blocks = (long long)heads * l->q_tiles + 2LL * kv_heads * l->kv_tiles;
  if (blocks > INT_MAX || batch > 65535) return cudaErrorInvalidConfiguration;
  l05_quant_tiles_kernel<<<dim3((unsigned)blocks, batch), QT_THREADS, QT_SMEM_BYTES, stream>>>(
      tm_q, tm_k, tm_v, (unsigned char *)workspace, *l, heads, kv_heads, seq_q, seq_kv);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" size_t l05_fp8t_workspace_bytes(int batch, int heads, int kv_heads, int seq_q,
                                           int seq_kv, int dim) {
  return l05_fp8_workspace_bytes(batch, heads, kv_heads, seq_q, seq_kv, dim);
}

extern "C" cudaError_t l05_fp8t_quantize(const void *q, const void *k, const void *v, int batch,
                                         int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                                         void *workspace, size_t workspace_bytes,
                                         cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  if (dim != 128) return cudaErrorInvalidValue;
  const l05_fp8_layout l = l05_fp8_layout_of(batch, heads, kv_heads, seq_q, seq_kv, dim);
  if (!workspace || workspace_bytes < l.bytes) return cudaErrorInvalidValue;
  return launch_tiles(q, k, v, batch, heads, kv_heads, seq_q, seq_kv, workspace, &l, stream);
}

/* Version 12's conversion: K and V alone (its kernel converts Q itself), into a workspace laid out
 * for no Q rows (l05_fp8_layout_of() with seq_q = 0: no Q, no Q descales), by the same kernel,
 * whose grid then starts at K's tiles. */
extern "C" size_t l05_fp8q_workspace_bytes(int batch, int heads, int kv_heads, int seq_q,
                                           int seq_kv, int dim) {
  if (l05_fp8_workspace_bytes(batch, heads, kv_heads, seq_q, seq_kv, dim) == 0) return 0;
  return l05_fp8_layout_of(batch, heads, kv_heads, 0, seq_kv, dim).bytes; /* no Q rows */
}

extern "C" cudaError_t l05_fp8q_quantize(const void *q, const void *k, const void *v, int batch,
                                         int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                                         void *workspace, size_t workspace_bytes,
                                         cudaStream_t stream) {
  (void)q;
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  if (dim != 128) return cudaErrorInvalidValue;
  const l05_fp8_layout l = l05_fp8_layout_of(batch, heads, kv_heads, 0, seq_kv, dim);
  if (!workspace || workspace_bytes < l.bytes) return cudaErrorInvalidValue;
  return launch_tiles(NULL, k, v, batch, heads, kv_heads, 0, seq_kv, workspace, &l, stream);
}

extern "C" cudaError_t l05_fp8t_forward(const void *q, const void *k, const void *v, void *o,
                                        float *lse, int batch, int heads, int kv_heads, int seq_q,
                                        int seq_kv, int dim, int causal, float scale,
                                        void *workspace, size_t workspace_bytes,
                                        cudaStream_t stream) {
  ATTN_TRY(l05_fp8t_quantize(q, k, v, batch, heads, kv_heads, seq_q, seq_kv, dim, workspace,
                             workspace_bytes, stream));
  return l05_fp8t_attention(workspace, workspace_bytes, o, lse, batch, heads, kv_heads, seq_q,
                            seq_kv, dim, causal, scale, stream);
}
