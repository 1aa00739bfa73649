/* Lesson 10's host checks of a step's limits, and the units (blocks of L10_UNIT_ROWS query rows)
 * of a KV head's group. See serving_decode.h. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "serving_decode.h"

/* Write a one-line reason into err (when there is room) and return -1. */
static int refuse(char *err, size_t err_len, const char *fmt, ...) {
  if (err && err_len > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
  }
  return -1;
}

int l10_step_check(const l10_step *s, char *err, size_t err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (!s) return refuse(err, err_len, "step: NULL");
  if (s->batch < 1) return refuse(err, err_len, "batch %d: at least 1 sequence", s->batch);
  if (s->heads < 1) return refuse(err, err_len, "heads %d: at least 1", s->heads);
  if (s->kv_heads < 1) return refuse(err, err_len, "kv_heads %d: at least 1", s->kv_heads);
  if (s->heads % s->kv_heads != 0)
    return refuse(err, err_len, "heads %d is not a multiple of kv_heads %d", s->heads, s->kv_heads);
  if (s->dim != 64 && s->dim != 128 && s->dim != 256)
    return refuse(err, err_len, "dim %d: the kernels are built for 64, 128 and 256", s->dim);
  /* more tokens only without a mask (no tree word, no diagonal) over a bf16 cache */
  const int most_q = s->mask == L10_MASK_NONE && !s->k_scale ? L10_MAX_SHARED_Q : L10_MAX_DRAFT;
  if (s->max_q < 1 || s->max_q > most_q)
    return refuse(err, err_len, "max_q %d: 1..%d draft tokens per sequence%s", s->max_q, most_q,
                  most_q == L10_MAX_SHARED_Q ? " (no mask)" : "");
  if (s->max_seq_kv < s->max_q)
    return refuse(err, err_len, "max_seq_kv %d: fewer keys than max_q %d draft tokens",
                  s->max_seq_kv, s->max_q);
  if (s->block_size < 1 || (s->block_size & (s->block_size - 1)) != 0)
    return refuse(err, err_len, "block_size %d: a power of two", s->block_size);
  if (s->max_blocks < 1 || (long long)s->max_blocks * s->block_size < s->max_seq_kv)
    return refuse(err, err_len, "max_blocks %d x block_size %d: fewer than max_seq_kv %d keys",
                  s->max_blocks, s->block_size, s->max_seq_kv);
  if (s->mask != L10_MASK_NONE && s->mask != L10_MASK_CAUSAL && s->mask != L10_MASK_TREE)
    return refuse(err, err_len, "mask %d: not none (0), causal (1) or tree (2)", (int)s->mask);
  if (s->mask == L10_MASK_TREE && !s->tree)
    return refuse(err, err_len, "tree: NULL with the tree mask");
  if (!s->k_scale != !s->v_scale)
    return refuse(err, err_len, "k_scale and v_scale: both set (an FP8 cache) or both NULL");
  if (s->k_scale && s->block_size < L10_FP8_MIN_BLOCK)
    return refuse(err, err_len, "block_size %d: an FP8 cache needs pages of at least %d tokens",
                  s->block_size, L10_FP8_MIN_BLOCK);
  const struct {
    const void *p;
    const char *name;
  } need[] = {{s->q, "q"},
              {s->q_start, "q_start"},
              {s->q_lens, "q_lens"},
              {s->k_cache, "k_cache"},
              {s->v_cache, "v_cache"},
              {s->block_table, "block_table"},
              {s->seq_lens, "seq_lens"}};
  for (size_t i = 0; i < sizeof need / sizeof need[0]; ++i)
    if (!need[i].p) return refuse(err, err_len, "%s: NULL", need[i].name);
  if (!isfinite(s->scale) || s->scale <= 0.0f)
    return refuse(err, err_len, "scale %g: a finite number above 0", (double)s->scale);
  /* The kernels index the block table and the rows of O and the LSE, and sum the keys, with ints.
   */
  if ((long long)s->batch * s->max_blocks > INT_MAX)
    return refuse(err, err_len, "batch %d x max_blocks %d: more block-table entries than an int",
                  s->batch, s->max_blocks);
  if ((long long)s->batch * s->max_q * s->heads > INT_MAX)
    return refuse(err, err_len, "batch %d x max_q %d x heads %d: more rows than an int", s->batch,
                  s->max_q, s->heads);
  if ((long long)s->batch * s->max_seq_kv > INT_MAX) /* the step's keys, summed on the device */
    return refuse(err, err_len, "batch %d x max_seq_kv %d: more keys than an int", s->batch,
                  s->max_seq_kv);
  return 0;
}

int l10_units_per_kv_head(int heads, int kv_heads, int max_q) {
  if (heads < 1 || kv_heads < 1 || max_q < 1) return 0;
  const long long rows = (long long)(heads / kv_heads) * max_q; /* the group's rows */
  return (int)((rows + L10_UNIT_ROWS - 1) / L10_UNIT_ROWS);
}
