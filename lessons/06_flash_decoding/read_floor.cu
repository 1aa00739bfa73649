/** @file
 * @brief The read floor: a plain read of as many bytes as the shape's K and V, timed the way the
 * versions are, so the lesson prints what one launch of that size can reach next to them.
 *
 * Why: the byte floor (bytes / clock x bus width) is not what a launch can reach. A launch pays
 * costs that do not shrink with its bytes (the first loads wait a full HBM latency, the last
 * blocks finish alone, the events around it take their own time), and a short one cannot hide
 * them. A version is judged against this floor, not the datasheet.
 *
 * The kernel: two buffers of half the bytes each (K and V), each block a contiguous slice of both;
 * a step of a thread issues 4 16-byte streaming loads (`ld.global.cs`, __ldcs) of each buffer
 * before it folds any of them:
 *
 *     block x:   vectors [x * slice, (x + 1) * slice) of K and of V
 *     step:      thread t loads vector i + u * 512 + t of K and of V, u = 0..3, then folds them
 *
 * 512 threads a block and 8 x SM count blocks (1056 on 132 SMs), the best of the grids measured on
 * the H200. ptxas (nvcc 13.0, sm_90) issues 5 of a step's 8 loads before the first fold and the
 * other 3 as the first ones arrive: at 4 blocks of 512 threads per SM that is still 160 KiB in
 * flight per SM. The loads are folded (xor) into one word per thread, stored only if it equals a
 * constant that zeroed buffers cannot give: nothing is written, and the compiler cannot drop the
 * loads.
 *
 * Measured: NVIDIA H200, 2026-11-24 (docs/results/h200-l06c-2026-11-24, the `read floor` lines
 * of gpu-suite.log; each buffer its own cudaMalloc, L2 flushed before each of 20 runs, the median):
 * 33.6 MB (kv 8192) 11.4 us, 2.94 TB/s, 61% of the 4814 GB/s of clock x bus width; 134 MB (kv
 * 32768) 33.4 us, 4.01 TB/s, 83%; 537 MB (kv 131072) 122.9 us, 4.37 TB/s, 91%.
 * At 134 MB and below this read stays well under 90% of HBM; at 537 MB it is just over. Neither
 * the gap between the two buffers nor where they lie changed these figures in development runs; a
 * large cudaFree just before did (see l06_floor_settle()).
 */
#include "flash_decoding.h"

#include "attn_cuda.cuh"

/** 16-byte loads of each buffer a thread issues per step before folding any. */
#define L06_FLOOR_UNROLL 4
/** Milliseconds of untimed reads before the timed ones (l06_floor_settle()). */
#define L06_FLOOR_SETTLE_MS 200.0f
/** What the fold of zeroed buffers can never be: the store it guards never happens. */
#define L06_FLOOR_IMPOSSIBLE 0x9E3779B9u

/** The four words of a vector, folded into one. */
static __device__ __forceinline__ unsigned l06_fold(uint4 v) {
  return (v.x ^ v.y) ^ (v.z ^ v.w);
}

/** Reads vectors [blockIdx.x * slice, + slice) of @p k and @p v (clipped to @p n) with streaming
 * 16-byte loads, L06_FLOOR_UNROLL of each per thread and step; the last partial step of a slice
 * is bounds-checked. Writes @p sink only if the fold equals L06_FLOOR_IMPOSSIBLE (never, for
 * zeroed buffers). */
static __global__ void __launch_bounds__(L06_FLOOR_THREADS)
    l06_read_floor_kernel(const uint4 *k, const uint4 *v, size_t n, size_t slice, unsigned *sink) {
  const size_t lo = (size_t)blockIdx.x * slice;
  const size_t hi = lo + slice < n ? lo + slice : n;
  const size_t step = (size_t)L06_FLOOR_THREADS * L06_FLOOR_UNROLL;
  unsigned acc = 0;
  size_t i = lo;
  for (; i + step <= hi; i += step) {
    uint4 a[L06_FLOOR_UNROLL], b[L06_FLOOR_UNROLL];
#pragma unroll
    for (int u = 0; u < L06_FLOOR_UNROLL; ++u) {
      const size_t j = i + (size_t)u * L06_FLOOR_THREADS + threadIdx.x;
      a[u] = __ldcs(k + j);
      b[u] = __ldcs(v + j);
    }
#pragma unroll
    for (int u = 0; u < L06_FLOOR_UNROLL; ++u) acc ^= l06_fold(a[u]) ^ l06_fold(b[u]);
  }
  if (i < hi) { /* the slice's last, partial step (hi <= lo: an empty slice, nothing to read) */
    uint4 a[L06_FLOOR_UNROLL], b[L06_FLOOR_UNROLL];
#pragma unroll
    for (int u = 0; u < L06_FLOOR_UNROLL; ++u) {
      const size_t j = i + (size_t)u * L06_FLOOR_THREADS + threadIdx.x;
      a[u] = j < hi ? __ldcs(k + j) : make_uint4(0u, 0u, 0u, 0u);
      b[u] = j < hi ? __ldcs(v + j) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < L06_FLOOR_UNROLL; ++u) acc ^= l06_fold(a[u]) ^ l06_fold(b[u]);
  }
  if (acc == L06_FLOOR_IMPOSSIBLE) *sink = acc;
}

/** One timed run: the buffers, their length in vectors, the grid and each block's slice. */
typedef struct l06_floor_run {
  const uint4 *k; /**< first buffer, zeroed */
  const uint4 *v; /**< second buffer, zeroed */
  size_t n;       /**< 16-byte vectors in each */
  size_t slice;   /**< vectors of each buffer per block */
  int blocks;     /**< grid */
} l06_floor_run;

/** attn_time()'s thunk: launch the read of @p ctx (an l06_floor_run) on @p stream. */
static cudaError_t l06_floor_launch(void *ctx, cudaStream_t stream) {
  const l06_floor_run *r = (const l06_floor_run *)ctx;
  l06_read_floor_kernel<<<r->blocks, L06_FLOOR_THREADS, 0, stream>>>(r->k, r->v, r->n, r->slice,
                                                                     (unsigned *)r->k);
  return cudaGetLastError();
}

/** Read @p r back to back, untimed, for L06_FLOOR_SETTLE_MS of GPU time (CUDA events), on
 * @p stream. Why: for a while after a large cudaFree, reads from HBM run slower, and lesson 06's
 * report runs just after the harness has freed its inputs. Development runs on the H200
 * (2026-11-24, not archived): a 537 MB read took 137 us instead of 120 during about 3 ms per GiB
 * freed: 6 ms after freeing 2 GiB, 50 ms after 17 GiB (the padded K and V of `--kv-lens
 * 128k,1024x31`, whose floor read 170 us instead of 148 without this wait), 100 ms after 34 GiB.
 * 200 ms covers about 60 GiB. */
static cudaError_t l06_floor_settle(l06_floor_run *r, cudaStream_t stream) {
  cudaEvent_t start, now;
  cudaError_t e = cudaEventCreate(&start);
  if (e != cudaSuccess) return e;
  e = cudaEventCreate(&now);
  if (e != cudaSuccess) {
    cudaEventDestroy(start);
    return e;
  }
  e = cudaEventRecord(start, stream);
  float ms = 0.0f;
  /* At least 1 us a read: the bound ends the loop if the events ever stopped telling time. */
  for (long reads = 0; e == cudaSuccess && ms < L06_FLOOR_SETTLE_MS &&
                       reads < (long)(L06_FLOOR_SETTLE_MS * 1000.0f);
       reads += 8) {
    for (int i = 0; i < 8 && e == cudaSuccess; ++i) e = l06_floor_launch(r, stream);
    if (e == cudaSuccess) e = cudaEventRecord(now, stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(now);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, now);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(now);
  return e;
}

/** Allocate @p bytes, or leave *@p p NULL and return what cudaMalloc said. */
static cudaError_t l06_floor_alloc(void **p, size_t bytes) {
  *p = NULL;
  const cudaError_t e = cudaMalloc(p, bytes);
  if (e != cudaSuccess) *p = NULL;
  return e;
}

extern "C" cudaError_t l06_read_floor(size_t bytes, int warmup, int iters, attn_timing *out,
                                      const char **skip) {
  *skip = NULL;
  const int sms = l06_sm_count();
  if (sms < 1) {
    *skip = "no GPU to count SMs on";
    return cudaSuccess;
  }
  /* Each buffer half the bytes, rounded up to whole 16-byte vectors. */
  const size_t n = (bytes / 2 + 15) / 16;
  if (n == 0) {
    *skip = "no bytes to read";
    return cudaSuccess;
  }
  l06_floor_run run;
  run.n = n;
  run.blocks = L06_FLOOR_BLOCKS_PER_SM * sms;
  /* Each block's slice, rounded up to 32 vectors (a warp's 512 bytes); the last slices may be
   * short or empty. */
  run.slice = ((n + (size_t)run.blocks - 1) / (size_t)run.blocks + 31) / 32 * 32;

  void *k = NULL, *v = NULL;
  cudaError_t e = l06_floor_alloc(&k, n * 16);
  if (e == cudaSuccess) e = l06_floor_alloc(&v, n * 16);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError(); /* leave no error behind for the next CUDA call */
    if (k) cudaFree(k);
    *skip = "not enough device memory for two buffers of half the bytes";
    return cudaSuccess;
  }
  if (e == cudaSuccess) e = cudaMemset(k, 0, n * 16);
  if (e == cudaSuccess) e = cudaMemset(v, 0, n * 16);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) {
    run.k = (const uint4 *)k;
    run.v = (const uint4 *)v;
    e = l06_floor_settle(&run, 0);
  }
  if (e != cudaSuccess)
    attn_cuda_report(e, "l06_read_floor: the buffers or the untimed reads", __FILE__, __LINE__);
  else
    e = attn_time(l06_floor_launch, &run, 0, warmup, iters, 1, out); /* reports its own error */
  if (k) cudaFree(k);
  if (v) cudaFree(v);
  return e;
}
