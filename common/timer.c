/* Event timing with warm-up, median and L2 flush. See attn_timer.h. */
#include "attn_timer.h"

#include <stdlib.h>

#include "attn_verify.h"

/* Read a zeroed device buffer of @p bytes, writing nothing (l2_evict.cu). */
cudaError_t attn_l2_evict(const void *zeroed, size_t bytes, cudaStream_t stream);

static void *g_flush_buf = NULL; /* twice the L2, zeroed; the driver releases it at exit */
static size_t g_flush_bytes = 0;

cudaError_t attn_flush_l2(cudaStream_t stream) {
  if (!g_flush_buf) {
    int dev = 0, l2 = 0;
    ATTN_TRY(cudaGetDevice(&dev));
    ATTN_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    g_flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : (1 << 20));
    ATTN_TRY(cudaMalloc(&g_flush_buf, g_flush_bytes));
    ATTN_TRY(cudaMemset(g_flush_buf, 0, g_flush_bytes));
    ATTN_TRY(cudaDeviceSynchronize());
  }
  /* A read, not a memset: it leaves the L2 holding clean lines of the scratch buffer, so the timed
   * run neither finds its inputs in L2 nor pays to write back someone else's dirty lines. */
  return attn_l2_evict(g_flush_buf, g_flush_bytes, stream);
}

cudaError_t attn_poison(void *dptr, size_t bytes, cudaStream_t stream) {
  if (!dptr || bytes == 0) return cudaSuccess;
  ATTN_TRY(cudaMemsetAsync(dptr, ATTN_POISON_BYTE, bytes, stream));
  return cudaSuccess;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

cudaError_t attn_time(attn_launch_thunk fn, void *ctx, cudaStream_t stream, int warmup, int iters,
                      int flush_l2, attn_timing *out) {
  if (iters < 1) iters = 1;
  for (int w = 0; w < warmup; ++w) {
    cudaError_t e = fn(ctx, stream);
    if (e != cudaSuccess) return e;
  }
  ATTN_TRY(cudaStreamSynchronize(stream));

  double *ms = (double *)malloc(sizeof(double) * (size_t)iters);
  if (!ms) return cudaErrorMemoryAllocation;
  cudaEvent_t start, stop;
  cudaError_t err = cudaEventCreate(&start);
  if (err == cudaSuccess) err = cudaEventCreate(&stop);
  for (int it = 0; it < iters && err == cudaSuccess; ++it) {
    if (flush_l2) err = attn_flush_l2(stream);
    if (err == cudaSuccess) err = cudaEventRecord(start, stream);
    if (err == cudaSuccess) err = fn(ctx, stream);
    if (err == cudaSuccess) err = cudaEventRecord(stop, stream);
    if (err == cudaSuccess) err = cudaEventSynchronize(stop);
    float t = 0.0f;
    if (err == cudaSuccess) err = cudaEventElapsedTime(&t, start, stop);
    ms[it] = t;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (err == cudaSuccess) {
    qsort(ms, (size_t)iters, sizeof(double), cmp_double);
    out->iters = iters;
    out->min_ms = ms[0];
    out->max_ms = ms[iters - 1];
    out->median_ms = iters % 2 ? ms[iters / 2] : 0.5 * (ms[iters / 2 - 1] + ms[iters / 2]);
  } else {
    attn_cuda_report(err, "attn_time", __FILE__, __LINE__);
  }
  free(ms);
  return err;
}
