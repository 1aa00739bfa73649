/* Lesson 01, CPU suite:
 *  - the traffic and flop model against the harness's own counts and against a count tensor by
 *    tensor, on awkward shapes (1 token, 17, 1000, causal with seq_q < seq_kv and seq_q > seq_kv,
 *    GQA);
 *  - the naive version's S pitch and workspace;
 *  - the read probe's closed-form block sums against a step-by-step simulation of the kernel's
 *    loop;
 *  - the bank-conflict model against a count of words per bank; the shared-memory peak formula;
 *  - the probes' data patterns and the FMA replay.
 */
#include <math.h>
#include <stdlib.h>

#include "attn_test.h"
#include "memory_hierarchy.h"

/* batch, heads, kv_heads, seq_q, seq_kv, dim, causal: attn_test_problem()'s order */
static const int kShapes[][7] = {
    {1, 1, 1, 1, 1, 64, 0},     {2, 4, 4, 17, 17, 64, 0},       {1, 4, 4, 1000, 1000, 128, 0},
    {1, 4, 4, 17, 1000, 64, 1}, {1, 4, 4, 1000, 17, 64, 1},     {2, 8, 2, 257, 513, 128, 1},
    {3, 6, 1, 5, 7, 24, 1},     {1, 16, 16, 4096, 4096, 64, 1},
};
#define N_SHAPES ((int)(sizeof kShapes / sizeof kShapes[0]))

/* Shape i of kShapes. */
static attn_problem shape(int i) {
  const int *x = kShapes[i];
  return attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
}

#define ck_same(a, b)                                                                           \
  ck_assert_msg(fabs((a) - (b)) <= 1e-12 * fmax(fabs(a), fabs(b)), "%s = %.17g but %s = %.17g", \
                #a, (double)(a), #b, (double)(b))

START_TEST(model_matches_harness) {
  for (int i = 0; i < N_SHAPES; ++i) {
    const attn_problem problem = shape(i);
    const attn_problem *p = &problem;
    const l01_shape s = l01_shape_of(p);
    ck_same(l01_visible_pairs(&s), attn_visible_pairs(p));
    ck_same(l01_useful_flops(&s), attn_flops(p));
    ck_same(l01_fused_bytes(&s), attn_min_bytes(p, ATTN_F32, 0));
    if (!p->causal) ck_same(l01_naive_flops(&s), attn_flops(p));
    ck_assert(l01_naive_flops(&s) >= l01_useful_flops(&s));
  }
}
END_TEST

/* The same traffic counted tensor by tensor with the harness's element counts. */
START_TEST(traffic_by_tensor) {
  for (int i = 0; i < N_SHAPES; ++i) {
    const attn_problem problem = shape(i);
    const attn_problem *p = &problem;
    const l01_shape s = l01_shape_of(p);
    const double q = 4.0 * (double)attn_q_elems(p), kv = 4.0 * (double)attn_kv_elems(p);
    const double sp = 4.0 * (double)attn_rows(p) * p->seq_kv, lse = 4.0 * (double)attn_rows(p);
    l01_traffic t;
    l01_naive_traffic(&s, &t);
    ck_same(l01_s_bytes(&s), sp);
    ck_same(t.qk, q + kv + sp);
    ck_same(t.softmax, 2.0 * sp + lse);
    ck_same(t.pv, sp + kv + q);
    ck_same(t.total, t.qk + t.softmax + t.pv);
  }
}
END_TEST

START_TEST(pitch_and_workspace) {
  attn_problem p = attn_test_problem(2, 3, 1, 5, 17, 64, 0);
  ck_assert_uint_eq(l01_s_pitch(&p), 20);
  ck_assert_uint_eq(l01_naive_workspace(&p), (size_t)2 * 3 * 5 * 20 * 4);
  p.seq_kv = 4096;
  ck_assert_uint_eq(l01_s_pitch(&p), 4096);
  p.seq_kv = 1;
  ck_assert_uint_eq(l01_s_pitch(&p), 4);
}
END_TEST

/* The read kernel's loop, run on the host element by element: per-block sums and the largest number
 * of floats one thread adds. */
static void simulate_read(size_t n, int vec, int passes, int grid, unsigned long long *sums,
                          size_t *max_per_thread) {
  const size_t tile = (size_t)L01_GLOBAL_THREADS * L01_GLOBAL_UNROLL;
  const size_t nv = n / (size_t)vec, full = nv / tile;
  *max_per_thread = 0;
  for (int b = 0; b < grid; ++b) {
    unsigned long long block = 0;
    for (int th = 0; th < L01_GLOBAL_THREADS; ++th) {
      size_t count = 0;
      for (int pass = 0; pass < passes; ++pass) {
        for (size_t t = (size_t)b; t < full; t += (size_t)grid) {
          for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) {
            const size_t j = t * tile + (size_t)u * L01_GLOBAL_THREADS + (size_t)th;
            for (int e = 0; e < vec; ++e) block += L01_SUM_VALUE(j * (size_t)vec + (size_t)e);
            count += (size_t)vec;
          }
        }
        if ((size_t)b == full % (size_t)grid) {
          for (int u = 0; u < L01_GLOBAL_UNROLL; ++u) {
            const size_t j = full * tile + (size_t)u * L01_GLOBAL_THREADS + (size_t)th;
            if (j >= nv) continue;
            for (int e = 0; e < vec; ++e) block += L01_SUM_VALUE(j * (size_t)vec + (size_t)e);
            count += (size_t)vec;
          }
          if (th == 0) {
            for (size_t r = nv * (size_t)vec; r < n; ++r) block += L01_SUM_VALUE(r), ++count;
          }
        }
      }
      if (count > *max_per_thread) *max_per_thread = count;
    }
    sums[b] = block;
  }
}

START_TEST(read_sums_closed_form) {
  const size_t sizes[] = {1, 3, 1023, 4096 * 3 + 5, 4096 * 7 + 1024 * 2 + 37, 100003};
  const int grids[] = {1, 3, 8};
  unsigned long long want[8], got[8];
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; ++si) {
    for (int gi = 0; gi < 3; ++gi) {
      for (int vec = 1; vec <= 4; vec += 3) {
        for (int passes = 1; passes <= 3; passes += 2) {
          size_t max_count = 0;
          simulate_read(sizes[si], vec, passes, grids[gi], want, &max_count);
          l01_read_expected(sizes[si], vec, passes, grids[gi], got);
          for (int b = 0; b < grids[gi]; ++b) {
            ck_assert_msg(got[b] == want[b],
                          "n %zu vec %d passes %d grid %d block %d: %llu != %llu", sizes[si], vec,
                          passes, grids[gi], b, got[b], want[b]);
          }
          ck_assert(l01_read_max_per_thread(sizes[si], vec, passes, grids[gi]) >=
                    (double)max_count);
        }
      }
    }
  }
}
END_TEST

/* Bank conflicts counted directly: the most distinct words any bank serves for one warp access. */
START_TEST(bank_conflict_model) {
  for (int stride = 0; stride <= 70; ++stride) {
    int worst = 0;
    for (int bank = 0; bank < 32; ++bank) {
      int words[32], distinct = 0;
      for (int lane = 0; lane < 32; ++lane) {
        const int w = lane * stride;
        if (w % 32 != bank) continue;
        int seen = 0;
        for (int k = 0; k < distinct; ++k) seen |= words[k] == w;
        if (!seen) words[distinct++] = w;
      }
      if (distinct > worst) worst = distinct;
    }
    ck_assert_int_eq(l01_smem_conflict_ways(stride), worst);
  }
  ck_assert_int_eq(l01_smem_conflict_ways(32), 32);
  ck_assert_int_eq(l01_smem_conflict_ways(33), 1);
  int ls, ks;
  l01_smem_strides(L01_SMEM_ROW, &ls, &ks);
  ck_assert_int_eq(l01_smem_conflict_ways(ls), 1);
  l01_smem_strides(L01_SMEM_STRIDE2, &ls, &ks);
  ck_assert_int_eq(l01_smem_conflict_ways(ls), 2);
  l01_smem_strides(L01_SMEM_STRIDE32, &ls, &ks);
  ck_assert_int_eq(l01_smem_conflict_ways(ls), 32);
  l01_smem_strides(L01_SMEM_PAD33, &ls, &ks);
  ck_assert_int_eq(l01_smem_conflict_ways(ls), 1);
  /* Every layout's 32 x 32 reads stay inside the tile. */
  for (int layout = L01_SMEM_ROW; layout <= L01_SMEM_PAD33; ++layout) {
    l01_smem_strides((l01_smem_layout)layout, &ls, &ks);
    ck_assert_int_lt(31 * ls + 31 * ks, L01_SMEM_WORDS);
  }
}
END_TEST

START_TEST(smem_peak_and_expected) {
  attn_device d;
  memset(&d, 0, sizeof d);
  d.sm_count = 132;
  d.sm_clock_khz = 1980000;
  /* 132 SMs x 32 banks x 4 B x 1.98 GHz = 33454.08 GB/s */
  ck_assert(fabs(l01_smem_peak_gbs(&d) - 33454.08) < 1e-6);
  /* Block 0, lane 0, ROW reads words 32k: (224k + 0) & 3 = 0 for every k. Lane 1 reads 32k + 1:
   * (224k + 7) & 3 = 3. Block 1 lane 0: (224k + 1) & 3 = 1. */
  ck_assert(l01_smem_expected(L01_SMEM_ROW, 0, 5) == 0.0f);
  ck_assert(l01_smem_expected(L01_SMEM_ROW, 1, 5) == 5.0f * 32 * 3);
  ck_assert(l01_smem_expected(L01_SMEM_ROW, L01_CHIP_THREADS, 2) == 2.0f * 32);
  ck_assert(l01_smem_expected(L01_SMEM_ROW, 33, 5) == l01_smem_expected(L01_SMEM_ROW, 1, 5));
}
END_TEST

START_TEST(patterns) {
  for (uint64_t i = 0; i < 100000; ++i) {
    const float f = l01_hash_value(i);
    ck_assert(f >= 1.0f && f < 2.0f);
    ck_assert_uint_ne(L01_HASH_BITS(i), 0xFFFFFFFFu);
  }
  int same = 0;
  for (uint64_t i = 0; i < 4096; ++i) same += L01_HASH_BITS(i) == L01_HASH_BITS(i + 1);
  ck_assert_int_lt(same, 4);
  ck_assert_uint_ne(L01_HASH_BITS((uint64_t)1 << 32), L01_HASH_BITS(0));
  ck_assert_uint_eq(L01_SUM_VALUE(16), 16);
  ck_assert_uint_eq(L01_SUM_VALUE(17), 0);
}
END_TEST

START_TEST(fma_replay) {
  const float a = 0.9990234375f, b = 0.0009765625f;
  /* No trips: the starts, 1 + (16 g + c) / 256 for c < 16. Thread 0: 16 + 120/256 = 16.46875. */
  ck_assert(l01_fma_expected(0, 0, a, b) == 16.46875f);
  /* Each trip moves every chain: one trip more or less is visible. */
  ck_assert(l01_fma_expected(5, 100, a, b) != l01_fma_expected(5, 101, a, b));
  ck_assert(l01_fma_expected(5, 3000, a, b) != l01_fma_expected(5, 3001, a, b));
  ck_assert(isfinite(l01_fma_expected(123456, 5000, a, b)));
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson01-cpu");
  TCase *tc = tcase_create("models");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, model_matches_harness);
  tcase_add_test(tc, traffic_by_tensor);
  tcase_add_test(tc, pitch_and_workspace);
  tcase_add_test(tc, read_sums_closed_form);
  tcase_add_test(tc, bank_conflict_model);
  tcase_add_test(tc, smem_peak_and_expected);
  tcase_add_test(tc, patterns);
  tcase_add_test(tc, fma_replay);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
