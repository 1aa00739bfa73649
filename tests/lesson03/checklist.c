/* Checklist tests of lesson 3 (drill 3): tile sizes, tile-loop bounds and the causal tile class.
 * Built against the lesson's tile_loops.c (checklist-3, must pass) and against
 * drills/03_tile_loops.c (drill-3, fails until the reader fills it in). Needs nothing but
 * tile_loops.h and Check. */
#include <check.h>
#include <stdlib.h>

#include "tile_loops.h"

START_TEST(paper_tile_sizes) {
  int br = -1, bc = -1;
  /* H200: 227 KB = 58112 floats. d 64: 58112 / 256 = 227 exactly. */
  l03_paper_tile_sizes(58112, 64, &br, &bc);
  ck_assert_int_eq(bc, 227);
  ck_assert_int_eq(br, 64);
  /* d 128: 58112 / 512 = 113.5, rounded up; Br = min(114, 128). */
  l03_paper_tile_sizes(58112, 128, &br, &bc);
  ck_assert_int_eq(bc, 114);
  ck_assert_int_eq(br, 114);
  /* A100: 163 KB = 41728 floats, d 64: 163. */
  l03_paper_tile_sizes(41728, 64, &br, &bc);
  ck_assert_int_eq(bc, 163);
  ck_assert_int_eq(br, 64);
  /* Tiny memory: the tiles shrink below d. */
  l03_paper_tile_sizes(1000, 64, &br, &bc);
  ck_assert_int_eq(bc, 4);
  ck_assert_int_eq(br, 4);
}
END_TEST

START_TEST(tile_counts) {
  ck_assert_int_eq(l03_num_tiles(0, 64), 0);
  ck_assert_int_eq(l03_num_tiles(1, 64), 1);
  ck_assert_int_eq(l03_num_tiles(63, 64), 1);
  ck_assert_int_eq(l03_num_tiles(64, 64), 1);
  ck_assert_int_eq(l03_num_tiles(65, 64), 2);
  ck_assert_int_eq(l03_num_tiles(4096, 224), 19);
  ck_assert_int_eq(l03_num_tiles(65536, 224), 293);
  ck_assert_int_eq(l03_num_tiles(4096, 64), 64);
}
END_TEST

START_TEST(tile_bounds_last_tile_is_short) {
  /* 300 keys in tiles of 64: 0-64, 64-128, ..., 256-300. */
  ck_assert_int_eq(l03_tile_start(0, 64), 0);
  ck_assert_int_eq(l03_tile_end(0, 64, 300), 64);
  ck_assert_int_eq(l03_tile_start(3, 64), 192);
  ck_assert_int_eq(l03_tile_end(3, 64, 300), 256);
  ck_assert_int_eq(l03_tile_start(4, 64), 256);
  ck_assert_int_eq(l03_tile_end(4, 64, 300), 300);
  /* One token: one tile of one. */
  ck_assert_int_eq(l03_tile_end(0, 224, 1), 1);
}
END_TEST

START_TEST(tiles_cover_every_index_once) {
  const int tiles[] = {1, 3, 16, 32, 64, 224};
  for (size_t a = 0; a < sizeof tiles / sizeof tiles[0]; ++a)
    for (int len = 1; len <= 700; len += 7) {
      const int t = tiles[a], n = l03_num_tiles(len, t);
      ck_assert_int_ge(n, 1);
      int next = 0;
      for (int i = 0; i < n; ++i) {
        ck_assert_int_eq(l03_tile_start(i, t), next); /* no gap, no overlap */
        const int end = l03_tile_end(i, t, len);
        ck_assert_int_gt(end, l03_tile_start(i, t)); /* never empty */
        ck_assert_int_le(end - l03_tile_start(i, t), t);
        next = end;
      }
      ck_assert_int_eq(next, len); /* the last tile stops exactly at len */
    }
}
END_TEST

START_TEST(causal_square) {
  /* 256 x 256, tiles 64 x 64: the diagonal is partial, above it masked, below it visible. */
  ck_assert_int_eq(l03_causal_tile_class(0, 0, 64, 64, 256, 256), L03_TILE_PARTIAL);
  ck_assert_int_eq(l03_causal_tile_class(0, 1, 64, 64, 256, 256), L03_TILE_MASKED);
  ck_assert_int_eq(l03_causal_tile_class(1, 0, 64, 64, 256, 256), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(3, 3, 64, 64, 256, 256), L03_TILE_PARTIAL);
  ck_assert_int_eq(l03_causal_tile_class(2, 3, 64, 64, 256, 256), L03_TILE_MASKED);
  /* Br 64, Bc 224 (the H200's d 64 tiles): query tile 3 (rows 192..255) and key tile 0 (0..223). */
  ck_assert_int_eq(l03_causal_tile_class(3, 0, 64, 224, 4096, 4096), L03_TILE_PARTIAL);
  ck_assert_int_eq(l03_causal_tile_class(4, 0, 64, 224, 4096, 4096), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(0, 1, 64, 224, 4096, 4096), L03_TILE_MASKED);
}
END_TEST

START_TEST(causal_bottom_right_fewer_queries) {
  /* 64 queries, 256 keys: offset 192, query 0 sees keys 0..192. */
  ck_assert_int_eq(l03_causal_tile_class(0, 0, 64, 64, 64, 256), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(0, 2, 64, 64, 64, 256), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(0, 3, 64, 64, 64, 256), L03_TILE_PARTIAL);
  /* Decode: one query sees every key. */
  ck_assert_int_eq(l03_causal_tile_class(0, 5, 1, 64, 1, 1000), L03_TILE_VISIBLE);
  ck_assert_int_eq(l03_causal_tile_class(0, 15, 1, 64, 1, 1000), L03_TILE_VISIBLE);
}
END_TEST

START_TEST(causal_bottom_right_more_queries) {
  /* 256 queries, 64 keys: offset -192; queries 0..191 see nothing. */
  ck_assert_int_eq(l03_causal_tile_class(0, 0, 64, 64, 256, 64), L03_TILE_MASKED);
  ck_assert_int_eq(l03_causal_tile_class(2, 0, 64, 64, 256, 64), L03_TILE_MASKED);
  ck_assert_int_eq(l03_causal_tile_class(3, 0, 64, 64, 256, 64), L03_TILE_PARTIAL);
  /* 100 queries, 37 keys, tiles 32 x 32: row r sees keys <= r - 63, so rows 0..62 see nothing. */
  ck_assert_int_eq(l03_causal_tile_class(0, 0, 32, 32, 100, 37), L03_TILE_MASKED); /* rows 0-31 */
  ck_assert_int_eq(l03_causal_tile_class(1, 0, 32, 32, 100, 37),
                   L03_TILE_PARTIAL); /* row 63: key 0 */
  ck_assert_int_eq(l03_causal_tile_class(2, 0, 32, 32, 100, 37), L03_TILE_PARTIAL); /* rows 64-95 */
  ck_assert_int_eq(l03_causal_tile_class(3, 0, 32, 32, 100, 37), L03_TILE_VISIBLE); /* rows 96-99 */
  ck_assert_int_eq(l03_causal_tile_class(3, 1, 32, 32, 100, 37), L03_TILE_PARTIAL); /* keys 32-36 */
}
END_TEST

/* The class against the definition, pair by pair, on many shapes including short last tiles. */
START_TEST(causal_class_matches_every_pair) {
  const int shapes[][4] = {{1, 1, 1, 1},     {5, 9, 2, 4},     {37, 100, 16, 32}, {100, 37, 16, 32},
                           {64, 64, 64, 64}, {70, 70, 32, 64}, {3, 200, 4, 8},    {200, 3, 8, 4}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    const int sq = shapes[s][0], skv = shapes[s][1], br = shapes[s][2], bc = shapes[s][3];
    for (int i = 0; i * br < sq; ++i)
      for (int j = 0; j * bc < skv; ++j) {
        int seen = 0, hidden = 0;
        for (int r = i * br; r < (i + 1) * br && r < sq; ++r)
          for (int c = j * bc; c < (j + 1) * bc && c < skv; ++c) {
            if (c <= r + skv - sq)
              seen++;
            else
              hidden++;
          }
        const l03_tile_class want =
            seen == 0 ? L03_TILE_MASKED : (hidden == 0 ? L03_TILE_VISIBLE : L03_TILE_PARTIAL);
        ck_assert_msg(l03_causal_tile_class(i, j, br, bc, sq, skv) == want,
                      "seq %d/%d, tiles %dx%d, tile (%d, %d): want %d", sq, skv, br, bc, i, j,
                      (int)want);
      }
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("checklist-3");
  TCase *t = tcase_create("tile loops");
  tcase_add_test(t, paper_tile_sizes);
  tcase_add_test(t, tile_counts);
  tcase_add_test(t, tile_bounds_last_tile_is_short);
  tcase_add_test(t, tiles_cover_every_index_once);
  tcase_add_test(t, causal_square);
  tcase_add_test(t, causal_bottom_right_fewer_queries);
  tcase_add_test(t, causal_bottom_right_more_queries);
  tcase_add_test(t, causal_class_matches_every_pair);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
