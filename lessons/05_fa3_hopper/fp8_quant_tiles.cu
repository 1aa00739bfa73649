/* Lesson 05, version 7's conversion: bf16 Q, K, V to e4m3 in one pass, one power-of-two scale per
 * tile of 128 rows (the tiles the attention kernel loads), V transposed and its keys permuted as in
 * version 6 (fp8_workspace.cuh), in registers (v_tile()); then the flat entry points of version 7,
 * and version 12's pass, the same kernel over K and V alone.
 *
 * Version 6 needs each tensor's largest |x| before it can convert a single value, so it reads Q, K
 * and V twice. Here a block owns one tile: it loads the tile, reduces the tile's largest |x|, picks
 * the scale, converts what it already holds and writes it. Every byte is read once and written once
 * (the floor: 2 bytes in and 1 out per value). */
#include <limits.h>

#include "attn_cuda.cuh"
#include "fa3_hopper.h"
#include "fp8_convert.cuh"

/** Threads per block: a tile of 128 rows x 128 values is 2048 chunks of 8 bf16, 8 per thread. */
#define QT_THREADS 256
/** Chunks of 8 values per thread. */
#define QT_CHUNKS (L05_FP8_KEY_PAD * 16 / QT_THREADS)
/** The block's largest |x|: each warp's by shuffles, then the 8 warps' through shared memory. */
static __device__ __forceinline__ float block_max(float m, float *red) {
#pragma unroll
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
  __syncthreads();
  float a = red[0];
#pragma unroll
  for (int w = 1; w < QT_THREADS / 32; ++w) a = fmaxf(a, red[w]);
  return a;
}

/** One tile of Q or K: rows r0 .. r0 + 127 of head `h` of a [batch, seq, nh, 128] tensor (rows past
 * seq read as zeros and are not written), to e4m3 at the same place of `y`, its descale in `*ds`.
 */
static __device__ __forceinline__ void qk_tile(const attn_bf16 *__restrict__ x,
                                               uint2 *__restrict__ y, float *__restrict__ ds, int b,
                                               int h, int nh, int seq, int r0, float *red) {
  uint4 c[QT_CHUNKS];
  float m = 0.f;
#pragma unroll
  for (int u = 0; u < QT_CHUNKS; ++u) { /* all loads first: 8 x 16 bytes in flight per thread */
    const int i = (threadIdx.x + u * QT_THREADS) >> 4, d0 = (threadIdx.x & 15) * 8;
    const size_t at = (((size_t)b * seq + r0 + i) * nh + h) * 128 + d0;
    c[u] = r0 + i < seq ? *(const uint4 *)(x + at) : make_uint4(0, 0, 0, 0);
    m = fmaxf(m, l05_absmax8(c[u]));
  }
  const int e = l05_tile_exponent(block_max(m, red));
  const float f = l05_pow2f(e);
  if (threadIdx.x == 0) *ds = l05_pow2f(-e);
#pragma unroll
  for (int u = 0; u < QT_CHUNKS; ++u) {
    const int i = (threadIdx.x + u * QT_THREADS) >> 4, d0 = (threadIdx.x & 15) * 8;
    if (r0 + i >= seq) continue;
    y[((((size_t)b * seq + r0 + i) * nh + h) * 128 + d0) / 8] = l05_e4m3x8(c[u], f);
  }
}

/** One tile of V: keys k0 .. k0 + 127 of kv head `kvh`, written transposed (one 128-byte row per
 * head-dimension index, keys permuted by l05_fp8_key()) with the tile's own scale; keys past seq_kv
 * become zeros. No staging in shared memory: a word of the output holds one dim of the four keys
 * 2 t, 2 t + 1, 2 t + 8, 2 t + 9 of a group of 16 (quad 4 G + t, for group G), so a thread loads
 * those four keys, 8 dims of each (one 16-byte chunk per key), and turns the 4 x 8 codes into 8
 * words with byte permutes. Each thread takes two (quad, 8-dim chunk) items; a warp's lanes are 8
 * quads by 4 chunks, so that one load reads 64 contiguous bytes of 8 keys and one store writes 32
 * contiguous bytes (8 words) of 4 dim rows: whole sectors both ways. */
static __device__ __forceinline__ void v_tile(const attn_bf16 *__restrict__ v,
                                              uint32_t *__restrict__ vt, float *__restrict__ ds,
                                              int b, int kvh, int kv_heads, int seq_kv, int seq_pad,
                                              int k0, float *red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int quad = (warp & 3) * 8 + (lane & 7);       /* 0 .. 31: word `quad` of each dim row */
  const int ch0 = (warp >> 2) * 4 + (lane >> 3);      /* 0 .. 7, and ch0 + 8: dims 8 ch .. + 7 */
  const int key0 = (quad >> 2) * 16 + 2 * (quad & 3); /* keys key0, + 1, + 8, + 9 */
  const size_t row = (size_t)kv_heads * 128;          /* one key further in V */
  const attn_bf16 *src = v + ((size_t)b * seq_kv + k0 + key0) * row + (size_t)kvh * 128 + 8 * ch0;
  uint4 c[2][4];
  float m = 0.f;
#pragma unroll
  for (int u = 0; u < 4; ++u) { /* all loads first: 8 x 16 bytes in flight per thread */
    const int dk = (u & 1) + 8 * (u >> 1);
    const bool in = k0 + key0 + dk < seq_kv;
#pragma unroll
    for (int it = 0; it < 2; ++it) {
      c[it][u] = in ? *(const uint4 *)(src + dk * row + 64 * it) : make_uint4(0, 0, 0, 0);
      m = fmaxf(m, l05_absmax8(c[it][u]));
    }
  }
  const int e = l05_tile_exponent(block_max(m, red));
  const float f = l05_pow2f(e);
  if (threadIdx.x == 0) *ds = l05_pow2f(-e);
  const uint32_t rs = (uint32_t)seq_pad / 4; /* words per dim row */
  uint32_t *out = vt + ((size_t)b * kv_heads + kvh) * 128 * rs + k0 / 4 + quad;
#pragma unroll
  for (int it = 0; it < 2; ++it) {
    uint2 x[4]; /* key u's 8 codes: dims 8 ch .. 8 ch + 3 in .x, the next 4 in .y, lowest first */
#pragma unroll
    for (int u = 0; u < 4; ++u) x[u] = l05_e4m3x8(c[it][u], f);
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const uint32_t k_a = hf ? x[0].y : x[0].x, k_b = hf ? x[1].y : x[1].x;
      const uint32_t k_c = hf ? x[2].y : x[2].x, k_d = hf ? x[3].y : x[3].x;
      const uint32_t ab01 = __byte_perm(k_a, k_b, 0x5140), ab23 = __byte_perm(k_a, k_b, 0x7362);
      const uint32_t cd01 = __byte_perm(k_c, k_d, 0x5140), cd23 = __byte_perm(k_c, k_d, 0x7362);
      const uint32_t w[4] = {__byte_perm(ab01, cd01, 0x5410), __byte_perm(ab01, cd01, 0x7632),
                             __byte_perm(ab23, cd23, 0x5410), __byte_perm(ab23, cd23, 0x7632)};
      const int d0 = 8 * (ch0 + 8 * it) + 4 * hf;
#pragma unroll
      for (int j = 0; j < 4; ++j) out[(uint32_t)(d0 + j) * rs] = w[j];
    }
  }
}

/** One launch for the three tensors: blockIdx.x counts Q's tiles (head-major), then K's, then V's;
 * blockIdx.y is the batch index. */
static __global__ void __launch_bounds__(QT_THREADS)
    l05_quant_tiles_kernel(const attn_bf16 *__restrict__ q, const attn_bf16 *__restrict__ k,
                           const attn_bf16 *__restrict__ v, unsigned char *__restrict__ ws,
                           l05_fp8_layout l, int heads, int kv_heads, int seq_q, int seq_kv) {
  __shared__ float red[QT_THREADS / 32];
  const int b = blockIdx.y;
  int t = blockIdx.x;
  const int nq = heads * l.q_tiles, nk = kv_heads * l.kv_tiles;
  if (t < nq) {
    const int h = t / l.q_tiles, i = t % l.q_tiles;
    qk_tile(q, (uint2 *)(ws + l.q), (float *)(ws + l.dq) + ((size_t)b * heads + h) * l.q_tiles + i,
            b, h, heads, seq_q, i * L05_FP8_KEY_PAD, red);
    return;
  }
  t -= nq;
  const int kvh = (t % nk) / l.kv_tiles, j = t % l.kv_tiles;
  const size_t at = ((size_t)b * kv_heads + kvh) * l.kv_tiles + j;
  float *rec = (float *)(ws + l.dkv) + 2 * at; /* {K's descale, V's} */
  if (t < nk) {
    qk_tile(k, (uint2 *)(ws + l.k), rec, b, kvh, kv_heads, seq_kv, j * L05_FP8_KEY_PAD, red);
  } else {
    v_tile(v, (uint32_t *)(ws + l.vt), rec + 1, b, kvh, kv_heads, seq_kv, l.seq_pad,
           j * L05_FP8_KEY_PAD, red);
  }
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
  const long long blocks = (long long)heads * l.q_tiles + 2LL * kv_heads * l.kv_tiles;
  if (blocks > INT_MAX || batch > 65535) return cudaErrorInvalidConfiguration;
  l05_quant_tiles_kernel<<<dim3((unsigned)blocks, batch), QT_THREADS, 0, stream>>>(
      (const attn_bf16 *)q, (const attn_bf16 *)k, (const attn_bf16 *)v, (unsigned char *)workspace,
      l, heads, kv_heads, seq_q, seq_kv);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
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
  const long long blocks = 2LL * kv_heads * l.kv_tiles;
  if (blocks > INT_MAX || batch > 65535) return cudaErrorInvalidConfiguration;
  l05_quant_tiles_kernel<<<dim3((unsigned)blocks, batch), QT_THREADS, 0, stream>>>(
      NULL, (const attn_bf16 *)k, (const attn_bf16 *)v, (unsigned char *)workspace, l, heads,
      kv_heads, 0, seq_kv);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
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
