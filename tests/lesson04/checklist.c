/* Lesson 04's checklist: the warp partition and mma fragment index maths (warp_partition.h).
 * Built against the lesson's answers (checklist-4, must pass) and against drills/04 (drill-4). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "warp_partition.h"

/* Split-Q: 4 warps x 32 rows of a 128-row tile; 4 warps x 8 rows of a 32-row tile. */
START_TEST(warp_owns_a_band_of_rows) {
  for (int w = 0; w < 4; ++w) {
    ck_assert_int_eq(l04_warp_first_row(w, 128, 4), 32 * w);
    ck_assert_int_eq(l04_warp_first_row(w, 32, 4), 8 * w);
  }
  ck_assert_int_eq(l04_warp_first_row(7, 128, 8), 112);
}
END_TEST

/* Known entries from the PTX ISA figures. */
START_TEST(fragments_known_entries) {
  int r, c;
  l04_frag_a(0, 0, 0, &r, &c);
  ck_assert(r == 0 && c == 0);
  l04_frag_a(5, 1, 1, &r, &c); /* g 1, t 1: row 9, col 3 */
  ck_assert_int_eq(r, 9);
  ck_assert_int_eq(c, 3);
  l04_frag_a(31, 3, 1, &r, &c);
  ck_assert(r == 15 && c == 15);
  l04_frag_a(6, 2, 0, &r, &c); /* g 1, t 2: row 1, col 12 */
  ck_assert(r == 1 && c == 12);
  l04_frag_b(7, 1, 0, &r, &c); /* g 1, t 3: k 14, n 1 */
  ck_assert_int_eq(r, 14);
  ck_assert_int_eq(c, 1);
  l04_frag_b(30, 0, 1, &r, &c); /* g 7, t 2: k 5, n 7 */
  ck_assert(r == 5 && c == 7);
  l04_frag_c(9, 3, &r, &c); /* g 2, t 1: row 10, col 3 */
  ck_assert_int_eq(r, 10);
  ck_assert_int_eq(c, 3);
  l04_frag_c(28, 0, &r, &c);
  ck_assert(r == 7 && c == 0);
}
END_TEST

/* Every element of each operand is held by exactly one (lane, register, half). */
START_TEST(fragments_cover_each_element_once) {
  int seen_a[16][16], seen_b[16][8], seen_c[16][8];
  memset(seen_a, 0, sizeof seen_a);
  memset(seen_b, 0, sizeof seen_b);
  memset(seen_c, 0, sizeof seen_c);
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      int r, c;
      for (int half = 0; half < 2; ++half) {
        l04_frag_a(lane, reg, half, &r, &c);
        ck_assert(r >= 0 && r < 16 && c >= 0 && c < 16);
        seen_a[r][c]++;
      }
      l04_frag_c(lane, reg, &r, &c);
      ck_assert(r >= 0 && r < 16 && c >= 0 && c < 8);
      seen_c[r][c]++;
    }
    for (int reg = 0; reg < 2; ++reg)
      for (int half = 0; half < 2; ++half) {
        int k, n;
        l04_frag_b(lane, reg, half, &k, &n);
        ck_assert(k >= 0 && k < 16 && n >= 0 && n < 8);
        seen_b[k][n]++;
      }
  }
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) ck_assert_int_eq(seen_a[i][j], 1);
    for (int j = 0; j < 8; ++j) {
      ck_assert_int_eq(seen_b[i][j], 1);
      ck_assert_int_eq(seen_c[i][j], 1);
    }
  }
}
END_TEST

/* The FlashAttention-2 trick: the accumulators of S tiles 2kk and 2kk+1 (16 x 8 each) are, pair
 * by pair, the A fragment of P's 16 x 16 tile kk. A register (lane, reg) of P holds C registers
 * (lane, 2 * (reg & 1) + half) of S tile 2kk + (reg >> 1): same row, column + 8 * (reg >> 1). */
START_TEST(accumulator_is_the_next_a_operand) {
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        int ra, ca, rc, cc;
        l04_frag_a(lane, reg, half, &ra, &ca);
        l04_frag_c(lane, 2 * (reg & 1) + half, &rc, &cc);
        ck_assert_int_eq(ra, rc);
        ck_assert_int_eq(ca, cc + 8 * (reg >> 1));
      }
}
END_TEST

/* ldmatrix.x4: matrix i = lane / 8 is read from the rows lane i*8.. supply, and must come out as
 * A register i. Lane l gets row l / 4, columns 2 (l % 4) + {0, 1} of each matrix. */
START_TEST(ldmatrix_feeds_the_a_fragment) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      int src_row, src_col; /* the row segment that lane 8 * reg + lane / 4 supplied */
      l04_ldmatrix_a_src(8 * reg + lane / 4, &src_row, &src_col);
      for (int half = 0; half < 2; ++half) {
        int r, c;
        l04_frag_a(lane, reg, half, &r, &c);
        ck_assert_int_eq(r, src_row);
        ck_assert_int_eq(c, src_col + 2 * (lane % 4) + half);
      }
    }
  }
}
END_TEST

/* The swizzle is a permutation of each row's chunks, and 8 consecutive rows read at one logical
 * chunk hit 8 different bank groups (chunk mod 8, for rows of 128 or 256 bytes). */
START_TEST(swizzle_is_conflict_free) {
  for (int chunks = 8; chunks <= 16; chunks += 8)
    for (int row = 0; row < 64; ++row) {
      int seen[16] = {0};
      for (int c = 0; c < chunks; ++c) {
        int p = l04_swizzle(row, c);
        ck_assert(p >= 0 && p < chunks);
        seen[p]++;
      }
      for (int c = 0; c < chunks; ++c) ck_assert_int_eq(seen[c], 1);
    }
  for (int r0 = 0; r0 < 64; r0 += 8)
    for (int c = 0; c < 16; ++c) {
      int groups = 0;
      for (int r = r0; r < r0 + 8; ++r) groups |= 1 << (l04_swizzle(r, c) % 8);
      ck_assert_int_eq(groups, 0xff);
    }
}
END_TEST

/* Brute force: is key j visible to query i? (bottom-right causal) */
static int visible(int i, int j, int seq_q, int seq_kv, int causal) {
  return j < seq_kv && (!causal || j <= i + (seq_kv - seq_q));
}

START_TEST(tile_plan_matches_brute_force) {
  static const int seqs[] = {1, 7, 16, 17, 40, 63, 64, 65, 129, 300};
  const int n = sizeof seqs / sizeof seqs[0];
  for (int causal = 0; causal < 2; ++causal)
    for (int a = 0; a < n; ++a)
      for (int c = 0; c < n; ++c) {
        const int seq_q = seqs[a], seq_kv = seqs[c], br = 32, bc = 16;
        for (int q0 = 0; q0 < seq_q; q0 += br) {
          const int last = q0 + br < seq_q ? q0 + br : seq_q;
          int need = 0, clean = 0, still_clean = 1;
          for (int t = 0; t * bc < seq_kv; ++t) {
            int any = 0, all = 1;
            for (int i = q0; i < last; ++i)
              for (int j = t * bc; j < t * bc + bc; ++j) {
                int vis = visible(i, j, seq_q, seq_kv, causal);
                any |= vis;
                all &= vis;
              }
            if (any) need = t + 1;
            if (still_clean && all)
              clean = t + 1;
            else
              still_clean = 0;
          }
          ck_assert_msg(l04_kv_tiles_visited(q0, br, seq_q, seq_kv, bc, causal) == need,
                        "visited: seq %d/%d causal %d q0 %d", seq_q, seq_kv, causal, q0);
          ck_assert_msg(l04_kv_tiles_unmasked(q0, br, seq_q, seq_kv, bc, causal) == clean,
                        "unmasked: seq %d/%d causal %d q0 %d", seq_q, seq_kv, causal, q0);
        }
      }
}
END_TEST

/* Every (head, Q tile) exactly once; a head's blocks adjacent; causal: heaviest first. */
START_TEST(schedule_covers_every_tile_heavy_first) {
  const int n_bh = 6, n_q = 5;
  for (int causal = 0; causal < 2; ++causal) {
    int seen[6][5];
    memset(seen, 0, sizeof seen);
    for (int blk = 0; blk < n_bh * n_q; ++blk) {
      int bh, t;
      l04_schedule(blk, n_q, causal, &bh, &t);
      ck_assert(bh >= 0 && bh < n_bh && t >= 0 && t < n_q);
      seen[bh][t]++;
      ck_assert_int_eq(bh, blk / n_q);
      if (blk % n_q == 0) ck_assert_int_eq(t, causal ? n_q - 1 : 0);
    }
    for (int i = 0; i < n_bh; ++i)
      for (int t = 0; t < n_q; ++t) ck_assert_int_eq(seen[i][t], 1);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson04_checklist");
  TCase *tc = tcase_create("warp_partition");
  tcase_add_test(tc, warp_owns_a_band_of_rows);
  tcase_add_test(tc, fragments_known_entries);
  tcase_add_test(tc, fragments_cover_each_element_once);
  tcase_add_test(tc, accumulator_is_the_next_a_operand);
  tcase_add_test(tc, ldmatrix_feeds_the_a_fragment);
  tcase_add_test(tc, swizzle_is_conflict_free);
  tcase_add_test(tc, tile_plan_matches_brute_force);
  tcase_add_test(tc, schedule_covers_every_tile_heavy_first);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
