/**
 * @file attn_cuda.cuh
 * @brief Small device-side helpers shared by the lessons' kernels (C subset of CUDA).
 */
#ifndef ATTN_CUDA_CUH
#define ATTN_CUDA_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "attn_types.h"

/** bf16 storage type in kernels: the same 16 bits the host stores as uint16_t. */
typedef __nv_bfloat16 attn_bf16;

/** Ceiling division for grid sizes. */
static __host__ __device__ __forceinline__ int attn_cdiv(int a, int b) {
  return (a + b - 1) / b;
}

#endif /* ATTN_CUDA_CUH */
