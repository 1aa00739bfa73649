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

/* One launcher for every version: the harness hands it the version's number (attn_args::version). */
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
      "  KV tiles visited: %ld without the causal skip (versions 3-5, all %ld masked), %ld with it "
      "(version 6, %ld masked)\n  grid: %lld blocks (batch x heads x Q tiles)\n",
      L04_BR, L04_BC, L04_THREADS, n_q, every, masked5, visited, masked6,
      (long long)p->batch * p->heads * n_q);

  /* The CPU model of version 6 on a small awkward problem with this head dimension: causal,
   * seq_q > seq_kv (rows that see nothing), GQA 2:1, tiles that do not divide the lengths. */
  attn_problem s = {1, 4, 2, 150, 97, p->dim, 1, 16, 0.0f};
  size_t nq = attn_q_elems(&s), nkv = attn_kv_elems(&s), rows = attn_rows(&s);
  float *q = (float *)malloc(sizeof(float) * nq), *k = (float *)malloc(sizeof(float) * nkv);
  float *v = (float *)malloc(sizeof(float) * nkv), *out = (float *)malloc(sizeof(float) * nq);
  float *lse = (float *)malloc(sizeof(float) * rows);
  double *ref = (double *)malloc(sizeof(double) * nq),
         *ref_lse = (double *)malloc(sizeof(double) * rows);
  int status = 1;
  if (q && k && v && out && lse && ref && ref_lse) {
    attn_fill_attention_input(q, nq, o->seed, 1);
    attn_fill_attention_input(k, nkv, o->seed, 2);
    attn_fill_attention_input(v, nkv, o->seed, 3);
    long visits = l04_cpu_forward(&s, q, k, v, out, lse, 32, 16);
    attn_reference(&s, q, k, v, NULL, rows, ref, ref_lse);
    attn_verdict vo, vl;
    attn_verdict_init(&vo, ATTN_F32);
    attn_verdict_init(&vl, ATTN_F32);
    vl.tol_max_abs = 1e-3;
    attn_verdict_scan(&vo, ATTN_F32, out, nq, 0);
    attn_verdict_scan(&vl, ATTN_F32, lse, rows, 1);
    for (size_t r = 0; r < rows; ++r) {
      for (int d = 0; d < s.dim; ++d) attn_verdict_add(&vo, out[r * s.dim + d], ref[r * s.dim + d]);
      attn_verdict_add(&vl, lse[attn_row_lse_index(&s, r)], ref_lse[r]);
    }
    attn_verdict_finish(&vo);
    attn_verdict_finish(&vl);
    status = !(vo.pass && vl.pass && visits > 0);
    printf(
        "cpu model of version 6 (seq 150/97 causal, GQA 2:1, Br 32, Bc 16): %s, %ld tile visits\n  "
        "O:   ",
        status ? "FAIL" : "PASS", visits);
    attn_verdict_print(&vo, stdout);
    printf("\n  LSE: ");
    attn_verdict_print(&vl, stdout);
    printf("\n");
  } else {
    printf("cpu model: out of memory\n");
  }
  free(q), free(k), free(v), free(out), free(lse), free(ref), free(ref_lse);
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

const attn_lesson attn_lesson04 = {
    4,
    "FlashAttention-2: split-Q warps, tensor cores (mma.sync), cp.async pipeline, causal skip",
    kVersions,
    L04_VERSIONS,
    {4, 16, 0, 4096, 0, 128, 0, 16, 0.0f}, /* kv_heads, seq_kv 0: as heads, seq */
    kDims,
    2,
    cpu_part,
    report};
