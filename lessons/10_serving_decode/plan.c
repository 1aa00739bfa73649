/* Versions 1 and 2's plan on the host: the chunk every sequence is cut by, the workspace that
 * holds the chunks' partial states (version 2's occupancy when the step has an FP8 cache), and
 * the launchers for a head dimension. Nothing here reads the lengths:
 * the plan is made from the batch and the limits, so that a captured launch stays valid when the
 * lengths change. */
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

int l10_draft_chunk(const l10_step *s) {
  return chunk_for(s, s->k_scale ? (s->dim == 64    ? l10_fp8_per_sm_d64()
                                    : s->dim == 128 ? l10_fp8_per_sm_d128()
                                                    : l10_fp8_per_sm_d256())
                                 : (s->dim == 64    ? l10_draft_per_sm_d64()
                                    : s->dim == 128 ? l10_draft_per_sm_d128()
                                                    : l10_draft_per_sm_d256()));
}

/* The bytes of the chunks' partial states for chunks of @p chunk keys. */
static size_t workspace_for(const l10_step *s, int chunk) {
  const int splits = (s->max_seq_kv + chunk - 1) / chunk;
  if (splits <= 1) return 0;
  const size_t units =
      (size_t)s->batch * s->kv_heads * l10_units_per_kv_head(s->heads, s->kv_heads, s->max_q);
  /* O and the log-sum-exp of every (unit, chunk, row) */
  return units * (size_t)splits * L10_UNIT_ROWS * ((size_t)s->dim + 1) * sizeof(float);
}

size_t l10_draft_workspace_bytes(const l10_step *s) {
  return workspace_for(s, l10_draft_chunk(s));
}

int l10_wg_per_sm(int dim) {
  return dim == 64    ? l10_wg_per_sm_d64()
         : dim == 128 ? l10_wg_per_sm_d128()
         : dim == 256 ? l10_wg_per_sm_d256()
                      : 0;
}

int l10_wg_chunk(const l10_step *s) {
  return chunk_for(s, l10_wg_per_sm(s->dim));
}

size_t l10_wg_workspace_bytes(const l10_step *s) {
  return workspace_for(s, l10_wg_chunk(s));
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

cudaError_t l10_fp8(const l10_step *s, void *o, float *lse, void *workspace, size_t workspace_bytes,
                    cudaStream_t stream) {
  if (!s) return cudaErrorInvalidValue;
  if (s->dim == 64) return l10_fp8_d64(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 128) return l10_fp8_d128(s, o, lse, workspace, workspace_bytes, stream);
  if (s->dim == 256) return l10_fp8_d256(s, o, lse, workspace, workspace_bytes, stream);
  return cudaErrorInvalidValue;
}
