/* Versions 1, 2 and 4's plan on the host: the chunk slots (items) a step's grid holds per KV head
 * and unit, the workspace that holds the chunks' partial states (version 2's occupancy when the
 * step has an FP8 cache), and the launchers for a head dimension. Nothing here reads the device's
 * lengths: the grid is made from the batch and the limits, so that a captured launch stays valid
 * when the lengths change, and the kernels cut the keys into those items on the device
 * (split_device.cuh), whose rule l10_split_chunk() and l10_split_count() model here. */
#include <limits.h>

#include "serving_decode.h"

/* The chunk for a kernel of which an SM holds @p per_sm blocks. */
static int chunk_for(const l10_step *s, int per_sm) {
  const int units = l10_units_per_kv_head(s->heads, s->kv_heads, s->max_q);
  const long long blocks = (long long)s->batch * s->kv_heads * units;
  const long long slots = (long long)l06_sm_count() * per_sm;
  /* l06_num_splits(): one wave of blocks, chunks of at least L06_MIN_CHUNK keys */
  const int splits =
      l06_num_splits(slots > INT_MAX ? INT_MAX : (int)slots,
                     blocks > INT_MAX ? INT_MAX : (int)blocks, s->max_seq_kv, L06_MAX_SPLITS);
  if (splits > 1 || blocks <= slots || slots < 1) return l06_chunk_len(s->max_seq_kv, splits);
  /* More blocks than one wave: the last wave may run nearly empty (512 blocks on 396 slots take
   * two waves, 65% full). Cut the sequences into the fewest chunks whose blocks fill their last
   * wave to 90% (512 x 3 on 396 slots: 97%), or the fullest count the chunk's minimum allows. */
  int best = 1;
  double best_fill = 0.0;
  for (int k = 1; k <= L06_MAX_SPLITS; ++k) {
    const int len = l06_chunk_len(s->max_seq_kv, k);
    if (k > 1 && len < L06_MIN_CHUNK) break;
    const long long total = blocks * ((s->max_seq_kv + len - 1) / len);
    const double fill = (double)total / ((double)((total + slots - 1) / slots) * slots);
    if (fill > best_fill + 1e-9) best = k, best_fill = fill;
    if (fill >= 0.9) break;
  }
  return l06_chunk_len(s->max_seq_kv, best);
}

/* The items for a kernel of which an SM holds @p per_sm blocks: T, the chunks that would fill the
 * GPU were every sequence at max_seq_kv keys, and one more per sequence for the partial chunk
 * at each sequence's end when the device spreads the T shares by length; the batch alone when no
 * sequence can be cut (the limit within one chunk's minimum). */
static int items_for(const l10_step *s, int per_sm) {
  if (s->max_seq_kv <= L06_MIN_CHUNK) return s->batch;
  const long long chunk = chunk_for(s, per_sm);
  const long long splits = (s->max_seq_kv + chunk - 1) / chunk;
  const long long items = (long long)s->batch * ((splits < 1 ? 1 : splits) + 1);
  return items > INT_MAX ? INT_MAX : (int)items;
}

int l10_draft_items(const l10_step *s) {
  return items_for(s, s->k_scale ? (s->dim == 64    ? l10_fp8_per_sm_d64()
                                    : s->dim == 128 ? l10_fp8_per_sm_d128()
                                                    : l10_fp8_per_sm_d256())
                                 : (s->dim == 64    ? l10_draft_per_sm_d64()
                                    : s->dim == 128 ? l10_draft_per_sm_d128()
                                                    : l10_draft_per_sm_d256()));
}

/* The bytes of the chunks' partial states for a grid of @p items items. */
static size_t workspace_for(const l10_step *s, int items) {
  if (items <= s->batch) return 0; /* one chunk a sequence: nothing to merge */
  const size_t slots =
      (size_t)items * s->kv_heads * l10_units_per_kv_head(s->heads, s->kv_heads, s->max_q);
  /* O and the log-sum-exp of every (item, KV head, unit, row), the merge's two counters per
   * slot, then each sequence's first item and count (l10_merge_workspace() carves it) */
  return slots * L10_UNIT_ROWS * ((size_t)s->dim + 1) * sizeof(float) + slots * 2 * sizeof(int) +
         (size_t)s->batch * 2 * sizeof(int);
}

size_t l10_draft_workspace_bytes(const l10_step *s) {
  return workspace_for(s, l10_draft_items(s));
}

int l10_split_count(int chunk, int batch, const int *keys) {
  if (chunk < 1 || batch < 1 || !keys) return 0;
  long long n = 0;
  for (int b = 0; b < batch; ++b) n += keys[b] > chunk ? (keys[b] + chunk - 1) / chunk : 1;
  return n > INT_MAX ? INT_MAX : (int)n;
}

int l10_split_chunk(int items, int batch, const int *keys, int max_seq_kv) {
  if (items <= batch || !keys) return max_seq_kv;
  long long total = 0;
  for (int b = 0; b < batch; ++b) total += keys[b];
  const long long share = (total + (items - batch) - 1) / (items - batch);
  const long long c = share < L06_MIN_CHUNK ? L06_MIN_CHUNK : share;
  return (int)((c + L06_CHUNK_ALIGN - 1) / L06_CHUNK_ALIGN * L06_CHUNK_ALIGN);
}

int l10_wg_per_sm(int dim) {
  return dim == 64    ? l10_wg_per_sm_d64()
         : dim == 128 ? l10_wg_per_sm_d128()
         : dim == 256 ? l10_wg_per_sm_d256()
                      : 0;
}

int l10_wg_items(const l10_step *s) {
  return items_for(s, l10_wg_per_sm(s->dim));
}

size_t l10_wg_workspace_bytes(const l10_step *s) {
  return workspace_for(s, l10_wg_items(s));
}

cudaError_t l10_draft(const l10_step *s, void *o, float *lse, void *workspace,
                      size_t workspace_bytes, cudaStream_t stream) {
  if (!s) return cudaErrorInvalidValue;
  if (s->dim == 64) return l10_draft_d64(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 128) return l10_draft_d128(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 256) return l10_draft_d256(s, o, lse, workspace, workspace_bytes, stream);
  return cudaErrorInvalidValue;
}

#ifndef L10_HAVE_SM90A
/** 1 when CMake built version 4 (sm_90a, with lesson 05). */
#define L10_HAVE_SM90A 0
#endif
#if !L10_HAVE_SM90A
/* Version 4 is sm_90a code, built with lesson 05 (CMake's ATTN_ARCHS_HOPPER holds 90a). A build
 * without it keeps the launchers, which refuse; the program's setup says why. */
cudaError_t l10_wg_d64(const l10_step *s, void *o, float *lse, void *workspace,
                       size_t workspace_bytes, cudaStream_t stream) {
  (void)s, (void)o, (void)lse, (void)workspace, (void)workspace_bytes, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_wg_d128(const l10_step *s, void *o, float *lse, void *workspace,
                        size_t workspace_bytes, cudaStream_t stream) {
  (void)s, (void)o, (void)lse, (void)workspace, (void)workspace_bytes, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_wg_d256(const l10_step *s, void *o, float *lse, void *workspace,
                        size_t workspace_bytes, cudaStream_t stream) {
  (void)s, (void)o, (void)lse, (void)workspace, (void)workspace_bytes, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_wg_after_d64(const l10_step *s, void *o, float *lse, void *workspace,
                             size_t workspace_bytes, cudaStream_t stream) {
  (void)s, (void)o, (void)lse, (void)workspace, (void)workspace_bytes, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_wg_after_d128(const l10_step *s, void *o, float *lse, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  (void)s, (void)o, (void)lse, (void)workspace, (void)workspace_bytes, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_wg_after_d256(const l10_step *s, void *o, float *lse, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  (void)s, (void)o, (void)lse, (void)workspace, (void)workspace_bytes, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_wg_pair_d64(const l10_step *a, void *o_a, float *lse_a, void *ws_a,
                            size_t ws_a_bytes, const l10_step *b, void *o_b, float *lse_b,
                            void *ws_b, size_t ws_b_bytes, cudaStream_t stream) {
  (void)a, (void)o_a, (void)lse_a, (void)ws_a, (void)ws_a_bytes, (void)b, (void)o_b, (void)lse_b;
  (void)ws_b, (void)ws_b_bytes, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_wg_pair_d128(const l10_step *a, void *o_a, float *lse_a, void *ws_a,
                             size_t ws_a_bytes, const l10_step *b, void *o_b, float *lse_b,
                             void *ws_b, size_t ws_b_bytes, cudaStream_t stream) {
  (void)a, (void)o_a, (void)lse_a, (void)ws_a, (void)ws_a_bytes, (void)b, (void)o_b, (void)lse_b;
  (void)ws_b, (void)ws_b_bytes, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_wg_pair_d256(const l10_step *a, void *o_a, float *lse_a, void *ws_a,
                             size_t ws_a_bytes, const l10_step *b, void *o_b, float *lse_b,
                             void *ws_b, size_t ws_b_bytes, cudaStream_t stream) {
  (void)a, (void)o_a, (void)lse_a, (void)ws_a, (void)ws_a_bytes, (void)b, (void)o_b, (void)lse_b;
  (void)ws_b, (void)ws_b_bytes, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_prefill_d64(const l10_step *s, int pool_pages, int units, int n_chunks,
                            int chunk_tiles, float *part_o, float *part_lse, cudaStream_t stream) {
  (void)s, (void)pool_pages, (void)units, (void)n_chunks, (void)chunk_tiles, (void)part_o;
  (void)part_lse, (void)stream;
  return cudaErrorNotSupported;
}
cudaError_t l10_prefill_d128(const l10_step *s, int pool_pages, int units, int n_chunks,
                             int chunk_tiles, float *part_o, float *part_lse, cudaStream_t stream) {
  (void)s, (void)pool_pages, (void)units, (void)n_chunks, (void)chunk_tiles, (void)part_o;
  (void)part_lse, (void)stream;
  return cudaErrorNotSupported;
}
int l10_prefill_per_sm_d64(void) {
  return 0;
}
int l10_prefill_per_sm_d128(void) {
  return 0;
}
int l10_wg_per_sm_d64(void) {
  return 0;
}
int l10_wg_per_sm_d128(void) {
  return 0;
}
int l10_wg_per_sm_d256(void) {
  return 0;
}
#endif

cudaError_t l10_wg(const l10_step *s, void *o, float *lse, void *workspace, size_t workspace_bytes,
                   cudaStream_t stream) {
  if (!s) return cudaErrorInvalidValue;
  if (s->dim == 64) return l10_wg_d64(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 128) return l10_wg_d128(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 256) return l10_wg_d256(s, o, lse, workspace, workspace_bytes, stream);
  return cudaErrorInvalidValue;
}

cudaError_t l10_wg_after(const l10_step *s, void *o, float *lse, void *workspace,
                         size_t workspace_bytes, cudaStream_t stream) {
  if (!s) return cudaErrorInvalidValue;
  if (s->dim == 64) return l10_wg_after_d64(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 128) return l10_wg_after_d128(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 256) return l10_wg_after_d256(s, o, lse, workspace, workspace_bytes, stream);
  return cudaErrorInvalidValue;
}

cudaError_t l10_wg_pair(const l10_step *a, void *o_a, float *lse_a, void *ws_a, size_t ws_a_bytes,
                        const l10_step *b, void *o_b, float *lse_b, void *ws_b, size_t ws_b_bytes,
                        cudaStream_t stream) {
  if (!a || !b || a->dim != b->dim) return cudaErrorInvalidValue;
  cudaError_t (*f)(const l10_step *, void *, float *, void *, size_t, const l10_step *, void *,
                   float *, void *, size_t, cudaStream_t) = a->dim == 64    ? l10_wg_pair_d64
                                                            : a->dim == 128 ? l10_wg_pair_d128
                                                            : a->dim == 256 ? l10_wg_pair_d256
                                                                            : NULL;
  if (!f) return cudaErrorInvalidValue;
  return f(a, o_a, lse_a, ws_a, ws_a_bytes, b, o_b, lse_b, ws_b, ws_b_bytes, stream);
}

int l10_prefill_per_sm(int dim) {
  return dim == 64 ? l10_prefill_per_sm_d64() : dim == 128 ? l10_prefill_per_sm_d128() : 0;
}

cudaError_t l10_prefill(const l10_step *s, int pool_pages, int units, int n_chunks, int chunk_tiles,
                        float *part_o, float *part_lse, cudaStream_t stream) {
  if (!s) return cudaErrorInvalidValue;
  if (s->dim == 64)
    return l10_prefill_d64(s, pool_pages, units, n_chunks, chunk_tiles, part_o, part_lse, stream);
  if (s->dim == 128)
    return l10_prefill_d128(s, pool_pages, units, n_chunks, chunk_tiles, part_o, part_lse, stream);
  return cudaErrorInvalidValue;
}

cudaError_t l10_fp8(const l10_step *s, void *o, float *lse, void *workspace, size_t workspace_bytes,
                    cudaStream_t stream) {
  if (!s) return cudaErrorInvalidValue;
  if (s->dim == 64) return l10_fp8_d64(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 128) return l10_fp8_d128(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 256) return l10_fp8_d256(s, o, lse, workspace, workspace_bytes, stream);
  return cudaErrorInvalidValue;
}
