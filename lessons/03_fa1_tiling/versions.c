/* Lesson 3's version table, the head-dimension dispatch, and the report printed after the table.
 * Kept apart from main.c so the tests run the same table. */
#include <stdio.h>

#include "fa1_tiling.h"

static const char *supports_dim(const attn_problem *p) {
  if (p->dim != 64 && p->dim != 128) return "built for head dimensions 64 and 128 only";
  return NULL;
}

static cudaError_t launch_fused_row(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  const float *q = (const float *)a->q, *k = (const float *)a->k, *v = (const float *)a->v;
  if (p->dim == 64) return l03_fused_row_d64(p, q, k, v, (float *)a->o, a->lse, s);
  return l03_fused_row_d128(p, q, k, v, (float *)a->o, a->lse, s);
}

/* Version 2: one block per (batch, head), as the paper launches Algorithm 1. */
static cudaError_t launch_fa1(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  const float *q = (const float *)a->q, *k = (const float *)a->k, *v = (const float *)a->v;
  float *ws = (float *)a->workspace;
  if (p->dim == 64) return l03_fa1_d64(p, q, k, v, (float *)a->o, a->lse, ws, 1, s);
  return l03_fa1_d128(p, q, k, v, (float *)a->o, a->lse, ws, 1, s);
}

/* Version 3: as many blocks per (batch, head) as it takes to fill the GPU. */
static cudaError_t launch_fa1_qgroups(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  const float *q = (const float *)a->q, *k = (const float *)a->k, *v = (const float *)a->v;
  float *ws = (float *)a->workspace;
  if (p->dim == 64) return l03_fa1_qgroups_d64(p, q, k, v, (float *)a->o, a->lse, ws, s);
  return l03_fa1_qgroups_d128(p, q, k, v, (float *)a->o, a->lse, ws, s);
}

static const attn_version kVersions[] = {
    {.name = "fused-row",
     .summary =
         "fused, not tiled: one thread per query row streams all of K and V (online softmax)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports_dim,
     .launch = launch_fused_row},
    {.name = "fa1",
     .summary =
         "Algorithm 1 as published: K/V tiles outer, Q tiles inner, one block per (batch, head)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports_dim,
     .launch = launch_fa1,
     .workspace = l03_fa1_workspace_bytes},
    {.name = "fa1-qgroups",
     .summary = "Algorithm 1 with the Q tiles of a head split over several blocks (not the paper)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports_dim,
     .launch = launch_fa1_qgroups,
     .workspace = l03_fa1_workspace_bytes},
};

/* The plans of versions 2 (one group) and 3 (the groups it chooses) on this device. */
static cudaError_t device_plans(const attn_problem *p, l03_fa1_plan *one, l03_fa1_plan *many) {
  const cudaError_t e =
      p->dim == 64 ? l03_fa1_device_plan_d64(p, 1, one) : l03_fa1_device_plan_d128(p, 1, one);
  if (e != cudaSuccess) return e;
  return p->dim == 64 ? l03_fa1_qgroups_plan_d64(p, many) : l03_fa1_qgroups_plan_d128(p, many);
}

static const attn_result *timed(const attn_result *rs, int n, int index) {
  if (index >= n || !rs[index].timed || rs[index].timing.median_ms <= 0) return NULL;
  return &rs[index];
}

static void ratio(const attn_result *fast, const attn_result *slow) {
  if (!fast || !slow) return;
  printf("  %-12s is %6.2f x as fast as %s\n", fast->version->name,
         slow->timing.median_ms / fast->timing.median_ms, slow->version->name);
}

/* After the table: the tiles and grids FA1 ran with on this GPU, the model's HBM traffic for each,
 * and the speed ratios the lesson is about. */
static int report(const attn_options *o, const attn_device *dev, const attn_result *rs, int n) {
  const attn_problem *p = &o->problem;
  if (!dev || supports_dim(p)) return 0;
  l03_fa1_plan one, many;
  if (device_plans(p, &one, &many) != cudaSuccess) return 1;
  printf("\nFA1 on this GPU: M = %ld floats (opt-in shared memory per block)\n", one.smem_floats);
  printf(
      "  Bc = %d (paper: ceil(M/4d) = %d), Br = %d (paper: min(Bc, d) = %d), Tc = %d, Tr = %d, "
      "%zu bytes of shared memory per block\n",
      one.bc, one.bc_paper, one.br, one.br_paper, one.tc, one.tr, one.smem_bytes);
  printf(
      "  fa1: %ld blocks (batch x heads) on %d SMs; fa1-qgroups: %ld blocks (%d per (batch, "
      "head))\n",
      (long)p->batch * p->heads, dev->sm_count, (long)p->batch * p->heads * many.q_groups,
      many.q_groups);
  l03_traffic t1, tg;
  if (l03_fa1_model(p, &one, NULL, NULL, NULL, NULL, NULL, &t1) == 0 &&
      l03_fa1_model(p, &many, NULL, NULL, NULL, NULL, NULL, &tg) == 0) {
    printf(
        "  HBM traffic by the CPU model: fa1 %.3f GB, fa1-qgroups %.3f GB (its K and V are read "
        "%d times); standard attention %.3f GB\n",
        4e-9 * (l03_traffic_reads(&t1) + l03_traffic_writes(&t1)),
        4e-9 * (l03_traffic_reads(&tg) + l03_traffic_writes(&tg)), many.q_groups,
        4e-9 * l03_standard_elems(p));
  }
  const attn_result *fr = timed(rs, n, 0), *fa = timed(rs, n, 1), *fq = timed(rs, n, 2);
  if (fr || fa || fq) printf("  speed (median times above):\n");
  ratio(fa, fr);
  ratio(fq, fr);
  ratio(fq, fa);
  return 0;
}

static const int kDims[] = {64, 128};

const attn_lesson l03_lesson = {
    .number = 3,
    .title = "FlashAttention-1: tiling plus online softmax, O(N) memory",
    .versions = kVersions,
    .n_versions = (int)(sizeof kVersions / sizeof kVersions[0]),
    .defaults = {.batch = 1,
                 .heads = 16,
                 .kv_heads = 0, /* same as --heads unless --kv-heads is given */
                 .seq_q = 4096,
                 .seq_kv = 0, /* same as --seq unless --kv-seq is given */
                 .dim = 64,
                 .causal = 0,
                 .block_size = 16,
                 .scale = 0.0f},
    .dims = kDims,
    .n_dims = 2,
    .cpu_part = l03_cpu_part,
    .report = report,
};
