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

/** Sequence @p b's keys as the kernels clamp them: at least its draft tokens, at most the limit. */
static __device__ __forceinline__ int l10_split_keys(const int *__restrict__ seq_lens,
                                                     const int *__restrict__ q_lens, int b,
                                                     int max_q, int max_seq_kv) {
  const int q_b = min(max(q_lens[b], 1), max_q);
  return min(max(seq_lens[b], q_b), max_seq_kv);
}

/** The chunk of this step for a grid of @p items > batch items: the even share of the keys over
 * items - batch of them, a multiple of L06_CHUNK_ALIGN, at least L06_MIN_CHUNK. sum_b ceil(n_b /
 * chunk) <= total / chunk + batch <= items: the grid holds every chunk whatever the lengths. */
static __device__ __forceinline__ int l10_split_chunk_dev(const int *__restrict__ seq_lens,
                                                          const int *__restrict__ q_lens, int batch,
                                                          int max_q, int max_seq_kv, int items) {
  long long total = 0;
  for (int b = (int)(threadIdx.x & 31); b < batch; b += 32)
    total += l10_split_keys(seq_lens, q_lens, b, max_q, max_seq_kv);
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) total += __shfl_xor_sync(0xffffffffu, total, d);
  const long long share = (total + (items - batch) - 1) / (items - batch);
  const long long c = share < L06_MIN_CHUNK ? L06_MIN_CHUNK : share;
  return (int)((c + L06_CHUNK_ALIGN - 1) / L06_CHUNK_ALIGN * L06_CHUNK_ALIGN);
}

/** The sequence of item @p item for chunks of @p chunk keys, and in @p s its chunk there, in
 * @p first the sequence's first item and in @p n_chunks its count; -1 past the step's last item.
 * The same in every lane. */
static __device__ __forceinline__ int l10_split_item_dev(const int *__restrict__ seq_lens,
                                                         const int *__restrict__ q_lens, int batch,
                                                         int max_q, int max_seq_kv, int chunk,
                                                         int item, int *s, int *first,
                                                         int *n_chunks) {
  const int lane = (int)(threadIdx.x & 31);
  int before = 0; /* items of the sequences before this group of 32 */
  for (int b0 = 0; b0 < batch; b0 += 32) {
    const int b = b0 + lane;
    const int n = b < batch
                      ? (l10_split_keys(seq_lens, q_lens, b, max_q, max_seq_kv) + chunk - 1) / chunk
                      : 0;
    int incl = n; /* inclusive scan over the lanes: items up to and with sequence b */
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += y;
    }
    const unsigned hit =
        __ballot_sync(0xffffffffu, n > 0 && item >= before + incl - n && item < before + incl);
    if (hit) {
      const int src = __ffs(hit) - 1;
      *first = before + __shfl_sync(0xffffffffu, incl - n, src);
      *n_chunks = __shfl_sync(0xffffffffu, n, src);
      *s = item - *first;
      return b0 + src;
    }
    before += __shfl_sync(0xffffffffu, incl, 31);
  }
  return -1;
}

#endif /* L10_SPLIT_DEVICE_CUH */
