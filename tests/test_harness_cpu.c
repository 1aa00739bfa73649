/* CPU tests of the harness: RNG, bf16, the reference, the verifier, the paged cache, row sampling,
 * the work model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_progress.h"
#include "attn_test.h"

/* ---- RNG ---- */

START_TEST(rng_matches_pcg32_reference_stream) {
  /* pcg32_srandom_r(42, 54) in the PCG reference implementation starts with these outputs. */
  const uint32_t expected[6] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                                0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
  attn_rng r;
  attn_rng_seed(&r, 42u, 54u);
  for (int i = 0; i < 6; ++i) ck_assert_uint_eq(attn_rng_u32(&r), expected[i]);
}
END_TEST

START_TEST(rng_is_deterministic_and_streams_differ) {
  attn_rng a, b, c;
  attn_rng_seed(&a, 7, 1);
  attn_rng_seed(&b, 7, 1);
  attn_rng_seed(&c, 7, 2);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    uint32_t x = attn_rng_u32(&a);
    ck_assert_uint_eq(x, attn_rng_u32(&b));
    differ += x != attn_rng_u32(&c);
  }
  ck_assert_int_gt(differ, 990);
}
END_TEST

START_TEST(rng_advance_equals_that_many_draws) {
  const uint64_t steps[6] = {0u, 1u, 2u, 3u, 1000u, 65537u};
  for (int s = 0; s < 6; ++s) {
    attn_rng a, b;
    attn_rng_seed(&a, 99u, 5u);
    b = a;
    for (uint64_t i = 0; i < steps[s]; ++i) (void)attn_rng_u32(&a);
    attn_rng_advance(&b, steps[s]);
    ck_assert_msg(a.state == b.state, "advance(%llu)", (unsigned long long)steps[s]);
    ck_assert_uint_eq(attn_rng_u32(&a), attn_rng_u32(&b));
  }
}
END_TEST

/* The fills draw their pieces in parallel: the values must be one stream's, in order, whatever
 * the length (a piece is 65536 values: around and across its bounds). */
START_TEST(fills_equal_one_sequential_stream) {
  const size_t sizes[5] = {1u, 65535u, 65536u, 65537u, 200003u};
  for (int s = 0; s < 5; ++s) {
    const size_t n = sizes[s];
    float *x = (float *)malloc(n * sizeof(float)), *y = (float *)malloc(n * sizeof(float));
    ck_assert(x && y);
    attn_fill_uniform(x, n, -2.0f, 3.0f, 17u, 4u);
    attn_rng r;
    attn_rng_seed(&r, 17u, 4u);
    for (size_t i = 0; i < n; ++i) y[i] = -2.0f + 5.0f * attn_rng_uniform(&r);
    ck_assert_msg(memcmp(x, y, n * sizeof(float)) == 0, "uniform, n = %zu", n);
    attn_fill_attention_input(x, n, 17u, 4u);
    attn_rng_seed(&r, 17u, 4u);
    for (size_t i = 0; i < n; ++i) y[i] = attn_round_bf16(-0.75f + 2.0f * attn_rng_uniform(&r));
    ck_assert_msg(memcmp(x, y, n * sizeof(float)) == 0, "attention input, n = %zu", n);
    free(x), free(y);
  }
}
END_TEST

START_TEST(rng_ranges) {
  attn_rng r;
  attn_rng_seed(&r, 3, 3);
  int hits[7] = {0};
  for (int i = 0; i < 70000; ++i) {
    float u = attn_rng_uniform(&r);
    ck_assert(u >= 0.0f && u < 1.0f);
    uint32_t k = attn_rng_below(&r, 7);
    ck_assert_uint_lt(k, 7);
    hits[k]++;
  }
  for (int k = 0; k < 7; ++k) ck_assert(hits[k] > 9000 && hits[k] < 11000);
}
END_TEST

START_TEST(attention_inputs_are_bf16_exact_and_offset) {
  float x[4096];
  attn_fill_attention_input(x, 4096, 11, 1);
  double mean = 0;
  for (int i = 0; i < 4096; ++i) {
    ck_assert(x[i] == attn_round_bf16(x[i]));
    ck_assert(x[i] >= -0.75f && x[i] <= 1.25f);
    mean += x[i] / 4096.0;
  }
  ck_assert(mean > 0.2 && mean < 0.3); /* not centred on zero */
}
END_TEST

/* ---- bf16 ---- */

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

START_TEST(bf16_known_bit_patterns) {
  ck_assert_uint_eq(attn_f32_to_bf16(1.0f), 0x3F80);
  ck_assert_uint_eq(attn_f32_to_bf16(-2.0f), 0xC000);
  ck_assert_uint_eq(attn_f32_to_bf16(0.0f), 0x0000);
  ck_assert_uint_eq(attn_f32_to_bf16(-0.0f), 0x8000);
  /* Ties go to even: 0x3F808000 is halfway between 0x3F80 and 0x3F81 -> 0x3F80 (even). */
  ck_assert_uint_eq(attn_f32_to_bf16(from_bits(0x3F808000u)), 0x3F80);
  /* 0x3F818000 is halfway between 0x3F81 and 0x3F82 -> 0x3F82 (even). */
  ck_assert_uint_eq(attn_f32_to_bf16(from_bits(0x3F818000u)), 0x3F82);
  /* Just above half rounds up, just below rounds down. */
  ck_assert_uint_eq(attn_f32_to_bf16(from_bits(0x3F808001u)), 0x3F81);
  ck_assert_uint_eq(attn_f32_to_bf16(from_bits(0x3F807FFFu)), 0x3F80);
  /* The largest float rounds to infinity; infinity stays infinity. */
  ck_assert_uint_eq(attn_f32_to_bf16(from_bits(0x7F7FFFFFu)), 0x7F80);
  ck_assert_uint_eq(attn_f32_to_bf16(INFINITY), 0x7F80);
  ck_assert_uint_eq(attn_f32_to_bf16(-INFINITY), 0xFF80);
  /* NaN whose payload is only in the low bits must stay NaN (plain rounding would give inf). */
  uint16_t n = attn_f32_to_bf16(from_bits(0x7F800001u));
  ck_assert_uint_eq(n & 0x7F80u, 0x7F80u);
  ck_assert_uint_ne(n & 0x007Fu, 0);
  ck_assert(isnan(attn_bf16_to_f32(attn_f32_to_bf16(NAN))));
  ck_assert_uint_eq(attn_f32_to_bf16(from_bits(0xFFC00000u)) & 0x8000u, 0x8000u); /* sign kept */
  /* Smallest bf16 subnormal survives the round trip. */
  ck_assert(attn_bf16_to_f32(0x0001) == from_bits(0x00010000u));
  ck_assert(attn_round_bf16(3.140625f) == 3.140625f);
  /* The array forms agree with the scalar ones, and a bf16 value survives the round trip. */
  const float in[4] = {1.0f, -2.5f, 3.1415926f, 1e-3f};
  uint16_t mid[4];
  float out[4];
  attn_f32_to_bf16_array(in, mid, 4);
  attn_bf16_to_f32_array(mid, out, 4);
  for (int i = 0; i < 4; ++i) {
    ck_assert_uint_eq(mid[i], attn_f32_to_bf16(in[i]));
    ck_assert(out[i] == attn_round_bf16(in[i]));
    ck_assert_uint_eq(attn_f32_to_bf16(out[i]), mid[i]);
  }
}
END_TEST

/* ---- Reference ---- */

START_TEST(reference_hand_worked_two_keys) {
  /* dim 1, scale 1: scores 0 and ln 3 give weights 1/4 and 3/4; O = 2/4 + 6*3/4 = 5, lse = ln 4. */
  attn_problem p = attn_test_problem(1, 1, 1, 1, 2, 1, 0);
  p.scale = 1.0f;
  float q[1] = {1.0f}, k[2] = {0.0f, (float)log(3.0)}, v[2] = {2.0f, 6.0f};
  double o, lse;
  attn_reference(&p, q, k, v, NULL, 1, &o, &lse);
  ck_assert_double_eq_tol(o, 5.0, 1e-6);
  ck_assert_double_eq_tol(lse, log(4.0), 1e-7);
}
END_TEST

START_TEST(reference_softmax_rows_sum_to_one) {
  /* V = identity (seq_kv == dim): O's row is exactly the softmax row. */
  enum { D = 8 };
  attn_problem p = attn_test_problem(2, 3, 3, 5, D, D, 0);
  size_t nq = attn_q_elems(&p), nkv = attn_kv_elems(&p);
  float *q = malloc(sizeof(float) * nq), *k = malloc(sizeof(float) * nkv),
        *v = calloc(nkv, sizeof(float));
  attn_fill_attention_input(q, nq, 5, 1);
  attn_fill_attention_input(k, nkv, 5, 2);
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < D; ++j)
      for (int g = 0; g < 3; ++g) v[(((size_t)b * D + j) * 3 + g) * D + j] = 1.0f;
  size_t rows = attn_rows(&p);
  double *o = malloc(sizeof(double) * rows * D), *lse = malloc(sizeof(double) * rows);
  attn_reference(&p, q, k, v, NULL, rows, o, lse);
  for (size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int d = 0; d < D; ++d) {
      ck_assert(o[r * D + d] > 0.0);
      s += o[r * D + d];
    }
    ck_assert_double_eq_tol(s, 1.0, 1e-12);
  }
  free(q), free(k), free(v), free(o), free(lse);
}
END_TEST

START_TEST(reference_invariant_under_key_permutation) {
  attn_problem p = attn_test_problem(1, 2, 1, 4, 9, 16, 0);
  size_t nq = attn_q_elems(&p), nkv = attn_kv_elems(&p);
  float *q = malloc(sizeof(float) * nq), *k = malloc(sizeof(float) * nkv),
        *v = malloc(sizeof(float) * nkv), *k2 = malloc(sizeof(float) * nkv),
        *v2 = malloc(sizeof(float) * nkv);
  attn_fill_attention_input(q, nq, 9, 1);
  attn_fill_attention_input(k, nkv, 9, 2);
  attn_fill_attention_input(v, nkv, 9, 3);
  const int perm[9] = {4, 0, 8, 2, 6, 1, 7, 3, 5};
  for (int j = 0; j < 9; ++j) {
    memcpy(k2 + (size_t)j * 16, k + (size_t)perm[j] * 16, sizeof(float) * 16);
    memcpy(v2 + (size_t)j * 16, v + (size_t)perm[j] * 16, sizeof(float) * 16);
  }
  size_t rows = attn_rows(&p);
  double o1[8 * 16], o2[8 * 16], l1[8], l2[8];
  attn_reference(&p, q, k, v, NULL, rows, o1, l1);
  attn_reference(&p, q, k2, v2, NULL, rows, o2, l2);
  for (size_t e = 0; e < rows * 16; ++e) ck_assert_double_eq_tol(o1[e], o2[e], 1e-12);
  for (size_t r = 0; r < rows; ++r) ck_assert_double_eq_tol(l1[r], l2[r], 1e-12);
  free(q), free(k), free(v), free(k2), free(v2);
}
END_TEST

START_TEST(reference_causal_bottom_right_alignment) {
  /* q = 0 makes every score 0, so O is the plain mean of the visible V rows. */
  float v[3] = {1.0f, 2.0f, 4.0f}, k[3] = {0.5f, 0.25f, 1.0f}, q[3] = {0, 0, 0};
  double o[3], lse[3];
  /* seq_q 2 < seq_kv 3: row 0 sees keys 0..1, row 1 sees 0..2. */
  attn_problem p = attn_test_problem(1, 1, 1, 2, 3, 1, 1);
  attn_reference(&p, q, k, v, NULL, 2, o, lse);
  ck_assert_double_eq_tol(o[0], 1.5, 1e-12);
  ck_assert_double_eq_tol(o[1], 7.0 / 3.0, 1e-12);
  ck_assert_double_eq_tol(lse[0], log(2.0), 1e-12);
  /* seq_q 3 > seq_kv 2: row 0 sees nothing (O = 0, lse = -inf), row 1 key 0, row 2 keys 0..1. */
  p = attn_test_problem(1, 1, 1, 3, 2, 1, 1);
  attn_reference(&p, q, k, v, NULL, 3, o, lse);
  ck_assert_double_eq(o[0], 0.0);
  ck_assert(isinf(lse[0]) && lse[0] < 0);
  ck_assert_double_eq_tol(o[1], 1.0, 1e-12);
  ck_assert_double_eq_tol(o[2], 1.5, 1e-12);
  ck_assert_int_eq(attn_visible_keys(&p, 0), 0);
  ck_assert_int_eq(attn_visible_keys(&p, 2), 2);
}
END_TEST

START_TEST(reference_gqa_head_mapping) {
  /* heads 4, kv_heads 2: query heads 0,1 read KV head 0 (V = 3), heads 2,3 read KV head 1 (V = 7).
   */
  attn_problem p = attn_test_problem(1, 4, 2, 2, 3, 4, 0);
  size_t nq = attn_q_elems(&p), nkv = attn_kv_elems(&p);
  float q[2 * 4 * 4], k[3 * 2 * 4], v[3 * 2 * 4];
  attn_fill_attention_input(q, nq, 1, 1);
  attn_fill_attention_input(k, nkv, 1, 2);
  for (int j = 0; j < 3; ++j)
    for (int g = 0; g < 2; ++g)
      for (int d = 0; d < 4; ++d) v[(j * 2 + g) * 4 + d] = g == 0 ? 3.0f : 7.0f;
  double o[8 * 4];
  attn_reference(&p, q, k, v, NULL, attn_rows(&p), o, NULL);
  for (size_t r = 0; r < attn_rows(&p); ++r) {
    int b, i, h;
    attn_row_coords(&p, r, &b, &i, &h);
    for (int d = 0; d < 4; ++d) ck_assert_double_eq_tol(o[r * 4 + d], h < 2 ? 3.0 : 7.0, 1e-12);
  }
}
END_TEST

START_TEST(row_numbering_follows_o_layout) {
  attn_problem p = attn_test_problem(2, 3, 3, 5, 5, 4, 0);
  int b, i, h;
  attn_row_coords(&p, 0, &b, &i, &h);
  ck_assert(b == 0 && i == 0 && h == 0);
  attn_row_coords(&p, 1, &b, &i, &h); /* next head, same token */
  ck_assert(b == 0 && i == 0 && h == 1);
  attn_row_coords(&p, (1 * 5 + 0) * 3 + 1, &b, &i, &h); /* batch 1, token 0, head 1 */
  ck_assert(b == 1 && i == 0 && h == 1);
  attn_row_coords(&p, 29, &b, &i, &h);
  ck_assert(b == 1 && i == 4 && h == 2);
  ck_assert_uint_eq(attn_row_lse_index(&p, 29), (size_t)(1 * 3 + 2) * 5 + 4);
}
END_TEST

START_TEST(sampling_small_is_whole_large_has_ends) {
  size_t n = 0;
  attn_problem small = attn_test_problem(1, 2, 2, 64, 64, 64, 0);
  size_t *rows = attn_sample_rows(&small, 8, 1, &n);
  ck_assert_uint_eq(n, attn_rows(&small));
  for (size_t r = 0; r < n; ++r) ck_assert_uint_eq(rows[r], r);
  free(rows);

  attn_problem big = attn_test_problem(2, 4, 2, 8192, 8192, 128, 1);
  rows = attn_sample_rows(&big, 8, 1, &n);
  ck_assert_uint_le(n, (size_t)2 * 4 * 10);
  ck_assert_uint_gt(n, (size_t)2 * 4 * 2);
  for (size_t t = 1; t < n; ++t) ck_assert_uint_gt(rows[t], rows[t - 1]); /* sorted, unique */
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 4; ++h) {
      size_t first = ((size_t)b * 8192 + 0) * 4 + h, last = ((size_t)b * 8192 + 8191) * 4 + h;
      int f = 0, l = 0;
      for (size_t t = 0; t < n; ++t) f |= rows[t] == first, l |= rows[t] == last;
      ck_assert(f && l);
    }
  free(rows);
}
END_TEST

/* ---- Verifier ---- */

static attn_verdict judge_f32(const float *got, const double *ref, size_t n) {
  attn_verdict v;
  attn_verdict_init(&v, ATTN_F32);
  attn_verdict_scan(&v, ATTN_F32, got, n, 0);
  for (size_t i = 0; i < n; ++i) attn_verdict_add(&v, got[i], ref[i]);
  attn_verdict_finish(&v);
  return v;
}

START_TEST(verifier_passes_exact_and_catches_faults) {
  enum { N = 64 };
  float got[N];
  double ref[N];
  for (int i = 0; i < N; ++i) ref[i] = got[i] = 0.5f + 0.01f * i;
  attn_verdict v = judge_f32(got, ref, N);
  ck_assert(v.pass);
  ck_assert_uint_eq(v.compared, N);

  got[10] = NAN; /* a computed NaN */
  v = judge_f32(got, ref, N);
  ck_assert(!v.pass);
  ck_assert_uint_eq(v.nonfinite, 1);

  got[10] = (float)ref[10] + 0.01f; /* one wrong element */
  v = judge_f32(got, ref, N);
  ck_assert(!v.pass);
  ck_assert_double_eq_tol(v.max_abs, 0.01, 1e-6);
  ck_assert_uint_eq(v.nonfinite, 0);

  got[10] = (float)ref[10];
  memset(&got[63], ATTN_POISON_BYTE, sizeof(float)); /* an element nobody wrote */
  v = judge_f32(got, ref, N);
  ck_assert(!v.pass);
  ck_assert_uint_eq(v.unwritten, 1);
  ck_assert_uint_eq(v.nonfinite, 0);
}
END_TEST

START_TEST(verifier_bf16_and_infinities) {
  uint16_t b[4] = {attn_f32_to_bf16(1.0f), attn_f32_to_bf16(2.0f), 0xFFFF, 0x7F80};
  attn_verdict v;
  attn_verdict_init(&v, ATTN_BF16);
  attn_verdict_scan(&v, ATTN_BF16, b, 4, 0);
  ck_assert_uint_eq(v.unwritten, 1);
  ck_assert_uint_eq(v.nonfinite, 1); /* +inf is not allowed in O */
  ck_assert(v.tol_max_abs == ATTN_TOL_BF16_MAX_ABS);

  /* log-sum-exp: -inf matches -inf; a finite value where -inf was due is an infinite error. */
  float lse[2] = {-INFINITY, -1e30f};
  attn_verdict_init(&v, ATTN_F32);
  attn_verdict_scan(&v, ATTN_F32, lse, 2, 1);
  attn_verdict_add(&v, lse[0], -INFINITY);
  attn_verdict_finish(&v);
  ck_assert(v.pass);
  attn_verdict_add(&v, lse[1], -INFINITY);
  attn_verdict_finish(&v);
  ck_assert(!v.pass);
  /* Nothing compared never passes. */
  attn_verdict_init(&v, ATTN_F32);
  attn_verdict_finish(&v);
  ck_assert(!v.pass);
}
END_TEST

/* ---- Paged cache ---- */

START_TEST(paged_cache_round_trips_and_poisons_free_slots) {
  attn_problem p = attn_test_problem(3, 4, 2, 1, 37, 8, 0);
  p.block_size = 16;
  size_t nkv = attn_kv_elems(&p);
  float *k = malloc(sizeof(float) * nkv), *v = malloc(sizeof(float) * nkv);
  attn_fill_attention_input(k, nkv, 4, 2);
  attn_fill_attention_input(v, nkv, 4, 3);
  attn_paged c;
  ck_assert_int_eq(attn_paged_build(&p, k, v, 4, &c), 0);
  ck_assert_int_eq(c.max_blocks, 3);
  ck_assert_int_gt(c.num_blocks, 3 * 3);
  int seen[64] = {0}, contiguous = 1;
  for (int b = 0; b < 3; ++b) {
    ck_assert_int_eq(c.seq_lens[b], 37);
    for (int j = 0; j < 3; ++j) {
      int blk = c.block_table[b * 3 + j];
      ck_assert(blk >= 0 && blk < c.num_blocks);
      ck_assert_int_eq(seen[blk]++, 0); /* no block is shared */
      if (j && blk != c.block_table[b * 3 + j - 1] + 1) contiguous = 0;
    }
    for (int t = 0; t < 37; ++t)
      for (int g = 0; g < 2; ++g)
        for (int d = 0; d < 8; ++d) {
          size_t i = (((size_t)b * 37 + t) * 2 + g) * 8 + d;
          ck_assert(attn_paged_at(&c, 0, b, t, g, d) == k[i]);
          ck_assert(attn_paged_at(&c, 1, b, t, g, d) == v[i]);
        }
    /* Slots past the sequence's end in its last block hold NaN. */
    int last = c.block_table[b * 3 + 2];
    ck_assert(isnan(c.k_cache[((size_t)last * 16 + 37 % 16) * 16]));
  }
  ck_assert(!contiguous);
  for (int blk = 0; blk < c.num_blocks; ++blk)
    if (!seen[blk]) ck_assert(isnan(c.v_cache[(size_t)blk * 16 * 16]));
  attn_paged_free(&c);
  free(k), free(v);
}
END_TEST

/* ---- Work model ---- */

START_TEST(work_model_counts) {
  attn_problem p = attn_test_problem(2, 8, 2, 128, 128, 64, 0);
  ck_assert_double_eq(attn_visible_pairs(&p), 2.0 * 8 * 128 * 128);
  ck_assert_double_eq(attn_flops(&p), 4.0 * 64 * 2 * 8 * 128 * 128);
  p.causal = 1; /* square causal: n(n+1)/2 pairs per head */
  ck_assert_double_eq(attn_visible_pairs(&p), 2.0 * 8 * 128 * 129 / 2);
  p.seq_q = 1; /* decode: the one query sees every key */
  ck_assert_double_eq(attn_visible_pairs(&p), 2.0 * 8 * 128);
  ck_assert_double_eq(attn_min_bytes(&p, ATTN_BF16, 0),
                      2.0 * (2 * (2.0 * 1 * 8 * 64) + 2 * (2.0 * 128 * 2 * 64)));
  ck_assert_double_eq(attn_min_bytes(&p, ATTN_F32, 1) - attn_min_bytes(&p, ATTN_F32, 0), 4.0 * 16);
  ck_assert_float_eq_tol(attn_scale(&p), 0.125f, 1e-7f);
}
END_TEST

/* A length per sequence: pairs, bytes and causal windows follow each sequence's own length. */
START_TEST(work_model_with_kv_lens) {
  static const int lens[3] = {100, 7, 100};
  attn_problem p = attn_test_problem(3, 4, 2, 2, 100, 64, 0);
  const double dense_bytes = attn_min_bytes(&p, ATTN_BF16, 0);
  p.kv_lens = lens;
  ck_assert_int_eq(attn_kv_len(&p, 1), 7);
  ck_assert_double_eq(attn_total_kv(&p), 207.0);
  ck_assert_double_eq(attn_visible_pairs(&p), 4.0 * 2 * 207);
  ck_assert_double_eq(dense_bytes - attn_min_bytes(&p, ATTN_BF16, 0), 2.0 * 2 * 93 * 2 * 64);
  p.causal = 1; /* query 0 of sequence 1 sees 7 - 2 + 1 = 6 keys, query 1 sees 7 */
  ck_assert_int_eq(attn_visible_keys_in(&p, 1, 0), 6);
  ck_assert_int_eq(attn_visible_keys_in(&p, 0, 0), 99);
  ck_assert_double_eq(attn_visible_pairs(&p), 4.0 * (99 + 100 + 6 + 7 + 99 + 100));
  char buf[64];
  ck_assert_str_eq(attn_kv_lens_str(&p, buf, sizeof buf), "100,7,100");
  static const int runs[5] = {131072, 1024, 1024, 1024, 1};
  p.batch = 5, p.kv_lens = runs;
  ck_assert_str_eq(attn_kv_lens_str(&p, buf, sizeof buf), "131072,1024x3,1");
  p.kv_lens = NULL;
  ck_assert_str_eq(attn_kv_lens_str(&p, buf, sizeof buf), "");
}
END_TEST

START_TEST(datasheet_table) {
  ck_assert_double_eq(attn_datasheet_bf16_flops_per_sm_clk(90), 4096.0);
  ck_assert_double_eq(attn_datasheet_fp32_flops_per_sm_clk(80), 128.0);
  ck_assert_double_eq(attn_datasheet_bf16_flops_per_sm_clk(61), 0.0);
  /* GA102 whitepaper: RTX 3090, 71 TFLOP/s bf16 (fp32 accumulate), 82 SMs at 1.695 GHz. */
  ck_assert_double_eq(attn_datasheet_bf16_flops_for(86, "NVIDIA GeForce RTX 3090"), 512.0);
  ck_assert(fabs(512.0 * 82 * 1.695e9 / 1e12 - 71.0) < 0.5);
  /* The professional parts run that mode at twice the GeForce rate; told apart by name. */
  ck_assert_double_eq(attn_datasheet_bf16_flops_for(86, "NVIDIA A40"), 1024.0);
  ck_assert_double_eq(attn_datasheet_bf16_flops_for(89, "NVIDIA L40S"), 1024.0);
  ck_assert_double_eq(attn_datasheet_bf16_flops_for(89, "NVIDIA L4"), 1024.0);
  ck_assert_double_eq(attn_datasheet_bf16_flops_for(89, "NVIDIA L40"), 512.0);
  ck_assert_double_eq(attn_datasheet_bf16_flops_for(89, "NVIDIA GeForce RTX 4090"), 512.0);
  ck_assert_double_eq(attn_datasheet_bf16_flops_for(90, "NVIDIA H200"), 4096.0);
  ck_assert_double_eq(attn_datasheet_fp32_flops_for(86, "NVIDIA A40"), 256.0);
  /* An architecture the table lacks: 0, which the runner shows as "?" and never divides by. */
  ck_assert_double_eq(attn_datasheet_bf16_flops_for(120, "NVIDIA GeForce RTX 5090"), 0.0);
  ck_assert_double_eq(attn_datasheet_fp32_flops_for(120, "NVIDIA GeForce RTX 5090"), 0.0);
}
END_TEST

/* CPU "implementations" for attn_cpu_check: the reference itself, one that skips the last row of O
 * (ctx != NULL), and one that fails. */
static int cpu_exact(const attn_problem *p, const float *q, const float *k, const float *v,
                     float *o, float *lse, void *ctx) {
  const size_t nq = attn_q_elems(p), rows = attn_rows(p);
  double *ro = (double *)malloc(sizeof(double) * nq), *rl = (double *)malloc(sizeof(double) * rows);
  attn_reference(p, q, k, v, NULL, rows, ro, rl);
  const size_t skip = ctx ? (size_t)p->dim : 0;
  for (size_t x = 0; x + skip < nq; ++x) o[x] = (float)ro[x];
  for (size_t r = 0; r < rows; ++r) lse[attn_row_lse_index(p, r)] = (float)rl[r];
  free(ro);
  free(rl);
  return 0;
}

static int cpu_broken(const attn_problem *p, const float *q, const float *k, const float *v,
                      float *o, float *lse, void *ctx) {
  (void)p, (void)q, (void)k, (void)v, (void)o, (void)lse, (void)ctx;
  return 1;
}

START_TEST(cpu_check_passes_exact_and_catches_unwritten) {
  attn_problem p = attn_test_problem(1, 4, 2, 33, 47, 64, 1);
  attn_verdict vo, vl;
  ck_assert_int_eq(attn_cpu_check(&p, 5, cpu_exact, NULL, &vo, &vl), 0);
  ck_assert(vo.pass && vl.pass);
  ck_assert_uint_eq(vo.compared, attn_q_elems(&p));
  int skip_last_row = 1;
  ck_assert_int_eq(attn_cpu_check(&p, 5, cpu_exact, &skip_last_row, &vo, &vl), 1);
  ck_assert_uint_eq(vo.unwritten, (size_t)p.dim);
  ck_assert_int_eq(attn_cpu_check(&p, 5, cpu_broken, NULL, NULL, NULL), -1);
}
END_TEST

START_TEST(no_device_reasons_tell_the_cases_apart) {
  char why[320];
  attn_no_device_reason(cudaErrorInsufficientDriver, 0, 13000, why, sizeof why);
  ck_assert_ptr_nonnull(strstr(why, "no usable CUDA device"));
  ck_assert_ptr_nonnull(strstr(why, "no NVIDIA driver is installed"));
  ck_assert_ptr_null(strstr(why, "insufficient"));
  attn_no_device_reason(cudaErrorInsufficientDriver, 12040, 13000, why, sizeof why);
  ck_assert_ptr_nonnull(strstr(why, "supports CUDA up to 12.4"));
  ck_assert_ptr_nonnull(strstr(why, "built with CUDA 13.0"));
  attn_no_device_reason(cudaErrorNoDevice, 13000, 13000, why, sizeof why);
  ck_assert_ptr_nonnull(strstr(why, "no usable CUDA device"));
  ck_assert(strstr(why, "none is visible") || strstr(why, "finds no GPU"));
  ck_assert_ptr_null(strchr(why, '\n'));
}
END_TEST

/* A custom version whose footprint is rows x cols fp32 in and out, like lesson 02's softmax. */
static void fake_footprint(const attn_problem *p, double *dev, double *host) {
  const double bytes = 4.0 * p->batch * p->heads * p->seq_q * (double)p->seq_kv;
  *dev = 2.0 * bytes;
  *host = 2.0 * bytes;
}

START_TEST(problems_that_cannot_fit_are_refused_with_the_largest_that_fits) {
  static const attn_custom custom = {.footprint = fake_footprint};
  static const attn_version versions[1] = {
      {.name = "fake", .kind = ATTN_CUSTOM, .custom = &custom}};
  attn_lesson L;
  memset(&L, 0, sizeof L);
  L.number = 2;
  L.versions = versions;
  L.n_versions = 1;
  attn_options o;
  memset(&o, 0, sizeof o);
  o.problem = attn_test_problem(1, 16, 16, 1024, 1000000, 64, 0);
  double dev = 0, host = 0;
  attn_footprint(&L, &o, &dev, &host);
  ck_assert_double_eq(dev, 2.0 * 4.0 * 16 * 1024 * 1e6); /* 131 GB */
  char why[320];
  /* 64 GB on the GPU, plenty of host: the largest --kv-seq is 64e9 / (8 * 16384) = 488281. */
  ck_assert_int_eq(attn_fits(&L, &o, 64e9, 1e12, why, sizeof why), -1);
  ck_assert_ptr_nonnull(strstr(why, "131.07 GB on the GPU (64.00 GB free)"));
  ck_assert_ptr_nonnull(strstr(why, "the largest --kv-seq that fits is 488281"));
  ck_assert_ptr_null(strchr(why, '\n'));
  /* The host can be the limit too. */
  ck_assert_int_eq(attn_fits(&L, &o, 1e12, 32e9, why, sizeof why), -1);
  ck_assert_ptr_nonnull(strstr(why, "the largest --kv-seq that fits is 244140"));
  /* Square problems shrink --seq. */
  o.problem.seq_q = o.problem.seq_kv = 65536;
  ck_assert_int_eq(attn_fits(&L, &o, 64e9, 1e12, why, sizeof why), -1);
  ck_assert_ptr_nonnull(strstr(why, "the largest --seq that fits is"));
  /* What fits passes; an unknown limit (0) is not checked. */
  o.problem = attn_test_problem(1, 16, 16, 1024, 4096, 64, 0);
  ck_assert_int_eq(attn_fits(&L, &o, 64e9, 1e12, why, sizeof why), 0);
  o.problem.seq_kv = 1000000;
  ck_assert_int_eq(attn_fits(&L, &o, 0, 0, why, sizeof why), 0);
  ck_assert(attn_host_available_bytes() > 0);
}
END_TEST

START_TEST(dense_footprint_counts_inputs_per_dtype) {
  static const attn_version versions[2] = {{.name = "f", .kind = ATTN_DENSE, .dtype = ATTN_F32},
                                           {.name = "b", .kind = ATTN_DENSE, .dtype = ATTN_BF16}};
  attn_lesson L;
  memset(&L, 0, sizeof L);
  L.versions = versions;
  L.n_versions = 2;
  attn_options o;
  memset(&o, 0, sizeof o);
  o.problem = attn_test_problem(2, 8, 2, 100, 300, 64, 0);
  o.no_check = 1;
  const double nq = 2.0 * 100 * 8 * 64, nkv = 2.0 * 300 * 2 * 64, rows = 2.0 * 100 * 8;
  double dev = 0, host = 0;
  attn_footprint(&L, &o, &dev, &host);
  /* fp32 and bf16 copies of Q, K, V, plus the largest O and LSE (fp32). */
  ck_assert_double_eq(dev, (nq + 2 * nkv) * 6.0 + nq * 4.0 + 4.0 * rows);
  ck_assert_double_eq(host, 4.0 * (nq + 2 * nkv) + nq * 4.0 + 4.0 * rows);
  o.version = 2; /* only the bf16 version */
  attn_footprint(&L, &o, &dev, &host);
  ck_assert_double_eq(dev, (nq + 2 * nkv) * 2.0 + nq * 2.0 + 4.0 * rows);
}
END_TEST

START_TEST(progress_line_only_when_long_and_enabled) {
  char buf[512];
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  attn_progress pr;
  attn_progress_begin(&pr, "reference", "rows", 1000);
  pr.out = f;
  pr.enabled = 1;
  pr.t0 -= 1.0; /* one second spent on 10 rows: 100 s projected */
  attn_progress_update(&pr, 10);
  attn_progress_end(&pr);
  rewind(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  ck_assert_ptr_nonnull(strstr(buf, "reference:   1% (10 of 1000 rows), about 99 s left"));
  ck_assert_ptr_nonnull(strstr(buf, "reference: done, 1000 rows in"));
  fclose(f);

  /* Short work, or output disabled: nothing. */
  f = tmpfile();
  attn_progress_begin(&pr, "reference", "rows", 1000);
  pr.out = f;
  pr.enabled = 1;
  attn_progress_update(&pr, 999); /* just started and nearly done: well under 2 s */
  attn_progress_end(&pr);
  attn_progress_begin(&pr, "reference", "rows", 1000);
  pr.out = f;
  pr.enabled = 0;
  pr.t0 -= 1.0;
  attn_progress_update(&pr, 10);
  attn_progress_end(&pr);
  ck_assert_int_eq(ftell(f), 0);
  fclose(f);
}
END_TEST

/* The margin of a verdict: the larger error over its tolerance; infinity once it fails. */
START_TEST(verdict_margin) {
  attn_verdict v;
  attn_verdict_init(&v, ATTN_BF16);
  v.tol_max_abs = 1e-2;
  v.tol_rel_l2 = 1e-2;
  attn_verdict_add(&v, 1.004, 1.0);
  attn_verdict_add(&v, 2.0, 2.0);
  attn_verdict_finish(&v);
  ck_assert(v.pass);
  ck_assert_double_eq_tol(attn_verdict_margin(&v), 0.4, 1e-6);
  attn_verdict_add(&v, 3.05, 3.0);
  attn_verdict_finish(&v);
  ck_assert(!v.pass);
  ck_assert(isinf(attn_verdict_margin(&v)));
}
END_TEST

int main(void) {
  Suite *s = suite_create("harness_cpu");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, verdict_margin);
  tcase_add_test(tc, rng_matches_pcg32_reference_stream);
  tcase_add_test(tc, rng_is_deterministic_and_streams_differ);
  tcase_add_test(tc, rng_advance_equals_that_many_draws);
  tcase_add_test(tc, fills_equal_one_sequential_stream);
  tcase_add_test(tc, rng_ranges);
  tcase_add_test(tc, attention_inputs_are_bf16_exact_and_offset);
  tcase_add_test(tc, bf16_known_bit_patterns);
  tcase_add_test(tc, reference_hand_worked_two_keys);
  tcase_add_test(tc, reference_softmax_rows_sum_to_one);
  tcase_add_test(tc, reference_invariant_under_key_permutation);
  tcase_add_test(tc, reference_causal_bottom_right_alignment);
  tcase_add_test(tc, reference_gqa_head_mapping);
  tcase_add_test(tc, row_numbering_follows_o_layout);
  tcase_add_test(tc, sampling_small_is_whole_large_has_ends);
  tcase_add_test(tc, verifier_passes_exact_and_catches_faults);
  tcase_add_test(tc, verifier_bf16_and_infinities);
  tcase_add_test(tc, paged_cache_round_trips_and_poisons_free_slots);
  tcase_add_test(tc, work_model_counts);
  tcase_add_test(tc, work_model_with_kv_lens);
  tcase_add_test(tc, datasheet_table);
  tcase_add_test(tc, no_device_reasons_tell_the_cases_apart);
  tcase_add_test(tc, cpu_check_passes_exact_and_catches_unwritten);
  tcase_add_test(tc, problems_that_cannot_fit_are_refused_with_the_largest_that_fits);
  tcase_add_test(tc, dense_footprint_counts_inputs_per_dtype);
  tcase_add_test(tc, progress_line_only_when_long_and_enabled);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
