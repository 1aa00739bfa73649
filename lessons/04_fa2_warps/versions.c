/* Lesson 04's table of versions, the flat entry point l04_forward() (for ctypes), the CPU part
 * (the tile plan of the shape, and the CPU model checked against the reference) and the report
 * (each version's speed against the one before it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fa2_warps.h"
#include "warp_partition.h"

/* [version - 1][0: dim 64, 1: dim 128] */
static const l04_launch_fn kLaunch[L04_VERSIONS][2] = {
    {l04_splitk_d64, l04_splitk_d128},   {l04_splitq_d64, l04_splitq_d128},
    {l04_mma_d64, l04_mma_d128},         {l04_swizzle_d64, l04_swizzle_d128},
    {l04_cpasync_d64, l04_cpasync_d128}, {l04_causal_d64, l04_causal_d128},
    {l04_tiles_d64, l04_tiles_d128},
};

cudaError_t l04_forward(int version, int dim, const void *q, const void *k, const void *v, void *o,
                        float *lse, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                        int causal, float scale, cudaStream_t stream) {
  if (version < 1 || version > L04_VERSIONS || (dim != 64 && dim != 128))
    return cudaErrorInvalidValue;
  if (scale == 0.0f) scale = 1.0f / sqrtf((float)dim);
  return kLaunch[version - 1][dim == 128](q, k, v, o, lse, batch, heads, kv_heads, seq_q, seq_kv,
                                          causal, scale, stream);
}

int l04_version_is_bf16(int version) {
  return version >= 3 && version <= L04_VERSIONS;
}

/* One launcher for every version: the harness hands it its number (attn_args::version). */
static cudaError_t run(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  return l04_forward(a->version, p->dim, a->q, a->k, a->v, a->o, a->lse, p->batch, p->heads,
                     p->kv_heads, p->seq_q, p->seq_kv, p->causal, attn_scale(p), s);
}

static const char *supports(const attn_problem *p) {
  return p->dim == 64 || p->dim == 128 ? NULL : "built for head dimensions 64 and 128";
}

/* The versions, named once: l04_version_name() and the tests read this table. */
static const attn_version kVersions[L04_VERSIONS] = {
    {.name = "splitk-f32",
     .summary = "fp32 CUDA cores; warps split the KV tile, barriers in the softmax",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "splitq-f32",
     .summary = "fp32 CUDA cores; warps split the Q tile, shuffles, no barrier",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "mma-bf16",
     .summary = "mma.sync m16n8k16 + ldmatrix, S and P in registers",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "swizzle-bf16",
     .summary = "+ XOR-swizzled shared memory (no bank conflicts)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "cpasync-bf16",
     .summary = "+ cp.async double-buffered K/V",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "causal-bf16",
     .summary = "+ causal tile skip, diagonal-only mask, heavy tiles first",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "tiles-bf16",
     .summary = "+ tiles per head dim: Bc 128 and Q from smem at dim 64",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
};

const char *l04_version_name(int version) {
  return version >= 1 && version <= L04_VERSIONS ? kVersions[version - 1].name : NULL;
}

/* The tile plan of versions 3-6 (and 7 at dim 128) for the shape, and the CPU model against the
 * reference. */
static int cpu_part(const attn_options *o) {
  const attn_problem *p = &o->problem;
  const int n_q = (p->seq_q + L04_BR - 1) / L04_BR, n_kv = (p->seq_kv + L04_BC - 1) / L04_BC;
  long every = 0, visited = 0, masked5 = 0, masked6 = 0;
  for (int t = 0; t < n_q; ++t) {
    const int vis =
        l04_kv_tiles_visited(t * L04_BR, L04_BR, p->seq_q, p->seq_kv, L04_BC, p->causal);
    const int um =
        l04_kv_tiles_unmasked(t * L04_BR, L04_BR, p->seq_q, p->seq_kv, L04_BC, p->causal);
    every += n_kv;
    visited += vis;
    masked6 += vis - um;
  }
  masked5 = every; /* versions 3-5 mask every tile */
  printf(
      "tile plan (versions 3-6; 7 at dim 128): Br %d x Bc %d, %d threads; per (batch, head) %d Q "
      "tiles;\n"
      "  KV tiles visited: %ld without the causal skip (versions 3-5 run the mask comparison in "
      "all %ld,\n  masked or not), %ld with it (version 6 compares only in the %ld tiles the "
      "diagonal crosses%s)\n  grid: %lld blocks (batch x heads x Q tiles)\n",
      L04_BR, L04_BC, L04_THREADS, n_q, every, masked5, visited, masked6,
      p->causal ? "" : ": no mask, no diagonal", (long long)p->batch * p->heads * n_q);

  /* The CPU model of version 6 on a small awkward problem with this head dimension: causal,
   * seq_q > seq_kv (rows that see nothing), GQA 2:1, tiles that do not divide the lengths. */
  const attn_problem s = {.batch = 1,
                          .heads = 4,
                          .kv_heads = 2,
                          .seq_q = 150,
                          .seq_kv = 97,
                          .dim = p->dim,
                          .causal = 1,
                          .block_size = 16,
                          .scale = 0.0f};
  l04_cpu_tiles tiles = {.br = 32, .bc = 16, .visits = 0};
  attn_verdict vo, vl;
  const int rc = attn_cpu_check(&s, o->seed, l04_cpu_attention, &tiles, &vo, &vl);
  if (rc < 0) {
    printf("cpu model: out of memory\n");
    return 1;
  }
  const int status = !(rc == 0 && tiles.visits > 0);
  printf(
      "cpu model of version 6 (seq 150/97 causal, GQA 2:1, Br 32, Bc 16): %s, %ld tile visits\n  "
      "O:   ",
      status ? "FAIL" : "PASS", tiles.visits);
  attn_verdict_print(&vo, stdout);
  printf("\n  LSE: ");
  attn_verdict_print(&vl, stdout);
  printf("\n");
  return status;
}

/* What each version bought: its rate over the previous version's, and split-Q over split-K. */
static int report(const attn_options *o, const attn_device *dev, const attn_result *r, int n) {
  (void)o;
  if (!dev) return 0;
  printf("\nwhat each version bought (median time of the previous / this one):\n");
  for (int i = 1; i < n; ++i) {
    if (!r[i].timed || !r[i - 1].timed || r[i].timing.median_ms <= 0.0) continue;
    printf("  %d %-13s vs %d %-13s %6.2fx\n", i + 1, r[i].version->name, i, r[i - 1].version->name,
           r[i - 1].timing.median_ms / r[i].timing.median_ms);
  }
  if (n >= 3 && r[n - 1].timed && r[1].timed && r[n - 1].timing.median_ms > 0.0)
    printf("  %d %-13s vs 2 %-13s %6.2fx (tensor cores, pipeline and tile skip together)\n", n,
           r[n - 1].version->name, r[1].version->name,
           r[1].timing.median_ms / r[n - 1].timing.median_ms);
  return 0;
}

static const int kDims[2] = {64, 128};

const attn_lesson l04_lesson = {
    .number = 4,
    .title =
        "FlashAttention-2: split-Q warps, tensor cores (mma.sync), cp.async pipeline, causal skip",
    .versions = kVersions,
    .n_versions = L04_VERSIONS,
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
};
