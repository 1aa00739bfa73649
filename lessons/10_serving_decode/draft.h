/**
 * @file draft.h
 * @brief Lesson 10's drill: what a draft token sees (the three masks of a speculative step), and
 *        the merge of two partial attention states. Plain C, no CUDA, no other header of the
 *        course: drills/10_draft_merge.c has the same functions with empty bodies, and
 *        `make drill-10` runs the checklist (tests/lesson10/checklist.c) against it. The lesson's
 *        own answers are in draft.c; serving_decode.h includes this header.
 */
#ifndef L10_DRAFT_H
#define L10_DRAFT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What the draft tokens of a sequence see of each other. */
typedef enum l10_mask {
  L10_MASK_NONE = 0,   /**< every key of the sequence */
  L10_MASK_CAUSAL = 1, /**< keys up to the token's own position (bottom-right) */
  L10_MASK_TREE = 2    /**< the keys before the draft tokens, and the draft tokens its word names */
} l10_mask;

/**
 * Whether draft token @p i of a sequence with @p n_keys keys and @p q_len draft tokens sees key
 * @p key under @p mask (@p bits: the token's tree word, read with L10_MASK_TREE only). The rule
 * the kernels apply, the reference and the CPU model use; key and token positions as in the file
 * comment of serving_decode.h (draft token i stands at position n_keys - q_len + i). Keys outside
 * 0..n_keys-1 are never seen.
 */
int l10_sees(l10_mask mask, uint32_t bits, int i, int q_len, int n_keys, int key);

/**
 * Merge a partial attention state into another, in place: (*@p lse, @p o) and (@p lse_b, @p o_b)
 * are the log-sum-exp (natural log, -inf for a state that saw no key) and the normalised output
 * (@p dim floats) of one query row over two disjoint sets of keys; on return (*@p lse, @p o) is
 * the state over both. Lesson 02's algebra, with whole chunks of keys for single keys.
 */
void l10_merge_state(float *lse, float *o, float lse_b, const float *o_b, int dim);

#ifdef __cplusplus
}
#endif

#endif /* L10_DRAFT_H */
