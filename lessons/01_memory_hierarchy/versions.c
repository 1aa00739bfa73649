/* Lesson 01's table of versions and its CPU part (the traffic model of the chosen shape). */
#include <math.h>
#include <stdio.h>

#include "memory_hierarchy.h"
#include "probes.h"

#define L01_PROBE(nm, text, cust)                                                          \
  {                                                                                        \
    .name = (nm), .summary = (text), .kind = ATTN_CUSTOM, .dtype = ATTN_F32, .min_sm = 80, \
    .writes_lse = 0, .supports = NULL, .launch = NULL, .workspace = NULL, .custom = (cust) \
  }

static const attn_version l01_versions[] = {
    L01_PROBE("h2d-pageable", "host to device from malloc memory (driver stages it)",
              &l01_h2d_pageable),
    L01_PROBE("h2d-pinned", "host to device from cudaMallocHost memory (DMA reads it)",
              &l01_h2d_pinned),
    L01_PROBE("d2h-pageable", "device to host into malloc memory", &l01_d2h_pageable),
    L01_PROBE("d2h-pinned", "device to host into cudaMallocHost memory", &l01_d2h_pinned),
    L01_PROBE("hbm-read-4B", "sum 4 GiB (>= 8 x L2), 4-byte loads", &l01_hbm_read4),
    L01_PROBE("hbm-read-16B", "sum 4 GiB (>= 8 x L2), 16-byte loads", &l01_hbm_read16),
    L01_PROBE("hbm-write-16B", "write 2 GiB (>= 8 x L2), 16-byte stores", &l01_hbm_write16),
    L01_PROBE("hbm-copy-16B", "copy 1 GiB into another 1 GiB, 16-byte accesses", &l01_hbm_copy16),
    L01_PROBE("l2-read-16B", "the 16-byte read, many passes over a third of the L2",
              &l01_l2_read16),
    L01_PROBE("smem-row", "shared memory, a warp reads a row: 32 banks, no conflict",
              &l01_smem_row),
    L01_PROBE("smem-stride2", "shared memory, lane stride 2 words: 2-way bank conflict",
              &l01_smem_stride2),
    L01_PROBE("smem-stride32", "shared memory, a warp reads a column: 32-way bank conflict",
              &l01_smem_stride32),
    L01_PROBE("smem-pad33", "the same column, rows padded to 33 words: no conflict",
              &l01_smem_pad33),
    L01_PROBE("fma-fp32", "16 independent FMA chains per thread, registers only", &l01_fma_probe),
    {.name = "naive",
     .summary = "S = QK^T*scale, softmax, O = PV: three kernels, S and P in HBM",
     .kind = ATTN_DENSE,
     .dtype = ATTN_F32,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = l01_naive_supports,
     .launch = l01_naive_attention,
     .workspace = l01_naive_workspace,
     .custom = NULL},
};

_Static_assert(sizeof l01_versions / sizeof l01_versions[0] == L01_N_VERSIONS,
               "l01_version_number must list every row of the table");

const attn_lesson l01_lesson = {
    .number = 1,
    .title = "The memory hierarchy, measured; naive attention that lives in HBM",
    .versions = l01_versions,
    .n_versions = L01_N_VERSIONS,
    .defaults = {.batch = 1,
                 .heads = 16,
                 .kv_heads = 0, /* same as --heads unless --kv-heads is given */
                 .seq_q = 4096,
                 .seq_kv = 0, /* same as --seq unless --kv-seq is given */
                 .dim = 64,
                 .causal = 0,
                 .block_size = 16,
                 .scale = 0.0f},
    .dims = NULL,
    .n_dims = 0,
    .cpu_part = l01_cpu_part,
    .report = l01_report,
};

l01_shape l01_shape_of(const attn_problem *p) {
  l01_shape s;
  s.batch = p->batch;
  s.heads = p->heads;
  s.kv_heads = p->kv_heads > 0 ? p->kv_heads : p->heads;
  s.seq_q = p->seq_q;
  s.seq_kv = p->seq_kv > 0 ? p->seq_kv : p->seq_q;
  s.dim = p->dim;
  s.causal = p->causal;
  return s;
}

/* Agreement within a relative 1e-12 (both sides are sums of exact integers in double). */
static int l01_same(double a, double b) {
  return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

int l01_cpu_part(const attn_options *o) {
  const attn_problem *p = &o->problem;
  const l01_shape s = l01_shape_of(p);
  l01_traffic t;
  l01_naive_traffic(&s, &t);
  const double s_bytes = l01_s_bytes(&s), fused = l01_fused_bytes(&s);
  const double executed = l01_naive_flops(&s), useful = l01_useful_flops(&s);

  printf("\nNaive attention on paper (fp32, ");
  attn_problem_print(p, stdout);
  printf("):\n");
  printf("  S = [batch, heads, seq_q, seq_kv] = [%d, %d, %d, %d] fp32: %.0f bytes = %.3f GiB\n",
         s.batch, s.heads, s.seq_q, s.seq_kv, s_bytes, s_bytes / (1 << 30));
  printf(
      "  (P has the same size; the softmax writes P over S, so one buffer holds both; S is\n"
      "   processed whole, every (batch, head) in one launch per kernel)\n");
  printf("  traffic = (Q + K + V + O) + 4 S + lse: S written, read, written as P, read; fp32\n");
  printf("  HBM traffic, each tensor counted once per kernel that touches it:\n");
  printf("    kernel 1  S = QK^T*scale   read Q, K; write S        %10.3f GB\n", t.qk / 1e9);
  printf("    kernel 2  P = softmax(S)   read S; write P, lse      %10.3f GB\n", t.softmax / 1e9);
  printf("    kernel 3  O = PV           read P, V; write O        %10.3f GB\n", t.pv / 1e9);
  printf("    total                                               %10.3f GB\n", t.total / 1e9);
  printf("  a fused kernel (Q, K, V read once, O written once):  %10.3f GB  (%.1fx less)\n",
         fused / 1e9, fused > 0 ? t.total / fused : 0.0);
  printf("  flops executed (every pair, masked or not): %.4g   useful (visible pairs): %.4g\n",
         executed, useful);
  printf("  arithmetic intensity: naive %.2f flop/B (useful flops / traffic), fused %.1f flop/B\n",
         l01_intensity(useful, t.total), l01_intensity(useful, fused));

  int failed = 0;
  if (!l01_same(useful, attn_flops(p))) {
    printf("  MODEL ERROR: useful flops %.17g, harness attn_flops %.17g\n", useful, attn_flops(p));
    failed = 1;
  }
  if (!l01_same(l01_visible_pairs(&s), attn_visible_pairs(p))) {
    printf("  MODEL ERROR: visible pairs %.17g, harness %.17g\n", l01_visible_pairs(&s),
           attn_visible_pairs(p));
    failed = 1;
  }
  if (!l01_same(fused, attn_min_bytes(p, ATTN_F32, 0))) {
    printf("  MODEL ERROR: fused bytes %.17g, harness attn_min_bytes %.17g\n", fused,
           attn_min_bytes(p, ATTN_F32, 0));
    failed = 1;
  }
  if (!failed) printf("  model agrees with the harness's flop and byte counts\n");
  return failed;
}
