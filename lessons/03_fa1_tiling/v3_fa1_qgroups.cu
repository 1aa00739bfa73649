// clang-format off
/** @file
 * @brief Version 3: version 2's kernel launched over Q-tile groups, several blocks per (batch,
 * head), each taking every G-th query tile (not in the paper).
 *
 * What changed: the grid, nothing else. Version 2 launches one block per (batch, head); this
 * launcher gives each (batch, head) q_groups = G blocks, block g taking query tiles g, g + G, ...
 * Each block still runs Algorithm 1's loops over its own query tiles (version 2's kernel and
 * tiles, reached through l03_fa1_d64() and l03_fa1_d128()), and re-reads K and V. G is the smallest
 * count whose estimated efficiency is within 5% of the best, for the blocks the device runs at once
 * (SMs x resident blocks per SM: l03_fa1_choose_groups() on the plan's slots). This file holds only
 * that choice and the launcher.
 *
 * Why: version 2 leaves most of the GPU idle (16 blocks at the lesson's default shape, on a 132-SM
 * H200). Splitting the query axis across blocks is FlashAttention-2's first change; lesson 4 makes
 * it the outer loop and keeps O_i on chip. The price: the model's traffic grows by 2(G - 1)Nd per
 * head, K and V read once per group.
 *
 * Prediction: the whole GPU busy and 2d instead of 3d instructions per pair: about 1.5 x faster
 * than version 1.
 *
 * Measured: NVIDIA H200, 2026-11-23, batch 1, 16 heads, seq 4096, dim 64
 * (docs/results/h200-2026-11-23): 3.390 ms, 20.3 TFLOP/s, against version 1's 17.700 ms and
 * version 2's 26.291 ms: far above the prediction, which put version 1 too high. At seq 65536,
 * where lesson 1's S would need 256 GiB: 844.940 ms, 20.8 TFLOP/s. Nsight Compute (the README's
 * DRAM table): L2 serves the re-reads of K and V almost entirely.
 *
 * Run: `./run 3` (the lesson's default shape) and `./run 3 --seq 65536 --iters 2 --warmup 0`.
 * Nsight Compute, in build/bin (ncu-runs.txt; the README's DRAM table):
 *
 *     ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum -k regex:'l03_(fused_row|fa1)_kernel' -c 1 ./lesson-3 3 --seq 4096 --check-only
 *     ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum -k regex:'l03_(fused_row|fa1)_kernel' -c 1 ./lesson-3 3 --seq 16384 --check-only
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif
#if HEAD_DIM != 64 && HEAD_DIM != 128
#error "HEAD_DIM must be 64 or 128"
#endif

#include "attn_cuda.cuh"
#include "fa1_tiling.h"

/** Token pasting, after expanding `b`. */
#define FA_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FA_CAT(a, b) FA_CAT_(a, b)
/** This build's launcher: l03_fa1_qgroups_d64() or l03_fa1_qgroups_d128(), declared in
 * fa1_tiling.h. */
#define FA_LAUNCH FA_CAT(l03_fa1_qgroups_d, HEAD_DIM)
/** This build's planner: l03_fa1_qgroups_plan_d64() or l03_fa1_qgroups_plan_d128(). */
#define FA_PLAN FA_CAT(l03_fa1_qgroups_plan_d, HEAD_DIM)
/** Version 2's planner for this head dimension (v2_fa1.cu). */
#define FA_FA1_PLAN FA_CAT(l03_fa1_device_plan_d, HEAD_DIM)
/** Version 2's launcher for this head dimension (v2_fa1.cu). */
#define FA_FA1_LAUNCH FA_CAT(l03_fa1_d, HEAD_DIM)

/** The grid choice: version 2's plan on this device, with the group count that fills its block
 * slots. */
extern "C" cudaError_t FA_PLAN(const attn_problem *p, l03_fa1_plan *plan) {
  const cudaError_t err = FA_FA1_PLAN(p, 1, plan); /* it reports its own CUDA errors */
  if (err != cudaSuccess) return err;
  const int groups = l03_fa1_choose_groups(p->batch * p->heads, plan->tr, plan->slots);
  plan->q_groups = groups < plan->tr ? groups : (plan->tr > 0 ? plan->tr : 1);
  return cudaSuccess;
}

/** The launcher, l03_fa1_qgroups_d64() or l03_fa1_qgroups_d128(): chooses the group count, then
 * launches version 2's kernel with it; m and l live in `workspace`. */
extern "C" cudaError_t FA_LAUNCH(const attn_problem *p, const float *q, const float *k,
                                 const float *v, float *o, float *lse, float *workspace,
                                 cudaStream_t stream) {
  l03_fa1_plan plan;
  ATTN_TRY(FA_PLAN(p, &plan));
  return FA_FA1_LAUNCH(p, q, k, v, o, lse, workspace, plan.q_groups, stream);
}
