/* Lesson 05: TMA tensor maps, encoded on the host, and the timeline's buffer. The encoder,
 * cuTensorMapEncodeTiled, is a driver function; the program reaches it through the CUDA runtime's
 * driver entry point instead of linking libcuda, so it still starts, and runs its CPU part, on a
 * machine without a GPU driver. (cudaGetDriverEntryPoint is deprecated from CUDA 12.5 on; its
 * successor, cudaGetDriverEntryPointByVersion, asks for the function as it was in a given CUDA
 * version.) */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <string.h>

#include "fa3_hopper.h"

/* The encoder, looked up once (0: not yet, 1: found, -1: the driver has none). Harmless if two
 * threads race to look it up: both store the same pointer. */
static PFN_cuTensorMapEncodeTiled_v12000 g_encode = NULL;
static int g_looked_up = 0;

static PFN_cuTensorMapEncodeTiled_v12000 encoder(void) {
  if (!g_looked_up) {
    void *fn = NULL;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                     cudaEnableDefault, &found);
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn) {
      (void)cudaGetLastError();
      g_looked_up = -1;
      return NULL;
    }
    g_encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    g_looked_up = 1;
  }
  return g_looked_up > 0 ? g_encode : NULL;
}

extern "C" cudaError_t l05_tensor_map(void *map, const void *base, int batch, int tokens, int heads,
                                      int dim, int box_rows) {
  if (!map || !base || ((uintptr_t)base & 15) || batch < 1 || tokens < 1 || heads < 1 || dim < 64 ||
      dim % 64 || box_rows < 1 || box_rows > 256)
    return cudaErrorInvalidValue;
  PFN_cuTensorMapEncodeTiled_v12000 encode = encoder();
  if (!encode) return cudaErrorNotSupported;
  /* Innermost first: a row's columns, the heads of a token, the tokens, the sequences. Strides are
   * in bytes, for every dimension but the first (whose elements are adjacent). */
  const cuuint64_t size[4] = {(cuuint64_t)dim, (cuuint64_t)heads, (cuuint64_t)tokens,
                              (cuuint64_t)batch};
  const cuuint64_t stride[3] = {(cuuint64_t)dim * 2, (cuuint64_t)heads * dim * 2,
                                (cuuint64_t)tokens * heads * dim * 2};
  /* One box: 64 columns (128 bytes, the widest row the 128-byte swizzle takes) of box_rows tokens
   * of one head of one sequence. A tile of dim 128 is two boxes, one per 64-column panel. */
  const cuuint32_t box[4] = {64, 1, (cuuint32_t)box_rows, 1};
  const cuuint32_t elem_stride[4] = {1, 1, 1, 1};
  CUtensorMap m;
  memset(&m, 0, sizeof m);
  CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, (void *)base, size, stride, box,
                      elem_stride, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return cudaErrorInvalidValue;
  memcpy(map, &m, sizeof m);
  return cudaSuccess;
}

/* A 4-D tensor map with the 128-byte swizzle over elements of `elem` bytes of type `type`: the
 * innermost box row may be at most 128 bytes, every stride a multiple of 16 bytes. */
static cudaError_t tensor_map_4d(void *map, CUtensorMapDataType type, int elem, const void *base,
                                 const unsigned long long size[4],
                                 const unsigned long long stride[3], const unsigned box[4]) {
  if (!map || !base || ((uintptr_t)base & 15) || box[0] * (unsigned)elem > 128)
    return cudaErrorInvalidValue;
  for (int i = 0; i < 4; ++i)
    if (size[i] < 1 || box[i] < 1 || box[i] > 256) return cudaErrorInvalidValue;
  for (int i = 0; i < 3; ++i)
    if (stride[i] % 16) return cudaErrorInvalidValue;
  PFN_cuTensorMapEncodeTiled_v12000 encode = encoder();
  if (!encode) return cudaErrorNotSupported;
  const cuuint64_t sz[4] = {size[0], size[1], size[2], size[3]};
  const cuuint64_t st[3] = {stride[0], stride[1], stride[2]};
  const cuuint32_t bx[4] = {box[0], box[1], box[2], box[3]};
  const cuuint32_t elem_stride[4] = {1, 1, 1, 1};
  CUtensorMap m;
  memset(&m, 0, sizeof m);
  CUresult r = encode(&m, type, 4, (void *)base, sz, st, bx, elem_stride,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return cudaErrorInvalidValue;
  memcpy(map, &m, sizeof m);
  return cudaSuccess;
}

extern "C" cudaError_t l05_tensor_map_u8(void *map, const void *base,
                                         const unsigned long long size[4],
                                         const unsigned long long stride[3],
                                         const unsigned box[4]) {
  return tensor_map_4d(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, base, size, stride, box);
}

extern "C" cudaError_t l05_tensor_map_f32(void *map, const void *base,
                                          const unsigned long long size[4],
                                          const unsigned long long stride[3],
                                          const unsigned box[4]) {
  return tensor_map_4d(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, base, size, stride, box);
}

/* The timeline's device buffer (fa3_hopper.h), NULL when recording is off. */
static unsigned long long *g_timeline = NULL;

extern "C" int l05_timeline_compiled(void) {
#ifdef L05_TIMELINE
  return 1;
#else
  return 0;
#endif
}

extern "C" void l05_timeline_set(unsigned long long *device_buffer) {
  g_timeline = device_buffer;
}

extern "C" unsigned long long *l05_timeline_get(void) {
  return g_timeline;
}
