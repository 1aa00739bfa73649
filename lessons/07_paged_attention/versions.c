/* Lesson 07's table of versions, the CPU part (the cache manager at work, the serving simulation,
 * the CPU model through the block table) and the report, which runs the decode loop on the GPU.
 * The launchers, chunk lengths and workspaces come from launch_plan.c. */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "paged_attention.h"

static cudaError_t run(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  return l07_launcher(a->version, p->dim)(
      a->q, a->k_cache, a->v_cache, a->block_table, a->seq_lens, p->kv_lens, a->o, a->lse,
      (float *)a->workspace, a->workspace_bytes, p->batch, p->heads, p->kv_heads, p->seq_q,
      p->seq_kv, a->max_blocks, p->block_size, p->causal, attn_scale(p), s);
}

static const char *supports(const attn_problem *p) {
  if (p->dim != 64 && p->dim != 128) return "built for head dimensions 64 and 128";
  if (p->seq_q > L06_MAX_SEQ_Q) return "decode kernels take seq_q 1..8 (lesson 06's limit)";
  if ((long long)p->batch * p->heads * p->seq_q > INT_MAX) return "more than 2^31 - 1 query rows";
  return NULL;
}

/* The yardsticks: lesson 06's versions 5 and 6 on dense K and V holding the same values. */
static cudaError_t run_dense(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  if (a->version == L07_PAGED_VERSIONS + 2)
    return (p->dim == 128 ? l06_varlen_d128 : l06_varlen_d64)(
        a->q, a->k, a->v, a->o, a->lse, a->workspace, a->workspace_bytes,
        p->kv_lens ? a->seq_lens : NULL, p->kv_lens, p->batch, p->heads, p->kv_heads, p->seq_q,
        p->seq_kv, p->causal, attn_scale(p), s);
  return l06_forward(5, p->dim, a->q, a->k, a->v, a->o, a->lse, a->workspace, a->workspace_bytes,
                     p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->causal, attn_scale(p),
                     s);
}

static size_t one_launch_workspace(const attn_problem *p) {
  return l06_workspace_bytes(5, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim);
}

static size_t varlen_workspace(const attn_problem *p) {
  return l06_varlen_workspace_bytes(p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv,
                                    p->kv_lens, p->dim);
}

static const char *supports_pow2(const attn_problem *p) {
  const char *why = supports(p);
  if (why) return why;
  if (p->block_size & (p->block_size - 1))
    return "block sizes that are powers of two (the page and the slot are a shift and a mask)";
  return NULL;
}

static size_t split_workspace(const attn_problem *p) {
  return l07_paged_workspace_bytes(2, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv,
                                   p->kv_lens, p->dim);
}

static size_t pipeline_workspace(const attn_problem *p) {
  return l07_paged_workspace_bytes(3, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv,
                                   p->kv_lens, p->dim);
}

static size_t overlap_workspace(const attn_problem *p) {
  return l07_paged_workspace_bytes(4, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv,
                                   p->kv_lens, p->dim);
}

static size_t balance_workspace(const attn_problem *p) {
  return l07_paged_workspace_bytes(5, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv,
                                   p->kv_lens, p->dim);
}

/* The versions, named once. */
static const attn_version kVersions[L07_VERSIONS] = {
    {.name = "paged-row",
     .summary = "one block per query row walks its block table (vLLM's v1 shape)",
     .kind = ATTN_PAGED,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .supports = supports,
     .launch = run},
    {.name = "paged-split",
     .summary = "lesson 06's fastest decode reading K and V through the block table",
     .kind = ATTN_PAGED,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .supports = supports,
     .launch = run,
     .workspace = split_workspace},
    {.name = "paged-pipeline",
     .summary = "version 2 with each tile's pages read a tile ahead, shared by shuffles",
     .kind = ATTN_PAGED,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .supports = supports_pow2,
     .launch = run,
     .workspace = pipeline_workspace},
    {.name = "paged-overlap",
     .summary = "version 3 with Q before the table and two blocks per SM over several waves",
     .kind = ATTN_PAGED,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .supports = supports_pow2,
     .launch = run,
     .workspace = overlap_workspace},
    {.name = "paged-balance",
     .summary = "version 4 with the KV heads of a chunk side by side, even chunks, work balanced",
     .kind = ATTN_PAGED,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .supports = supports_pow2,
     .launch = run,
     .workspace = balance_workspace},
    {.name = "dense-one-launch",
     .summary = "yardstick: lesson 06's version 5 on dense K and V of the same values",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run_dense,
     .workspace = one_launch_workspace},
    {.name = "dense-varlen",
     .summary = "yardstick: lesson 06's version 6 on dense K and V of the same values",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .supports = supports,
     .launch = run_dense,
     .workspace = varlen_workspace},
};

/* The cache manager on a pool of 8 blocks of 4 tokens: a sequence grows, forks, the child writes
 * into the shared last block (copy-on-write), the pool runs out, a double close is refused, and
 * every block comes back. Returns 0 when every step did what the comment next to it says. */
static int cache_walkthrough(void) {
  l07_cache c;
  int a = -1, b = -1, slots[12], bad = 0;
  l07_copy cp;
  if (l07_cache_init(&c, 8, 4, 4, 8) != L07_OK) return 1;
  printf("cache manager: a pool of 8 blocks of 4 tokens\n");
  bad |= l07_seq_open(&c, &a) != L07_OK;
  bad |= l07_seq_append(&c, a, 10, slots, &cp) != L07_OK; /* 10 tokens: blocks 0, 1, 2 */
  printf("  sequence %d: 10 tokens in blocks %d %d %d, %d free\n", a, l07_seq_table(&c, a)[0],
         l07_seq_table(&c, a)[1], l07_seq_table(&c, a)[2], l07_cache_free_blocks(&c));
  bad |= l07_seq_fork(&c, a, &b) != L07_OK; /* shares all 3 blocks */
  printf("  fork: sequence %d shares them (%d free)\n", b, l07_cache_free_blocks(&c));
  bad |= l07_seq_append(&c, b, 1, slots, &cp) != L07_OK; /* the shared block 2 has 2 tokens */
  printf(
      "  sequence %d appends 1 token: copy-on-write of block %d (%d tokens) into block %d, the "
      "token in slot %d\n",
      b, cp.src, cp.tokens, cp.dst, slots[0]);
  bad |= cp.tokens != 2 || cp.src == cp.dst;
  /* 20 more tokens need 5 more blocks; 4 are free: refused, nothing changes */
  const l07_status full = l07_seq_append(&c, a, 20, NULL, &cp);
  bad |= full != L07_NO_BLOCKS || l07_seq_len(&c, a) != 10;
  printf("  sequence %d asks for 20 more tokens: %s (%s), %d free, its length still %d\n", a,
         full == L07_OK ? "granted" : "refused", l07_status_text(full), l07_cache_free_blocks(&c),
         l07_seq_len(&c, a));
  bad |= l07_seq_close(&c, a) != L07_OK || l07_seq_close(&c, b) != L07_OK;
  const l07_status twice = l07_seq_close(&c, a);
  printf("  both closed: %d of 8 free; a second close: %s\n", l07_cache_free_blocks(&c),
         l07_status_text(twice));
  bad |= twice != L07_BAD_SEQ || l07_cache_free_blocks(&c) != 8;
  l07_cache_destroy(&c);
  return bad;
}

/* The serving simulation: memory held against tokens held, per scheme. */
static int simulation(const attn_options *o) {
  const l07_sim_config cfg = {.live = 64,
                              .steps = 4000,
                              .prompt_min = 32,
                              .prompt_max = 2048,
                              .output_min = 16,
                              .output_max = 1024,
                              .max_context = 4096,
                              .seed = o->seed};
  l07_sim_result r;
  if (l07_simulate(&cfg, &r) != 0) return 1;
  printf(
      "serving simulation: %d requests in flight, prompts %d-%d and outputs %d-%d tokens "
      "(log-uniform),\n  context %d, %d steps, %ld requests, seed %llu; KV memory held per "
      "token cached:\n",
      cfg.live, cfg.prompt_min, cfg.prompt_max, cfg.output_min, cfg.output_max, cfg.max_context,
      cfg.steps, r.requests, (unsigned long long)cfg.seed);
  printf("  %-34s %9s %8s\n", "scheme", "held/used", "waste");
  printf("  %-34s %9.2f %7.1f%%\n", "contiguous, whole context", r.reserved_max_context / r.tokens,
         100.0 * (1.0 - r.tokens / r.reserved_max_context));
  printf("  %-34s %9.2f %7.1f%%\n", "contiguous, prompt + longest output",
         r.reserved_prompt_output / r.tokens, 100.0 * (1.0 - r.tokens / r.reserved_prompt_output));
  for (int b = 0; b < L07_SIM_BLOCK_SIZES; ++b) {
    char name[40];
    snprintf(name, sizeof name, "paged, block size %d", r.block_size[b]);
    printf("  %-34s %9.3f %7.2f%%\n", name, r.reserved_paged[b] / r.tokens,
           100.0 * (1.0 - r.tokens / r.reserved_paged[b]));
  }
  return 0;
}

/* The decode loop on the CPU: sequences arrive, generate, fork and finish over one small pool;
 * every row decoded through the table must equal the dense shadow's, and every block come back. */
static int decode_loop(const attn_options *o) {
  const l07_loop_config cfg = {.max_live = 6,
                               .steps = 200,
                               .prompt_min = 1,
                               .prompt_max = 90,
                               .output_min = 1,
                               .output_max = 60,
                               .fork_every = 25,
                               .heads = 4,
                               .kv_heads = 2,
                               .dim = 64,
                               .block_size = o->problem.block_size,
                               .num_blocks = 2 + 600 / o->problem.block_size,
                               .seed = o->seed};
  l07_loop_result r;
  if (l07_decode_loop_cpu(&cfg, &r) != 0) {
    printf("decode loop: could not run (configuration or memory)\n");
    return 1;
  }
  const int ok = r.max_abs == 0.0 && r.free_at_end == cfg.num_blocks;
  printf(
      "decode loop on the CPU (block size %d, %d blocks): %ld steps, %ld rows decoded, %ld "
      "sequences started and %ld finished,\n  %ld copy-on-write copies, %ld appends or forks "
      "refused for want of blocks; through the table vs dense: max |diff| %.3g; free blocks at "
      "the end %d of %d: %s\n",
      cfg.block_size, cfg.num_blocks, r.steps, r.tokens, r.started, r.finished, r.copies, r.refused,
      r.max_abs, r.free_at_end, cfg.num_blocks, ok ? "PASS" : "FAIL");
  return !ok;
}

static int cpu_part(const attn_options *o) {
  int status = cache_walkthrough();
  status |= simulation(o);
  status |= decode_loop(o);
  /* The CPU model through the block table on a small awkward problem: GQA 4:1, lengths per
   * sequence (one of them shorter than a block), causal with 3 query rows, this block size. */
  static const int lens[3] = {700, 5, 129};
  const attn_problem s = {.batch = 3,
                          .heads = 8,
                          .kv_heads = 2,
                          .seq_q = 3,
                          .seq_kv = 700,
                          .dim = o->problem.dim,
                          .causal = 1,
                          .block_size = o->problem.block_size,
                          .scale = 0.0f,
                          .kv_lens = lens};
  attn_verdict vo, vl;
  const int rc = attn_cpu_check(&s, o->seed, l07_cpu_paged, NULL, &vo, &vl);
  printf(
      "cpu model through the block table (lengths 700, 5, 129, block size %d, causal, seq 3, "
      "GQA 4:1): %s\n  O:   ",
      s.block_size, rc == 0 ? "PASS" : "FAIL");
  attn_verdict_print(&vo, stdout);
  printf("\n  LSE: ");
  attn_verdict_print(&vl, stdout);
  printf("\n");
  return status | (rc != 0);
}

/* The decode loop on the GPU at this shape's heads, dimension and block size, version 5 (version
 * 2 for a block size that is no power of two). */
static int gpu_decode_loop(const attn_options *o) {
  const attn_problem *p = &o->problem;
  const int pow2 = (p->block_size & (p->block_size - 1)) == 0, version = pow2 ? 5 : 2;
  l07_loop_config cfg = {.max_live = 16,
                         .steps = 64,
                         .prompt_min = 16,
                         .prompt_max = 2048,
                         .output_min = 8,
                         .output_max = 128,
                         .fork_every = 8,
                         .heads = p->heads,
                         .kv_heads = p->kv_heads,
                         .dim = p->dim,
                         .block_size = p->block_size,
                         .seed = o->seed};
  /* every sequence and fork at its longest: the GPU loop never waits for blocks */
  cfg.num_blocks = 2 * cfg.max_live *
                   ((cfg.prompt_max + cfg.output_max + 1 + p->block_size - 1) / p->block_size);
  l07_loop_gpu_result r;
  char err[200];
  if (l07_decode_loop_gpu(&cfg, version, &r, err, sizeof err) != 0) {
    printf("\n%s\n", err);
    return 1;
  }
  const int ok = r.verdict.pass && r.loop.free_at_end == cfg.num_blocks && r.checked_rows > 0;
  const double us = r.loop.steps ? 1e3 * r.decode_ms / r.loop.steps : 0.0;
  printf(
      "\ndecode loop on the GPU (%s, block size %d, pool of %d blocks): %ld steps, %ld rows "
      "decoded,\n  %ld sequences started and %ld finished, %ld copy-on-write copies; one KV group "
      "per sequence and step\n  checked against fp64 (%ld rows): max |diff| %.3g, %s; free blocks "
      "at the end %d of %d: %s\n  the decode kernels: %.1f us per step, %.0f rows/s, %.0f GB/s "
      "of K + V (no L2 flush: a serving loop's steady state)\n",
      l07_lesson.versions[version - 1].name, cfg.block_size, cfg.num_blocks, r.loop.steps,
      r.loop.tokens, r.loop.started, r.loop.finished, r.loop.copies, r.checked_rows,
      r.verdict.max_abs, r.verdict.pass ? "PASS" : "FAIL", r.loop.free_at_end, cfg.num_blocks,
      ok ? "PASS" : "FAIL", us, r.decode_ms > 0 ? r.loop.tokens / (r.decode_ms * 1e-3) : 0.0,
      r.decode_ms > 0 ? r.kv_bytes / (r.decode_ms * 1e-3) / 1e9 : 0.0);
  return !ok;
}

/* What the split bought over one block per row, each paged version against the faster dense
 * yardstick that ran (the cost of reading through the block table), and, when every version ran,
 * the decode loop on the GPU. */
static int report(const attn_options *o, const attn_device *dev, const attn_result *r, int n) {
  if (!dev || n < L07_VERSIONS) return 0;
  const attn_result *best = NULL;
  for (int v = L07_PAGED_VERSIONS; v < L07_VERSIONS; ++v)
    if (r[v].timed && r[v].timing.median_ms > 0.0 &&
        (!best || r[v].timing.median_ms < best->timing.median_ms))
      best = &r[v];
  if (r[0].timed && r[1].timed && r[1].timing.median_ms > 0.0)
    printf("\npaged-split vs paged-row: %.2fx\n", r[0].timing.median_ms / r[1].timing.median_ms);
  if (best) {
    printf("paged against the faster dense yardstick (%s, the same values):", best->version->name);
    for (int v = 1; v < L07_PAGED_VERSIONS; ++v)
      if (r[v].timed && r[v].timing.median_ms > 0.0)
        printf(" %s %.1f%%", r[v].version->name,
               100.0 * best->timing.median_ms / r[v].timing.median_ms);
    printf(" of its speed\n");
  }
  /* the loop comes with the whole program; `./run N` runs version N alone */
  return o->version ? 0 : gpu_decode_loop(o);
}

static const int kDims[2] = {64, 128};

const attn_lesson l07_lesson = {
    .number = 7,
    .title = "PagedAttention: a paged KV cache, its manager, and decode through the block table",
    .versions = kVersions,
    .n_versions = L07_VERSIONS,
    .defaults = {.batch = 1,
                 .heads = 32,
                 .kv_heads = 8,
                 .seq_q = 1,
                 .seq_kv = 32768,
                 .dim = 128,
                 .causal = 0,
                 .block_size = 16,
                 .scale = 0.0f,
                 .kv_lens = NULL},
    .dims = kDims,
    .n_dims = 2,
    .cpu_part = cpu_part,
    .report = report,
};
