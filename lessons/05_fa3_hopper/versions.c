/* Lesson 05's table of versions, the flat entry point l05_forward() (for ctypes), the CPU part
 * (the tile plan of the shape, and the CPU model checked against the reference) and the report
 * (each version's speed against the one before it, and against lesson 04's best). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fa2_warps.h"
#include "fa3_hopper.h"

/** An FP8 version's two entry points: the bytes of its workspace, and conversion plus kernel. */
typedef struct l05_fp8_entry {
  size_t (*workspace_bytes)(int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim);
  cudaError_t (*forward)(const void *q, const void *k, const void *v, void *o, float *lse,
                         int batch, int heads, int kv_heads, int seq_q, int seq_kv, int dim,
                         int causal, float scale, void *workspace, size_t workspace_bytes,
                         cudaStream_t stream);
} l05_fp8_entry;

/* The FP8 versions: 6 (a scale per tensor), 7 (a scale per tile), 10 (7's workspace, the
 * exponentials taking turns), 11 (10 in persistent blocks), 12 (11 converting Q itself), 13
 * (12 with half the exponentials on the FMA pipes) and 14 (13 with the diagonal's half tile). They
 * take a workspace: not in kLaunch. */
static const l05_fp8_entry kFp8[7] = {
    {l05_fp8_workspace_bytes, l05_fp8_forward},   {l05_fp8t_workspace_bytes, l05_fp8t_forward},
    {l05_fp8t_workspace_bytes, l05_fp8w_forward}, {l05_fp8t_workspace_bytes, l05_fp8p_forward},
    {l05_fp8q_workspace_bytes, l05_fp8q_forward}, {l05_fp8x_workspace_bytes, l05_fp8x_forward},
    {l05_fp8h_workspace_bytes, l05_fp8h_forward},
};

/* Version @p version's FP8 entry points, or NULL for a bf16 version. */
static const l05_fp8_entry *fp8_entry(int version) {
  switch (version) {
    case 6:
      return &kFp8[0];
    case 7:
      return &kFp8[1];
    case 10:
      return &kFp8[2];
    case 11:
      return &kFp8[3];
    case 12:
      return &kFp8[4];
    case 13:
      return &kFp8[5];
    case 14:
      return &kFp8[6];
    default:
      return NULL;
  }
}

/* [version - 1][0: dim 64, 1: dim 128]: versions 1-5, 8 and 9 (dim 64 only) and 15; NULL where a
 * version is not built or is an FP8 version */
static const l05_launch_fn kLaunch[L05_VERSIONS][2] = {
    {l05_wgmma_d64, l05_wgmma_d128},
    {l05_tma_d64, l05_tma_d128},
    {l05_warpspec_d64, l05_warpspec_d128},
    {l05_pingpong_d64, l05_pingpong_d128},
    {l05_overlap_d64, l05_overlap_d128},
    {NULL, NULL},
    {NULL, NULL},
    {l05_three_d64, NULL},
    {l05_persist_d64, NULL},
    {NULL, NULL},
    {NULL, NULL},
    {NULL, NULL},
    {NULL, NULL},
    {NULL, NULL},
    {l05_pairs_d64, l05_pairs_d128},
};

cudaError_t l05_forward(int version, int dim, const void *q, const void *k, const void *v, void *o,
                        float *lse, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                        int causal, float scale, cudaStream_t stream) {
  if (version < 1 || version > L05_VERSIONS || (dim != 64 && dim != 128))
    return cudaErrorInvalidValue;
  if (scale == 0.0f) scale = 1.0f / sqrtf((float)dim);
  const l05_fp8_entry *f8 = fp8_entry(version);
  if (f8) {
    /* An FP8 version's workspace, allocated and freed in stream order around the call. */
    const size_t bytes = f8->workspace_bytes(batch, heads, kv_heads, seq_q, seq_kv, dim);
    if (bytes == 0) return cudaErrorInvalidValue;
    void *ws = NULL;
    cudaError_t e = cudaMallocAsync(&ws, bytes, stream);
    if (e != cudaSuccess) return e;
    e = f8->forward(q, k, v, o, lse, batch, heads, kv_heads, seq_q, seq_kv, dim, causal, scale, ws,
                    bytes, stream);
    const cudaError_t f = cudaFreeAsync(ws, stream);
    return e != cudaSuccess ? e : f;
  }
  const l05_launch_fn f = kLaunch[version - 1][dim == 128];
  if (!f) return cudaErrorInvalidValue; /* versions 8 and 9 at dim 128 */
  return f(q, k, v, o, lse, batch, heads, kv_heads, seq_q, seq_kv, causal, scale, stream);
}

/* One launcher for every version: the harness hands it its number (attn_args::version). */
static cudaError_t run(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  return l05_forward(a->version, p->dim, a->q, a->k, a->v, a->o, a->lse, p->batch, p->heads,
                     p->kv_heads, p->seq_q, p->seq_kv, p->causal, attn_scale(p), s);
}

/* An FP8 version through the harness's workspace: the conversion and the kernel, both timed. */
static cudaError_t run_fp8(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  return fp8_entry(a->version)
      ->forward(a->q, a->k, a->v, a->o, a->lse, p->batch, p->heads, p->kv_heads, p->seq_q,
                p->seq_kv, p->dim, p->causal, attn_scale(p), a->workspace, a->workspace_bytes, s);
}

/* Versions 6, 7, 10 and 11 share one workspace layout (fp8_workspace.cuh), and versions 12-14
 * use the same with no Q rows, so smaller: the harness asks once per row, without the version's
 * number, and the largest serves them all. */
static size_t fp8_workspace(const attn_problem *p) {
  return l05_fp8_workspace_bytes(p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim);
}

static const char *supports_fp8(const attn_problem *p) {
  return p->dim == 128 ? NULL : "FP8 is built for head dimension 128 only";
}

/* The yardstick: lesson 04's best kernel (version 7) on the same inputs, in the same run. */
static cudaError_t run_l04(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  return l04_forward(L04_VERSIONS, p->dim, a->q, a->k, a->v, a->o, a->lse, p->batch, p->heads,
                     p->kv_heads, p->seq_q, p->seq_kv, p->causal, attn_scale(p), s);
}

static const char *supports(const attn_problem *p) {
  return p->dim == 64 || p->dim == 128 ? NULL : "built for head dimensions 64 and 128";
}

static const char *supports_d64(const attn_problem *p) {
  return p->dim == 64 ? NULL
                      : "three consumers are built for head dimension 64 only (at 128, O alone "
                        "takes 64 of the 160 registers each has)";
}

/** Rows of the table: the versions, then the yardstick. */
#define L05_ROWS (L05_VERSIONS + 1)

/* The versions, named once: l05_version_name() and the tests read this table. */
static const attn_version kVersions[L05_ROWS] = {
    {.name = "wgmma-bf16",
     .summary = "wgmma.mma_async from swizzled smem (Q, K, V), P from registers; cp.async loads",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "tma-bf16",
     .summary = "+ TMA tiles into a two-stage ring, mbarrier waits instead of block barriers",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "warpspec-bf16",
     .summary = "+ producer warpgroup (TMA only), 2 consumers, full/empty barriers, setmaxnreg",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "pingpong-bf16",
     .summary = "+ ping-pong: the consumers take turns at the tensor cores (named barriers)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "overlap-bf16",
     .summary = "+ the softmax of S_j under the warpgroup's own P_{j-1} V_{j-1} (wait_group 1)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "fp8-e4m3",
     .summary = "+ FP8: e4m3 Q, K, V^T (keys permuted to P's register order); conversion timed",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .fp8 = 1,
     .supports = supports_fp8,
     .launch = run_fp8,
     .workspace = fp8_workspace},
    {.name = "fp8-tiles",
     .summary = "+ a power-of-two scale per 128-row tile: a one-pass conversion; conversion timed",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .fp8 = 1,
     .supports = supports_fp8,
     .launch = run_fp8,
     .workspace = fp8_workspace},
    {.name = "three-bf16",
     .summary = "+ three consumer warpgroups (192-row blocks, a ring of turns), dim 64 only",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .supports = supports_d64,
     .launch = run},
    {.name = "persistent-bf16",
     .summary =
         "+ one block per SM taking Q tiles from a counter; the next one loads under this one",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .supports = supports_d64,
     .launch = run},
    {.name = "fp8-wide",
     .summary = "+ 256-key tiles; the warpgroups take turns at the exponentials, not the GEMMs",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .fp8 = 1,
     .supports = supports_fp8,
     .launch = run_fp8,
     .workspace = fp8_workspace},
    {.name = "fp8-persistent",
     .summary = "+ version 9's scheduler: one block per SM taking Q tiles from a counter",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .fp8 = 1,
     .supports = supports_fp8,
     .launch = run_fp8,
     .workspace = fp8_workspace},
    {.name = "fp8-q-in-kernel",
     .summary = "+ Q converted to e4m3 inside the kernel, one scale per warp's rows; the pass "
                "converts K and V only",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .fp8 = 1,
     .supports = supports_fp8,
     .launch = run_fp8,
     .workspace = fp8_workspace},
    {.name = "fp8-exp-fma",
     .summary = "+ the exponentials of the even keys as a line between powers of two on the FMA "
                "pipes, the odd keys' on the special function unit",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .fp8 = 1,
     .supports = supports_fp8,
     .launch = run_fp8,
     .workspace = fp8_workspace},
    {.name = "fp8-half-tile",
     .summary = "+ an item's last KV tile over its first 128 keys only where the other 128 are "
                "masked for every row (the causal diagonal)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .fp8 = 1,
     .supports = supports_fp8,
     .launch = run_fp8,
     .workspace = fp8_workspace},
    {.name = "pairs-bf16",
     .summary = "version 5 in persistent blocks, one per SM, each walking a list fixed before the "
                "launch (under the mask a head's Q tiles in pairs, i with n - 1 - i)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 90,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "l04-tiles",
     .summary = "yardstick: lesson 04's version 7 (mma.sync) on the same inputs",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run_l04},
};

const char *l05_version_name(int version) {
  return version >= 1 && version <= L05_VERSIONS ? kVersions[version - 1].name : NULL;
}

/* The tile plan of the versions for the shape, and the CPU model against the reference. */
static int cpu_part(const attn_options *o) {
  const attn_problem *p = &o->problem;
  const int n_q = (p->seq_q + L05_BR - 1) / L05_BR, n_kv = (p->seq_kv + L05_BC - 1) / L05_BC;
  const int dim = p->dim;
  const long smem = (long)L05_BR * dim * 2 + 4L * L05_BC * dim * 2;
  printf(
      "tile plan (versions 1-5): Br %d = 2 warpgroups x %d rows, Bc %d keys, 256 threads (384 in "
      "version 3: a producer warpgroup); per "
      "(batch, head)\n  %d Q tiles x %d KV tiles; grid %lld blocks; shared memory %ld KB "
      "(Q + 2 stages of K and V)\n"
      "  per KV tile and warpgroup: S = Q K^T is %d wgmma m64n%dk16 (%d MACs each), O += P V is %d "
      "wgmma m64n%dk16\n",
      L05_BR, L05_WG_ROWS, L05_BC, n_q, n_kv, (long long)p->batch * p->heads * n_q, smem / 1024,
      dim / 16, L05_BC, 64 * L05_BC * 16, L05_BC / 16, dim);

  /* The CPU model in FA3's order on a small awkward problem with this head dimension: causal,
   * seq_q > seq_kv (rows that see nothing), GQA 2:1, tiles that do not divide the lengths. */
  const attn_problem s = {.batch = 1,
                          .heads = 4,
                          .kv_heads = 2,
                          .seq_q = 150,
                          .seq_kv = 97,
                          .dim = dim,
                          .causal = 1,
                          .block_size = 16,
                          .scale = 0.0f};
  l05_cpu_tiles tiles = {.br = 32, .wg_rows = 16, .bc = 16, .s_products = 0, .max_early = 0};
  attn_verdict vo, vl;
  const int rc = attn_cpu_check(&s, o->seed, l05_cpu_attention, &tiles, &vo, &vl);
  if (rc < 0) {
    printf("cpu model: out of memory\n");
    return 1;
  }
  /* S_{j+1} before softmax_j: a warpgroup with two or more tiles to visit holds two S at once. */
  const int status = !(rc == 0 && tiles.s_products > 0 && tiles.max_early == 2);
  printf(
      "cpu model of FA3's pipelined tile loop (seq 150/97 causal, GQA 2:1, Br 32 = 2 x 16, Bc 16): "
      "%s,\n  %ld S tiles, at most %ld held at once by a warpgroup\n  O:   ",
      status ? "FAIL" : "PASS", tiles.s_products, tiles.max_early);
  attn_verdict_print(&vo, stdout);
  printf("\n  LSE: ");
  attn_verdict_print(&vl, stdout);
  printf("\n");
  return status;
}

/* The version each one is built on (0: none), as its file's header says: 8 on 5 (dim 64 only), 10
 * on 7, 15 on 5. */
static const int kBuiltOn[L05_VERSIONS] = {0, 1, 2, 3, 4, 5, 6, 5, 8, 7, 10, 11, 12, 13, 5};

/* What each version bought: its rate over the version it is built on, and over lesson 04's best. */
static int report(const attn_options *o, const attn_device *dev, const attn_result *r, int n) {
  (void)o;
  if (!dev) return 0;
  const attn_result *y = &r[n - 1]; /* the yardstick */
  printf("\nwhat each version bought (median time of the other / this one):\n");
  for (int i = 0; i < n - 1; ++i) {
    if (!r[i].timed || r[i].timing.median_ms <= 0.0) continue;
    /* the version it is built on when that ran (kBuiltOn), else the version before it of the
     * same kind (bf16 or FP8) that ran, else the one just before */
    int p = i < L05_VERSIONS ? kBuiltOn[i] - 1 : -1;
    if (p < 0 || !r[p].timed) {
      p = i - 1;
      while (p >= 0 && !(r[p].timed && r[p].version->fp8 == r[i].version->fp8)) --p;
      if (p < 0) p = i - 1;
    }
    if (p >= 0 && r[p].timed)
      printf("  %d %-11s vs %d %-11s %6.2fx\n", i + 1, r[i].version->name, p + 1,
             r[p].version->name, r[p].timing.median_ms / r[i].timing.median_ms);
    if (y->timed)
      printf("  %d %-11s vs lesson 04 v%d %6.2fx\n", i + 1, r[i].version->name, L04_VERSIONS,
             y->timing.median_ms / r[i].timing.median_ms);
  }
  return 0;
}

static const int kDims[2] = {64, 128};

const attn_lesson l05_lesson = {
    .number = 5,
    .title = "FlashAttention-3 on Hopper: wgmma, TMA and mbarriers, one feature per version",
    .versions = kVersions,
    .n_versions = L05_ROWS,
    .defaults = {.batch = 4,
                 .heads = 16,
                 .kv_heads = 0, /* same as --heads unless --kv-heads is given */
                 .seq_q = 4096,
                 .seq_kv = 0, /* same as --seq unless --kv-seq is given */
                 .dim = 128,
                 .causal = 0,
                 .block_size = 16,
                 .scale = 0.0f},
    .dims = kDims,
    .n_dims = 2,
    .cpu_part = cpu_part,
    .report = report,
    .only_sm = 90,
};
