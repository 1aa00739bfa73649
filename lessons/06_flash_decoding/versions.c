/* Lesson 06's table of versions, the flat entry point l06_forward() (for ctypes), the SM count
 * and the split it gives, the CPU part (the decode's arithmetic intensity against the H200's
 * ridge point, the byte floor, the split plan, the CPU model checked against the reference) and
 * the report (every version against version 1, and the read floor: a plain read of the same K + V
 * bytes, read_floor.cu). */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "flash_decoding.h"

/* NVIDIA H200 Tensor Core GPU datasheet (H200 SXM): HBM3e at 4.8 TB/s, and bf16 tensor cores at
 * 1,979 TFLOP/s with 2:4 sparsity, i.e. 989 TFLOP/s dense; 132 SMs. */
#define H200_HBM_TBS 4.8
#define H200_BF16_DENSE_TFLOPS 989.0

int l06_sm_count(void) {
  static int cached = 0; /* the device current at the first successful call */
  if (cached > 0) return cached;
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n < 1) {
    (void)cudaGetLastError(); /* no device: leave no error behind for the next CUDA call */
    return 0;
  }
  cached = n;
  return cached;
}

int l06_units(int version, int batch, int heads, int kv_heads, int seq_q) {
  if (version < 2 || version > L06_VERSIONS || batch < 1 || heads < 1 || seq_q < 1 ||
      kv_heads < 1 || heads % kv_heads)
    return 0;
  const long long u = version == 2 ? (long long)batch * heads * seq_q
                                   : (long long)batch * kv_heads *
                                         (((long long)heads / kv_heads * seq_q + 15) / 16);
  return u > INT_MAX ? INT_MAX : (int)u;
}

/* [version - 2][dim 64, dim 128] */
static int (*const kPerSm[L06_VERSIONS - 1][2])(void) = {
    {l06_split_kv_per_sm_d64, l06_split_kv_per_sm_d128},
    {l06_gqa_group_per_sm_d64, l06_gqa_group_per_sm_d128},
    {l06_pipeline_per_sm_d64, l06_pipeline_per_sm_d128},
    {l06_one_launch_per_sm_d64, l06_one_launch_per_sm_d128},
    {l06_varlen_per_sm_d64, l06_varlen_per_sm_d128},
};

int l06_splits_for(int version, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                   int dim) {
  const int units = l06_units(version, batch, heads, kv_heads, seq_q);
  if (units < 1 || version > 5 || (dim != 64 && dim != 128)) return 1;
  const long long slots = (long long)l06_sm_count() * kPerSm[version - 2][dim == 128]();
  return l06_num_splits(slots > INT_MAX ? INT_MAX : (int)slots, units, seq_kv, L06_MAX_SPLITS);
}

size_t l06_split_workspace_bytes(int num_splits, size_t rows, int dim) {
  return (size_t)num_splits * rows * ((size_t)dim + 1) * sizeof(float);
}

int l06_varlen_chunk_for(int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                         const int *lens_host, int dim) {
  const int units = l06_units(6, 1, heads, kv_heads, seq_q); /* of one sequence */
  const long long slots = (long long)l06_sm_count() * kPerSm[6 - 2][dim == 128]();
  return l06_varlen_chunk(slots > INT_MAX ? INT_MAX : (int)slots, units, lens_host, batch, seq_kv);
}

size_t l06_varlen_workspace_bytes(int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                  const int *lens_host, int dim) {
  const int units = l06_units(6, 1, heads, kv_heads, seq_q);
  if (units < 1 || batch < 1 || (dim != 64 && dim != 128)) return 0;
  const int chunk = l06_varlen_chunk_for(batch, heads, kv_heads, seq_q, seq_kv, lens_host, dim);
  const int chunks = l06_varlen_chunks(chunk, lens_host, batch, seq_kv);
  if (chunks == batch) return 0; /* every sequence one chunk: O written directly */
  return l06_counter_bytes((int)((long long)batch * units)) +
         (size_t)chunks * units * 16 * ((size_t)dim + 1) * sizeof(float);
}

size_t l06_workspace_bytes(int version, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                           int dim) {
  if (version < 2 || version > L06_VERSIONS || batch < 1 || heads < 1 || seq_q < 1) return 0;
  if (version == 6)
    return l06_varlen_workspace_bytes(batch, heads, kv_heads, seq_q, seq_kv, NULL, dim);
  const int splits = l06_splits_for(version, batch, heads, kv_heads, seq_q, seq_kv, dim);
  if (version > 2 && splits == 1) return 0; /* one chunk writes O directly */
  const size_t counters =
      version == 5 ? l06_counter_bytes(l06_units(version, batch, heads, kv_heads, seq_q)) : 0;
  return counters + l06_split_workspace_bytes(splits, (size_t)batch * heads * seq_q, dim);
}

size_t l06_counter_bytes(int units) {
  return units < 1 ? 0 : ((size_t)units * sizeof(int) + 255) / 256 * 256;
}

/* [dim 64, dim 128] */
static const l06_launch_fn kOneBlock[2] = {l06_one_block_d64, l06_one_block_d128};
static const l06_varlen_fn kVarlen[2] = {l06_varlen_d64, l06_varlen_d128};
/* [version - 2][dim 64, dim 128]: the versions with a workspace and a split count */
static const l06_split_fn kSplit[L06_VERSIONS - 1][2] = {
    {l06_split_kv_d64, l06_split_kv_d128},
    {l06_gqa_group_d64, l06_gqa_group_d128},
    {l06_pipeline_d64, l06_pipeline_d128},
    {l06_one_launch_d64, l06_one_launch_d128},
};

cudaError_t l06_forward(int version, int dim, const void *q, const void *k, const void *v, void *o,
                        float *lse, void *workspace, size_t workspace_bytes, int batch, int heads,
                        int kv_heads, int seq_q, int seq_kv, int causal, float scale,
                        cudaStream_t stream) {
  if (version < 1 || version > L06_VERSIONS || (dim != 64 && dim != 128))
    return cudaErrorInvalidValue;
  if (scale == 0.0f) scale = 1.0f / sqrtf((float)dim);
  if (version == 6)
    return kVarlen[dim == 128](q, k, v, o, lse, (float *)workspace, workspace_bytes, NULL, NULL,
                               batch, heads, kv_heads, seq_q, seq_kv, causal, scale, stream);
  if (version == 1)
    return kOneBlock[dim == 128](q, k, v, o, lse, batch, heads, kv_heads, seq_q, seq_kv, causal,
                                 scale, stream);
  return kSplit[version - 2][dim == 128](q, k, v, o, lse, (float *)workspace, workspace_bytes, 0,
                                         batch, heads, kv_heads, seq_q, seq_kv, causal, scale,
                                         stream);
}

/* One launcher for both versions: the harness hands it its number (attn_args::version). */
static cudaError_t run(const attn_problem *p, const attn_args *a, cudaStream_t s) {
  if (a->version == 6) /* the lengths: on the device for the kernel, on the host for the plan */
    return kVarlen[p->dim == 128](a->q, a->k, a->v, a->o, a->lse, a->workspace, a->workspace_bytes,
                                  p->kv_lens ? a->seq_lens : NULL, p->kv_lens, p->batch, p->heads,
                                  p->kv_heads, p->seq_q, p->seq_kv, p->causal, attn_scale(p), s);
  return l06_forward(a->version, p->dim, a->q, a->k, a->v, a->o, a->lse, a->workspace,
                     a->workspace_bytes, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv,
                     p->causal, attn_scale(p), s);
}

static const char *supports(const attn_problem *p) {
  if (p->dim != 64 && p->dim != 128) return "built for head dimensions 64 and 128";
  if (p->seq_q > L06_MAX_SEQ_Q)
    return "decode kernels take seq_q 1..8 (one block per query row); lesson 04 takes longer ones";
  if ((long long)p->batch * p->heads * p->seq_q > INT_MAX)
    return "more than 2^31 - 1 query rows (one block each)";
  return NULL;
}

static size_t split_workspace(const attn_problem *p) {
  return l06_workspace_bytes(2, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim);
}

static size_t group_workspace(const attn_problem *p) {
  return l06_workspace_bytes(3, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim);
}

static size_t pipeline_workspace(const attn_problem *p) {
  return l06_workspace_bytes(4, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim);
}

static size_t varlen_workspace(const attn_problem *p) {
  return l06_varlen_workspace_bytes(p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv,
                                    p->kv_lens, p->dim);
}

static size_t one_launch_workspace(const attn_problem *p) {
  return l06_workspace_bytes(5, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim);
}

/* The versions, named once: l06_version_name() and the tests read this table. */
static const attn_version kVersions[L06_VERSIONS] = {
    {.name = "one-block",
     .summary = "one block per query row walks every key; warps merge (m, l, O)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run},
    {.name = "split-kv",
     .summary = "keys split over blocks into partial states, then the LSE combine",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run,
     .workspace = split_workspace},
    {.name = "gqa-group",
     .summary = "one block per KV head's query rows, on tensor cores: K, V read once per group",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run,
     .workspace = group_workspace},
    {.name = "pipeline",
     .summary = "version 3 with several key tiles in flight per warp (cp.async ring)",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run,
     .workspace = pipeline_workspace},
    {.name = "one-launch",
     .summary = "version 4 whose last block per unit merges the chunks: no combine kernel",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .supports = supports,
     .launch = run,
     .workspace = one_launch_workspace},
    {.name = "varlen",
     .summary = "version 5 over sequences of their own lengths (--kv-lens), chunks by length",
     .kind = ATTN_DENSE,
     .dtype = ATTN_BF16,
     .min_sm = 80,
     .writes_lse = 1,
     .varlen = 1,
     .supports = supports,
     .launch = run,
     .workspace = varlen_workspace},
};

const char *l06_version_name(int version) {
  return version >= 1 && version <= L06_VERSIONS ? kVersions[version - 1].name : NULL;
}

/* The roofline of decode, the byte floor and the split plan of the shape, and the CPU model of
 * version 2 against the reference. */
static int cpu_part(const attn_options *o) {
  const attn_problem *p = &o->problem;
  /* One query row: per key 2 dim flops for q . k and 2 dim for p v, against dim bf16 of K and
   * dim of V: 4 dim flops per 4 dim bytes. */
  const double flops_per_key = 4.0 * p->dim, bytes_per_key = 2.0 * p->dim * 2.0;
  const double ridge = H200_BF16_DENSE_TFLOPS / H200_HBM_TBS;
  printf(
      "decode intensity: one query row does %.0f flops per key for %.0f bytes of K + V: "
      "%.2f flop/byte\n  H200 ridge point (datasheet, SXM): %.0f TFLOP/s bf16 dense / %.1f TB/s "
      "HBM3e = %.0f flop/byte:\n  decode sits %.0fx below it, memory-bound\n",
      flops_per_key, bytes_per_key, flops_per_key / bytes_per_key, H200_BF16_DENSE_TFLOPS,
      H200_HBM_TBS, ridge, ridge / (flops_per_key / bytes_per_key));
  /* K and V once per (sequence, KV head): with --kv-lens, the keys each sequence holds. */
  const double kv_head_bytes = 2.0 * p->seq_kv * p->dim * 2.0;
  const double floor_bytes = 2.0 * attn_total_kv(p) * p->dim * 2.0 * p->kv_heads;
  printf(
      "byte floor: K + V once per (sequence, KV head): %.2f MB each%s, %.1f MB in all: %.1f us "
      "at %.1f TB/s\n",
      kv_head_bytes / 1e6, p->kv_lens ? " for the longest" : "", floor_bytes / 1e6,
      floor_bytes / (H200_HBM_TBS * 1e12) * 1e6, H200_HBM_TBS);

  const int sms = o->cpu_only ? 0 : l06_sm_count();
  const int rows = l06_units(2, p->batch, p->heads, p->kv_heads, p->seq_q);
  const int groups = l06_units(3, p->batch, p->heads, p->kv_heads, p->seq_q);
  printf(
      "split plan: splits = floor(SMs x blocks per SM / units), units = %d rows (version 2) or "
      "%d\n  group tiles (versions 3-5), at most seq_kv / %d and %d",
      rows, groups, L06_MIN_CHUNK, L06_MAX_SPLITS);
  if (sms < 1) {
    printf("; no GPU here to count SMs and blocks\n");
  } else {
    printf("; on this GPU (%d SMs):\n", sms);
    for (int v = 2; v <= 5; ++v) {
      const int n = l06_splits_for(v, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim);
      const int units = l06_units(v, p->batch, p->heads, p->kv_heads, p->seq_q);
      printf(
          "  version %d: %d blocks per SM, %d x %d chunks of %d keys = %lld blocks, workspace "
          "%.2f MB\n",
          v, kPerSm[v - 2][p->dim == 128](), units, n, l06_chunk_len(p->seq_kv, n),
          (long long)units * n,
          l06_workspace_bytes(v, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim) /
              1e6);
    }
    const int chunk = l06_varlen_chunk_for(p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv,
                                           p->kv_lens, p->dim);
    const int chunks = l06_varlen_chunks(chunk, p->kv_lens, p->batch, p->seq_kv);
    printf(
        "  version 6: %d blocks per SM, chunks of %d keys by length: %d in the batch x %d units "
        "= %lld blocks, workspace %.2f MB\n",
        kPerSm[6 - 2][p->dim == 128](), chunk, chunks, groups / p->batch,
        (long long)chunks * (groups / p->batch),
        l06_varlen_workspace_bytes(p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->kv_lens,
                                   p->dim) /
            1e6);
  }

  /* The CPU model of version 2 on a small awkward problem with this head dimension: causal with
   * 4 query rows, GQA 4:1, 1000 keys in 5 chunks of 256 (the fifth sees no key). */
  const attn_problem s = {.batch = 1,
                          .heads = 8,
                          .kv_heads = 2,
                          .seq_q = 4,
                          .seq_kv = 1000,
                          .dim = p->dim,
                          .causal = 1,
                          .block_size = 16,
                          .scale = 0.0f};
  l06_cpu_split split = {.num_splits = 5, .empty_chunks = 0};
  attn_verdict vo, vl;
  const int rc = attn_cpu_check(&s, o->seed, l06_cpu_attention, &split, &vo, &vl);
  if (rc < 0) {
    printf("cpu model: out of memory\n");
    return 1;
  }
  const int status = !(rc == 0 && split.empty_chunks == 32);
  printf(
      "cpu model of version 2 (seq 4/1000 causal, GQA 4:1, 5 chunks of %d keys): %s, %ld empty "
      "chunks\n  O:   ",
      l06_chunk_len(s.seq_kv, split.num_splits), status ? "FAIL" : "PASS", split.empty_chunks);
  attn_verdict_print(&vo, stdout);
  printf("\n  LSE: ");
  attn_verdict_print(&vl, stdout);
  printf("\n");
  return status;
}

/* The read floor of the shape: a plain read of the K + V bytes the lesson counts (once per
 * (sequence, KV head), as cpu_part's byte floor), timed as the versions were, next to the fastest
 * version timed here. One line that scripts/results-tables.py parses out of gpu-suite.log:
 *   read floor: a plain read of the same 134.2 MB of K + V (16-byte loads, 1056 blocks of 512
 *   threads): 33.44 us, 4014 GB/s (83.4% of HBM); the fastest version here, 5 one-launch, takes
 *   37.62 us, 88.9% of the floor's rate
 * (on one line), or "read floor: not measured: <why>". Nothing when no version was timed.
 * @p blank_first: print an empty line first (no line above it separates it from the table). */
static int read_floor_line(const attn_options *o, const attn_device *dev, const attn_result *r,
                           int n, int blank_first) {
  int best = -1;
  for (int v = 0; v < n; ++v)
    if (r[v].timed && r[v].timing.median_ms > 0.0 &&
        (best < 0 || r[v].timing.median_ms < r[best].timing.median_ms))
      best = v;
  if (best < 0) return 0; /* --check-only, or every version skipped */
  if (blank_first) printf("\n");
  const attn_problem *p = &o->problem;
  const double kv_bytes = 2.0 * attn_total_kv(p) * p->kv_heads * p->dim * 2.0;
  attn_timing t;
  const char *skip = NULL;
  const cudaError_t e = l06_read_floor((size_t)kv_bytes, o->warmup, o->iters, &t, &skip);
  if (e != cudaSuccess) {
    printf("read floor: not measured: %s\n", cudaGetErrorName(e));
    return 1;
  }
  if (skip) {
    printf("read floor: not measured: %s\n", skip);
    return 0;
  }
  const double gbs = kv_bytes / (t.median_ms * 1e-3) / 1e9;
  printf(
      "read floor: a plain read of the same %.1f MB of K + V (16-byte loads, %d blocks of %d "
      "threads): %.2f us, %.0f GB/s (%.1f%% of HBM); the fastest version here, %d %s, takes %.2f "
      "us, %.1f%% of the floor's rate\n",
      kv_bytes / 1e6, L06_FLOOR_BLOCKS_PER_SM * l06_sm_count(), L06_FLOOR_THREADS,
      t.median_ms * 1e3, gbs, dev->mem_bw_gbs > 0.0 ? 100.0 * gbs / dev->mem_bw_gbs : 0.0,
      r[best].index, r[best].version->name, r[best].timing.median_ms * 1e3,
      100.0 * t.median_ms / r[best].timing.median_ms);
  return 0;
}

/* What each version bought over version 1, and the chunks it cut; then the read floor. */
static int report(const attn_options *o, const attn_device *dev, const attn_result *r, int n) {
  if (!dev) return 0;
  const attn_problem *p = &o->problem;
  const int against = n >= 2 && r[0].timed && r[0].timing.median_ms > 0.0;
  if (against) {
    printf("\nagainst one-block (%d SMs):", dev->sm_count);
    for (int v = 1; v < n; ++v) {
      if (!r[v].timed || r[v].timing.median_ms <= 0.0) continue;
      const int chunks =
          v + 1 == 6
              ? l06_varlen_chunks(l06_varlen_chunk_for(p->batch, p->heads, p->kv_heads, p->seq_q,
                                                       p->seq_kv, p->kv_lens, p->dim),
                                  p->kv_lens, p->batch, p->seq_kv)
              : l06_splits_for(v + 1, p->batch, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->dim);
      printf("  %s %.2fx (%d chunks%s)", r[v].version->name,
             r[0].timing.median_ms / r[v].timing.median_ms, chunks,
             v + 1 == 6 ? " in the batch" : "");
    }
    printf("\n");
  }
  return read_floor_line(o, dev, r, n, !against);
}

static const int kDims[2] = {64, 128};

const attn_lesson l06_lesson = {
    .number = 6,
    .title = "Flash-Decoding: the keys split over blocks, partial states combined by log-sum-exp",
    .versions = kVersions,
    .n_versions = L06_VERSIONS,
    .defaults = {.batch = 1,
                 .heads = 32,
                 .kv_heads = 8,
                 .seq_q = 1,
                 .seq_kv = 32768,
                 .dim = 128,
                 .causal = 0,
                 .block_size = 16,
                 .scale = 0.0f},
    .dims = kDims,
    .n_dims = 2,
    .cpu_part = cpu_part,
    .report = report,
};
