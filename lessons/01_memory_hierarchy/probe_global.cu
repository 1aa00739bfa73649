/** @file
 * @brief probe_global.cu: versions 5-9, the HBM and L2 bandwidth probes (read, write, copy), and
 * the pattern fills.
 *
 * What changed: after the host-link probes (versions 1-4), the data no longer crosses PCIe; SMs
 * load and store it themselves, so bandwidth now depends on how the kernel is written.
 *
 * Tiles: a tile is L01_GLOBAL_THREADS x L01_GLOBAL_UNROLL vectors; tile t goes to block t mod grid.
 *
 *     tile t:   thread 0..255 load vector t*1024 + u*256 + thread, for u = 0..3
 *               (each u is one fully coalesced 4 KB sweep of the warp group)
 *
 * Why: each design choice buys bandwidth or a check.
 *  - Enough bytes in flight. By Little's law, bandwidth = bytes in flight / latency. At about 5
 *    TB/s and several hundred ns of DRAM latency the chip needs some megabytes in flight, tens of
 *    KB per SM. Each thread issues L01_GLOBAL_UNROLL independent loads before it uses any of them,
 *    and the grid of the reads and the write is exactly SMs x resident blocks per SM (occupancy
 *    API), so every SM is full and no block waits for a second wave. (The copy is shaped otherwise:
 *    see l01_copy16_kernel.)
 *  - 16-byte accesses (LDG.E.128 / STG.E.128). The same loop with 4-byte loads keeps a quarter of
 *    the bytes in flight per instruction.
 *  - A working set at least 8 x L2, so the HBM probes measure HBM, not L2 (the harness also flushes
 *    L2 before every timed run). The L2 probe is the same read over a third of the L2, many
 *    passes.
 *  - Loads use ld.global.cg (cache in L2, not L1), so the L2 probe's repeated passes measure L2 and
 *    not the SM's own L1.
 *  - Every probe's output is checkable: each read block writes the exact sum of what it read (the
 *    data are integers 0..16 and each thread's sum stays below 2^24, so float addition is exact in
 *    any order); the write and the copy are compared element by element.
 *
 * Prediction: the 16-byte read reaches 90% or more of the HBM datasheet figure (4.8 TB/s on the
 * H200); the 4-byte read stays visibly below it.
 *
 * Measured: NVIDIA H200, 2026-11-23, the lesson's default sizes (docs/results/h200-2026-11-23),
 * GB/s and % of the harness's HBM peak (clock x bus width): hbm-read-4B 4440.40 (92.23%),
 * hbm-read-16B 4435.92 (92.14%), hbm-write-16B 4126.51 (85.71%), hbm-copy-16B 4289.67 (89.10%),
 * l2-read-16B 8482.60. The 16-byte read is above 90% of 4.8 TB/s as predicted; the 4-byte read is
 * not below it: on this chip four 4-byte loads per thread already keep enough bytes in flight.
 *
 * Run: `./run 5`, `./run 6`, `./run 7`, `./run 8` and `./run 9`, one probe each (`./run` runs
 * every version).
 */
#include "memory_hierarchy.h"

#include "attn_cuda.cuh"

/** Element i of the hash pattern, on the device. */
static __device__ __forceinline__ float l01_hash_dev(size_t i) {
  return __uint_as_float(L01_HASH_BITS(i));
}

/** Vector j (floats 4j .. 4j+3) of the hash pattern. */
static __device__ __forceinline__ float4 l01_hash4_dev(size_t j) {
  const size_t i = 4 * j;
  return make_float4(l01_hash_dev(i), l01_hash_dev(i + 1), l01_hash_dev(i + 2),
                     l01_hash_dev(i + 3));
}

/** Fill with the sum pattern: grid-stride loop, each thread writes x[i] = L01_SUM_VALUE(i). */
__global__ void l01_fill_sum_kernel(float *x, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    x[i] = (float)L01_SUM_VALUE(i);
  }
}

/** Fill with the hash pattern: grid-stride loop, each thread writes x[i] = l01_hash_dev(i). */
__global__ void l01_fill_hash_kernel(float *x, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    x[i] = l01_hash_dev(i);
  }
}

/** Grid of a fill: enough blocks to cover n, at most 8192 (the loop strides over the rest). */
static int l01_fill_grid(size_t n) {
  const size_t blocks = (n + 255) / 256;
  return blocks < 1 ? 1 : (blocks > 8192 ? 8192 : (int)blocks);
}

extern "C" cudaError_t l01_fill_sum_pattern(float *x, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  l01_fill_sum_kernel<<<l01_fill_grid(n), 256, 0, stream>>>(x, n);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l01_fill_hash_pattern(float *x, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  l01_fill_hash_kernel<<<l01_fill_grid(n), 256, 0, stream>>>(x, n);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

/** Sum of one value per thread over the block, exact in 64 bits; the result is valid in
 * thread 0. */
static __device__ unsigned long long l01_block_sum_u64(unsigned long long v) {
  __shared__ unsigned long long warp_sums[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  unsigned long long total = 0;
  if (warp == 0) {
    const int warps = (blockDim.x + 31) >> 5;
    total = lane < warps ? warp_sums[lane] : 0ull;
    for (int offset = 16; offset > 0; offset >>= 1) {
      total += __shfl_down_sync(0xffffffffu, total, offset);
    }
  }
  return total;
}

/** Reads with 4-byte loads: one float per load, L01_GLOBAL_UNROLL loads in flight per thread.
 * Each block sums the tiles it owns, `passes` times, into block_sums[blockIdx.x]. */
__global__ void __launch_bounds__(L01_GLOBAL_THREADS, 8)
    l01_read4_kernel(const float *x, size_t n, int passes, unsigned long long *block_sums) {
  const size_t tile = (size_t)L01_GLOBAL_THREADS * L01_GLOBAL_UNROLL;
  const size_t full = n / tile;
  float acc = 0.0f;
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t t = blockIdx.x; t < full; t += gridDim.x) {
      const float *base = x + t * tile + threadIdx.x;
      float v[L01_GLOBAL_UNROLL];
#pragma unroll
      for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) v[u] = __ldcg(base + u * L01_GLOBAL_THREADS);
#pragma unroll
      for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) acc += v[u];
    }
    if (blockIdx.x == full % gridDim.x) { /* the partial last tile, bounds-checked */
      for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) {
        const size_t i = full * tile + (size_t)u * L01_GLOBAL_THREADS + threadIdx.x;
        if (i < n) acc += __ldcg(x + i);
      }
    }
  }
  const unsigned long long sum = l01_block_sum_u64((unsigned long long)acc);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = sum;
}

/** Reads with 16-byte loads: the same loop over float4, four times the bytes per load. The 0-3
 * floats after the last whole vector (tail) go to the block that owns the partial tile. Each
 * block writes the sum of what it read to block_sums[blockIdx.x]. */
__global__ void __launch_bounds__(L01_GLOBAL_THREADS, 8)
    l01_read16_kernel(const float4 *x, size_t nv, const float *tail, int ntail, int passes,
                      unsigned long long *block_sums) {
  const size_t tile = (size_t)L01_GLOBAL_THREADS * L01_GLOBAL_UNROLL;
  const size_t full = nv / tile;
  float acc = 0.0f;
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t t = blockIdx.x; t < full; t += gridDim.x) {
      const float4 *base = x + t * tile + threadIdx.x;
      float4 v[L01_GLOBAL_UNROLL];
#pragma unroll
      for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) v[u] = __ldcg(base + u * L01_GLOBAL_THREADS);
#pragma unroll
      for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) acc += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    if (blockIdx.x == full % gridDim.x) {
      for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) {
        const size_t j = full * tile + (size_t)u * L01_GLOBAL_THREADS + threadIdx.x;
        if (j < nv) {
          const float4 w = __ldcg(x + j);
          acc += (w.x + w.y) + (w.z + w.w);
        }
      }
      if (threadIdx.x == 0) {
        for (int r = 0; r < ntail; ++r) acc += __ldcg(tail + r);
      }
    }
  }
  const unsigned long long sum = l01_block_sum_u64((unsigned long long)acc);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = sum;
}

/** Writes the hash pattern with 16-byte stores; tiles as in the read: each block writes the
 * tiles it owns. */
__global__ void __launch_bounds__(L01_GLOBAL_THREADS, 8)
    l01_write16_kernel(float4 *x, size_t nv, float *tail, int ntail) {
  const size_t tile = (size_t)L01_GLOBAL_THREADS * L01_GLOBAL_UNROLL;
  const size_t full = nv / tile;
  for (size_t t = blockIdx.x; t < full; t += gridDim.x) {
    const size_t j0 = t * tile + threadIdx.x;
#pragma unroll
    for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) {
      const size_t j = j0 + (size_t)u * L01_GLOBAL_THREADS;
      x[j] = l01_hash4_dev(j);
    }
  }
  if (blockIdx.x == full % gridDim.x) {
    for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) {
      const size_t j = full * tile + (size_t)u * L01_GLOBAL_THREADS + threadIdx.x;
      if (j < nv) x[j] = l01_hash4_dev(j);
    }
    if (threadIdx.x == 0) {
      for (int r = 0; r < ntail; ++r) tail[r] = l01_hash_dev(4 * nv + r);
    }
  }
}

/** Copies with 16-byte loads and stores, one vector per thread, one block per 256 vectors.
 *
 * Not the persistent, unrolled loop of the read and write probes: for a copy that shape lost,
 * clearly slower than the driver's own device-to-device copy (that variant is not in the tree, so
 * no archived run times it; the README's "What to try" has the edit). A plain grid of nv/256
 * blocks, each thread moving one vector, lets the block scheduler refill SMs as they finish and
 * keeps reads and writes interleaved evenly across the chip; it matches cudaMemcpy.
 * (Streaming-store hints, __stcs, only made either shape slower.) */
__global__ void __launch_bounds__(L01_GLOBAL_THREADS, 8)
    l01_copy16_kernel(float4 *dst, const float4 *src, size_t nv, float *dst_tail,
                      const float *src_tail, int ntail) {
  const size_t j = (size_t)blockIdx.x * L01_GLOBAL_THREADS + threadIdx.x;
  if (j < nv) dst[j] = __ldcg(src + j);
  if (j == 0) {
    for (int r = 0; r < ntail; ++r) dst_tail[r] = __ldcg(src_tail + r);
  }
}

extern "C" cudaError_t l01_global_grid(l01_global_op op, int sm_count, int *grid) {
  int per_sm = 0;
  switch (op) {
    case L01_READ4:
      ATTN_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l01_read4_kernel,
                                                             L01_GLOBAL_THREADS, 0));
      break;
    case L01_READ16:
      ATTN_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l01_read16_kernel,
                                                             L01_GLOBAL_THREADS, 0));
      break;
    case L01_WRITE16:
      ATTN_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l01_write16_kernel,
                                                             L01_GLOBAL_THREADS, 0));
      break;
    case L01_COPY16:
      ATTN_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l01_copy16_kernel,
                                                             L01_GLOBAL_THREADS, 0));
      break;
    default:
      return cudaErrorInvalidValue;
  }
  *grid = (per_sm < 1 ? 1 : per_sm) * (sm_count < 1 ? 1 : sm_count);
  return cudaSuccess;
}

extern "C" cudaError_t l01_read(l01_global_op op, const float *x, size_t n, int passes, int grid,
                                unsigned long long *block_sums, cudaStream_t stream) {
  if (grid < 1 || passes < 0) return cudaErrorInvalidValue;
  if (op == L01_READ4) {
    l01_read4_kernel<<<grid, L01_GLOBAL_THREADS, 0, stream>>>(x, n, passes, block_sums);
  } else if (op == L01_READ16) {
    const size_t nv = n / 4;
    l01_read16_kernel<<<grid, L01_GLOBAL_THREADS, 0, stream>>>(
        (const float4 *)x, nv, x + 4 * nv, (int)(n - 4 * nv), passes, block_sums);
  } else {
    return cudaErrorInvalidValue;
  }
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l01_write(float *x, size_t n, int grid, cudaStream_t stream) {
  if (grid < 1) return cudaErrorInvalidValue;
  const size_t nv = n / 4;
  l01_write16_kernel<<<grid, L01_GLOBAL_THREADS, 0, stream>>>((float4 *)x, nv, x + 4 * nv,
                                                              (int)(n - 4 * nv));
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}

extern "C" cudaError_t l01_copy(float *dst, const float *src, size_t n, cudaStream_t stream) {
  const size_t nv = n / 4;
  const size_t blocks = (nv + L01_GLOBAL_THREADS - 1) / L01_GLOBAL_THREADS;
  if (blocks > 0x7FFFFFFFu) return cudaErrorInvalidValue;
  l01_copy16_kernel<<<(unsigned)(blocks > 0 ? blocks : 1), L01_GLOBAL_THREADS, 0, stream>>>(
      (float4 *)dst, (const float4 *)src, nv, dst + 4 * nv, src + 4 * nv, (int)(n - 4 * nv));
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
