/* Version 5's plan (paged_attention.h, l07_balance_chunk()): the chunk length that balances work,
 * not blocks, when the lengths of a batch differ. */
#include "paged_attention.h"

/* Whether chunk length @p c balances the batch: the blocks of the sequences it cuts (class A,
 * len > c, each len / c chunks rounded up, units blocks per chunk) fit in the slots, and the
 * slots they leave can take the uncut sequences' work (units x len keys each) in the time of one
 * chunk (c keys). */
static int balanced(long long c, int slots, int units, const int *lens, int batch) {
  long long heavy = 0, light = 0;
  for (int b = 0; b < batch; ++b) {
    if (lens[b] > c)
      heavy += units * ((lens[b] + c - 1) / c);
    else
      light += (long long)units * lens[b];
  }
  return heavy <= slots && light <= c * (slots - heavy);
}

int l07_balance_chunk(int slots, int units, const int *lens, int batch, int seq_kv) {
  if (!lens || slots < 1 || units < 1 || batch < 1 || (long long)units * batch > slots)
    return l06_varlen_chunk(slots, units, lens, batch, seq_kv);
  int longest = 1;
  for (int b = 0; b < batch; ++b)
    if (lens[b] > longest) longest = lens[b];
  /* In units of L06_CHUNK_ALIGN keys, from L06_MIN_CHUNK to the longest sequence. At the longest
   * (nothing cut) the test holds: units x sum(lens) <= units x batch x longest <= slots x longest.
   * The shortest length that passes is found by bisection, as l06_varlen_chunk() finds its one. */
  long long lo = L06_MIN_CHUNK / L06_CHUNK_ALIGN;
  long long hi = ((long long)longest + L06_CHUNK_ALIGN - 1) / L06_CHUNK_ALIGN;
  if (lo > hi) lo = hi;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (balanced(mid * L06_CHUNK_ALIGN, slots, units, lens, batch))
      hi = mid;
    else
      lo = mid + 1;
  }
  return (int)(lo * L06_CHUNK_ALIGN);
}
