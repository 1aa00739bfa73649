/**
 * @file merge_device.cuh
 * @brief The merge of a sequence's chunks inside the step's kernel (versions 1, 2 and 4), in two
 *        levels: the last block of each group of chunks merges its group, and the last group's
 *        merger merges the groups into O.
 *
 * A sequence cut into n chunks leaves n partial states per (KV head, unit): O / l (fp32) and the
 * log-sum-exp of each row. Lesson 06's version 5 and lesson 07 let the last of the n blocks merge
 * all n: at batch 1 with 8 draft tokens that is 33 states of 32 rows x dim floats (540 KB at dim
 * 128) read by one SM while the rest of the GPU idles. Here the chunks form groups of about
 * sqrt(n); the last block of a group (an atomic counter per group) merges the group into the
 * group's first slot, and the last of the group mergers (a counter per sequence) merges the
 * groups: no block reads more than about 2 sqrt(n) states (12 at n = 33), and the groups' merges
 * run side by side on different SMs. Up to L10_MERGE_ONE chunks there is one group: the last block
 * merges them all, as in lesson 07, without the second level's fence, count and second merge.
 * Measured against one level (NOTES.md, "The merge at batch 1"): faster from about 32 chunks (8k
 * keys and more at batch 1), slower at 16 (4k keys, short chunks that end together, so that the
 * second level's fence, count and loads are added to the step's end instead of hidden).
 *
 * The counters live in the workspace: they must be 0 before the first launch (zero the workspace
 * once), and the block that brings a counter to its total sets it back to 0, so that every launch
 * leaves them at 0 and a CUDA graph can replay the step. Requires HEAD_DIM (the kernel file's
 * build). Every thread of a block of 128 must call l10_merge_chunks() (it has barriers).
 */
#ifndef L10_MERGE_DEVICE_CUH
#define L10_MERGE_DEVICE_CUH

#include "attn_cuda.cuh"
#include "ptx.cuh"          /* lesson 04: pack_bf16x2() (USES 4) */
#include "serving_decode.h" /* L10_UNIT_ROWS */

#define L10_MC4 (HEAD_DIM / 4) /**< float4 columns of a state's row */
#define L10_MERGE_BATCH 8      /**< states whose loads a thread has in flight at once, here */
#define L10_MERGE_MAX 16       /**< the most l10_merge_states() takes at once */
#define L10_MERGE_ONE 16       /**< up to this many chunks, one level */
#define L10_MERGE_THREADS 128  /**< threads of the kernels' blocks */

/** Chunks per group for a sequence of @p n chunks: all of them up to L10_MERGE_ONE, else
 * ceil(sqrt(n)), so that a group's merger and the last merger each read about sqrt(n) states. */
static __device__ __forceinline__ int l10_merge_group(int n) {
  if (n <= L10_MERGE_ONE) return n;
  int gs = 4;
  while (gs * gs < n) ++gs;
  return gs;
}

/** Float4 column @p c4 of a row merged over @p cnt partial states, the first at row slot @p rs0 and
 * each next @p rstride row slots on (a row slot: the row's index in part_lse; its O starts at
 * part_o + slot * HEAD_DIM), @p batch states at a time (at most L10_MERGE_MAX, a constant at the
 * call so that the loops unroll into registers), all their loads in flight at once: lesson 02's
 * online softmax with states for keys. The running (max, sum, O) is rescaled when a batch raises
 * the max; a state that saw no key (lse -inf) weighs 0, and a row whose every state is empty ends
 * with sum 0: O = 0, lse -inf. Returns the merged lse (natural log) and the normalised O in @p y.
 * The loads bypass L1 (__ldcg): other blocks wrote the states. Version 1's merge kernel and the
 * merge inside the kernels (below) both call it. */
static __device__ __forceinline__ float l10_merge_states(const float *part_o, const float *part_lse,
                                                         size_t rs0, size_t rstride, int cnt,
                                                         int batch, int c4, float4 *y) {
  float mx = -INFINITY, sum = 0.f;
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int c0 = 0; c0 < cnt; c0 += batch) {
    float lb[L10_MERGE_MAX];
    float4 xb[L10_MERGE_MAX];
#pragma unroll
    for (int kk = 0; kk < batch; ++kk) {
      const int c = c0 + kk;
      const size_t rs = rs0 + (size_t)c * rstride;
      lb[kk] = c < cnt ? __ldcg(part_lse + rs) : -INFINITY;
      xb[kk] = c < cnt ? __ldcg((const float4 *)(part_o + rs * HEAD_DIM) + c4)
                       : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    float bm = mx;
#pragma unroll
    for (int kk = 0; kk < batch; ++kk) bm = fmaxf(bm, lb[kk]);
    if (bm == -INFINITY) continue;    /* no state so far saw a key */
    const float sc = __expf(mx - bm); /* 0 while mx is -inf */
    sum *= sc, a.x *= sc, a.y *= sc, a.z *= sc, a.w *= sc;
#pragma unroll
    for (int kk = 0; kk < batch; ++kk) {
      const float w = __expf(lb[kk] - bm);
      sum += w;
      a.x += w * xb[kk].x, a.y += w * xb[kk].y, a.z += w * xb[kk].z, a.w += w * xb[kk].w;
    }
    mx = bm;
  }
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  *y = make_float4(a.x * inv, a.y * inv, a.z * inv, a.w * inv);
  return sum > 0.f ? mx + logf(sum) : -INFINITY;
}

/** Counts the block in on @p counter: 1 in the block that brings it to @p total, which sets it
 * back to 0 and, past the second fence, sees every write the others made before they were
 * counted. @p flag: a word of shared memory for thread 0's answer. */
static __device__ __forceinline__ int l10_merge_last(int *counter, int total, int *flag) {
  __threadfence(); /* my writes are visible to every block before I am counted */
  __syncthreads();
  if (threadIdx.x == 0) {
    const int last = atomicAdd(counter, 1) == total - 1;
    if (last) *counter = 0; /* all are in: ready for the next launch */
    *flag = last;
  }
  __syncthreads();
  const int last = *flag;
  if (last) __threadfence(); /* the others' writes, made visible before their counts, are seen */
  return last;
}

/** After the block wrote its partial state (@p item: chunk @p s of a sequence of @p n chunks, the
 * sequence's first item item - s; KV head @p kvh, unit @p u, its @p rows live rows, the first in
 * packed query row @p q0) into @p part_o / @p part_lse: the two-level merge. @p count holds
 * 2 x @p n_slots counters (slots: (item, KV head, unit)), a group's at its first chunk's slot and
 * a sequence's at n_slots + its first item's slot. @p scratch: at least 4 + 4 L10_UNIT_ROWS
 * bytes of shared memory the block no longer uses. The final merge writes O (bf16) and the
 * log-sum-exp of the unit's rows of the sequence (@p heads query heads over @p kv_heads). */
static __device__ __noinline__ void l10_merge_chunks(
    float *__restrict__ part_o, float *__restrict__ part_lse, int *__restrict__ count, int item,
    int s, int n, int q0, int kvh, int u, int kv_heads, int units, int rows, int heads,
    size_t n_slots, attn_bf16 *__restrict__ o, float *__restrict__ lse, unsigned char *scratch) {
  int *flag = (int *)scratch;
  float *glse = (float *)(scratch + 4); /* the group's merged lse per row, until its reads end */
  const int first = item - s, gs = l10_merge_group(n), ng = (n + gs - 1) / gs;
  const int gi = s / gs, g_cnt = min(gs, n - gi * gs);
  const size_t per_item = (size_t)kv_heads * units; /* slots from one item to the next */
  const size_t gslot = ((size_t)first + (size_t)gi * gs) * per_item + (size_t)kvh * units + u;
  if (!l10_merge_last(count + gslot, g_cnt, flag)) return;

  const int G = heads / kv_heads;
  if (ng > 1) {
    /* Level 1: the group's g_cnt states into its first slot. Each thread rewrites only the O it
     * read itself; the row's lse, read by every thread of the row, is written after a barrier. */
    for (int e = threadIdx.x; e < rows * L10_MC4; e += L10_MERGE_THREADS) {
      const int r = e / L10_MC4, c4 = e % L10_MC4;
      const size_t rs0 = gslot * L10_UNIT_ROWS + r;
      float4 y;
      const float l = l10_merge_states(part_o, part_lse, rs0, per_item * L10_UNIT_ROWS, g_cnt,
                                       L10_MERGE_BATCH, c4, &y);
      *((float4 *)(part_o + rs0 * HEAD_DIM) + c4) = y;
      if (c4 == 0) glse[r] = l;
    }
    __syncthreads();
    for (int r = threadIdx.x; r < rows; r += L10_MERGE_THREADS)
      part_lse[gslot * L10_UNIT_ROWS + r] = glse[r];
    /* Level 2: the last group merger merges the ng groups' states. */
    const size_t sslot = (size_t)first * per_item + (size_t)kvh * units + u;
    if (!l10_merge_last(count + n_slots + sslot, ng, flag)) return;
    for (int e = threadIdx.x; e < rows * L10_MC4; e += L10_MERGE_THREADS) {
      const int r = e / L10_MC4, c4 = e % L10_MC4, gr = u * L10_UNIT_ROWS + r;
      float4 y;
      const float l =
          l10_merge_states(part_o, part_lse, sslot * L10_UNIT_ROWS + r,
                           (size_t)gs * per_item * L10_UNIT_ROWS, ng, L10_MERGE_BATCH, c4, &y);
      const size_t orow = ((size_t)q0 + gr / G) * heads + kvh * G + gr % G;
      *(uint2 *)(o + orow * HEAD_DIM + c4 * 4) =
          make_uint2(pack_bf16x2(y.x, y.y), pack_bf16x2(y.z, y.w));
      if (c4 == 0) lse[orow] = l;
    }
    return;
  }
  /* One level: the last block merges the sequence's n states into O. */
  for (int e = threadIdx.x; e < rows * L10_MC4; e += L10_MERGE_THREADS) {
    const int r = e / L10_MC4, c4 = e % L10_MC4, gr = u * L10_UNIT_ROWS + r;
    float4 y;
    const float l = l10_merge_states(part_o, part_lse, gslot * L10_UNIT_ROWS + r,
                                     per_item * L10_UNIT_ROWS, n, L10_MERGE_BATCH, c4, &y);
    const size_t orow = ((size_t)q0 + gr / G) * heads + kvh * G + gr % G;
    *(uint2 *)(o + orow * HEAD_DIM + c4 * 4) =
        make_uint2(pack_bf16x2(y.x, y.y), pack_bf16x2(y.z, y.w));
    if (c4 == 0) lse[orow] = l;
  }
}

/** Float4 of a row each thread of a block merges when the block merges a unit's rows inside the
 * kernel: @p heads / @p kv_heads x @p max_q rows, at most L10_UNIT_ROWS, times HEAD_DIM / 4
 * columns, over L10_MERGE_THREADS threads, rounded up. */
static inline __host__ __device__ int l10_merge_per_thread(int heads, int kv_heads, int max_q) {
  const int rows = heads / kv_heads * max_q;
  return ((rows < L10_UNIT_ROWS ? rows : L10_UNIT_ROWS) * L10_MC4 + L10_MERGE_THREADS - 1) /
         L10_MERGE_THREADS;
}

/** 1 when versions 1, 2 and 4 merge a step's chunks inside their kernel (l10_merge_chunks()), 0
 * when version 1's merge kernel does (l10_draft_merge_dNN(), a thread per row and float4 over the
 * whole GPU): inside when a unit's rows give each of the block's threads one float4 of a row
 * (@p heads / @p kv_heads x @p max_q rows, at most L10_UNIT_ROWS, times HEAD_DIM / 4 columns, at
 * most L10_MERGE_THREADS: one token at 32/8 heads and dim 128, two at dim 64). A block's merge
 * goes a row element at a time per thread, each a round trip to L2, so that with more rows a
 * merge kernel, which gives every element its own thread, is faster (measured: the README's
 * version 4 section, NOTES.md's "The merge at batch 1"). From the limits alone, so that a captured
 * graph keeps it. */
static inline __host__ __device__ int l10_merge_here(int heads, int kv_heads, int max_q) {
  return l10_merge_per_thread(heads, kv_heads, max_q) <= 1;
}

/** Chunks a sequence may be cut into (the plan's items over the batch: the chunks of a sequence of
 * max_seq_kv keys, and one for the partial chunk the device's split may add) for l10_merge_inside()
 * to merge a unit of more rows inside the kernel. */
#define L10_MERGE_FEW 4
/** Float4 of a row a thread of the last block merges at most, there. */
#define L10_MERGE_PER_THREAD 8

/** 1 when versions 1, 2 and 4 merge a step's chunks inside their kernel: where l10_merge_here()
 * says so, and also where each thread of the last block merges at most L10_MERGE_PER_THREAD
 * float4 of its rows (8 tokens at 32/8 heads and dim 128) and the plan of @p items items over
 * @p batch sequences cuts none into more than L10_MERGE_FEW chunks: with few states a row, the
 * last block's round trips to L2 cost less than the merge kernel placed after the main kernel
 * (measured: the README's version 4 section). At batch 1 the sequences are cut into 16-33 chunks
 * and the merge kernel stays. From the limits alone, so that a captured graph keeps it. */
static inline __host__ __device__ int l10_merge_inside(int heads, int kv_heads, int max_q,
                                                       int items, int batch) {
  if (l10_merge_here(heads, kv_heads, max_q)) return 1;
  return l10_merge_per_thread(heads, kv_heads, max_q) <= L10_MERGE_PER_THREAD &&
         (long long)items <= (long long)L10_MERGE_FEW * batch;
}

/** The workspace of versions 1, 2 and 4 (its bytes: workspace_for() in plan.c), carved for a grid
 * of @p n_slots (item, KV head, unit) slots: the partial states' O `[n_slots, L10_UNIT_ROWS,
 * HEAD_DIM]` and lse `[n_slots, L10_UNIT_ROWS]` (fp32), the merge's counters `[2, n_slots]`, then
 * each sequence's first item and count (the split as the kernel made it, for the host to check).
 * All NULL when @p ws is (no sequence is cut). */
static inline void l10_merge_workspace(void *ws, size_t n_slots, float **part_o, float **part_lse,
                                       int **count, int2 **plan) {
  *part_o = (float *)ws;
  *part_lse = ws ? *part_o + n_slots * L10_UNIT_ROWS * HEAD_DIM : NULL;
  *count = ws ? (int *)(*part_lse + n_slots * L10_UNIT_ROWS) : NULL;
  *plan = ws ? (int2 *)(*count + 2 * n_slots) : NULL;
}

#endif /* L10_MERGE_DEVICE_CUH */
