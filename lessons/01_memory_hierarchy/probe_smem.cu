/** @file
 * @brief probe_smem.cu: versions 10-13, shared-memory bandwidth, conflict-free and with bank
 * conflicts.
 *
 * What changed: after the global-memory probes, the data sit in the SM's own shared memory, 32
 * banks of 4-byte words; bank = word address mod 32. In one cycle each bank serves one word to a
 * warp (several lanes reading the same word share it), so one warp's 4-byte load takes as many
 * cycles as the largest number of distinct words any bank must serve.
 *
 *     the tile, 32 rows of 33 words (word = row * stride + col)
 *
 *              col 0   col 1  ...  col 31
 *     row 0    w0      w1          w31         ROW:      lane l reads word k*32 + l      (a row)
 *     row 1    w32     w33         w63                   32 lanes, 32 banks: 1 cycle
 *     ...                                      STRIDE32: lane l reads word l*32 + k      (a column)
 *     row 31   w992    ...         w1023                 every lane in bank k: 32 cycles
 *                                              PAD33:    lane l reads word l*33 + k
 *                                                        (a column of 33-word rows):
 *                                                        bank (l + k) mod 32, 1 cycle
 *                                              STRIDE2:  lane l reads word 2l + k: 2 words per bank
 *
 * Why: the loop is shaped so that it measures the banks and nothing else. Each thread makes 32
 * loads per trip at offsets the compiler knows (LDS with an immediate offset, no address arithmetic
 * per load), adds them into four accumulators (the adds hide under the load rate), and reads
 * through a volatile pointer so the compiler cannot hoist the loads out of the loop (the tile never
 * changes). The sum is written at the end, one float per thread, so nothing is dead code, and the
 * host checks it: the tile holds integers 0..3, so every sum is exact.
 *
 * Prediction: against the theoretical SMs x 32 banks x 4 bytes x SM clock, ROW and PAD33 reach 80%
 * or more; STRIDE2 takes 2x as long and STRIDE32 32x (useful bytes are the same, so the bandwidth
 * drops by those factors).
 *
 * Measured: NVIDIA H200, 2026-11-23, the lesson's default sizes (docs/results/h200-2026-11-23),
 * GB/s and % of the theoretical figure: smem-row 32903.38 (98.35%), smem-stride2 16598.64
 * (49.62%), smem-stride32 1044.86 (3.12%), smem-pad33 32883.97 (98.30%): the bank arithmetic
 * holds, and one padding word per row gives the row read's rate back.
 *
 * Run: `./run 10`, `./run 11`, `./run 12` and `./run 13`, one layout each.
 */
#include "memory_hierarchy.h"

#include "attn_cuda.cuh"

/** The probe body; lane_stride and k_stride are literals at every call, so after inlining each load
 * has a constant offset. */
static __device__ __forceinline__ void l01_smem_body(float *out, int iters, const int lane_stride,
                                                     const int k_stride) {
  __shared__ float tile[L01_SMEM_WORDS];
  for (int w = threadIdx.x; w < L01_SMEM_WORDS; w += blockDim.x) {
    tile[w] = L01_SMEM_VALUE(w, blockIdx.x);
  }
  __syncthreads();
  const volatile float *mine = tile + (threadIdx.x & 31) * lane_stride;
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < 32; k += 4) {
      a0 += mine[(k + 0) * k_stride];
      a1 += mine[(k + 1) * k_stride];
      a2 += mine[(k + 2) * k_stride];
      a3 += mine[(k + 3) * k_stride];
    }
  }
  out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = (a0 + a1) + (a2 + a3);
}

/** ROW: lane l reads word k*32 + l, a row of the tile: 32 banks, 1 cycle per load. Each block
 * fills its own tile; each thread writes its sum to out[global thread index]. */
__global__ void __launch_bounds__(L01_CHIP_THREADS) l01_smem_row_kernel(float *out, int iters) {
  l01_smem_body(out, iters, 1, 32);
}

/** STRIDE2: lane l reads word 2l + k: 2 words per bank, 2 cycles per load. */
__global__ void __launch_bounds__(L01_CHIP_THREADS) l01_smem_stride2_kernel(float *out, int iters) {
  l01_smem_body(out, iters, 2, 1);
}

/** STRIDE32: lane l reads word l*32 + k, a column: every lane in one bank, 32 cycles per load. */
__global__ void __launch_bounds__(L01_CHIP_THREADS)
    l01_smem_stride32_kernel(float *out, int iters) {
  l01_smem_body(out, iters, 32, 1);
}

/** PAD33: lane l reads word l*33 + k, a column of 33-word rows: bank (l + k) mod 32, 1 cycle. */
__global__ void __launch_bounds__(L01_CHIP_THREADS) l01_smem_pad33_kernel(float *out, int iters) {
  l01_smem_body(out, iters, 33, 1);
}

extern "C" cudaError_t l01_smem_grid(int sm_count, int *grid) {
  int per_sm = 0;
  ATTN_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l01_smem_row_kernel,
                                                         L01_CHIP_THREADS, 0));
  *grid = (per_sm < 1 ? 1 : per_sm) * (sm_count < 1 ? 1 : sm_count);
  return cudaSuccess;
}

extern "C" cudaError_t l01_smem_read(l01_smem_layout layout, float *out, int iters, int grid,
                                     cudaStream_t stream) {
  if (grid < 1 || iters < 0) return cudaErrorInvalidValue;
  switch (layout) {
    case L01_SMEM_ROW:
      l01_smem_row_kernel<<<grid, L01_CHIP_THREADS, 0, stream>>>(out, iters);
      break;
    case L01_SMEM_STRIDE2:
      l01_smem_stride2_kernel<<<grid, L01_CHIP_THREADS, 0, stream>>>(out, iters);
      break;
    case L01_SMEM_STRIDE32:
      l01_smem_stride32_kernel<<<grid, L01_CHIP_THREADS, 0, stream>>>(out, iters);
      break;
    case L01_SMEM_PAD33:
      l01_smem_pad33_kernel<<<grid, L01_CHIP_THREADS, 0, stream>>>(out, iters);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
