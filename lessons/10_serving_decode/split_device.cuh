/**
 * @file split_device.cuh
 * @brief The split of a step's keys into chunks, made on the device by every block of versions 1,
 *        2 and 4 from the lengths it reads, so that a captured grid balances whatever lengths the
 *        step has (the host's model of it: l10_split_chunk(), l10_split_count() in plan.c).
 *
 * The grid holds @p items chunk slots per (KV head, unit), chosen on the host from the batch and
 * the limits alone (l10_draft_items()): the T chunks that would fill the GPU were every sequence
 * at max_seq_kv keys, and one more per sequence. On the device, each warp of a block:
 *   1. reads every sequence's key count n_b (clamped as the kernels clamp it) and sums them;
 *   2. takes for the chunk c the even share of that total over T (a multiple of L06_CHUNK_ALIGN,
 *      at least L06_MIN_CHUNK): with every sequence at the limit, the limits' own cut; with
 *      shorter ones, shorter chunks; each sequence's last chunk may be partial, which the one
 *      more item per sequence pays for;
 *   3. finds which sequence b and which of its chunks s its item is, by a prefix sum of the
 *      sequences' chunk counts ceil(n_b / c) (a warp-wide scan, 32 sequences at a time).
 * A long sequence among short ones is cut as finely as the short ones, and the items past the
 * count exit at once. Every lane of the warp must call these functions together.
 */
#ifndef L10_SPLIT_DEVICE_CUH
#define L10_SPLIT_DEVICE_CUH

#include "flash_decoding.h" /* L06_MIN_CHUNK, L06_CHUNK_ALIGN (USES 6) */

/** What a block learns of its item: its sequence b (-1 past the step's last item), the chunk s of
 * it, the sequence's first item and count of chunks, the chunk's keys, and the sequence's draft
 * tokens q_b, keys n_b (clamped as the kernels clamp them) and first row q0 in the packed Q. */
typedef struct l10_item {
  int b;        /**< the sequence, -1 past the step's last item */
  int s;        /**< the chunk of it */
  int first;    /**< the sequence's first item */
  int n_chunks; /**< the sequence's count of chunks */
  int chunk;    /**< keys a chunk */
  int q_b;      /**< the sequence's draft tokens, clamped to 1..max_q */
  int n_b;      /**< its keys, clamped to q_b..max_seq_kv */
  int q0;       /**< its first row in the packed Q */
} l10_item;

/** Sequence @p b's draft tokens, clamped to 1..max_q. */
static __device__ __forceinline__ int l10_split_q(const int *__restrict__ q_lens, int b,
                                                  int max_q) {
  return min(max(q_lens[b], 1), max_q);
}

/** Item @p item of a grid of @p items for this step's lengths. The same in every lane. Every read
 * of the lengths is issued at once, the first 32 sequences' kept in registers, so that the split
 * adds one load's latency to the block's start at most, and arithmetic. */
static __device__ __forceinline__ l10_item l10_split_dev(const int *__restrict__ seq_lens,
                                                         const int *__restrict__ q_lens,
                                                         const int *__restrict__ q_start, int batch,
                                                         int max_q, int max_seq_kv, int items,
                                                         int item) {
  l10_item it;
  if (items <= batch) { /* one chunk a sequence: the item is the sequence */
    it.b = item, it.s = 0, it.first = item, it.n_chunks = 1, it.chunk = max_seq_kv;
    it.q_b = l10_split_q(q_lens, item, max_q);
    it.n_b = min(max(seq_lens[item], it.q_b), max_seq_kv);
    it.q0 = q_start[item];
    return it;
  }
  const int lane = (int)(threadIdx.x & 31);
  /* 1. The keys of every sequence, summed (l10_step_check() keeps the sum an int). */
  int q0r = 0, qbr = 1, nr = 0; /* sequence `lane`'s, for the first 32 */
  if (lane < batch) {
    qbr = l10_split_q(q_lens, lane, max_q);
    nr = min(max(seq_lens[lane], qbr), max_seq_kv);
    q0r = q_start[lane];
  }
  int sum = nr;
  for (int b = lane + 32; b < batch; b += 32) {
    const int qb = l10_split_q(q_lens, b, max_q);
    sum += min(max(seq_lens[b], qb), max_seq_kv);
  }
  const unsigned total = __reduce_add_sync(0xffffffffu, (unsigned)sum);
  /* 2. The chunk: the even share over the T = items - batch chunks, a multiple of
   * L06_CHUNK_ALIGN, at least L06_MIN_CHUNK. */
  const unsigned target = (unsigned)(items - batch);
  unsigned c = (total + target - 1) / target;
  c = c < L06_MIN_CHUNK ? L06_MIN_CHUNK : c;
  c = (c + L06_CHUNK_ALIGN - 1) / L06_CHUNK_ALIGN * L06_CHUNK_ALIGN;
  it.chunk = (int)c;
  /* 3. The sequence whose items hold mine: a prefix sum of the counts ceil(n_b / chunk), 32
   * sequences at a time. */
  int before = 0; /* items of the sequences before this group of 32 */
  for (int b0 = 0; b0 < batch; b0 += 32) {
    const int b = b0 + lane;
    int qb = qbr, n = nr;
    if (b0 > 0) {
      qb = b < batch ? l10_split_q(q_lens, b, max_q) : 1;
      n = b < batch ? min(max(seq_lens[b], qb), max_seq_kv) : 0;
    }
    const int cnt = (int)(((unsigned)n + c - 1) / c); /* 0 past the batch */
    int incl = cnt;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += y;
    }
    const unsigned hit =
        __ballot_sync(0xffffffffu, cnt > 0 && item >= before + incl - cnt && item < before + incl);
    if (hit) {
      const int src = __ffs(hit) - 1;
      it.b = b0 + src;
      it.first = before + __shfl_sync(0xffffffffu, incl - cnt, src);
      it.n_chunks = __shfl_sync(0xffffffffu, cnt, src);
      it.s = item - it.first;
      it.q_b = __shfl_sync(0xffffffffu, qb, src);
      it.n_b = __shfl_sync(0xffffffffu, n, src);
      it.q0 = b0 == 0 ? __shfl_sync(0xffffffffu, q0r, src) : q_start[it.b];
      return it;
    }
    before += __shfl_sync(0xffffffffu, incl, 31);
  }
  it.b = -1, it.s = 0, it.first = 0, it.n_chunks = 0, it.q_b = 1, it.n_b = 0, it.q0 = 0;
  return it;
}

/** The merge kernel's plan, written once per sequence (the GPU test also checks it against the
 * host's model of the split): by thread 0 of the block that holds chunk 0 of sequence it->b for
 * KV head 0 and unit 0 (@p lead_block), where the sequence's items start and how many there are.
 * Nothing to write when each sequence is one item (no merge). */
static __device__ __forceinline__ void l10_split_plan(int2 *__restrict__ plan, const l10_item *it,
                                                      int items, int batch, int lead_block) {
  if (items > batch && lead_block && it->s == 0 && threadIdx.x == 0)
    plan[it->b] = make_int2(it->first, it->n_chunks);
}

#endif /* L10_SPLIT_DEVICE_CUH */
