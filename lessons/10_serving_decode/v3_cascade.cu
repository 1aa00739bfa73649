// clang-format off
/** @file
 * @brief Version 3: shared prefixes (a cascade). Sequences forked from one prompt share its pages
 * (lesson 07's fork); version 1 reads those pages once per sequence. Version 3 reads them once
 * for the draft tokens of all the forked sequences together (up to L10_MAX_SHARED_Q tokens), then
 * each sequence's own keys, and merges the two partial states of every row by the log-sum-exp
 * algebra of lessons 02 and 06 (the drill's l10_merge_state()).
 *
 * What changed: nothing in the kernel. The plan (cascade.c, l10_cascade_plan_make()) finds the
 * shared pages in the block table: neighbours whose rows start with the same page numbers share
 * those pages, up to the last whole page before each one's draft tokens. The step becomes two
 * launches of version 1's kernel and a merge:
 *  - the prefix pass: one "sequence" holding the draft tokens of a run of forked neighbours
 *    (their packed rows one after the other, up to L10_MAX_SHARED_Q tokens), over the shared
 *    pages, no mask (every draft token sees every key before the first draft token). Its rows are
 *    several units of 64; the blocks of one chunk's units are neighbours in the grid, so they run
 *    together and the later ones can read the chunk from L2;
 *  - the suffix pass: every sequence over the pages it does not share (its table row shifted past
 *    them, its length less the shared keys), with its own mask: the draft tokens stand at the end
 *    in both steps, so the mask is unchanged;
 *  - the merge: for every row of the prefix pass, O = (w_a O_a + w_b O_b) / (w_a + w_b) and
 *    LSE = m + log(w_a + w_b), with w = exp(LSE - m), m the larger LSE. A warp per (row, head).
 *
 * Why: a server that forks 32 samples (or beams, or agents) from one 32k-token prompt reads that
 * prompt 32 times per step with version 1; it is the same 16 MB of every KV head each time.
 *
 * Prediction: 32 sequences sharing 32k keys, 1k of their own each, one draft token (32/8 heads,
 * dim 128): version 1 and lesson 07's version 5 read 32 x 33k keys, version 3 32k + 32 x 1k,
 * 16x fewer bytes; the suffix pass (32 short sequences) and four launches (two passes, the chunks'
 * merge of the prefix pass, the cascade's merge) cost more per byte, so 10-12x lesson 07's
 * version 5.
 *
 * Measured: H200, 2026-11-26 (development runs in docs/results/h200-l10e-2026-11-26, dev-*.log;
 * the archive's tables in the README), 32 sequences sharing 32768 keys, 1024 of their own, one
 * draft token, dim 128: 0.136-0.141 ms, against 0.996 ms for version 1 and 0.484-0.487 ms for
 * lesson 07's version 5 on the same forked cache: 3.4-3.6x, not the 10x asked. Two things the
 * prediction missed. Lesson 07's kernel on a forked cache is not the 1 ms its bytes say: its 32
 * sequences read the same pages at the same time, and the L2 serves about half of them (9.1 TB/s
 * of what it reads). And the prefix pass is not bound by the memory: its 128 rows a KV head are
 * two units of 64, and each unit's block does all the work of a chunk for its rows (version 1
 * moves about 3.5 TB/s of keys through one unit of 64 rows, 16 tokens, h200-l10d): 1.9-2.0 TB/s
 * of the pages touched, 40-41% of HBM. The prefix pass is prefill-shaped (many rows, one set of
 * keys), and a kernel with more rows per block is the next step. The first form (sequences of
 * 16 tokens, a kernel filling the prefix's LSE first) ran the same at dim 64 (0.0957 ms against
 * 0.0954, dev-cascade-first-form.log): whether the prefix crosses the bus once or twice mattered
 * less than the units' work.
 * The two passes on two streams bought 1-7% (dev-cascade-two-streams.log) and are not kept. The
 * error of O is version 1's and one more bf16 rounding: the partial states are bf16 (rel_l2 2.4e-3
 * against 1.8e-3 for version 1 on the same rows).
 *
 * Since then: the prefix pass runs on version 4 (l10_wg(), one warpgroup a unit of 64 rows on
 * wgmma) where it is built and the GPU runs it (l10_cascade_make() sets wg), version 1
 * elsewhere: 0.111 ms at the shape above, 4.39x lesson 07's version 5 (h200-l10cascade-2026-11-26);
 * the cascade must still read 268 MB there, so the memory allows at most 8.7x. Then both passes
 * in one launch of version 4's kernel (l10_wg_pair(): the prefix pass's blocks, then the suffix
 * pass's, now on version 4 too), where the step had been four launches in a row: 1.02-1.08x at
 * the cascade table's shapes, 0.107 ms at the shape above, 4.5x lesson 07's version 5
 * (h200-l10r-2026-11-27). The launches' gaps were about 4 of the 10-15 microseconds predicted:
 * the one launch streams 2.6 TB/s of the 269 MB it reads, which points at its 64-row units (one
 * warpgroup that waits for S, then for P V; not measured apart).
 * Then the prefix pass moved to lesson 05's version 5 where that runs (dims 64 and 128, sm_90a:
 * prefill.cu, l10_prefill()): blocks of 128 rows, the two warpgroups' turns, a producer that reads
 * the pages by TMA; the suffix pass on version 4 in a launch of its own, and one merge of the
 * chunks' states with the suffix's (cascade_merge_chunks()). 1.02-1.22x the step before at the
 * cascade table's shapes, 0.092 ms at the shape above (docs/results/h200-l10zb-2026-11-28).
 * Then the three launches as programmatic dependents: the prefix pass lets the next launch start
 * as soon as all its blocks have started (griddepcontrol.launch_dependents), the suffix pass
 * (l10_wg_after()) fills the SMs the prefix pass leaves free (its 128 blocks of a whole SM each at
 * the shape above, on 132 SMs) and those its blocks free as they finish, its last block waits for
 * the prefix pass before it exits, and the merge waits for the suffix pass (griddepcontrol.wait).
 * Predicted: the launches' gaps and the prefix pass's tail, 3-7 microseconds, 1.03-1.08x.
 * Measured (H200, 2026-11-28, docs/results/h200-l10pdl-2026-11-28, the tree and the change in
 * turns, two rounds each): 1.05-1.06x at the shape above (0.0914-0.0918 ms to 0.0865-0.0866),
 * 1.05x with 4 causal tokens, 1.05x at batch 16 with 7168 shared keys and 8 tokens, 1.08x at
 * dim 64 and with 8192 shared keys.
 *
 * Run: `./run 4 --batch 32 --kv-seq 33792 --seq 1` (the program forks every sequence of the step
 * from the first one's prompt: all but the last 1024 keys of the shortest sequence are shared;
 * `./run 6` with the same arguments is lesson 07's version 5 on that cache).
 */
// clang-format on

#include <cuda_bf16.h>
#include <math.h>

#include "attn_cuda.cuh"
#include "pdl_launch.cuh" /* the suffix pass and the merge behind the pass before each */
#include "serving_decode.h"

/** Bytes from the start of the workspace to the passes' own workspace: the prefix pass's O (bf16)
 * and log-sum-exp (fp32) of every row, each at a 256-byte boundary. */
static size_t cascade_state_bytes(const l10_cascade *c) {
  const size_t rows = (size_t)c->total_q * c->suffix.heads;
  const size_t o = (rows * c->suffix.dim * sizeof(attn_bf16) + 255) / 256 * 256;
  return o + (rows * sizeof(float) + 255) / 256 * 256;
}

/** Bytes of one pass's own workspace, at a 256-byte boundary: version 4's or version 1's. */
static size_t cascade_pass_bytes(const l10_cascade *c, const l10_step *pass) {
  const size_t b = pass->batch <= 0 ? 0
                   : c->wg          ? l10_wg_workspace_bytes(pass)
                                    : l10_draft_workspace_bytes(pass);
  return (b + 255) / 256 * 256;
}

/** Blocks of the prefix pass on lesson 05's version 5 (c->pf). */
static size_t prefill_blocks(const l10_cascade *c) {
  return (size_t)c->prefix.batch * c->pf_chunks * c->prefix.kv_heads * c->pf_units;
}

/** With c->pf: bytes of the prefix pass's partial states, O (fp32) then the log-sum-exp, 128 rows
 * a block, each at a 256-byte boundary. */
static size_t prefill_state_bytes(const l10_cascade *c) {
  const size_t rows = prefill_blocks(c) * 128;
  return (rows * c->suffix.dim * sizeof(float) + 255) / 256 * 256 +
         (rows * sizeof(float) + 255) / 256 * 256;
}

/* The prefix pass's own workspace, then the suffix pass's. Each pass keeps its merge's counters in
 * its own (at 0 between launches), so the two do not share one. With c->pf the prefix pass's is
 * its blocks' partial states, and the suffix pass runs alone on version 4 (or 1). */
extern "C" size_t l10_cascade_workspace_bytes(const l10_cascade *c) {
  if (c->pf) return prefill_state_bytes(c) + cascade_pass_bytes(c, &c->suffix);
  return cascade_state_bytes(c) + cascade_pass_bytes(c, &c->prefix) +
         cascade_pass_bytes(c, &c->suffix);
}

/** With c->pf: a thread per (row, head, pair of columns) of the prefix pass's runs merges, in
 * place, the suffix's state in @p o, @p lse with the partial states of the run's chunks (@p part_o,
 * @p part_lse, as l10_prefill() writes them): m the largest log-sum-exp, w = exp(LSE - m) for
 * each, O = sum w O / sum w, LSE = m + log(sum w). The threads of a row read its log-sum-exps
 * together (one load for the warp), and every load is independent of the others. */
static __global__ void cascade_merge_chunks(attn_bf16 *__restrict__ o, float *__restrict__ lse,
                                            const float *__restrict__ part_o,
                                            const float *__restrict__ part_lse,
                                            const int *__restrict__ q_start,
                                            const int *__restrict__ q_lens, int n_runs, int max_q,
                                            int heads, int kv_heads, int units, int n_chunks,
                                            int dim) {
#if __CUDA_ARCH__ >= 900
  /* A programmatic dependent launch behind the suffix pass (l10_cascade_run()): its blocks may be
   * placed while the suffix pass's last blocks run, and wait here until that grid (whose last
   * block waited for the prefix pass) has finished and its writes are visible. */
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
  const int pairs = dim / 2;
  const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long per_run = (long long)max_q * heads * pairs;
  if (t >= per_run * n_runs) return;
  const int v = (int)(t / per_run), col = (int)(t % pairs);
  const int i = (int)(t % per_run / pairs / heads), h = (int)(t / pairs % heads);
  if (i >= min(q_lens[v], max_q)) return;
  const int G = heads / kv_heads, kvh = h / G, gr = i * G + h % G, u = gr / 128, r = gr % 128;
  const int w = (q_start[v] + i) * heads + h;
  /* block of chunk c: ((v n_chunks + c) kv_heads + kvh) units + u; its row r */
  const size_t first = ((size_t)v * n_chunks * kv_heads + kvh) * units + u;
  const size_t step = (size_t)kv_heads * units;
  /* one pass, the running maximum as lessons 02 and 06 keep it; the loads do not depend on it, so
   * they can all be in flight at once */
  float mx = lse[w]; /* the suffix's: -inf when the row sees none of its own keys */
  __nv_bfloat162 *ocell = (__nv_bfloat162 *)(o + (size_t)w * dim) + col;
  const float2 a = __bfloat1622float2(*ocell);
  const int seen = mx != -INFINITY;
  float x = seen ? a.x : 0.f, y = seen ? a.y : 0.f, total = seen ? 1.f : 0.f;
  /* every block wrote every row (O = 0 where it saw no key), so the loads need no branch */
  for (int c0 = 0; c0 < n_chunks; c0 += 8) {
    /* eight chunks' loads first, then their arithmetic: the exponentials' special cases are
     * branches in the machine code, and loads behind them would wait for the ones before */
    float lc[8];
    float2 b[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const size_t slot = (first + min(c0 + k, n_chunks - 1) * step) * 128 + r;
      lc[k] = part_lse[slot];
      b[k] = *(const float2 *)(part_o + slot * dim + 2 * col);
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float l = c0 + k < n_chunks ? lc[k] : -INFINITY; /* past the last: weight 0 */
      const float m_new = fmaxf(mx, l);
      const float sa = mx == m_new ? 1.f : expf(mx - m_new); /* also where both are -inf */
      const float sc = l == -INFINITY ? 0.f : l == m_new ? 1.f : expf(l - m_new);
      x = x * sa + sc * b[k].x, y = y * sa + sc * b[k].y, total = total * sa + sc;
      mx = m_new;
    }
  }
  if (total == 0.f) return; /* no key at all: the suffix's state (O = 0) stands */
  const float inv = 1.f / total;
  *ocell = __floats2bfloat162_rn(x * inv, y * inv);
  if (col == 0) lse[w] = mx + logf(total);
}

/** A warp per (row, head) of the prefix pass's sequences (their @p q_start, @p q_lens; rows of
 * sequences that share nothing are not among them): the suffix's state in @p o, @p lse (in place)
 * merged with the prefix's (@p o_pre, @p lse_pre), two columns per lane per step. */
static __global__ void cascade_merge(attn_bf16 *__restrict__ o, float *__restrict__ lse,
                                     const attn_bf16 *__restrict__ o_pre,
                                     const float *__restrict__ lse_pre,
                                     const int *__restrict__ q_start,
                                     const int *__restrict__ q_lens, int n_seq, int max_q,
                                     int heads, int dim) {
  const long long wg = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  const long long per_seq = (long long)max_q * heads;
  if (wg >= per_seq * n_seq) return;
  const int v = (int)(wg / per_seq), i = (int)(wg % per_seq / heads), h = (int)(wg % heads);
  if (i >= min(q_lens[v], max_q)) return;
  const int w = (q_start[v] + i) * heads + h;
  const float lb = lse_pre[w];
  if (lb == -INFINITY) return; /* no shared key seen: the suffix's state is the row's */
  const float la = lse[w];     /* -inf when the row sees none of its own keys */
  const float mx = fmaxf(la, lb);
  const float wa = la == -INFINITY ? 0.f : expf(la - mx), wb = expf(lb - mx);
  const float inv = 1.f / (wa + wb);
  __nv_bfloat162 *orow = (__nv_bfloat162 *)(o + (size_t)w * dim);
  const __nv_bfloat162 *prow = (const __nv_bfloat162 *)(o_pre + (size_t)w * dim);
  for (int c = lane; c < dim / 2; c += 32) {
    const float2 a = __bfloat1622float2(orow[c]), b = __bfloat1622float2(prow[c]);
    orow[c] = __floats2bfloat162_rn((wa * a.x + wb * b.x) * inv, (wa * a.y + wb * b.y) * inv);
  }
  if (lane == 0) lse[w] = mx + logf(wa + wb);
}

extern "C" cudaError_t l10_cascade_run(const l10_cascade *c, void *o, float *lse, void *workspace,
                                       size_t workspace_bytes, cudaStream_t stream) {
  if (!c || !o || !lse || c->total_q < 1) return cudaErrorInvalidValue;
  if (c->prefix.batch > 0 && (c->prefix.heads != c->suffix.heads || c->prefix.dim != c->suffix.dim))
    return cudaErrorInvalidValue;
  if (!workspace || workspace_bytes < l10_cascade_workspace_bytes(c)) return cudaErrorInvalidValue;
  unsigned char *ws = (unsigned char *)workspace;
  if (c->pf) { /* the prefix pass on lesson 05's version 5, the suffix pass, one merge */
    const size_t rows = prefill_blocks(c) * 128, st = prefill_state_bytes(c);
    float *part_o = (float *)ws;
    float *part_lse = (float *)(ws + (rows * c->suffix.dim * sizeof(float) + 255) / 256 * 256);
    ATTN_TRY(l10_prefill(&c->prefix, c->pf_pages, c->pf_units, c->pf_chunks, c->pf_tiles, part_o,
                         part_lse, stream));
    /* On version 4 the suffix pass runs behind the prefix pass, beside its blocks where an SM has
     * room (the two passes read different pages and write different outputs), and the merge
     * behind the suffix pass: both launches are programmatic dependents, whose waits order the
     * merge after both passes. */
    ATTN_TRY((c->wg ? l10_wg_after : l10_draft)(&c->suffix, o, lse, ws + st, workspace_bytes - st,
                                                stream));
    const long long threads =
        (long long)c->prefix.batch * c->prefix.max_q * c->prefix.heads * (c->suffix.dim / 2);
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = l10_launch_config(dim3((unsigned)((threads + 255) / 256)),
                                                     dim3(256), 0, stream, c->wg, &attr);
    ATTN_TRY(cudaLaunchKernelEx(&cfg, cascade_merge_chunks, (attn_bf16 *)o, lse,
                                (const float *)part_o, (const float *)part_lse, c->prefix.q_start,
                                c->prefix.q_lens, c->prefix.batch, c->prefix.max_q, c->prefix.heads,
                                c->prefix.kv_heads, c->pf_units, c->pf_chunks, c->suffix.dim));
    return cudaSuccess;
  }
  const int n = c->total_q * c->suffix.heads;
  const size_t state = cascade_state_bytes(c);
  attn_bf16 *o_pre = (attn_bf16 *)ws;
  float *lse_pre = (float *)(ws + state - ((size_t)n * sizeof(float) + 255) / 256 * 256);
  const size_t pre = cascade_pass_bytes(c, &c->prefix);
  unsigned char *ws_suf = ws + state + pre;
  const size_t suf_bytes = workspace_bytes - state - pre;
  if (c->prefix.batch > 0 && c->wg) /* both passes, one launch: the prefix's blocks first */
    ATTN_TRY(l10_wg_pair(&c->prefix, o_pre, lse_pre, ws + state, pre, &c->suffix, o, lse, ws_suf,
                         suf_bytes, stream));
  else {
    if (c->prefix.batch > 0)
      ATTN_TRY(l10_draft(&c->prefix, o_pre, lse_pre, ws + state, pre, stream));
    ATTN_TRY((c->wg ? l10_wg : l10_draft)(&c->suffix, o, lse, ws_suf, suf_bytes, stream));
  }
  if (c->prefix.batch > 0) { /* 8 warps a block */
    const long long warps = (long long)c->prefix.batch * c->prefix.max_q * c->prefix.heads;
    cascade_merge<<<(unsigned)((warps + 7) / 8), 256, 0, stream>>>(
        (attn_bf16 *)o, lse, o_pre, lse_pre, c->prefix.q_start, c->prefix.q_lens, c->prefix.batch,
        c->prefix.max_q, c->prefix.heads, c->suffix.dim);
    ATTN_TRY_LAUNCH();
  }
  return cudaSuccess;
}
