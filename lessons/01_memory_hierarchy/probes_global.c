/* Lesson 01's HBM and L2 probes as harness versions (setup, poison, launch, check, work), plus the
 * probe sizes and the helpers every probe shares. The kernels and the reasoning behind them are in
 * probe_global.cu. */
#include <stdlib.h>
#include <string.h>

#include "probes.h"

/* ---- sizes and shared helpers ---------------------------------------------------------------- */

static l01_probe_config l01_config; /* all zero: every default */

void l01_probe_configure(const l01_probe_config *c) {
  if (c != NULL) {
    l01_config = *c;
  } else {
    memset(&l01_config, 0, sizeof l01_config);
  }
}

l01_probe_config l01_probe_config_get(void) {
  return l01_config;
}

void l01_verdict_exact(attn_verdict *v) {
  v->tol_max_abs = 0.0;
  v->tol_rel_l2 = 0.0;
}

void l01_judge_hash(attn_verdict *v, const float *got, size_t n) {
  attn_verdict_scan(v, ATTN_F32, got, n, 0);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    memcpy(&bits, got + i, sizeof bits);
    if (bits != L01_HASH_BITS(i) || (i & 1023) == 0) {
      attn_verdict_add(v, (double)got[i], (double)l01_hash_value(i));
    }
  }
}

cudaError_t l01_device_alloc(void **p, size_t bytes, const char **skip) {
  *p = NULL;
  const cudaError_t err = cudaMalloc(p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError(); /* clear it: running out of memory is a reason to skip, not a fault */
    *p = NULL;
    *skip = "not enough free device memory for this probe";
    return cudaSuccess;
  }
  if (err != cudaSuccess) {
    attn_cuda_report(err, "cudaMalloc", __FILE__, __LINE__);
    *p = NULL;
    return err;
  }
  return cudaSuccess;
}

/* ---- the read's expected sums, in closed form ------------------------------------------------ */

/* Sum of (i mod 17) over i in [0, n). */
static uint64_t l01_sum17_prefix(uint64_t n) {
  const uint64_t r = n % 17u;
  return (n / 17u) * 136u + (r == 0 ? 0 : r * (r - 1) / 2);
}

static uint64_t l01_sum17_range(uint64_t a, uint64_t b) {
  return l01_sum17_prefix(b) - l01_sum17_prefix(a);
}

void l01_read_expected(size_t n, int vec_floats, int passes, int grid, unsigned long long *sums) {
  const uint64_t vec = (uint64_t)vec_floats;
  const uint64_t tile = (uint64_t)L01_GLOBAL_THREADS * L01_GLOBAL_UNROLL; /* vectors */
  const uint64_t nv = n / vec, full = nv / tile;
  for (int b = 0; b < grid; ++b) sums[b] = 0;
  for (uint64_t t = 0; t < full; ++t) {
    sums[t % (uint64_t)grid] += l01_sum17_range(t * tile * vec, (t + 1) * tile * vec);
  }
  /* The owner of the partial tile also reads the floats after the last whole vector. */
  sums[full % (uint64_t)grid] += l01_sum17_range(full * tile * vec, n);
  for (int b = 0; b < grid; ++b) sums[b] *= (unsigned long long)passes;
}

double l01_read_max_per_thread(size_t n, int vec_floats, int passes, int grid) {
  const double tile = (double)L01_GLOBAL_THREADS * L01_GLOBAL_UNROLL;
  const double full = (double)(n / (size_t)vec_floats / (size_t)tile);
  const double tiles_per_block =
      grid > 0 ? (double)(((size_t)full + (size_t)grid - 1) / (size_t)grid) : full;
  const double per_pass = (tiles_per_block + 1.0) * L01_GLOBAL_UNROLL * vec_floats + 3.0;
  return per_pass * passes;
}

/* ---- HBM and L2 probes ----------------------------------------------------------------------- */

typedef struct l01_global {
  l01_global_op op;
  int is_l2;
  size_t n;   /* floats per buffer */
  int passes; /* read passes */
  int grid;
  float *x;                 /* read: data; write: output; copy: source */
  float *y;                 /* copy: destination */
  unsigned long long *sums; /* device, [grid] */
  unsigned long long *want; /* host, [grid] */
  unsigned long long *got;  /* host, [grid] */
} l01_global;

static void l01_global_free(l01_global *st) {
  if (st == NULL) return;
  (void)cudaFree(st->x);
  (void)cudaFree(st->y);
  (void)cudaFree(st->sums);
  free(st->want);
  free(st->got);
  free(st);
}

#define L01_GLOBAL_TRY(call)                                 \
  do {                                                       \
    cudaError_t l01_err_ = (call);                           \
    if (l01_err_ != cudaSuccess) {                           \
      attn_cuda_report(l01_err_, #call, __FILE__, __LINE__); \
      l01_global_free(st);                                   \
      return l01_err_;                                       \
    }                                                        \
  } while (0)

/* Largest multiple of @p unit not above @p bytes, at least one unit. */
static size_t l01_round_down(size_t bytes, size_t unit) {
  return bytes < unit ? unit : bytes / unit * unit;
}

static cudaError_t l01_global_setup(void **state, const attn_setup_ctx *ctx, const char **skip,
                                    l01_global_op op, int is_l2) {
  *state = NULL;
  const l01_probe_config cfg = l01_probe_config_get();
  const attn_device *dev = ctx->device;
  l01_global *st = (l01_global *)calloc(1, sizeof *st);
  if (st == NULL) {
    *skip = "out of host memory";
    return cudaSuccess;
  }
  st->op = op;
  st->is_l2 = is_l2;
  L01_GLOBAL_TRY(l01_global_grid(op, dev->sm_count, &st->grid));
  /* One round = one tile for every block: sizes in whole rounds give every block the same work. */
  const size_t vec_bytes = op == L01_READ4 ? 4 : 16;
  const size_t round = (size_t)st->grid * L01_GLOBAL_THREADS * L01_GLOBAL_UNROLL * vec_bytes;
  size_t free_b = 0, total_b = 0;
  L01_GLOBAL_TRY(cudaMemGetInfo(&free_b, &total_b));

  size_t bytes; /* bytes per buffer */
  if (is_l2) {
    if (cfg.l2_bytes != 0) {
      bytes = cfg.l2_bytes;
    } else if (round <= dev->l2_bytes / 2) {
      bytes = l01_round_down(dev->l2_bytes / 3, round); /* well inside L2, whole rounds */
    } else {
      bytes = dev->l2_bytes / 4;
    }
  } else if (cfg.hbm_bytes != 0) {
    bytes = op == L01_COPY16 ? cfg.hbm_bytes / 2 : cfg.hbm_bytes;
  } else {
    /* Reads 4 GiB, write and copy 2 GiB (their check copies the output to the host), at least
     * 8 x L2 either way. The harness's L2 flush before each timed run leaves up to an L2 of dirty
     * lines that drain to HBM during the run: about 1% of a 4 GiB read, which is why reads, where
     * the lesson sets its 90% target, are the larger. */
    size_t touched = (size_t)(op == L01_READ4 || op == L01_READ16 ? 4 : 2) << 30;
    if (touched < 8 * dev->l2_bytes) touched = 8 * dev->l2_bytes;
    if (touched > free_b / 2) touched = free_b / 2;
    bytes = op == L01_COPY16 ? touched / 2 : touched;
    bytes = l01_round_down(bytes, round);
  }
  st->n = bytes / sizeof(float);
  if (st->n == 0) {
    l01_global_free(st);
    *skip = "working set smaller than one float";
    return cudaSuccess;
  }

  const int reads = op == L01_READ4 || op == L01_READ16;
  if (is_l2) {
    const double all = 4.0 * (double)(1u << 30);
    st->passes = cfg.l2_passes > 0 ? cfg.l2_passes : (int)(all / (double)(st->n * 4) + 0.999);
    if (st->passes < 1) st->passes = 1;
  } else {
    st->passes = 1;
  }
  if (reads) {
    /* Each thread adds integers up to 16 in fp32: exact while its total stays below 2^24. */
    const int vec = op == L01_READ4 ? 1 : 4;
    while (st->passes > 1 &&
           16.0 * l01_read_max_per_thread(st->n, vec, st->passes, st->grid) >= 16777216.0) {
      st->passes /= 2;
    }
    if (16.0 * l01_read_max_per_thread(st->n, vec, st->passes, st->grid) >= 16777216.0) {
      l01_global_free(st);
      *skip = "too many floats per thread for an exact fp32 sum";
      return cudaSuccess;
    }
  }

  L01_GLOBAL_TRY(l01_device_alloc((void **)&st->x, st->n * sizeof(float), skip));
  if (*skip == NULL && op == L01_COPY16) {
    L01_GLOBAL_TRY(l01_device_alloc((void **)&st->y, st->n * sizeof(float), skip));
  }
  if (*skip == NULL && reads) {
    L01_GLOBAL_TRY(l01_device_alloc((void **)&st->sums, (size_t)st->grid * 8, skip));
  }
  if (*skip != NULL) {
    l01_global_free(st);
    return cudaSuccess;
  }
  if (reads) {
    st->want = (unsigned long long *)malloc((size_t)st->grid * 8);
    st->got = (unsigned long long *)malloc((size_t)st->grid * 8);
    if (st->want == NULL || st->got == NULL) {
      l01_global_free(st);
      *skip = "out of host memory";
      return cudaSuccess;
    }
    L01_GLOBAL_TRY(l01_fill_sum_pattern(st->x, st->n, 0));
    l01_read_expected(st->n, op == L01_READ4 ? 1 : 4, st->passes, st->grid, st->want);
  } else if (op == L01_COPY16) {
    L01_GLOBAL_TRY(l01_fill_hash_pattern(st->x, st->n, 0));
  }
  L01_GLOBAL_TRY(cudaDeviceSynchronize());
  *state = st;
  return cudaSuccess;
}

static cudaError_t l01_global_poison(void *state, cudaStream_t stream) {
  const l01_global *st = (const l01_global *)state;
  switch (st->op) {
    case L01_READ4:
    case L01_READ16:
      return attn_poison(st->sums, (size_t)st->grid * 8, stream);
    case L01_WRITE16:
      return attn_poison(st->x, st->n * sizeof(float), stream);
    default:
      return attn_poison(st->y, st->n * sizeof(float), stream);
  }
}

static cudaError_t l01_global_launch(void *state, cudaStream_t stream) {
  const l01_global *st = (const l01_global *)state;
  switch (st->op) {
    case L01_READ4:
    case L01_READ16:
      return l01_read(st->op, st->x, st->n, st->passes, st->grid, st->sums, stream);
    case L01_WRITE16:
      return l01_write(st->x, st->n, st->grid, stream);
    default:
      return l01_copy(st->y, st->x, st->n, stream);
  }
}

static cudaError_t l01_global_check(void *state, attn_verdict *v) {
  l01_global *st = (l01_global *)state;
  ATTN_TRY(cudaDeviceSynchronize());
  attn_verdict_init(v, ATTN_F32);
  l01_verdict_exact(v);
  if (st->op == L01_READ4 || st->op == L01_READ16) {
    ATTN_TRY(cudaMemcpy(st->got, st->sums, (size_t)st->grid * 8, cudaMemcpyDeviceToHost));
    /* Sums are below 2^53, so the doubles are exact; a block that never wrote holds 2^64 - 1. */
    for (int b = 0; b < st->grid; ++b) attn_verdict_add(v, (double)st->got[b], (double)st->want[b]);
    return cudaSuccess;
  }
  const float *out = st->op == L01_WRITE16 ? st->x : st->y;
  float *host = (float *)malloc(st->n * sizeof(float));
  if (host == NULL) {
    attn_cuda_report(cudaErrorMemoryAllocation, "malloc (host copy for the check)", __FILE__,
                     __LINE__);
    return cudaErrorMemoryAllocation;
  }
  const cudaError_t err = cudaMemcpy(host, out, st->n * sizeof(float), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) {
    attn_cuda_report(err, "cudaMemcpy", __FILE__, __LINE__);
    free(host);
    return err;
  }
  l01_judge_hash(v, host, st->n);
  free(host);
  return cudaSuccess;
}

static void l01_global_work(void *state, attn_work *w) {
  const l01_global *st = (const l01_global *)state;
  const double buffer = (double)st->n * sizeof(float);
  memset(w, 0, sizeof *w);
  w->bytes = st->op == L01_COPY16 ? 2.0 * buffer : buffer * st->passes;
  w->peak_gbs = 0.0; /* the device's HBM figure (for the L2 probe: a multiple of it) */
  w->peak_label = "HBM";
}

static void l01_global_teardown(void *state) {
  l01_global_free((l01_global *)state);
}

static cudaError_t l01_setup_read4(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_global_setup(s, c, k, L01_READ4, 0);
}
static cudaError_t l01_setup_read16(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_global_setup(s, c, k, L01_READ16, 0);
}
static cudaError_t l01_setup_write16(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_global_setup(s, c, k, L01_WRITE16, 0);
}
static cudaError_t l01_setup_copy16(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_global_setup(s, c, k, L01_COPY16, 0);
}
static cudaError_t l01_setup_l2(void **s, const attn_setup_ctx *c, const char **k) {
  return l01_global_setup(s, c, k, L01_READ16, 1);
}

#define L01_GLOBAL_CUSTOM(setup_fn)                                                     \
  {                                                                                     \
    .setup = setup_fn, .poison = l01_global_poison, .launch = l01_global_launch,        \
    .check = l01_global_check, .work = l01_global_work, .teardown = l01_global_teardown \
  }

const attn_custom l01_hbm_read4 = L01_GLOBAL_CUSTOM(l01_setup_read4);
const attn_custom l01_hbm_read16 = L01_GLOBAL_CUSTOM(l01_setup_read16);
const attn_custom l01_hbm_write16 = L01_GLOBAL_CUSTOM(l01_setup_write16);
const attn_custom l01_hbm_copy16 = L01_GLOBAL_CUSTOM(l01_setup_copy16);
const attn_custom l01_l2_read16 = L01_GLOBAL_CUSTOM(l01_setup_l2);
