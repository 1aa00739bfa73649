/* probes_link.c: the bottom of the pyramid, host memory to device memory and back.
 *
 * This is the level a serving engine swaps KV-cache blocks to when device memory runs out, and the
 * one every input crosses once. A copy engine (DMA) moves the bytes over the host link (PCIe on
 * H200 SXM); no SM takes part.
 *
 *  - Pageable memory (malloc) can be moved by the OS at any time, so the engine cannot read it
 *    directly: the driver copies it, chunk by chunk, through a pinned staging buffer with the CPU.
 *  - Pinned memory (cudaMallocHost) is locked in place; the engine reads or writes it directly.
 *
 * Prediction: pinned runs near the link's rate in both directions; pageable is lower and varies
 * with the host's CPU and memory, since a CPU memcpy sits in the path.
 *
 * The ceiling: the link's rate is not in cudaDeviceProp, and a datasheet figure for a link the OS
 * may have trained narrower or slower would be a guess about this machine. So every host-link row's
 * "% of peak" is against the pinned figure of the same direction, measured in setup just before
 * (5 copies, median): pageable rows read as a fraction of pinned, pinned rows read about 100% by
 * construction. The datasheet's link figure appears, labelled as such, in the pyramid at the end.
 *
 * Check: the host-to-device copy is read back and compared element by element with the hash
 * pattern; the device-to-host destination is poisoned before each checked run and compared the same
 * way.
 */
#include <stdlib.h>
#include <string.h>

#include "probes.h"

typedef struct l01_link {
  int d2h;           /* 0: host to device, 1: device to host */
  int pinned;        /* host buffer from cudaMallocHost */
  size_t n;          /* floats per transfer */
  float *host;       /* source (h2d) or destination (d2h) */
  float *dev;        /* destination (h2d) or source (d2h) */
  float *readback;   /* h2d: host copy of dev for the check */
  double pinned_gbs; /* the ceiling: pinned figure of this direction */
} l01_link;

static void l01_link_free(l01_link *st) {
  if (st == NULL) return;
  if (st->host != NULL) {
    if (st->pinned) {
      (void)cudaFreeHost(st->host);
    } else {
      free(st->host);
    }
  }
  (void)cudaFree(st->dev);
  free(st->readback);
  free(st);
}

#define L01_LINK_TRY(call)                                   \
  do {                                                       \
    cudaError_t l01_err_ = (call);                           \
    if (l01_err_ != cudaSuccess) {                           \
      attn_cuda_report(l01_err_, #call, __FILE__, __LINE__); \
      l01_link_free(st);                                     \
      return l01_err_;                                       \
    }                                                        \
  } while (0)

/* One cudaMemcpyAsync, for attn_time(). */
typedef struct l01_copy_job {
  void *dst;
  const void *src;
  size_t bytes;
  enum cudaMemcpyKind kind;
} l01_copy_job;

static cudaError_t l01_copy_thunk(void *ctx, cudaStream_t stream) {
  const l01_copy_job *job = (const l01_copy_job *)ctx;
  ATTN_TRY(cudaMemcpyAsync(job->dst, job->src, job->bytes, job->kind, stream));
  return cudaSuccess;
}

/* The pinned figure per direction, measured once per transfer size. */
static double l01_pinned_gbs[2];
static size_t l01_pinned_bytes[2];

static cudaError_t l01_measure_pinned(int d2h, size_t bytes, double *gbs, const char **skip) {
  if (l01_pinned_bytes[d2h] == bytes && l01_pinned_gbs[d2h] > 0.0) {
    *gbs = l01_pinned_gbs[d2h];
    return cudaSuccess;
  }
  void *host = NULL, *dev = NULL;
  cudaError_t err = cudaMallocHost(&host, bytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    *skip = "cannot pin host memory for the pinned reference figure";
    return cudaSuccess;
  }
  err = l01_device_alloc(&dev, bytes, skip);
  if (err != cudaSuccess || *skip != NULL) {
    (void)cudaFreeHost(host);
    return err;
  }
  memset(host, 0, bytes);
  l01_copy_job job;
  job.dst = d2h ? host : dev;
  job.src = d2h ? dev : host;
  job.bytes = bytes;
  job.kind = d2h ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  attn_timing t;
  err = attn_time(l01_copy_thunk, &job, 0, 1, 5, 0, &t);
  (void)cudaFreeHost(host);
  (void)cudaFree(dev);
  if (err != cudaSuccess) {
    attn_cuda_report(err, "attn_time (pinned reference copy)", __FILE__, __LINE__);
    return err;
  }
  *gbs = t.median_ms > 0.0 ? (double)bytes / (t.median_ms * 1e-3) / 1e9 : 0.0;
  l01_pinned_gbs[d2h] = *gbs;
  l01_pinned_bytes[d2h] = bytes;
  return cudaSuccess;
}

static cudaError_t l01_link_setup(void **state, const attn_setup_ctx *ctx, const char **skip,
                                  int d2h, int pinned) {
  (void)ctx;
  *state = NULL;
  const l01_probe_config cfg = l01_probe_config_get();
  const size_t want = cfg.link_bytes != 0 ? cfg.link_bytes : (size_t)256 << 20;
  l01_link *st = (l01_link *)calloc(1, sizeof *st);
  if (st == NULL) {
    *skip = "out of host memory";
    return cudaSuccess;
  }
  st->d2h = d2h;
  st->pinned = pinned;
  st->n = want / sizeof(float);
  const size_t bytes = st->n * sizeof(float);
  if (st->n == 0) {
    l01_link_free(st);
    *skip = "transfer smaller than one float";
    return cudaSuccess;
  }
  if (pinned) {
    if (cudaMallocHost((void **)&st->host, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      st->host = NULL;
      l01_link_free(st);
      *skip = "cannot pin that much host memory";
      return cudaSuccess;
    }
  } else {
    st->host = (float *)malloc(bytes);
  }
  if (!d2h) st->readback = (float *)malloc(bytes);
  if (st->host == NULL || (!d2h && st->readback == NULL)) {
    l01_link_free(st);
    *skip = "out of host memory";
    return cudaSuccess;
  }
  L01_LINK_TRY(l01_device_alloc((void **)&st->dev, bytes, skip));
  if (*skip != NULL) {
    l01_link_free(st);
    return cudaSuccess;
  }
  if (!d2h) {
    for (size_t i = 0; i < st->n; ++i) st->host[i] = l01_hash_value(i);
  } else {
    memset(st->host, 0, bytes); /* touch every page now, not inside a timed copy */
    L01_LINK_TRY(l01_fill_hash_pattern(st->dev, st->n, 0));
    L01_LINK_TRY(cudaDeviceSynchronize());
  }
  L01_LINK_TRY(l01_measure_pinned(d2h, bytes, &st->pinned_gbs, skip));
  if (*skip != NULL) {
    l01_link_free(st);
    return cudaSuccess;
  }
  *state = st;
  return cudaSuccess;
}

static cudaError_t l01_link_poison(void *state, cudaStream_t stream) {
  l01_link *st = (l01_link *)state;
  if (st->d2h) { /* the output is host memory: wait for earlier copies, then poison it */
    ATTN_TRY(cudaStreamSynchronize(stream));
    memset(st->host, ATTN_POISON_BYTE, st->n * sizeof(float));
    return cudaSuccess;
  }
  return attn_poison(st->dev, st->n * sizeof(float), stream);
}

static cudaError_t l01_link_launch(void *state, cudaStream_t stream) {
  l01_link *st = (l01_link *)state;
  const size_t bytes = st->n * sizeof(float);
  if (st->d2h) {
    ATTN_TRY(cudaMemcpyAsync(st->host, st->dev, bytes, cudaMemcpyDeviceToHost, stream));
  } else {
    ATTN_TRY(cudaMemcpyAsync(st->dev, st->host, bytes, cudaMemcpyHostToDevice, stream));
  }
  return cudaSuccess;
}

static cudaError_t l01_link_check(void *state, attn_verdict *v) {
  l01_link *st = (l01_link *)state;
  ATTN_TRY(cudaDeviceSynchronize());
  attn_verdict_init(v, ATTN_F32);
  l01_verdict_exact(v);
  if (st->d2h) {
    l01_judge_hash(v, st->host, st->n);
  } else {
    ATTN_TRY(cudaMemcpy(st->readback, st->dev, st->n * sizeof(float), cudaMemcpyDeviceToHost));
    l01_judge_hash(v, st->readback, st->n);
  }
  return cudaSuccess;
}

static void l01_link_work(void *state, attn_work *w) {
  const l01_link *st = (const l01_link *)state;
  memset(w, 0, sizeof *w);
  w->bytes = (double)st->n * sizeof(float);
  w->peak_gbs = st->pinned_gbs; /* measured, not a datasheet figure: see the comment at the top */
  w->peak_label = "pinned";
}

static void l01_link_teardown(void *state) {
  l01_link_free((l01_link *)state);
}

static cudaError_t l01_setup_h2d_pageable(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_link_setup(s, c, k, 0, 0);
}
static cudaError_t l01_setup_h2d_pinned(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_link_setup(s, c, k, 0, 1);
}
static cudaError_t l01_setup_d2h_pageable(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_link_setup(s, c, k, 1, 0);
}
static cudaError_t l01_setup_d2h_pinned(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_link_setup(s, c, k, 1, 1);
}

#define L01_LINK_CUSTOM(setup_fn)                                                 \
  {                                                                               \
    .setup = setup_fn, .poison = l01_link_poison, .launch = l01_link_launch,      \
    .check = l01_link_check, .work = l01_link_work, .teardown = l01_link_teardown \
  }

const attn_custom l01_h2d_pageable = L01_LINK_CUSTOM(l01_setup_h2d_pageable);
const attn_custom l01_h2d_pinned = L01_LINK_CUSTOM(l01_setup_h2d_pinned);
const attn_custom l01_d2h_pageable = L01_LINK_CUSTOM(l01_setup_d2h_pageable);
const attn_custom l01_d2h_pinned = L01_LINK_CUSTOM(l01_setup_d2h_pinned);
