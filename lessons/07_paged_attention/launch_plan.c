/* Lesson 07's plan on the current device: the launcher of each version and head dimension, the
 * chunk length a version cuts the keys into (its kernel's slots: SMs x blocks per SM), and the
 * workspace that chunk count needs. The table of versions (versions.c) and the decode loop on the
 * GPU (decode_loop_gpu.c) both take their launchers and workspaces from here. */
#include <limits.h>
#include <stddef.h>

#include "paged_attention.h"

/* [dim 64, dim 128] */
static const l07_paged_fn kRow[2] = {l07_paged_row_d64, l07_paged_row_d128};
/* [version 2, 3, 4, 5][dim 64, dim 128] */
static const l07_paged_fn kSplit[4][2] = {{l07_paged_split_d64, l07_paged_split_d128},
                                          {l07_paged_pipeline_d64, l07_paged_pipeline_d128},
                                          {l07_paged_overlap_d64, l07_paged_overlap_d128},
                                          {l07_paged_balance_d64, l07_paged_balance_d128}};
static int (*const kSplitPerSm[2][2])(void) = {
    {l07_paged_split_per_sm_d64, l07_paged_split_per_sm_d128},
    {l07_paged_pipeline_per_sm_d64, l07_paged_pipeline_per_sm_d128}};

l07_paged_fn l07_launcher(int version, int dim) {
  if ((dim != 64 && dim != 128) || version < 1 || version > L07_PAGED_VERSIONS) return NULL;
  return version == 1 ? kRow[dim == 128] : kSplit[version - 2][dim == 128];
}

int l07_paged_chunk_for(int version, int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                        const int *lens_host, int dim) {
  const int units = l06_units(6, 1, heads, kv_heads, seq_q); /* of one sequence */
  const int varlen = lens_host != NULL;
  int per_sm;
  if (version == 4) /* at the ring it runs: two blocks per SM when one wave does not hold them */
    per_sm = dim == 128
                 ? l07_paged_overlap_per_sm_d128(l07_paged_overlap_ring_d128(batch, units, varlen))
                 : l07_paged_overlap_per_sm_d64(l07_paged_overlap_ring_d64(batch, units, varlen));
  else if (version == 5)
    per_sm = dim == 128
                 ? l07_paged_balance_per_sm_d128(l07_paged_balance_ring_d128(batch, units, varlen))
                 : l07_paged_balance_per_sm_d64(l07_paged_balance_ring_d64(batch, units, varlen));
  else
    per_sm = kSplitPerSm[version == 3][dim == 128]();
  const long long wide = (long long)l06_sm_count() * per_sm;
  const int slots = wide > INT_MAX ? INT_MAX : (int)wide;
  if (version == 5) return l07_balance_chunk(slots, units, lens_host, batch, seq_kv);
  return l06_varlen_chunk(slots, units, lens_host, batch, seq_kv);
}

size_t l07_paged_workspace_bytes(int version, int batch, int heads, int kv_heads, int seq_q,
                                 int seq_kv, const int *lens_host, int dim) {
  const int units = l06_units(6, 1, heads, kv_heads, seq_q);
  if (version < 2 || version > L07_PAGED_VERSIONS || units < 1 || batch < 1 ||
      (dim != 64 && dim != 128))
    return 0;
  const int chunk =
      l07_paged_chunk_for(version, batch, heads, kv_heads, seq_q, seq_kv, lens_host, dim);
  const int chunks = l06_varlen_chunks(chunk, lens_host, batch, seq_kv);
  if (chunks == batch) return 0; /* every sequence one chunk: O written directly */
  return l06_counter_bytes((int)((long long)batch * units)) +
         (size_t)chunks * units * 16 * ((size_t)dim + 1) * sizeof(float);
}
