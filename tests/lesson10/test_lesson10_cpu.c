/* Lesson 10, CPU: what each mask lets a draft token see, the merge of partial states, the host
 * check of a step's limits, the units of a KV head's group, the double-precision reference
 * against a dense brute force and a hand-worked case, and the CPU model of version 1 against the
 * reference on awkward shapes, over a pool whose every unowned slot holds NaN; version 2's model
 * on an FP8 copy; version 3's plan (the shared pages found in the table) and its model on forked
 * steps. No GPU needed. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_rng.h"
#include "attn_test.h"
#include "serving_decode.h"

/* ---- l10_sees ---------------------------------------------------------------------------- */

START_TEST(sees_none_every_key_of_the_sequence) {
  for (int i = 0; i < 4; ++i) {
    for (int key = 0; key < 9; ++key) ck_assert(l10_sees(L10_MASK_NONE, 0u, i, 4, 9, key));
    ck_assert(!l10_sees(L10_MASK_NONE, 0u, i, 4, 9, -1));
    ck_assert(!l10_sees(L10_MASK_NONE, 0u, i, 4, 9, 9));
    ck_assert(!l10_sees(L10_MASK_NONE, 0u, i, 4, 9, INT_MAX));
  }
  ck_assert(l10_sees(L10_MASK_NONE, 0u, 0, 1, 1, 0)); /* one key, one token */
}
END_TEST

START_TEST(sees_causal_bottom_right) {
  /* 9 keys, 4 draft tokens at positions 5..8 */
  ck_assert(l10_sees(L10_MASK_CAUSAL, 0u, 0, 4, 9, 0));  /* the first key */
  ck_assert(l10_sees(L10_MASK_CAUSAL, 0u, 0, 4, 9, 4));  /* the last key before the drafts */
  ck_assert(l10_sees(L10_MASK_CAUSAL, 0u, 0, 4, 9, 5));  /* the first token sees itself */
  ck_assert(!l10_sees(L10_MASK_CAUSAL, 0u, 0, 4, 9, 6)); /* ... and not the next */
  ck_assert(l10_sees(L10_MASK_CAUSAL, 0u, 3, 4, 9, 8));  /* the last token sees everything */
  ck_assert(!l10_sees(L10_MASK_CAUSAL, 0u, 3, 4, 9, 9));
  ck_assert(!l10_sees(L10_MASK_CAUSAL, 0u, 2, 4, 9, -1));
  ck_assert(!l10_sees(L10_MASK_CAUSAL, 0xFFFFu, 1, 4, 9, 7)); /* the word is not read */
  /* q = 1: plain decode, every key */
  for (int key = 0; key < 7; ++key) ck_assert(l10_sees(L10_MASK_CAUSAL, 0u, 0, 1, 7, key));
  /* q = 16 over 16 keys: token i sees exactly keys 0..i */
  for (int i = 0; i < 16; ++i)
    for (int key = 0; key < 16; ++key)
      ck_assert_int_eq(l10_sees(L10_MASK_CAUSAL, 0u, i, 16, 16, key), key <= i);
}
END_TEST

START_TEST(sees_tree_prefix_and_word) {
  /* 3 draft tokens over 3 keys (no prefix): token 2 with word 0b101 sees keys 0 and 2 only */
  ck_assert(l10_sees(L10_MASK_TREE, 0x5u, 2, 3, 3, 0));
  ck_assert(!l10_sees(L10_MASK_TREE, 0x5u, 2, 3, 3, 1));
  ck_assert(l10_sees(L10_MASK_TREE, 0x5u, 2, 3, 3, 2));
  ck_assert(!l10_sees(L10_MASK_TREE, 0x5u, 2, 3, 3, 3));
  /* with 7 keys before the drafts, the same token also sees all of them */
  for (int key = 0; key < 7; ++key) ck_assert(l10_sees(L10_MASK_TREE, 0x5u, 2, 3, 10, key));
  ck_assert(l10_sees(L10_MASK_TREE, 0x5u, 2, 3, 10, 7));
  ck_assert(!l10_sees(L10_MASK_TREE, 0x5u, 2, 3, 10, 8));
  ck_assert(l10_sees(L10_MASK_TREE, 0x5u, 2, 3, 10, 9));
  ck_assert(!l10_sees(L10_MASK_TREE, 0x5u, 2, 3, 10, 10));
  /* a word with no bit and no prefix: nothing */
  for (int key = -1; key < 5; ++key) ck_assert(!l10_sees(L10_MASK_TREE, 0u, 0, 4, 4, key));
  /* q = 1: the prefix, and the token itself only when its bit is set */
  ck_assert(l10_sees(L10_MASK_TREE, 0x1u, 0, 1, 5, 4));
  ck_assert(!l10_sees(L10_MASK_TREE, 0x0u, 0, 1, 5, 4));
  ck_assert(l10_sees(L10_MASK_TREE, 0x0u, 0, 1, 5, 3));
  /* q = 16: bit 15 is the last draft token's key, and no bit reaches past the sequence */
  ck_assert(l10_sees(L10_MASK_TREE, 0x8000u, 15, 16, 20, 19));
  ck_assert(!l10_sees(L10_MASK_TREE, 0x7FFFu, 15, 16, 20, 19));
  ck_assert(l10_sees(L10_MASK_TREE, 0x0001u, 15, 16, 20, 4));
  ck_assert(!l10_sees(L10_MASK_TREE, 0xFFFFFFFFu, 15, 16, 20, 20));
}
END_TEST

/* ---- l10_merge_state --------------------------------------------------------------------- */

/* Softmax state over n scores and dim-2 values, in double then rounded. */
static void state_of(const double *s, const double (*v)[2], int n, float *lse, float *o) {
  double m = -INFINITY, l = 0.0, a0 = 0.0, a1 = 0.0;
  for (int j = 0; j < n; ++j) m = s[j] > m ? s[j] : m;
  for (int j = 0; j < n; ++j) {
    const double p = exp(s[j] - m);
    l += p, a0 += p * v[j][0], a1 += p * v[j][1];
  }
  *lse = (float)(m + log(l));
  o[0] = (float)(a0 / l), o[1] = (float)(a1 / l);
}

START_TEST(merge_two_halves_equal_the_whole) {
  const double s[5] = {1.0, -0.5, 3.0, 2.25, 0.0};
  const double v[5][2] = {{1, 2}, {-3, 0.5}, {4, -1}, {0.25, 0.75}, {2, 2}};
  float lse, o[2];
  state_of(s, v, 5, &lse, o);
  for (int cut = 1; cut < 5; ++cut) {
    float la, oa[2], lb, ob[2];
    state_of(s, v, cut, &la, oa);
    state_of(s + cut, v + cut, 5 - cut, &lb, ob);
    l10_merge_state(&la, oa, lb, ob, 2);
    ck_assert_msg(fabsf(la - lse) <= 1e-6f * fabsf(lse), "cut %d: lse %g, want %g", cut, la, lse);
    for (int d = 0; d < 2; ++d)
      ck_assert_msg(fabsf(oa[d] - o[d]) <= 2e-6f * (1.0f + fabsf(o[d])),
                    "cut %d: o[%d] %g, want %g", cut, d, oa[d], o[d]);
  }
}
END_TEST

START_TEST(merge_order_does_not_matter) {
  const float la = 0.75f, lb = -1.25f, oa[3] = {1, 2, 3}, ob[3] = {-2, 0.5f, 8};
  float x = la, xo[3] = {1, 2, 3}, y = lb, yo[3] = {-2, 0.5f, 8};
  l10_merge_state(&x, xo, lb, ob, 3);
  l10_merge_state(&y, yo, la, oa, 3);
  ck_assert_float_eq_tol(x, y, 1e-6f);
  for (int d = 0; d < 3; ++d) ck_assert_float_eq_tol(xo[d], yo[d], 1e-6f);
  /* three states, folded in two orders */
  const float lc = 2.0f, oc[3] = {0, 0, 1};
  float p = la, po[3] = {1, 2, 3}, q = lc, qo[3] = {0, 0, 1};
  l10_merge_state(&p, po, lb, ob, 3);
  l10_merge_state(&p, po, lc, oc, 3);
  l10_merge_state(&q, qo, lb, ob, 3);
  l10_merge_state(&q, qo, la, oa, 3);
  ck_assert_float_eq_tol(p, q, 1e-6f);
  for (int d = 0; d < 3; ++d) ck_assert_float_eq_tol(po[d], qo[d], 1e-6f);
}
END_TEST

START_TEST(merge_empty_states) {
  float lse = 0.5f, o[2] = {1.5f, -2.0f};
  const float nan_o[2] = {NAN, NAN}, full[2] = {1.5f, -2.0f};
  l10_merge_state(&lse, o, -INFINITY, nan_o, 2); /* an empty state's o is never read */
  ck_assert(lse == 0.5f && o[0] == 1.5f && o[1] == -2.0f);
  float e = -INFINITY, eo[2] = {0.0f, 0.0f};
  l10_merge_state(&e, eo, 0.5f, full, 2);
  ck_assert(e == 0.5f && eo[0] == 1.5f && eo[1] == -2.0f);
  float z = -INFINITY, zo[2] = {0.0f, 0.0f};
  l10_merge_state(&z, zo, -INFINITY, nan_o, 2);
  ck_assert(z == -INFINITY && zo[0] == 0.0f && zo[1] == 0.0f);
}
END_TEST

START_TEST(merge_large_lse_differences) {
  float lse = 500.0f, o[1] = {3.0f};
  const float ob[1] = {-7.0f};
  l10_merge_state(&lse, o, -500.0f, ob, 1);
  ck_assert(isfinite(lse) && isfinite(o[0]));
  ck_assert_float_eq_tol(lse, 500.0f, 1e-4f);
  ck_assert_float_eq_tol(o[0], 3.0f, 1e-6f);
  float l2 = 88.0f, o2[1] = {1.0f};
  const float o2b[1] = {2.0f};
  l10_merge_state(&l2, o2, 89.0f, o2b, 1);  /* exp(89) overflows a float; the merge must not */
  const double w = 1.0 / (1.0 + exp(-1.0)); /* the weight of the larger */
  ck_assert(isfinite(l2) && isfinite(o2[0]));
  ck_assert_float_eq_tol(l2, 89.0 + log(1.0 + exp(-1.0)), 1e-5f);
  ck_assert_float_eq_tol(o2[0], w * 2.0 + (1.0 - w) * 1.0, 1e-6f);
}
END_TEST

/* ---- l10_step_check, l10_units_per_kv_head ---------------------------------------------- */

static const int kDummy[4] = {0, 0, 0, 0};
static const uint32_t kWords[4] = {1, 3, 5, 9};

static l10_step good_step(void) {
  l10_step s;
  memset(&s, 0, sizeof s);
  s.q = kDummy, s.q_start = kDummy, s.q_lens = kDummy, s.tree = kWords;
  s.k_cache = kDummy, s.v_cache = kDummy, s.block_table = kDummy, s.seq_lens = kDummy;
  s.batch = 4, s.heads = 32, s.kv_heads = 8, s.dim = 128, s.max_q = 8, s.max_seq_kv = 1000;
  s.max_blocks = 63, s.block_size = 16, s.mask = L10_MASK_TREE, s.scale = 0.088f;
  return s;
}

/* Refused, with a reason that names @p field. */
static void refused(const l10_step *s, const char *field, int line) {
  char err[256];
  memset(err, 'x', sizeof err);
  ck_assert_msg(l10_step_check(s, err, sizeof err) == -1, "line %d: %s accepted", line, field);
  ck_assert_msg(strlen(err) > 0 && strlen(err) < sizeof err && !strchr(err, '\n'),
                "line %d: not one line", line);
  ck_assert_msg(strstr(err, field) != NULL, "line %d: \"%s\" does not name %s", line, err, field);
}
#define REFUSED(field, change)     \
  do {                             \
    l10_step s_ = good_step();     \
    change;                        \
    refused(&s_, field, __LINE__); \
  } while (0)

START_TEST(step_check_refuses_each_bad_field) {
  char err[128] = "stale";
  l10_step s = good_step();
  ck_assert_int_eq(l10_step_check(&s, err, sizeof err), 0);
  ck_assert_str_eq(err, "");
  s.mask = L10_MASK_CAUSAL, s.tree = NULL; /* no word needed */
  ck_assert_int_eq(l10_step_check(&s, err, sizeof err), 0);
  s.max_q = L10_MAX_DRAFT, s.max_seq_kv = L10_MAX_DRAFT, s.dim = 64, s.heads = s.kv_heads = 1;
  s.max_blocks = 1, s.block_size = 16;
  ck_assert_int_eq(l10_step_check(&s, err, sizeof err), 0);

  REFUSED("batch", s_.batch = 0);
  REFUSED("heads", s_.heads = 0);
  REFUSED("kv_heads", s_.kv_heads = 0);
  REFUSED("kv_heads", s_.kv_heads = 5); /* 32 % 5 */
  REFUSED("dim", s_.dim = 96);
  REFUSED("dim", s_.dim = 512);
  {
    l10_step d = good_step(); /* the three head dimensions the kernels are built for */
    for (int dim = 64; dim <= 256; dim *= 2) {
      d.dim = dim;
      ck_assert_msg(l10_step_check(&d, err, sizeof err) == 0, "dim %d: %s", dim, err);
    }
  }
  REFUSED("max_q", s_.max_q = 0);
  REFUSED("max_q", s_.max_q = L10_MAX_DRAFT + 1);
  REFUSED("max_q", (s_.mask = L10_MASK_NONE, s_.max_q = L10_MAX_SHARED_Q + 1));
  /* an FP8 cache (version 2) keeps L10_MAX_DRAFT without a mask */
  REFUSED("max_q", (s_.mask = L10_MASK_NONE, s_.k_scale = s_.v_scale = (const float *)kDummy,
                    s_.max_q = L10_MAX_DRAFT + 1));
  {
    l10_step n = good_step(); /* no mask, bf16: up to L10_MAX_SHARED_Q tokens (version 3) */
    n.mask = L10_MASK_NONE, n.max_q = L10_MAX_SHARED_Q;
    ck_assert_msg(l10_step_check(&n, err, sizeof err) == 0, "no mask, %d tokens: %s",
                  L10_MAX_SHARED_Q, err);
  }
  REFUSED("max_seq_kv", s_.max_seq_kv = 7);
  REFUSED("block_size", s_.block_size = 0);
  REFUSED("block_size", s_.block_size = 24);
  REFUSED("max_blocks", s_.max_blocks = 62); /* 992 < 1000 */
  REFUSED("mask", s_.mask = (l10_mask)3);
  REFUSED("tree", s_.tree = NULL);
  REFUSED("q", s_.q = NULL);
  REFUSED("q_start", s_.q_start = NULL);
  REFUSED("q_lens", s_.q_lens = NULL);
  REFUSED("k_cache", s_.k_cache = NULL);
  REFUSED("v_cache", s_.v_cache = NULL);
  REFUSED("block_table", s_.block_table = NULL);
  REFUSED("seq_lens", s_.seq_lens = NULL);
  REFUSED("scale", s_.scale = 0.0f);
  REFUSED("scale", s_.scale = -1.0f);
  REFUSED("scale", s_.scale = NAN);
  REFUSED("scale", s_.scale = INFINITY);
  REFUSED("max_blocks", (s_.batch = 1 << 20, s_.max_blocks = 1 << 12));
  REFUSED("rows", (s_.batch = 1 << 24, s_.max_blocks = 1, s_.block_size = 1 << 10));
  REFUSED("max_seq_kv", (s_.batch = 1 << 12, s_.max_seq_kv = 1 << 20, s_.max_blocks = 1 << 16));
  /* no room for a reason, or none given: still refused, no crash */
  s = good_step();
  s.batch = 0;
  ck_assert_int_eq(l10_step_check(&s, NULL, 0), -1);
  ck_assert_int_eq(l10_step_check(&s, err, 1), -1);
  ck_assert_str_eq(err, "");
  ck_assert_int_eq(l10_step_check(NULL, err, sizeof err), -1);
}
END_TEST

START_TEST(units_per_kv_head) {
  ck_assert_int_eq(l10_units_per_kv_head(32, 8, 16), 1);  /* 4 heads x 16 tokens: one unit */
  ck_assert_int_eq(l10_units_per_kv_head(8, 1, 16), 2);   /* 8 x 16 = 128 rows */
  ck_assert_int_eq(l10_units_per_kv_head(32, 1, 3), 2);   /* MQA: 96 rows */
  ck_assert_int_eq(l10_units_per_kv_head(32, 32, 1), 1);  /* one row */
  ck_assert_int_eq(l10_units_per_kv_head(64, 1, 16), 16); /* 1024 rows */
  ck_assert_int_eq(l10_units_per_kv_head(8, 2, 16), 1);   /* exactly 64 */
  ck_assert_int_eq(l10_units_per_kv_head(13, 1, 5), 2);   /* 65: one row over */
}
END_TEST

/* ---- the split of a step's keys into the grid's items (the device's rule, modelled) --------- */

START_TEST(split_even_lengths_keep_the_limits_cut) {
  /* Batch 1 at 32k keys, 32 chunks fill the GPU (33 items): chunks of 1024, 32 used. */
  const int one[1] = {32768};
  ck_assert_int_eq(l10_split_chunk(33, 1, one, 32768), 1024);
  ck_assert_int_eq(l10_split_count(1024, 1, one), 32);
  /* Four equal sequences, 3 chunks each (16 items): a third of each, rounded up to 64. */
  const int four[4] = {6000, 6000, 6000, 6000};
  ck_assert_int_eq(l10_split_chunk(16, 4, four, 6000), 2048);
  ck_assert_int_eq(l10_split_count(2048, 4, four), 12);
  /* As many items as sequences: one chunk a sequence, whatever the lengths. */
  const int mixed[3] = {5, 70000, 300};
  ck_assert_int_eq(l10_split_chunk(3, 3, mixed, 70000), 70000);
  ck_assert_int_eq(l10_split_count(70000, 3, mixed), 3);
  /* Short sequences: the chunk keeps its minimum, one chunk each. */
  const int shorts[2] = {100, 40};
  ck_assert_int_eq(l10_split_chunk(16, 2, shorts, 4096), L06_MIN_CHUNK);
  ck_assert_int_eq(l10_split_count(L06_MIN_CHUNK, 2, shorts), 2);
}
END_TEST

START_TEST(split_cuts_the_long_sequence_finer) {
  /* One of 32k among seven of 1k, 4 chunks a sequence at the limit (32 + 8 items): cut by the
   * limit alone the long one would be 4 chunks of 8k, 8k keys a block; by the lengths (39936
   * keys, an even share of 1248, 1280 a multiple of 64) it is 26 chunks of 1280 keys, and each
   * short one one chunk: 33 items. */
  const int lens[8] = {32768, 1024, 1024, 1024, 1024, 1024, 1024, 1024};
  const int chunk = l10_split_chunk(40, 8, lens, 32768);
  ck_assert_int_eq(chunk, 1280);
  ck_assert_int_eq(l10_split_count(chunk, 1, lens), 26);
  ck_assert_int_eq(l10_split_count(chunk, 8, lens), 33);
  /* One of 8k among 31 of 1k, one chunk a sequence at the limit (32 + 32 items): 1280 again, the
   * long one in 7 chunks, 38 items. */
  int many[32];
  many[0] = 8192;
  for (int b = 1; b < 32; ++b) many[b] = 1024;
  ck_assert_int_eq(l10_split_chunk(64, 32, many, 8192), 1280);
  ck_assert_int_eq(l10_split_count(1280, 32, many), 38);
}
END_TEST

/* On random batches: the chunk is a multiple of L06_CHUNK_ALIGN, at least L06_MIN_CHUNK, the even
 * share rounded up (64 keys less would be below it), and its count fits the items. */
START_TEST(split_is_the_even_share_and_fits) {
  attn_rng r;
  attn_rng_seed(&r, 77, 3);
  int lens[64];
  for (int trial = 0; trial < 2000; ++trial) {
    const int batch = 1 + (int)attn_rng_below(&r, 64);
    const int max_kv = 1 + (int)attn_rng_below(&r, 1u << (1 + attn_rng_below(&r, 17)));
    const int items = batch * (1 + (int)attn_rng_below(&r, 40));
    long long total = 0;
    for (int b = 0; b < batch; ++b) {
      lens[b] = 1 + (int)attn_rng_below(&r, (uint32_t)max_kv);
      total += lens[b];
    }
    const int chunk = l10_split_chunk(items, batch, lens, max_kv);
    ck_assert_int_le(l10_split_count(chunk, batch, lens), items);
    if (items == batch) {
      ck_assert_int_eq(chunk, max_kv);
      continue;
    }
    ck_assert_int_eq(chunk % L06_CHUNK_ALIGN, 0);
    ck_assert_int_ge(chunk, L06_MIN_CHUNK);
    ck_assert_int_ge((long long)chunk * (items - batch), total);
    if (chunk > L06_MIN_CHUNK)
      ck_assert_msg((long long)(chunk - L06_CHUNK_ALIGN) * (items - batch) < total,
                    "trial %d: chunk %d is past the even share (batch %d, items %d)", trial, chunk,
                    batch, items);
  }
}
END_TEST

/* ---- e4m3 and the FP8 cache's row quantiser ------------------------------------------------ */

START_TEST(e4m3_every_code_round_trips) {
  ck_assert(isnan(l10_e4m3_decode(0x7f)) && isnan(l10_e4m3_decode(0xff)));
  ck_assert(l10_e4m3_decode(0x00) == 0.0f && !signbit(l10_e4m3_decode(0x00)));
  ck_assert(l10_e4m3_decode(0x80) == 0.0f && signbit(l10_e4m3_decode(0x80))); /* -0 */
  ck_assert(l10_e4m3_decode(0x01) == 0x1p-9f);                                /* 1 x 2^-9 */
  ck_assert(l10_e4m3_decode(0x07) == 7 * 0x1p-9f);                            /* last subnormal */
  ck_assert(l10_e4m3_decode(0x08) == 0x1p-6f);                                /* first normal */
  ck_assert(l10_e4m3_decode(0x7e) == 448.0f && l10_e4m3_decode(0xfe) == -448.0f);
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue; /* the two NaNs */
    const float v = l10_e4m3_decode((uint8_t)c);
    /* -0.0 included: the encoder keeps the sign, so 0x80 comes back as 0x80 */
    ck_assert_msg(l10_e4m3_encode(v) == c, "code 0x%02x: value %a encodes to 0x%02x", c, v,
                  l10_e4m3_encode(v));
    ck_assert(l10_e4m3_decode((uint8_t)(c ^ 0x80)) == -v); /* the sign bit is only the sign */
    if (c > 0 && c < 0x7f)                                 /* 0x00..0x7e: increasing */
      ck_assert_msg(l10_e4m3_decode((uint8_t)(c - 1)) < v, "code 0x%02x is not above the last", c);
  }
}
END_TEST

/* Between neighbouring codes c and c + 1: just below the midpoint gives c, just above c + 1, the
 * midpoint itself the even code; the same for negative values. The midpoint has five significant
 * bits, so it is exact in fp32 and so are its fp32 neighbours. */
START_TEST(e4m3_rounds_to_nearest_even_at_every_midpoint) {
  for (int c = 0; c < 0x7e; ++c) {
    const float mid = 0.5f * (l10_e4m3_decode((uint8_t)c) + l10_e4m3_decode((uint8_t)(c + 1)));
    const int even = c % 2 == 0 ? c : c + 1;
    for (int sign = 0; sign <= 0x80; sign += 0x80) {
      const float s = sign ? -1.0f : 1.0f;
      ck_assert_msg(l10_e4m3_encode(s * nextafterf(mid, 0.0f)) == (sign | c),
                    "below the midpoint %a of 0x%02x and 0x%02x", s * mid, sign | c,
                    sign | (c + 1));
      ck_assert_msg(l10_e4m3_encode(s * nextafterf(mid, INFINITY)) == (sign | (c + 1)),
                    "above the midpoint %a of 0x%02x and 0x%02x", s * mid, sign | c,
                    sign | (c + 1));
      ck_assert_msg(l10_e4m3_encode(s * mid) == (sign | even),
                    "the midpoint %a: 0x%02x, want 0x%02x", s * mid, l10_e4m3_encode(s * mid),
                    sign | even);
    }
  }
  /* Above 448 nothing is finite: 464 (where 480 would be the next code up) and beyond saturate. */
  const float over[] = {nextafterf(448.0f, INFINITY), 464.0f, 465.0f, 1e6f, FLT_MAX, INFINITY};
  for (size_t i = 0; i < sizeof over / sizeof over[0]; ++i) {
    ck_assert_msg(l10_e4m3_encode(over[i]) == 0x7e, "%a: want 0x7e", over[i]);
    ck_assert_msg(l10_e4m3_encode(-over[i]) == 0xfe, "%a: want 0xfe", -over[i]);
  }
}
END_TEST

START_TEST(e4m3_known_values) {
  const struct {
    float x;
    uint8_t code;
  } known[] = {
      {448.0f, 0x7e},        /* 1.75 x 2^8: e = 15, m = 6, the largest finite */
      {500.0f, 0x7e},        /* saturated */
      {1e30f, 0x7e},         /* saturated */
      {-448.0f, 0xfe},       /* the sign bit and 448 */
      {0x1p-9f, 0x01},       /* the smallest subnormal, 1 x 2^-9 */
      {0x1p-10f, 0x00},      /* a tie between 0 and 2^-9: the even code, 0 */
      {3 * 0x1p-10f, 0x02},  /* a tie between 2^-9 (0x01) and 2 x 2^-9 (0x02): 0x02 */
      {0.0f, 0x00},          /* zero */
      {1.0f, 0x38},          /* e = 7 (2^0), m = 0 */
      {1.0625f, 0x38},       /* a tie between 1.0 (0x38) and 1.125 (0x39): 0x38 */
      {1.1875f, 0x3a},       /* a tie between 1.125 (0x39) and 1.25 (0x3a): 0x3a */
      {0x1p-6f, 0x08},       /* the smallest normal: e = 1, m = 0 */
      {15 * 0x1p-10f, 0x08}, /* a tie between 7 x 2^-9 (0x07) and 2^-6 (0x08): 0x08 */
      {-1.1875f, 0xba},      /* the tie with a sign */
      {0x1p-11f, 0x00},      /* under half the smallest subnormal */
      {-0x1p-11f, 0x80},     /* ... keeps its sign: -0 */
      {-0.0f, 0x80},         /* -0 is 0x80, as the device writes it */
      {240.0f, 0x77},        /* 1.875 x 2^7: e = 14, m = 7 */
      {NAN, 0x7f},           /* NaN */
      {-NAN, 0x7f},          /* NaN, whatever its sign */
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; ++i)
    ck_assert_msg(l10_e4m3_encode(known[i].x) == known[i].code, "%a: 0x%02x, want 0x%02x",
                  known[i].x, l10_e4m3_encode(known[i].x), known[i].code);
}
END_TEST

START_TEST(fp8_quantise_row_scale_and_codes) {
  /* amax 3.5, from a negative value (the largest |x|, not the largest x): the scale is 3.5 / 448
   * = 2^-7 and the inverse 128, so every product is exact */
  const float x[8] = {1.0f, -3.5f, 1.75f, 0.0f, 0.875f, -1.75f, 3.4f, 3.25f};
  const uint8_t want[8] = {
      0x70, /* 128 = 2^7: e = 14, m = 0 */
      0xfe, /* -448 */
      0x76, /* 224 = 1.75 x 2^7 */
      0x00, /* 0 */
      0x6e, /* 112 = 1.75 x 2^6 */
      0xf6, /* -224 */
      0x7e, /* 435.2: past 432, the midpoint of 416 (0x7d) and 448 */
      0x7d, /* 416 = 1.625 x 2^8: e = 15, m = 5 */
  };
  uint8_t codes[8];
  memset(codes, 0xaa, sizeof codes);
  ck_assert(l10_fp8_quantise_row(x, 8, codes) == 3.5f / 448.0f);
  for (int i = 0; i < 8; ++i)
    ck_assert_msg(codes[i] == want[i], "x[%d] = %g: code 0x%02x, want 0x%02x", i, x[i], codes[i],
                  want[i]);
  /* a row of zeros: scale 0 and every code 0 (-0.0 included), nothing divided by zero */
  const float zeros[5] = {0.0f, -0.0f, 0.0f, 0.0f, 0.0f};
  memset(codes, 0xaa, sizeof codes);
  ck_assert(l10_fp8_quantise_row(zeros, 5, codes) == 0.0f);
  for (int i = 0; i < 5; ++i) ck_assert_int_eq(codes[i], 0);
  ck_assert_int_eq(codes[5], 0xaa); /* and nothing past the row */
}
END_TEST

/* A row whose magnitudes span 2^16: with amax near 1, those scaled by 2^-15 become products
 * below 448 x 2^-15 < 2^-6, in the subnormals. Each value comes back within half an e4m3 step,
 * the bound serving_decode.h states. */
START_TEST(fp8_quantise_row_round_trip_bound) {
  enum { D = 128 };
  float x[D];
  uint8_t codes[D];
  attn_rng r;
  attn_rng_seed(&r, 2024, 10);
  int at_max = 0;
  for (int i = 0; i < D; ++i) {
    x[i] = ldexpf(2.0f * attn_rng_uniform(&r) - 1.0f, -(i % 16));
    if (fabsf(x[i]) > fabsf(x[at_max])) at_max = i;
  }
  const float scale = l10_fp8_quantise_row(x, D, codes);
  ck_assert(scale == fabsf(x[at_max]) / 448.0f);
  ck_assert_int_eq(codes[at_max], x[at_max] < 0.0f ? 0xfe : 0x7e);
  double max_err = 0.0;
  int subnormals = 0;
  for (int i = 0; i < D; ++i) {
    const double back = (double)l10_e4m3_decode(codes[i]) * scale;
    const double err = fabs(back - x[i]), bound = 0x1p-4 * fabs(x[i]) + 0x1p-10 * scale;
    ck_assert_msg(err <= bound, "x[%d] = %a: code 0x%02x gives %a, error %g over %g", i, x[i],
                  codes[i], back, err, bound);
    max_err = err > max_err ? err : max_err;
    subnormals += (codes[i] & 0x78) == 0 && (codes[i] & 0x07) != 0;
  }
  ck_assert(max_err > 0.0);        /* the values are not all on the grid: the bound was tested */
  ck_assert_int_gt(subnormals, 0); /* and so was its subnormal term */
}
END_TEST

/* ---- a step on the CPU: a shuffled pool with NaN in every slot no token owns ------------- */

typedef struct spec {
  int batch, heads, kv_heads, dim, block_size;
  l10_mask mask;
  const int *q_lens, *seq_lens;
  int gap; /* unused rows of q, o and lse after each sequence's */
  uint64_t seed;
} spec;

typedef struct problem {
  l10_step s;
  float *q, *k_pool, *v_pool;
  float *k_dense, *v_dense; /* [batch, max_seq_kv, kv_heads, dim]: the same values, unpaged */
  int *q_start, *q_lens, *seq_lens, *table;
  uint32_t *tree;
  int total_q, num_blocks;
} problem;

static const float kUnwritten = 12345.0f; /* o and lse before a call: rows not written keep it */

static void problem_free(problem *p) {
  free(p->q), free(p->k_pool), free(p->v_pool), free(p->k_dense), free(p->v_dense);
  free(p->q_start), free(p->q_lens), free(p->seq_lens), free(p->table), free(p->tree);
}

static float input(attn_rng *r) {
  return 2.0f * attn_rng_uniform(r) - 1.0f + 0.25f;
}

static void build(const spec *c, problem *p) {
  memset(p, 0, sizeof *p);
  attn_rng r;
  attn_rng_seed(&r, c->seed, 10);
  int max_q = 1, max_kv = 1, used_blocks = 0;
  const int B = c->batch, bs = c->block_size, D = c->dim, KH = c->kv_heads, H = c->heads;
  for (int b = 0; b < B; ++b) {
    max_q = c->q_lens[b] > max_q ? c->q_lens[b] : max_q;
    max_kv = c->seq_lens[b] > max_kv ? c->seq_lens[b] : max_kv;
    ck_assert_int_ge(c->seq_lens[b], c->q_lens[b]);
    used_blocks += (c->seq_lens[b] + bs - 1) / bs;
  }
  const int max_blocks = (max_kv + bs - 1) / bs + 1; /* one column more than needed */
  p->num_blocks = used_blocks + 3;                   /* and three blocks nobody holds */
  p->q_start = malloc(sizeof(int) * B);
  p->q_lens = malloc(sizeof(int) * B);
  p->seq_lens = malloc(sizeof(int) * B);
  p->table = malloc(sizeof(int) * B * max_blocks);
  for (int b = 0; b < B; ++b) {
    p->q_start[b] = p->total_q;
    p->total_q += c->q_lens[b] + c->gap;
    p->q_lens[b] = c->q_lens[b], p->seq_lens[b] = c->seq_lens[b];
  }
  const size_t slot = (size_t)KH * D, pool = (size_t)p->num_blocks * bs * slot;
  const size_t dense = (size_t)B * max_kv * slot;
  p->q = malloc(sizeof(float) * (size_t)p->total_q * H * D);
  p->k_pool = malloc(sizeof(float) * pool), p->v_pool = malloc(sizeof(float) * pool);
  p->k_dense = malloc(sizeof(float) * dense), p->v_dense = malloc(sizeof(float) * dense);
  p->tree = calloc((size_t)p->total_q, sizeof(uint32_t));
  ck_assert(p->q && p->k_pool && p->v_pool && p->k_dense && p->v_dense && p->tree && p->table);
  for (size_t x = 0; x < pool; ++x) p->k_pool[x] = p->v_pool[x] = NAN;
  for (size_t x = 0; x < dense; ++x) p->k_dense[x] = p->v_dense[x] = NAN;
  for (size_t x = 0; x < (size_t)p->total_q * H * D; ++x) p->q[x] = NAN; /* gap rows stay NaN */

  /* The blocks in a shuffled order; the sequences take them in turn; unused columns name a
   * block nobody holds (all NaN). */
  int *perm = malloc(sizeof(int) * p->num_blocks);
  ck_assert_ptr_nonnull(perm);
  for (int x = 0; x < p->num_blocks; ++x) perm[x] = x;
  for (int x = p->num_blocks - 1; x > 0; --x) {
    const int y = (int)attn_rng_below(&r, (uint32_t)x + 1), t = perm[x];
    perm[x] = perm[y], perm[y] = t;
  }
  int next = 0;
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < max_blocks; ++j)
      p->table[b * max_blocks + j] =
          j < (c->seq_lens[b] + bs - 1) / bs ? perm[next++] : perm[p->num_blocks - 1];
  free(perm);

  /* Keys and values of every token a sequence owns, written to both the dense copy and the
   * pool (the address written out, not l07_kv_offset()). */
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < c->seq_lens[b]; ++t)
      for (size_t e = 0; e < slot; ++e) {
        const size_t dn = ((size_t)b * max_kv + t) * slot + e;
        const size_t pl = ((size_t)p->table[b * max_blocks + t / bs] * bs + t % bs) * slot + e;
        p->k_dense[dn] = p->k_pool[pl] = input(&r);
        p->v_dense[dn] = p->v_pool[pl] = input(&r);
      }
  /* Queries; tree words: each token's parent is an earlier token or the root (-1), and its word
   * is its parent's plus itself. */
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < c->q_lens[b]; ++i) {
      const size_t row = (size_t)p->q_start[b] + i;
      for (size_t e = 0; e < (size_t)H * D; ++e) p->q[row * H * D + e] = input(&r);
      const int parent = (int)attn_rng_below(&r, (uint32_t)i + 1) - 1;
      p->tree[row] = (parent >= 0 ? p->tree[p->q_start[b] + parent] : 0u) | (1u << i);
    }

  l10_step *s = &p->s;
  s->q = p->q, s->q_start = p->q_start, s->q_lens = p->q_lens;
  s->tree = c->mask == L10_MASK_TREE ? p->tree : NULL;
  s->k_cache = p->k_pool, s->v_cache = p->v_pool, s->block_table = p->table;
  s->seq_lens = p->seq_lens;
  s->batch = B, s->heads = H, s->kv_heads = KH, s->dim = D, s->max_q = max_q;
  s->max_seq_kv = max_kv, s->max_blocks = max_blocks, s->block_size = bs, s->mask = c->mask;
  s->scale = 1.0f / sqrtf((float)D);
}

/* o and lse of every row of q, poisoned with kUnwritten. */
static void outputs(const problem *p, float **o, float **lse) {
  const size_t rows = (size_t)p->total_q * p->s.heads;
  *o = malloc(sizeof(float) * rows * p->s.dim);
  *lse = malloc(sizeof(float) * rows);
  ck_assert(*o && *lse);
  for (size_t x = 0; x < rows * p->s.dim; ++x) (*o)[x] = kUnwritten;
  for (size_t x = 0; x < rows; ++x) (*lse)[x] = kUnwritten;
}

static int run_reference(const problem *p, const unsigned char *row_mask, float *o, float *lse) {
  return l10_reference(&p->s, p->q, p->q_start, p->q_lens, p->s.tree, p->k_pool, p->v_pool,
                       p->table, p->seq_lens, row_mask, o, lse);
}

/* Whether row @p row of q belongs to a draft token. */
static int owned(const problem *p, int row) {
  for (int b = 0; b < p->s.batch; ++b)
    if (row >= p->q_start[b] && row < p->q_start[b] + p->q_lens[b]) return 1;
  return 0;
}

/* @p o, @p lse against @p ro, @p rlse: within @p tol relative on every owned row (lse: -inf
 * exactly where the reference has it), and rows nobody owns left as they were. */
static void compare(const problem *p, const float *ro, const float *rlse, const float *o,
                    const float *lse, double tol, const char *what) {
  const int H = p->s.heads, D = p->s.dim;
  for (int row = 0; row < p->total_q; ++row)
    for (int h = 0; h < H; ++h) {
      const size_t x = (size_t)row * H + h;
      if (!owned(p, row)) {
        ck_assert_msg(lse[x] == kUnwritten, "%s: row %d head %d: unowned, written", what, row, h);
        for (int d = 0; d < D; ++d) ck_assert(o[x * D + d] == kUnwritten);
        continue;
      }
      if (rlse[x] == -INFINITY) {
        ck_assert_msg(lse[x] == -INFINITY, "%s: row %d head %d: lse %g, want -inf", what, row, h,
                      lse[x]);
        for (int d = 0; d < D; ++d)
          ck_assert_msg(o[x * D + d] == 0.0f, "%s: row %d head %d: o %g for a row that sees no key",
                        what, row, h, o[x * D + d]);
        continue;
      }
      const double el = fabs((double)lse[x] - rlse[x]) / (1.0 + fabs(rlse[x]));
      ck_assert_msg(el <= tol, "%s: row %d head %d: lse %.9g, want %.9g", what, row, h, lse[x],
                    rlse[x]);
      for (int d = 0; d < D; ++d) {
        const double e = fabs((double)o[x * D + d] - ro[x * D + d]) / (1.0 + fabs(ro[x * D + d]));
        ck_assert_msg(e <= tol, "%s: row %d head %d d %d: o %.9g, want %.9g", what, row, h, d,
                      o[x * D + d], ro[x * D + d]);
      }
    }
}

/* ---- the reference -------------------------------------------------------------------------- */

/* Hand-worked: q = 0 makes every score 0, so lse = ln(keys seen) and o = the mean of their V. 4
 * keys over two pages in swapped order, V of key j = j + 1; 2 causal draft tokens (keys 2, 3). */
START_TEST(reference_hand_worked) {
  enum { D = 64 };
  static float q[2 * D], k[2 * 2 * D], v[2 * 2 * D], o[2 * D], lse[2];
  const int q_start[1] = {0}, q_lens[1] = {2}, seq_lens[1] = {4}, table[2] = {1, 0};
  for (int x = 0; x < 2 * D; ++x) q[x] = 0.0f;
  for (int j = 0; j < 4; ++j) /* token j: block table[j / 2], slot j % 2 */
    for (int d = 0; d < D; ++d) {
      const int at = (table[j / 2] * 2 + j % 2) * D + d;
      k[at] = 0.5f * (float)(j - d % 3);
      v[at] = (float)(j + 1);
    }
  l10_step s;
  memset(&s, 0, sizeof s);
  s.batch = 1, s.heads = 1, s.kv_heads = 1, s.dim = D, s.max_q = 2, s.max_seq_kv = 4;
  s.max_blocks = 2, s.block_size = 2, s.mask = L10_MASK_CAUSAL, s.scale = 0.125f;
  ck_assert_int_eq(l10_reference(&s, q, q_start, q_lens, NULL, k, v, table, seq_lens, NULL, o, lse),
                   0);
  ck_assert_float_eq_tol(lse[0], logf(3.0f), 1e-6f); /* token 0 sees keys 0, 1, 2 */
  ck_assert_float_eq_tol(lse[1], logf(4.0f), 1e-6f); /* token 1 sees all four */
  for (int d = 0; d < D; ++d) {
    ck_assert_float_eq_tol(o[d], 2.0f, 1e-6f);
    ck_assert_float_eq_tol(o[D + d], 2.5f, 1e-6f);
  }
  /* tree: token 1 with the word 0b10 sees keys 0, 1 (the prefix) and 3 (itself): mean 7/3 */
  const uint32_t words[2] = {0x1u, 0x2u};
  s.mask = L10_MASK_TREE;
  ck_assert_int_eq(
      l10_reference(&s, q, q_start, q_lens, words, k, v, table, seq_lens, NULL, o, lse), 0);
  ck_assert_float_eq_tol(lse[1], logf(3.0f), 1e-6f);
  ck_assert_float_eq_tol(o[D], 7.0f / 3.0f, 1e-6f);
}
END_TEST

/* The softmax written out over the dense copy, each mask's rule spelled out here. */
static void brute_force(const problem *p, float *o, float *lse) {
  const l10_step *s = &p->s;
  const int H = s->heads, D = s->dim, KH = s->kv_heads, G = H / KH;
  double *sc = malloc(sizeof(double) * s->max_seq_kv);
  ck_assert_ptr_nonnull(sc);
  for (int b = 0; b < s->batch; ++b) {
    const int n = p->seq_lens[b], qn = p->q_lens[b];
    for (int i = 0; i < qn; ++i)
      for (int h = 0; h < H; ++h) {
        const size_t row = (size_t)p->q_start[b] + i, x = row * H + h;
        const float *qr = p->q + x * D;
        double m = -INFINITY;
        for (int j = 0; j < n; ++j) {
          int seen = 1;
          if (s->mask == L10_MASK_CAUSAL) seen = j <= n - qn + i;
          if (s->mask == L10_MASK_TREE)
            seen = j < n - qn || ((p->tree[row] >> (j - (n - qn))) & 1u);
          sc[j] = -INFINITY;
          if (!seen) continue;
          const float *kj = p->k_dense + (((size_t)b * s->max_seq_kv + j) * KH + h / G) * D;
          double dot = 0.0;
          for (int d = 0; d < D; ++d) dot += (double)qr[d] * kj[d];
          sc[j] = dot * s->scale;
          m = sc[j] > m ? sc[j] : m;
        }
        for (int d = 0; d < D; ++d) {
          double num = 0.0, den = 0.0;
          for (int j = 0; j < n; ++j) {
            if (sc[j] == -INFINITY) continue;
            const float *vj = p->v_dense + (((size_t)b * s->max_seq_kv + j) * KH + h / G) * D;
            num += exp(sc[j] - m) * vj[d], den += exp(sc[j] - m);
          }
          o[x * D + d] = den > 0.0 ? (float)(num / den) : 0.0f;
          if (d == 0) lse[x] = den > 0.0 ? (float)(m + log(den)) : -INFINITY;
        }
      }
  }
  free(sc);
}

static const int kRefQ[3] = {2, 3, 1}, kRefKv[3] = {5, 3, 9};

/* The reference through a shuffled pool with NaN around it equals the dense brute force, for
 * each mask; a row mask computes only the rows it names. */
START_TEST(reference_matches_dense_brute_force) {
  for (int mask = 0; mask < 3; ++mask) {
    const spec c = {3, 4, 2, 8, 2, (l10_mask)mask, kRefQ, kRefKv, 1, 40 + (uint64_t)mask};
    problem p;
    build(&c, &p);
    float *ro, *rl, *bo, *bl;
    outputs(&p, &ro, &rl);
    outputs(&p, &bo, &bl);
    ck_assert_int_eq(run_reference(&p, NULL, ro, rl), 0);
    brute_force(&p, bo, bl);
    compare(&p, bo, bl, ro, rl, 1e-6, "reference vs brute force");
    /* only rows 0 and 5 (sequence 0's first token, sequence 1's last) */
    unsigned char *rm = calloc((size_t)p.total_q, 1);
    float *mo, *ml;
    outputs(&p, &mo, &ml);
    rm[0] = rm[5] = 1;
    ck_assert_int_eq(run_reference(&p, rm, mo, ml), 0);
    for (int row = 0; row < p.total_q; ++row)
      for (int h = 0; h < p.s.heads; ++h) {
        const size_t x = (size_t)row * p.s.heads + h;
        ck_assert(rm[row] ? ml[x] == rl[x] : ml[x] == kUnwritten);
      }
    free(rm), free(mo), free(ml);
    free(ro), free(rl), free(bo), free(bl);
    problem_free(&p);
  }
}
END_TEST

/* ---- the CPU model against the reference ------------------------------------------------- */

static const int kOneQ[1] = {1}, kOneKv[1] = {1};
static const int kVarQ[4] = {4, 1, 16, 3}, kVarKv[4] = {37, 100, 17, 69};
static const int kMqaQ[2] = {3, 2}, kMqaKv[2] = {200, 50};
static const int kNoneQ[2] = {16, 5}, kNoneKv[2] = {16, 300};
static const int kTreeQ[3] = {16, 16, 7}, kTreeKv[3] = {16, 130, 40};
static const int kBs1Q[2] = {2, 8}, kBs1Kv[2] = {33, 8};

START_TEST(cpu_model_matches_the_reference) {
  const spec cases[] = {
      {1, 4, 4, 64, 16, L10_MASK_CAUSAL, kOneQ, kOneKv, 0, 1},   /* one key, one token */
      {1, 8, 1, 64, 16, L10_MASK_TREE, kOneQ, kOneKv, 0, 2},     /* ... GQA 8:1, tree */
      {4, 16, 2, 128, 16, L10_MASK_CAUSAL, kVarQ, kVarKv, 1, 3}, /* GQA 8:1, ragged, q up to 16 */
      {4, 8, 1, 64, 8, L10_MASK_TREE, kVarQ, kVarKv, 2, 4},      /* 8:1 x 16 tokens: 2 units */
      {2, 32, 1, 64, 16, L10_MASK_TREE, kMqaQ, kMqaKv, 0, 5},    /* MQA: 96 rows, 2 units */
      {2, 32, 1, 128, 32, L10_MASK_CAUSAL, kMqaQ, kMqaKv, 1, 6}, /* MQA causal */
      {2, 4, 4, 64, 8, L10_MASK_NONE, kNoneQ, kNoneKv, 0, 7},    /* no mask, G = 1 */
      {3, 8, 2, 64, 16, L10_MASK_TREE, kTreeQ, kTreeKv, 1, 8},   /* 16-token trees, 64 rows */
      {3, 8, 2, 128, 4, L10_MASK_NONE, kTreeQ, kTreeKv, 0, 9},   /* small pages */
      {2, 6, 3, 64, 1, L10_MASK_CAUSAL, kBs1Q, kBs1Kv, 1, 10},   /* block size 1 */
  };
  const int chunks[4] = {64, 16, 128, 4096}; /* several chunks per sequence ... one */
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; ++t) {
    problem p;
    build(&cases[t], &p);
    if (t == 7) {
      /* sequence 0 is all draft tokens (n == q): a token whose word is 0 sees no key */
      p.tree[p.q_start[0] + 5] = 0u;
    }
    float *ro, *rl;
    outputs(&p, &ro, &rl);
    ck_assert_int_eq(run_reference(&p, NULL, ro, rl), 0);
    if (t == 7) {
      const size_t x = (size_t)(p.q_start[0] + 5) * p.s.heads;
      ck_assert(rl[x] == -INFINITY && ro[x * p.s.dim] == 0.0f);
    }
    for (int ci = 0; ci < 4; ++ci) {
      float *mo, *ml;
      outputs(&p, &mo, &ml);
      ck_assert_int_eq(l10_cpu_model(&p.s, chunks[ci], p.q, p.q_start, p.q_lens, p.s.tree, p.k_pool,
                                     p.v_pool, p.table, p.seq_lens, mo, ml),
                       0);
      char what[64];
      snprintf(what, sizeof what, "case %zu chunk %d", t, chunks[ci]);
      compare(&p, ro, rl, mo, ml, 1e-5, what);
      free(mo), free(ml);
    }
    free(ro), free(rl);
    problem_free(&p);
  }
}
END_TEST

/* Version 2's CPU model: the pools quantised row by row (codes' values, a scale per key row; the
 * rows no token owns stay NaN), the model with those scales against the reference on code x
 * scale, for the cases above whose pages hold at least L10_FP8_MIN_BLOCK tokens, at several
 * chunks. A model that forgot to rescale O when sigma grows fails here. */
START_TEST(cpu_model_of_version_2_matches_the_reference_on_the_cache) {
  const spec cases[] = {
      {1, 4, 4, 64, 16, L10_MASK_CAUSAL, kOneQ, kOneKv, 0, 1},
      {4, 16, 2, 128, 16, L10_MASK_CAUSAL, kVarQ, kVarKv, 1, 3},
      {2, 32, 1, 64, 16, L10_MASK_TREE, kMqaQ, kMqaKv, 0, 5},
      {2, 32, 1, 128, 32, L10_MASK_CAUSAL, kMqaQ, kMqaKv, 1, 6},
      {3, 8, 2, 64, 16, L10_MASK_TREE, kTreeQ, kTreeKv, 1, 8},
  };
  const int chunks[3] = {64, 16, 4096};
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; ++t) {
    problem p;
    build(&cases[t], &p);
    const int D = p.s.dim, KVH = p.s.kv_heads, BS = p.s.block_size;
    const size_t rows = (size_t)p.num_blocks * BS * KVH;
    float *kc = malloc(rows * D * 4), *vc = malloc(rows * D * 4);
    float *ks = malloc(rows * 4), *vs = malloc(rows * 4);
    ck_assert(kc && vc && ks && vs);
    /* the pools become the cache's values (code x scale); NaN stays where no token is */
    ck_assert_int_eq(l10_fp8_quantise_pool(p.k_pool, p.num_blocks, BS, KVH, D, kc, ks, p.k_pool),
                     0);
    ck_assert_int_eq(l10_fp8_quantise_pool(p.v_pool, p.num_blocks, BS, KVH, D, vc, vs, p.v_pool),
                     0);
    float *ro, *rl;
    outputs(&p, &ro, &rl);
    ck_assert_int_eq(run_reference(&p, NULL, ro, rl), 0); /* on code x scale */
    l10_step s8 = p.s;
    s8.k_scale = ks, s8.v_scale = vs;
    for (int ci = 0; ci < 3; ++ci) {
      float *mo, *ml;
      outputs(&p, &mo, &ml);
      ck_assert_int_eq(l10_cpu_model(&s8, chunks[ci], p.q, p.q_start, p.q_lens, p.s.tree, kc, vc,
                                     p.table, p.seq_lens, mo, ml),
                       0);
      char what[64];
      snprintf(what, sizeof what, "fp8 case %zu chunk %d", t, chunks[ci]);
      compare(&p, ro, rl, mo, ml, 1e-5, what);
      free(mo), free(ml);
    }
    free(ro), free(rl), free(kc), free(vc), free(ks), free(vs);
    problem_free(&p);
  }
}
END_TEST

/* ---- version 3: the cascade's plan and its CPU model ------------------------------------- */

/* Six sequences in two forked families: rows 1 and 2 start with row 0's 20 pages, row 3 with only
 * its first 5 (it diverged early), so the family shares 5; rows 4 and 5 another prompt's 8 pages.
 * Each family's tokens are one prefix-pass sequence (at most L10_MAX_SHARED_Q tokens: 130
 * one-token neighbours make two), and each suffix table row starts past its shared pages. */
START_TEST(cascade_plan_finds_the_shared_pages) {
  enum { B = 6, MB = 50, BS = 16 };
  const int ql[B] = {1, 2, 16, 1, 3, 1}, lens[B] = {500, 520, 600, 400, 700, 300};
  int qs[B], table[B * MB];
  for (int b = 0, r = 0; b < B; r += ql[b++]) qs[b] = r;
  for (int x = 0; x < B * MB; ++x) table[x] = 1000 + x; /* every entry its own page */
  for (int b = 1; b < 4; ++b)
    for (int j = 0; j < (b == 3 ? 5 : 20); ++j) table[b * MB + j] = table[j];
  for (int j = 0; j < 8; ++j) table[5 * MB + j] = table[4 * MB + j];
  l10_cascade_plan p;
  ck_assert_int_eq(l10_cascade_plan_make(B, MB, BS, qs, ql, lens, table, &p), 0);
  const int shared[B] = {80, 80, 80, 80, 128, 128};
  for (int b = 0; b < B; ++b) {
    ck_assert_int_eq(p.shared_keys[b], shared[b]);
    ck_assert_int_eq(p.suf_seq_lens[b], lens[b] - shared[b]);
    for (int j = 0; j + shared[b] / BS < MB; ++j) /* the row past its shared pages */
      ck_assert_int_eq(p.suf_table[b * MB + j], table[b * MB + j + shared[b] / BS]);
  }
  /* the first family's 1 + 2 + 16 + 1 tokens, then the second's 3 + 1 */
  const int pq[2] = {20, 4}, pstart[2] = {0, 20}, pkeys[2] = {80, 128};
  ck_assert_int_eq(p.n_prefix, 2);
  for (int v = 0; v < 2; ++v) {
    ck_assert_int_eq(p.pre_q_lens[v], pq[v]);
    ck_assert_int_eq(p.pre_q_start[v], pstart[v]);
    ck_assert_int_eq(p.pre_seq_lens[v], pkeys[v]);
    ck_assert_int_eq(p.pre_table[v * MB], table[(v ? 4 : 0) * MB]);
  }
  ck_assert_int_eq(p.max_prefix_q, 20);
  ck_assert_int_eq(p.max_prefix_keys, 128);
  ck_assert_int_eq(p.max_suffix_keys, 700 - 128);
  l10_cascade_plan_free(&p);

  /* Sharing stops at the draft tokens: row 1's first draft token is key 330, inside page 20, so
   * the family shares 20 pages (320 keys), not the 30 the table has in common. */
  const int lens2[B] = {500, 331, 600, 400, 700, 300};
  for (int b = 1; b < 3; ++b)
    for (int j = 0; j < 30; ++j) table[b * MB + j] = table[j];
  ck_assert_int_eq(l10_cascade_plan_make(3, MB, BS, qs, ql, lens2, table, &p), 0);
  for (int b = 0; b < 3; ++b) ck_assert_int_eq(p.shared_keys[b], 320);
  l10_cascade_plan_free(&p);

  /* Rows that do not follow each other in the packed Q are no family; nor is one sequence. */
  const int qs_gap[3] = {0, 2, 5};
  ck_assert_int_eq(l10_cascade_plan_make(3, MB, BS, qs_gap, ql, lens, table, &p), 0);
  ck_assert_int_eq(p.n_prefix, 0);
  for (int b = 0; b < 3; ++b) ck_assert_int_eq(p.shared_keys[b], 0);
  l10_cascade_plan_free(&p);
  ck_assert_int_eq(l10_cascade_plan_make(1, MB, BS, qs, ql, lens, table, &p), 0);
  ck_assert_int_eq(p.n_prefix, 0);
  l10_cascade_plan_free(&p);

  /* 130 one-token sequences of one family: L10_MAX_SHARED_Q tokens, then the last 2 */
  enum { N = L10_MAX_SHARED_Q + 2 };
  int *q1 = malloc(sizeof(int) * N), *s1 = malloc(sizeof(int) * N), *l1 = malloc(sizeof(int) * N);
  int *t1 = malloc(sizeof(int) * N * 4);
  ck_assert(q1 && s1 && l1 && t1);
  for (int b = 0; b < N; ++b) {
    q1[b] = 1, s1[b] = b, l1[b] = 40;
    for (int j = 0; j < 4; ++j) t1[b * 4 + j] = j < 2 ? j : 100 + 4 * b + j; /* 2 pages shared */
  }
  ck_assert_int_eq(l10_cascade_plan_make(N, 4, BS, s1, q1, l1, t1, &p), 0);
  ck_assert_int_eq(p.n_prefix, 2);
  ck_assert_int_eq(p.pre_q_lens[0], L10_MAX_SHARED_Q);
  ck_assert_int_eq(p.pre_q_lens[1], 2);
  ck_assert_int_eq(p.pre_q_start[1], L10_MAX_SHARED_Q);
  ck_assert_int_eq(p.shared_keys[N - 1], 32);
  l10_cascade_plan_free(&p);
  free(q1), free(s1), free(l1), free(t1);
}
END_TEST

static const int kForkQ[4] = {2, 1, 16, 3}, kForkKv[4] = {200, 150, 180, 90};

/* The prefix pass's grid on lesson 05's version 5: at the README's shapes the chunks the README
 * names, and on any grid every tile of the longest run in exactly one chunk, none empty, and no
 * more blocks than the GPU holds at once unless one chunk's blocks already fill it. */
START_TEST(prefill_grid_covers_every_tile_once) {
  int u = 0, c = 0, t = 0;
  l10_prefill_grid(1, 8, 4, 32, 32768, 132, &u, &c, &t); /* 32 forked, one token each */
  ck_assert_int_eq(u, 1);
  ck_assert_int_eq(c, 16);
  ck_assert_int_eq(t, 16);
  l10_prefill_grid(1, 8, 4, 128, 32768, 132, &u, &c, &t); /* 4 tokens each: 512 rows */
  ck_assert_int_eq(u, 4);
  ck_assert_int_eq(c, 4);
  ck_assert_int_eq(t, 64);
  l10_prefill_grid(1, 8, 4, 128, 7168, 132, &u, &c, &t); /* 16 x 8 tokens over 7168 keys */
  ck_assert_int_eq(u, 4);
  ck_assert_int_eq(c, 4);
  ck_assert_int_eq(t, 14);
  for (int runs = 1; runs <= 9; runs += 4)
    for (int kv = 1; kv <= 16; kv *= 4)
      for (int q = 1; q <= 128; q += 41)
        for (int keys = 8; keys <= 70000; keys = keys * 3 + 5)
          for (int slots = 66; slots <= 264; slots *= 2) {
            l10_prefill_grid(runs, kv, 8, q, keys, slots, &u, &c, &t);
            const int all = (keys + 127) / 128, blocks = runs * kv * u;
            ck_assert_int_eq(u, (8 * q + 127) / 128);
            ck_assert(c >= 1 && t >= 1);
            ck_assert_int_ge(c * t, all);       /* every tile in a chunk */
            ck_assert_int_lt((c - 1) * t, all); /* the last chunk not empty */
            if (blocks <= slots)
              ck_assert_int_le(blocks * c, slots);
            else
              ck_assert_int_eq(c, 1);
          }
}
END_TEST

/* Version 3's CPU model (the plan, both passes, the merge) against the reference, on steps whose
 * first three sequences are forked from one prompt (their rows start with the first's 4 pages),
 * with the causal mask and with trees, at two chunks; with a gap between the rows of Q nothing is
 * shared and the model is version 1's. A model without the merge fails here. */
START_TEST(cascade_cpu_model_matches_the_reference) {
  const spec cases[] = {
      {4, 16, 2, 128, 16, L10_MASK_CAUSAL, kForkQ, kForkKv, 0, 21},
      {4, 8, 1, 64, 16, L10_MASK_TREE, kForkQ, kForkKv, 0, 22},
      {4, 8, 2, 64, 16, L10_MASK_NONE, kForkQ, kForkKv, 1, 23},
  };
  const int chunks[2] = {32, 4096};
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; ++t) {
    problem p;
    build(&cases[t], &p);
    const int mb = p.s.max_blocks;
    for (int b = 1; b < 3; ++b)
      for (int j = 0; j < 4; ++j) p.table[b * mb + j] = p.table[j];
    l10_cascade_plan plan;
    ck_assert_int_eq(l10_cascade_plan_make(p.s.batch, mb, p.s.block_size, p.q_start, p.q_lens,
                                           p.seq_lens, p.table, &plan),
                     0);
    ck_assert_int_eq(plan.shared_keys[1], cases[t].gap ? 0 : 64);
    l10_cascade_plan_free(&plan);
    float *ro, *rl;
    outputs(&p, &ro, &rl);
    ck_assert_int_eq(run_reference(&p, NULL, ro, rl), 0);
    for (int ci = 0; ci < 2; ++ci) {
      float *mo, *ml;
      outputs(&p, &mo, &ml);
      ck_assert_int_eq(l10_cascade_cpu(&p.s, chunks[ci], p.q, p.q_start, p.q_lens, p.s.tree,
                                       p.k_pool, p.v_pool, p.table, p.seq_lens, p.total_q, mo, ml),
                       0);
      char what[64];
      snprintf(what, sizeof what, "cascade case %zu chunk %d", t, chunks[ci]);
      compare(&p, ro, rl, mo, ml, 1e-5, what);
      free(mo), free(ml);
    }
    free(ro), free(rl);
    problem_free(&p);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson10_cpu");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, sees_none_every_key_of_the_sequence);
  tcase_add_test(tc, sees_causal_bottom_right);
  tcase_add_test(tc, sees_tree_prefix_and_word);
  tcase_add_test(tc, merge_two_halves_equal_the_whole);
  tcase_add_test(tc, merge_order_does_not_matter);
  tcase_add_test(tc, merge_empty_states);
  tcase_add_test(tc, merge_large_lse_differences);
  tcase_add_test(tc, step_check_refuses_each_bad_field);
  tcase_add_test(tc, units_per_kv_head);
  tcase_add_test(tc, split_even_lengths_keep_the_limits_cut);
  tcase_add_test(tc, split_cuts_the_long_sequence_finer);
  tcase_add_test(tc, split_is_the_even_share_and_fits);
  tcase_add_test(tc, cpu_model_of_version_2_matches_the_reference_on_the_cache);
  tcase_add_test(tc, e4m3_every_code_round_trips);
  tcase_add_test(tc, e4m3_rounds_to_nearest_even_at_every_midpoint);
  tcase_add_test(tc, e4m3_known_values);
  tcase_add_test(tc, fp8_quantise_row_scale_and_codes);
  tcase_add_test(tc, fp8_quantise_row_round_trip_bound);
  tcase_add_test(tc, reference_hand_worked);
  tcase_add_test(tc, reference_matches_dense_brute_force);
  tcase_add_test(tc, cpu_model_matches_the_reference);
  tcase_add_test(tc, cascade_plan_finds_the_shared_pages);
  tcase_add_test(tc, prefill_grid_covers_every_tile_once);
  tcase_add_test(tc, cascade_cpu_model_matches_the_reference);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
