/** @file
 * @brief probe_fma.cu: version 14, registers and fp32 FMA throughput, the compute roof of the fp32
 * roofline.
 *
 * What changed: after the shared-memory probe, no memory at all inside the loop. Every operand is
 * a register, the top of the pyramid: each FMA reads three 4-byte operands and writes one, with no
 * address, no bank and no cache.
 *
 * Why: an SM has 128 fp32 lanes (4 schedulers x 32) and an FMA's result is ready a few cycles after
 * issue, so one dependent chain per thread would leave the lanes idle most of the time. Each thread
 * runs L01_FMA_CHAINS independent chains x = fmaf(x, a, b), so a scheduler always has an FMA whose
 * inputs are ready; the grid fills every SM once. The chains are kept live by writing their sum; a
 * and b are kernel arguments, so the compiler cannot fold the recurrence. The host replays the same
 * fused multiply-adds (fmaf is correctly rounded on both sides) for a sample of threads and expects
 * identical bits.
 *
 * Prediction: close to the datasheet fp32 peak (2 flops x 128 lanes x SMs x clock); what is lost is
 * loop overhead (one add and one compare per 4 x 16 FMAs) and the clock the chip holds under load.
 *
 * Measured: NVIDIA H200, 2026-11-23, the lesson's default size (docs/results/h200-2026-11-23):
 * 62.883 TFLOP/s, 93.98% of the fp32 peak the harness prints.
 *
 * Run: `./run 14`.
 */
#include "memory_hierarchy.h"

#include "attn_cuda.cuh"

/** The FMA probe: each thread runs L01_FMA_CHAINS independent chains x = fmaf(x, a, b) for
 * `iters` trips from L01_FMA_START and writes the chains' sum to out[global thread index]. */
__global__ void __launch_bounds__(L01_CHIP_THREADS)
    l01_fma_kernel(float *out, int iters, float a, float b) {
  const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  float x[L01_FMA_CHAINS];
#pragma unroll
  for (int c = 0; c < L01_FMA_CHAINS; ++c) x[c] = L01_FMA_START(g, c);
#pragma unroll 4
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < L01_FMA_CHAINS; ++c) x[c] = fmaf(x[c], a, b);
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < L01_FMA_CHAINS; ++c) sum += x[c];
  out[g] = sum;
}

extern "C" cudaError_t l01_fma_grid(int sm_count, int *grid) {
  int per_sm = 0;
  ATTN_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l01_fma_kernel, L01_CHIP_THREADS, 0));
  *grid = (per_sm < 1 ? 1 : per_sm) * (sm_count < 1 ? 1 : sm_count);
  return cudaSuccess;
}

extern "C" cudaError_t l01_fma(float *out, int iters, float a, float b, int grid,
                               cudaStream_t stream) {
  if (grid < 1 || iters < 0) return cudaErrorInvalidValue;
  l01_fma_kernel<<<grid, L01_CHIP_THREADS, 0, stream>>>(out, iters, a, b);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
