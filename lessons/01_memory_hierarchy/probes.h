/**
 * @file probes.h
 * @brief Lesson 01's probe callbacks (attn_custom) for the version table, and the helpers
 *        they share.
 */
#ifndef L01_PROBES_H
#define L01_PROBES_H

#include "memory_hierarchy.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Host to device from pageable memory. */
extern const attn_custom l01_h2d_pageable;
/** Host to device from pinned memory. */
extern const attn_custom l01_h2d_pinned;
/** Device to host into pageable memory. */
extern const attn_custom l01_d2h_pageable;
/** Device to host into pinned memory. */
extern const attn_custom l01_d2h_pinned;
/** HBM read, 4-byte loads. */
extern const attn_custom l01_hbm_read4;
/** HBM read, 16-byte loads. */
extern const attn_custom l01_hbm_read16;
/** HBM write, 16-byte stores. */
extern const attn_custom l01_hbm_write16;
/** HBM copy, 16-byte loads and stores. */
extern const attn_custom l01_hbm_copy16;
/** The L2 probe: the 16-byte read on a working set that fits in L2. */
extern const attn_custom l01_l2_read16;
/** Shared memory, conflict-free rows (L01_SMEM_ROW). */
extern const attn_custom l01_smem_row;
/** Shared memory, 2-way bank conflict (L01_SMEM_STRIDE2). */
extern const attn_custom l01_smem_stride2;
/** Shared memory, 32-way bank conflict (L01_SMEM_STRIDE32). */
extern const attn_custom l01_smem_stride32;
/** Shared memory, padded rows (L01_SMEM_PAD33). */
extern const attn_custom l01_smem_pad33;
/** The FMA probe. */
extern const attn_custom l01_fma_probe;

/** Make @p v an exact comparison: both tolerances 0 (for integer data and replayed arithmetic).
 *  @param v a verdict just initialised */
void l01_verdict_exact(attn_verdict *v);

/** Judge @p n floats against the hash pattern: scan all of them (poison, NaN), compare every
 *  element bit for bit, and enter every mismatch and one element in 1024 into the verdict.
 *  @param v verdict @param got host copy of the output @param n elements */
void l01_judge_hash(attn_verdict *v, const float *got, size_t n);

/** Allocate @p bytes of device memory; when the device is out of memory, set @p skip to a reason,
 *  leave *@p p NULL and return cudaSuccess. @param p out @param bytes size @param skip out */
cudaError_t l01_device_alloc(void **p, size_t bytes, const char **skip);

#ifdef __cplusplus
}
#endif

#endif /* L01_PROBES_H */
