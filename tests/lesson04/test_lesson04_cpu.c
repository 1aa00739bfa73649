/* Lesson 04, CPU: the CPU model of version 6's tile loop (the causal skip and where the mask goes)
 * against the double-precision reference on awkward shapes, the drill's tile bounds against the
 * kernels' (attn_causal.h), and the flat entry point's argument checks. No GPU needed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_causal.h"
#include "attn_test.h"
#include "fa2_warps.h"
#include "warp_partition.h"

/* batch, heads, kv_heads, seq_q, seq_kv, dim, causal: attn_test_problem()'s order */
static const int kShapes[][7] = {
    {1, 4, 1, 1, 1, 64, 0},     /* one token, GQA 4:1 */
    {2, 8, 1, 17, 17, 128, 1},  /* GQA 8:1, causal, one tile minus a bit */
    {1, 2, 2, 129, 129, 64, 1}, /* one past a tile multiple */
    {1, 2, 1, 40, 300, 128, 1}, /* causal, q_len < kv_len: bottom-right */
    {1, 2, 2, 300, 70, 64, 1},  /* causal, q_len > kv_len: rows that see nothing */
    {1, 2, 2, 1, 1000, 64, 1},  /* decode-like: one row sees every key */
    {1, 2, 1, 200, 200, 64, 0}, /* not causal */
};
enum { N_SHAPES = sizeof kShapes / sizeof kShapes[0] };

/* Shape i of kShapes. */
static attn_problem shape(int i) {
  const int *x = kShapes[i];
  return attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
}

static void check_model(const attn_problem *p, int br, int bc) {
  l04_cpu_tiles tiles = {.br = br, .bc = bc, .visits = 0};
  attn_verdict vo, vl;
  const int rc = attn_cpu_check(p, 5, l04_cpu_attention, &tiles, &vo, &vl);
  ck_assert_int_ge(rc, 0);
  ck_assert_msg(vo.pass, "O: max_abs %g rel_l2 %g unwritten %zu", vo.max_abs, vo.rel_l2,
                vo.unwritten);
  ck_assert_msg(vl.pass, "LSE: max_abs %g nonfinite %zu", vl.max_abs, vl.nonfinite);

  /* The visits the plan promises: every tile without the mask, about half with it. */
  long every = (long)p->batch * p->heads * ((p->seq_q + br - 1) / br) * ((p->seq_kv + bc - 1) / bc);
  if (!p->causal)
    ck_assert_int_eq(tiles.visits, every);
  else
    ck_assert(tiles.visits > 0 && tiles.visits <= every);
}

START_TEST(cpu_model_matches_reference) {
  const attn_problem p = shape(_i);
  check_model(&p, 32, 16);
  check_model(&p, 128, 64); /* the GPU versions' tiles */
}
END_TEST

/* A causal square problem visits about half the tiles: the saving version 6 is built on. */
START_TEST(causal_skip_halves_the_visits) {
  attn_problem p = attn_test_problem(1, 1, 1, 1024, 1024, 64, 1);
  size_t n = attn_q_elems(&p);
  float *x = calloc(n, sizeof(float)), *o = malloc(sizeof(float) * n), *lse = malloc(4096);
  ck_assert(x && o && lse);
  long visits = l04_cpu_forward(&p, x, x, x, o, lse, 128, 64);
  /* 8 Q tiles: tile t sees 2t + 2 KV tiles of 64 -> 2 + 4 + ... + 16 = 72 of 128. */
  ck_assert_int_eq(visits, 72);
  free(x), free(o), free(lse);
}
END_TEST

/* The checklist's answers, l04_kv_tiles_visited() and l04_kv_tiles_unmasked() (warp_partition.c),
 * give the bounds the kernels take from attn_causal.h, on every Q tile of many shapes: one token,
 * a tile minus one, a tile plus one, seq_q above and below seq_kv, causal or not. */
START_TEST(kv_tile_bounds_match_attn_causal) {
  static const int lens[] = {1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 300, 1000, 4096};
  static const int tiles[] = {16, 32, 64, 128};
  enum { N_LENS = sizeof lens / sizeof lens[0], N_TILES = sizeof tiles / sizeof tiles[0] };
  long checked = 0;
  for (int causal = 0; causal < 2; ++causal)
    for (int a = 0; a < N_LENS; ++a)
      for (int c = 0; c < N_LENS; ++c)
        for (int x = 0; x < N_TILES; ++x)
          for (int y = 0; y < N_TILES; ++y) {
            const int seq_q = lens[a], seq_kv = lens[c], br = tiles[x], bc = tiles[y];
            for (int q0 = 0; q0 < seq_q; q0 += br, ++checked) {
              const int v = l04_kv_tiles_visited(q0, br, seq_q, seq_kv, bc, causal);
              const int u = l04_kv_tiles_unmasked(q0, br, seq_q, seq_kv, bc, causal);
              ck_assert_msg(v == attn_kv_tiles_visited(q0, br, seq_q, seq_kv, bc, causal),
                            "visited: q0 %d br %d seq_q %d seq_kv %d bc %d causal %d: %d, "
                            "attn_causal.h %d",
                            q0, br, seq_q, seq_kv, bc, causal, v,
                            attn_kv_tiles_visited(q0, br, seq_q, seq_kv, bc, causal));
              ck_assert_msg(u == attn_kv_tiles_unmasked(q0, seq_q, seq_kv, bc, causal),
                            "unmasked: q0 %d br %d seq_q %d seq_kv %d bc %d causal %d: %d, "
                            "attn_causal.h %d",
                            q0, br, seq_q, seq_kv, bc, causal, u,
                            attn_kv_tiles_unmasked(q0, seq_q, seq_kv, bc, causal));
            }
          }
  ck_assert(checked > 10000);
}
END_TEST

START_TEST(flat_entry_point_rejects_bad_arguments) {
  ck_assert_int_eq(l04_forward(0, 64, NULL, NULL, NULL, NULL, NULL, 1, 1, 1, 1, 1, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  ck_assert_int_eq(
      l04_forward(L04_VERSIONS + 1, 64, NULL, NULL, NULL, NULL, NULL, 1, 1, 1, 1, 1, 0, 0.f, 0),
      cudaErrorInvalidValue);
  ck_assert_int_eq(l04_forward(3, 96, NULL, NULL, NULL, NULL, NULL, 1, 1, 1, 1, 1, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  /* heads not a multiple of kv_heads: refused before any launch */
  ck_assert_int_eq(l04_forward(6, 64, NULL, NULL, NULL, NULL, NULL, 1, 6, 4, 1, 1, 0, 0.f, 0),
                   cudaErrorInvalidValue);
}
END_TEST

START_TEST(version_table_is_consistent) {
  ck_assert_int_eq(l04_lesson.n_versions, L04_VERSIONS);
  ck_assert_int_eq(l04_lesson.number, 4);
  for (int i = 0; i < L04_VERSIONS; ++i) {
    const attn_version *v = &l04_lesson.versions[i];
    ck_assert_str_eq(v->name, l04_version_name(i + 1));
    ck_assert_int_eq(v->dtype == ATTN_BF16, l04_version_is_bf16(i + 1));
    ck_assert_int_eq(v->writes_lse, 1);
    ck_assert_int_eq(v->min_sm, 80);
    ck_assert_ptr_nonnull(v->launch);
    attn_problem p = attn_test_problem(1, 1, 1, 1, 1, 96, 0);
    ck_assert_ptr_nonnull(v->supports(&p)); /* dim 96 is not built */
    p.dim = 128;
    ck_assert_ptr_null(v->supports(&p));
  }
  ck_assert_ptr_null(l04_version_name(0));
  ck_assert_ptr_null(l04_version_name(L04_VERSIONS + 1));
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson04_cpu");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, cpu_model_matches_reference, 0, N_SHAPES);
  tcase_add_test(tc, causal_skip_halves_the_visits);
  tcase_add_test(tc, kv_tile_bounds_match_attn_causal);
  tcase_add_test(tc, flat_entry_point_rejects_bad_arguments);
  tcase_add_test(tc, version_table_is_consistent);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
