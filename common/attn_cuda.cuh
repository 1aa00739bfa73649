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

/** A launcher's check of the shape it is given (the command line validates the same rules for the
 *  lessons' programs): every extent at least 1, and the query heads a multiple of the KV heads.
 *  Returns cudaErrorInvalidValue, or cudaSuccess. */
static __host__ __forceinline__ cudaError_t attn_check_shape(int batch, int heads, int kv_heads,
                                                             int seq_q, int seq_kv) {
  if (batch < 1 || heads < 1 || kv_heads < 1 || heads % kv_heads != 0 || seq_q < 1 || seq_kv < 1)
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

#endif /* ATTN_CUDA_CUH */
