/* Lesson 01's on-chip probes as harness versions: shared memory (four access patterns) and fp32
 * FMA from registers. The kernels and the reasoning behind them are in probe_smem.cu and
 * probe_fma.cu. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "probes.h"

/* ---- models (host) --------------------------------------------------------------------------- */

void l01_smem_strides(l01_smem_layout layout, int *lane_stride, int *k_stride) {
  switch (layout) {
    case L01_SMEM_STRIDE2:
      *lane_stride = 2;
      *k_stride = 1;
      break;
    case L01_SMEM_STRIDE32:
      *lane_stride = 32;
      *k_stride = 1;
      break;
    case L01_SMEM_PAD33:
      *lane_stride = 33;
      *k_stride = 1;
      break;
    default:
      *lane_stride = 1;
      *k_stride = 32;
      break;
  }
}

int l01_smem_conflict_ways(int lane_stride) {
  /* 32 lanes at word l * s fall in bank (l * s) mod 32: gcd(s, 32) distinct words share each bank
   * that is used. Stride 0 is a broadcast (one word for everyone): one cycle. */
  int a = lane_stride < 0 ? -lane_stride : lane_stride, b = 32;
  if (a == 0) return 1;
  while (b != 0) {
    const int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

double l01_smem_peak_gbs(const attn_device *dev) {
  return (double)dev->sm_count * 32.0 * 4.0 * (double)dev->sm_clock_khz * 1e3 / 1e9;
}

float l01_smem_expected(l01_smem_layout layout, size_t thread, int iters) {
  int ls = 1, ks = 32;
  l01_smem_strides(layout, &ls, &ks);
  const size_t blk = thread / L01_CHIP_THREADS;
  const unsigned lane = (unsigned)(thread % L01_CHIP_THREADS) & 31u;
  unsigned row_sum = 0;
  for (unsigned k = 0; k < 32; ++k) {
    row_sum += (unsigned)L01_SMEM_VALUE(lane * (unsigned)ls + k * (unsigned)ks, blk);
  }
  return (float)((double)row_sum * iters); /* an integer below 2^24: exact */
}

float l01_fma_expected(size_t thread, int iters, float a, float b) {
  float x[L01_FMA_CHAINS];
  for (int c = 0; c < L01_FMA_CHAINS; ++c) x[c] = L01_FMA_START(thread, c);
  for (int it = 0; it < iters; ++it) {
    for (int c = 0; c < L01_FMA_CHAINS; ++c) x[c] = fmaf(x[c], a, b);
  }
  float sum = 0.0f;
  for (int c = 0; c < L01_FMA_CHAINS; ++c) sum += x[c];
  return sum;
}

/* ---- shared-memory probes -------------------------------------------------------------------- */

typedef struct l01_smem {
  l01_smem_layout layout;
  int grid, iters;
  size_t threads;  /* grid * L01_CHIP_THREADS */
  float *out;      /* device, one float per thread */
  double peak_gbs; /* SMs x 32 banks x 4 B x clock */
} l01_smem;

static void l01_smem_free(l01_smem *st) {
  if (st == NULL) return;
  (void)cudaFree(st->out);
  free(st);
}

static cudaError_t l01_smem_setup(void **state, const attn_setup_ctx *ctx, const char **skip,
                                  l01_smem_layout layout) {
  *state = NULL;
  const l01_probe_config cfg = l01_probe_config_get();
  l01_smem *st = (l01_smem *)calloc(1, sizeof *st);
  if (st == NULL) {
    *skip = "out of host memory";
    return cudaSuccess;
  }
  st->layout = layout;
  cudaError_t err = l01_smem_grid(ctx->device->sm_count, &st->grid);
  if (err != cudaSuccess) {
    l01_smem_free(st);
    return err;
  }
  st->threads = (size_t)st->grid * L01_CHIP_THREADS;
  /* About 8 GB of conflict-free reads: a few hundred microseconds at the theoretical rate. */
  const double per_trip = (double)st->threads * 32.0 * 4.0;
  st->iters = cfg.smem_iters > 0 ? cfg.smem_iters : (int)ceil(8e9 / per_trip);
  if (st->iters > 100000) st->iters = 100000; /* keeps every sum below 2^24 */
  st->peak_gbs = l01_smem_peak_gbs(ctx->device);
  err = l01_device_alloc((void **)&st->out, st->threads * sizeof(float), skip);
  if (err != cudaSuccess || *skip != NULL) {
    l01_smem_free(st);
    return err;
  }
  *state = st;
  return cudaSuccess;
}

static cudaError_t l01_smem_poison(void *state, cudaStream_t stream) {
  const l01_smem *st = (const l01_smem *)state;
  return attn_poison(st->out, st->threads * sizeof(float), stream);
}

static cudaError_t l01_smem_launch(void *state, cudaStream_t stream) {
  const l01_smem *st = (const l01_smem *)state;
  return l01_smem_read(st->layout, st->out, st->iters, st->grid, stream);
}

static cudaError_t l01_smem_check(void *state, attn_verdict *v) {
  const l01_smem *st = (const l01_smem *)state;
  float *host = (float *)malloc(st->threads * sizeof(float));
  if (host == NULL) return cudaErrorMemoryAllocation;
  const cudaError_t err =
      cudaMemcpy(host, st->out, st->threads * sizeof(float), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) {
    attn_cuda_report(err, "cudaMemcpy", __FILE__, __LINE__);
    free(host);
    return err;
  }
  attn_verdict_init(v, ATTN_F32);
  l01_verdict_exact(v);
  attn_verdict_scan(v, ATTN_F32, host, st->threads, 0);
  for (size_t t = 0; t < st->threads; ++t) {
    attn_verdict_add(v, (double)host[t], (double)l01_smem_expected(st->layout, t, st->iters));
  }
  free(host);
  return cudaSuccess;
}

static void l01_smem_work(void *state, attn_work *w) {
  const l01_smem *st = (const l01_smem *)state;
  memset(w, 0, sizeof *w);
  w->bytes = (double)st->threads * st->iters * 32.0 * 4.0; /* useful bytes: 4 per load */
  w->peak_gbs = st->peak_gbs;
  w->peak_label = "SMEM";
}

static void l01_smem_teardown(void *state) {
  l01_smem_free((l01_smem *)state);
}

static cudaError_t l01_setup_smem_row(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_smem_setup(s, c, k, L01_SMEM_ROW);
}
static cudaError_t l01_setup_smem_stride2(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_smem_setup(s, c, k, L01_SMEM_STRIDE2);
}
static cudaError_t l01_setup_smem_stride32(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_smem_setup(s, c, k, L01_SMEM_STRIDE32);
}
static cudaError_t l01_setup_smem_pad33(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_smem_setup(s, c, k, L01_SMEM_PAD33);
}

#define L01_SMEM_CUSTOM(setup_fn)                                                 \
  {                                                                               \
    .setup = setup_fn, .poison = l01_smem_poison, .launch = l01_smem_launch,      \
    .check = l01_smem_check, .work = l01_smem_work, .teardown = l01_smem_teardown \
  }

const attn_custom l01_smem_row = L01_SMEM_CUSTOM(l01_setup_smem_row);
const attn_custom l01_smem_stride2 = L01_SMEM_CUSTOM(l01_setup_smem_stride2);
const attn_custom l01_smem_stride32 = L01_SMEM_CUSTOM(l01_setup_smem_stride32);
const attn_custom l01_smem_pad33 = L01_SMEM_CUSTOM(l01_setup_smem_pad33);

/* ---- FMA probe ------------------------------------------------------------------------------- */

/* a = 1 - 2^-10 and b = 2^-10: each chain drifts from its start in [1, 2) towards 1 and never
 * settles within the trips we run, so one trip more or less changes the result. */
static const float l01_fma_a = 0.9990234375f;
static const float l01_fma_b = 0.0009765625f;

typedef struct l01_fma_state {
  int grid, iters;
  size_t threads;
  float *out;
} l01_fma_state;

static void l01_fma_free(l01_fma_state *st) {
  if (st == NULL) return;
  (void)cudaFree(st->out);
  free(st);
}

static cudaError_t l01_fma_setup(void **state, const attn_setup_ctx *ctx, const char **skip) {
  *state = NULL;
  const l01_probe_config cfg = l01_probe_config_get();
  l01_fma_state *st = (l01_fma_state *)calloc(1, sizeof *st);
  if (st == NULL) {
    *skip = "out of host memory";
    return cudaSuccess;
  }
  cudaError_t err = l01_fma_grid(ctx->device->sm_count, &st->grid);
  if (err != cudaSuccess) {
    l01_fma_free(st);
    return err;
  }
  st->threads = (size_t)st->grid * L01_CHIP_THREADS;
  /* About 3e10 flops: half a millisecond near the H200's fp32 peak. */
  const double flops_per_trip = 2.0 * L01_FMA_CHAINS * (double)st->threads;
  st->iters = cfg.fma_iters > 0 ? cfg.fma_iters : (int)ceil(3e10 / flops_per_trip);
  err = l01_device_alloc((void **)&st->out, st->threads * sizeof(float), skip);
  if (err != cudaSuccess || *skip != NULL) {
    l01_fma_free(st);
    return err;
  }
  *state = st;
  return cudaSuccess;
}

static cudaError_t l01_fma_poison(void *state, cudaStream_t stream) {
  const l01_fma_state *st = (const l01_fma_state *)state;
  return attn_poison(st->out, st->threads * sizeof(float), stream);
}

static cudaError_t l01_fma_launch(void *state, cudaStream_t stream) {
  const l01_fma_state *st = (const l01_fma_state *)state;
  return l01_fma(st->out, st->iters, l01_fma_a, l01_fma_b, st->grid, stream);
}

static cudaError_t l01_fma_check(void *state, attn_verdict *v) {
  const l01_fma_state *st = (const l01_fma_state *)state;
  float *host = (float *)malloc(st->threads * sizeof(float));
  if (host == NULL) return cudaErrorMemoryAllocation;
  const cudaError_t err =
      cudaMemcpy(host, st->out, st->threads * sizeof(float), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) {
    attn_cuda_report(err, "cudaMemcpy", __FILE__, __LINE__);
    free(host);
    return err;
  }
  attn_verdict_init(v, ATTN_F32);
  l01_verdict_exact(v); /* the same fused operations in the same order: identical bits */
  attn_verdict_scan(v, ATTN_F32, host, st->threads, 0);
  /* Replaying every thread would take the host longer than the GPU by far: 64 threads, first and
   * last included, spread evenly. */
  const size_t samples = st->threads < 64 ? st->threads : 64;
  for (size_t s = 0; s < samples; ++s) {
    const size_t t = samples > 1 ? s * (st->threads - 1) / (samples - 1) : 0;
    attn_verdict_add(v, (double)host[t],
                     (double)l01_fma_expected(t, st->iters, l01_fma_a, l01_fma_b));
  }
  free(host);
  return cudaSuccess;
}

static void l01_fma_work(void *state, attn_work *w) {
  const l01_fma_state *st = (const l01_fma_state *)state;
  memset(w, 0, sizeof *w);
  w->flops = 2.0 * L01_FMA_CHAINS * (double)st->iters * (double)st->threads;
}

static void l01_fma_teardown(void *state) {
  l01_fma_free((l01_fma_state *)state);
}

const attn_custom l01_fma_probe = {.setup = l01_fma_setup,
                                   .poison = l01_fma_poison,
                                   .launch = l01_fma_launch,
                                   .check = l01_fma_check,
                                   .work = l01_fma_work,
                                   .teardown = l01_fma_teardown};
