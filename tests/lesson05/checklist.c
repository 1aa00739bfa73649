/* Lesson 05's checklist: the stage ring's barrier parities, the 128-byte swizzle, the wgmma
 * descriptor, the persistent grid's causal order and version 13's exponential (hopper_layout.h).
 * Built against the lesson's answers (checklist-5, must pass) and against drills/05 (drill-5). The
 * parities are checked against a model of an mbarrier, not against a formula. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hopper_layout.h"

/* An mbarrier as the hardware keeps it: the number of phases completed so far. try_wait.parity(P)
 * succeeds when the phase with parity P is the most recently completed one, i.e. when the current
 * (incomplete) phase's parity differs from P. A fresh barrier is in phase 0. */
static int try_wait(long completed, int parity) {
  return (int)(completed & 1) != parity;
}

START_TEST(stage_cycles_through_the_ring) {
  for (int stages = 1; stages <= 4; ++stages)
    for (long k = 0; k < 40; ++k) ck_assert_int_eq(l05_stage(k, stages), (int)(k % stages));
  ck_assert_int_eq(l05_stage(-1, 2), -1);
  ck_assert_int_eq(l05_stage(3, 0), -1);
}
END_TEST

/* Tile k is use u = k / stages of its stage. Its "full" barrier completes a phase each time a tile
 * lands there: the consumer of use u must pass once u + 1 phases are complete, and must block while
 * only u are. */
START_TEST(full_parity_waits_for_this_use_only) {
  for (int stages = 1; stages <= 4; ++stages)
    for (long k = 0; k < 64; ++k) {
      const long u = k / stages;
      const int p = l05_full_parity(k, stages);
      ck_assert_msg(p == 0 || p == 1, "k %ld stages %d: parity %d", k, stages, p);
      ck_assert_msg(try_wait(u + 1, p), "k %ld stages %d: blocks after its tile landed", k, stages);
      ck_assert_msg(!try_wait(u, p), "k %ld stages %d: passes before its tile landed", k, stages);
    }
  ck_assert_int_eq(l05_full_parity(-1, 2), -1);
  ck_assert_int_eq(l05_full_parity(1, 0), -1);
}
END_TEST

/* The "empty" barrier completes a phase each time the consumers release the stage. The producer's
 * use u must pass once use u - 1 is released (u phases complete; none for u = 0) and must block
 * while it is not (u - 1 phases complete). */
START_TEST(empty_parity_first_pass_free_then_waits) {
  for (int stages = 1; stages <= 4; ++stages)
    for (long k = 0; k < 64; ++k) {
      const long u = k / stages;
      const int p = l05_empty_parity(k, stages);
      ck_assert_msg(p == 0 || p == 1, "k %ld stages %d: parity %d", k, stages, p);
      ck_assert_msg(try_wait(u, p), "k %ld stages %d: blocks although the stage is free", k,
                    stages);
      if (u > 0)
        ck_assert_msg(!try_wait(u - 1, p), "k %ld stages %d: overwrites a stage still in use", k,
                      stages);
    }
  ck_assert_int_eq(l05_empty_parity(-3, 2), -1);
}
END_TEST

/* The swizzle is a permutation of the tile, keeps each 16-byte chunk whole, and puts the same chunk
 * column of 8 consecutive rows in 8 different bank groups (what makes it conflict-free). */
START_TEST(swizzle_is_a_conflict_free_permutation) {
  const int dims[2] = {64, 128}, row_counts[3] = {8, 64, 128};
  for (int di = 0; di < 2; ++di)
    for (int ri = 0; ri < 3; ++ri) {
      const int dim = dims[di], rows = row_counts[ri];
      const size_t bytes = (size_t)rows * dim * 2;
      unsigned char *seen = calloc(bytes, 1);
      ck_assert_ptr_nonnull(seen);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < dim; ++c) {
          const uint32_t off = l05_swizzle128_offset(r, c, rows);
          ck_assert_msg(off < bytes && off % 2 == 0, "(%d, %d) of %d x %d: offset %u", r, c, rows,
                        dim, off);
          ck_assert_msg(!seen[off], "(%d, %d) of %d x %d: offset %u taken twice", r, c, rows, dim,
                        off);
          seen[off] = 1;
          if (c % 8)
            ck_assert_uint_eq(off, l05_swizzle128_offset(r, c - c % 8, rows) + 2u * (c % 8));
        }
      free(seen);
      for (int r0 = 0; r0 < rows; r0 += 8)
        for (int c = 0; c < dim; c += 8) {
          unsigned groups = 0;
          for (int r = r0; r < r0 + 8; ++r)
            groups |= 1u << ((l05_swizzle128_offset(r, c, rows) / 16) % 8);
          ck_assert_msg(groups == 0xFFu, "rows %d..%d, column %d: bank groups %#x", r0, r0 + 7, c,
                        groups);
        }
    }
}
END_TEST

/* A few addresses worked by hand, and the refusals. */
START_TEST(swizzle_worked_examples) {
  ck_assert_uint_eq(l05_swizzle128_offset(0, 0, 64), 0);
  ck_assert_uint_eq(l05_swizzle128_offset(1, 0, 64), 128 + 16);               /* chunk 0 -> 1 */
  ck_assert_uint_eq(l05_swizzle128_offset(1, 8, 64), 128);                    /* chunk 1 -> 0 */
  ck_assert_uint_eq(l05_swizzle128_offset(9, 63, 16), 1152 + 96 + 14);        /* chunk 7 -> 6 */
  ck_assert_uint_eq(l05_swizzle128_offset(3, 64, 128), 16384 + 384 + 48 + 0); /* panel 1 */
  ck_assert_uint_eq(l05_swizzle128_offset(-1, 0, 64), 0xFFFFFFFFu);
  ck_assert_uint_eq(l05_swizzle128_offset(64, 0, 64), 0xFFFFFFFFu);
}
END_TEST

START_TEST(descriptor_fields) {
  const uint64_t d = l05_wgmma_desc(0x2400, 16384, 1024, 128);
  ck_assert_uint_eq(d & 0x3FFF, 0x2400 >> 4);
  ck_assert_uint_eq((d >> 16) & 0x3FFF, 16384 >> 4);
  ck_assert_uint_eq((d >> 32) & 0x3FFF, 1024 >> 4);
  ck_assert_uint_eq((d >> 49) & 7, 0);
  ck_assert_uint_eq(d >> 62, 1);
  /* nothing outside the fields */
  const uint64_t fields = 0x3FFFull | 0x3FFFull << 16 | 0x3FFFull << 32 | 7ull << 49 | 3ull << 62;
  ck_assert_uint_eq(d & ~fields, 0);
  ck_assert_uint_eq(l05_wgmma_desc(0x2400, 16, 1024, 64) >> 62, 2);
  ck_assert_uint_eq(l05_wgmma_desc(0x2400, 16, 1024, 32) >> 62, 3);
  ck_assert_uint_eq(l05_wgmma_desc(0x2400, 16, 1024, 0) >> 62, 0);
  ck_assert_uint_eq(l05_wgmma_desc(0x3FFF0, 0x3FFF0, 0x3FFF0, 0) & 0x3FFF, 0x3FFF);
  /* refusals: unaligned, too far, an unknown swizzle */
  ck_assert_uint_eq(l05_wgmma_desc(0x2408, 16, 1024, 128), 0);
  ck_assert_uint_eq(l05_wgmma_desc(0x2400, 8, 1024, 128), 0);
  ck_assert_uint_eq(l05_wgmma_desc(1u << 18, 16, 1024, 128), 0);
  ck_assert_uint_eq(l05_wgmma_desc(0x2400, 16, 1024, 256), 0);
}
END_TEST

/* A k-step's descriptor is the operand's first plus the step's bytes / 16 (wgmma_desc_at() in
 * hopper.cuh): inside the 256 KB the start field spans, the add never carries into the field
 * above it, at 16-byte addresses and offsets sampled across that range. */
START_TEST(descriptor_by_addition) {
  for (uint32_t a = 0; a < (1u << 18); a += 16 * 37)
    for (uint32_t b = 0; a + b < (1u << 18); b += 16 * 101) {
      const uint64_t d = l05_wgmma_desc(a, 16, 1024, 128);
      ck_assert_uint_eq(d + (b >> 4), l05_wgmma_desc(a + b, 16, 1024, 128));
      ck_assert_uint_eq(l05_wgmma_desc(a, 8192, 1024, 128) + (b >> 4),
                        l05_wgmma_desc(a + b, 8192, 1024, 128));
    }
}
END_TEST

/* The causal order, built from its contract by loops (the groups' sizes, then inside each group
 * the Q tiles from the last down, every pair of the group at one tile before the next) and
 * compared item by item, on 1-70 Q tiles, 1-70 pairs, three grids and two wave counts. */
START_TEST(causal_order_longest_first_in_groups) {
  static int want_tile[1 << 13], want_pair[1 << 13];
  const int grids[] = {1, 7, 132};
  for (int gi = 0; gi < 3; ++gi)
    for (int waves = 1; waves <= 2; ++waves)
      for (int tiles = 1; tiles <= 70; tiles += 3)
        for (int pairs = 1; pairs <= 70; pairs += 4) {
          const int grid = grids[gi], items = tiles * pairs;
          int per = (waves * grid + tiles - 1) / tiles; /* pairs a group needs at least */
          per = per < 1 ? 1 : (per > pairs ? pairs : per);
          const int groups = pairs / per, size = pairs / groups, larger = pairs - groups * size;
          int k = 0;
          for (int g = 0, p0 = 0; g < groups; ++g) {
            const int gs = g < larger ? size + 1 : size;
            for (int t = tiles - 1; t >= 0; --t)
              for (int x = 0; x < gs; ++x, ++k) want_tile[k] = t, want_pair[k] = p0 + x;
            p0 += gs;
          }
          ck_assert_int_eq(k, items);
          int bad = -1; /* the first wrong item */
          for (int i = 0; i < items && bad < 0; ++i) {
            int t = -1, p = -1;
            if (l05_causal_item(i, tiles, pairs, grid, waves, &t, &p) != 0 || t != want_tile[i] ||
                p != want_pair[i])
              bad = i;
          }
          if (bad >= 0) {
            int t = -1, p = -1;
            const int rc = l05_causal_item(bad, tiles, pairs, grid, waves, &t, &p);
            ck_abort_msg(
                "tiles %d pairs %d grid %d waves %d item %d: rc %d (%d, %d), want (%d, %d)", tiles,
                pairs, grid, waves, bad, rc, t, p, want_tile[bad], want_pair[bad]);
          }
        }
}
END_TEST

/* 2^x from the bits (version 13's exponential, l05_exp2_fma()): exact at every power of two from
 * 2^-126 to 1 (a row's largest value, x = 0, must come out 1); above 2^x between them, most near
 * f = 0.44 (up to 6.2%) and by 4.1% on average over a power of two, never below it beyond x's own
 * rounding to 2^-8; +0 from x = -127 down, a masked score's -inf included, where the bits would
 * otherwise wrap round the exponent field, and a subnormal just above. */
START_TEST(exp2_from_the_bits) {
  for (int e = -126; e <= 0; ++e) {
    ck_assert_msg(l05_exp2_fma((float)e) == ldexpf(1.0f, e), "2^%d: got %g", e,
                  (double)l05_exp2_fma((float)e));
    const float x = (float)e - 0.56f; /* fraction 0.44 */
    const double r = l05_exp2_fma(x) / exp2((double)x);
    if (e > -126) ck_assert_msg(r > 1.05 && r < 1.064, "x = %g: %g times 2^x", (double)x, r);
  }
  double mean = 0.0;
  const int n = 1 << 16;
  for (int i = 0; i < n; ++i) {
    const float x = -1.0f + ((float)i + 0.5f) / (float)n; /* one power of two, [-1, 0) */
    const double r = l05_exp2_fma(x) / exp2((double)x);
    ck_assert_msg(r >= 0.998 && r <= 1.064, "x = %g: %g times 2^x", (double)x, r);
    mean += r / n;
  }
  ck_assert_msg(fabs(mean - 1.0407) < 2e-3, "mean %g times 2^x over [-1, 0)", mean);
  const float below[4] = {-127.0f, -127.5f, -300.0f, -INFINITY};
  for (int i = 0; i < 4; ++i)
    ck_assert_msg(l05_exp2_fma(below[i]) == 0.0f, "x = %g", (double)below[i]);
  ck_assert_msg(l05_exp2_fma(-126.5f) > 0.0f, "x = -126.5: below 2^-126, still above 0");
}
END_TEST

/* Version 14's half tile (l05_last_tile_half(); the answer calls the kernel's own
 * attn_last_tile_half()), against brute force over rows and keys, with 128-row Q tiles over
 * 256-key KV tiles and over small tiles: the last tile is halved exactly when no row of the Q tile
 * sees a key of its second half. Then the counts the README gives for the papers' causal shapes,
 * one head: 2 of 6 tiles at seq 512, 16 of 272 at 4k, 64 of 4160 at 16k. */
static int keys_seen(int row, int sq, int skv, int causal) {
  if (!causal) return skv;
  const int n = row + skv - sq + 1;
  return n < 0 ? 0 : (n > skv ? skv : n);
}

START_TEST(last_tile_half_where_no_row_sees_the_second_half) {
  static const int kLens[][2] = {{1, 1},      {1, 100},     {5, 1},       {130, 130},
                                 {256, 256},  {300, 520},   {200, 130},   {640, 1152},
                                 {777, 3000}, {2900, 2900}, {3000, 3000}, {4100, 129},
                                 {1100, 700}, {128, 129},   {383, 383},   {17, 40}};
  static const int kTiles[][2] = {{128, 256}, {16, 32}, {32, 16}};
  for (size_t t = 0; t < sizeof kTiles / sizeof kTiles[0]; ++t)
    for (size_t c = 0; c < sizeof kLens / sizeof kLens[0]; ++c)
      for (int causal = 0; causal <= 1; ++causal) {
        const int br = kTiles[t][0], bc = kTiles[t][1], sq = kLens[c][0], skv = kLens[c][1];
        for (int q0 = 0; q0 < sq; q0 += br) {
          int last = 0; /* one past the last key any row of the tile sees */
          for (int r = q0; r < q0 + br && r < sq; ++r) {
            const int n = keys_seen(r, sq, skv, causal);
            last = n > last ? n : last;
          }
          const int tiles = (last + bc - 1) / bc, k_half = (tiles - 1) * bc + bc / 2;
          int seen = 0; /* a row sees a key of the last tile's second half */
          for (int r = q0; r < q0 + br && r < sq && tiles > 0; ++r)
            for (int j = k_half; j < tiles * bc && j < skv; ++j)
              seen |= j < keys_seen(r, sq, skv, causal);
          ck_assert_msg(
              l05_last_tile_half(q0, br, sq, skv, bc, causal) == (tiles > 0 && !seen),
              "tiles %d x %d, seq %d kv %d causal %d q0 %d: %d tiles, second half seen %d", br, bc,
              sq, skv, causal, q0, tiles, seen);
        }
      }
  static const int kGrid[][2] = {{512, 2}, {4096, 16}, {16384, 64}};
  for (int g = 0; g < 3; ++g) {
    int halves = 0;
    for (int q0 = 0; q0 < kGrid[g][0]; q0 += 128)
      halves += l05_last_tile_half(q0, 128, kGrid[g][0], kGrid[g][0], 256, 1);
    ck_assert_int_eq(halves, kGrid[g][1]);
  }
  ck_assert_int_eq(l05_last_tile_half(0, 128, 10, 10, 255, 1), -1);
  ck_assert_int_eq(l05_last_tile_half(0, 0, 10, 10, 256, 1), -1);
}
END_TEST

/* Version 15's lists (l05_pair_item(), which calls the kernel's attn_pair_place() and
 * attn_pair_item()): every item in exactly one block's list; under the mask a list's items two by
 * two, tile j then tile n - 1 - j of one pair; and every block's work, counted in the KV tiles its
 * items visit at seq_q == seq_kv (tile t visits t + 1 under the mask, n without it), within one
 * two-by-two of every other block's (one item without the mask). */
START_TEST(pair_lists_take_every_item_once_and_even_out_the_mask) {
  static const int kShapes[][3] = {/* Q tiles, pairs, blocks */
                                   {16, 128, 132}, {128, 16, 132}, {24, 80, 132}, {32, 64, 132},
                                   {5, 3, 4},      {1, 7, 3},      {7, 5, 132},   {2, 1, 1}};
  for (size_t c = 0; c < sizeof kShapes / sizeof kShapes[0]; ++c)
    for (int causal = 0; causal <= 1; ++causal) {
      const int nq = kShapes[c][0], np = kShapes[c][1], grid = kShapes[c][2];
      char *seen = calloc((size_t)nq * np, 1);
      ck_assert_ptr_nonnull(seen);
      long lo = -1, hi = -1;
      for (int b = 0; b < grid; ++b) {
        long work = 0;
        int prev_t = -1, prev_p = -1, k = 0, t = -1, pr = -1, rc;
        while ((rc = l05_pair_item(k, grid, b, nq, np, causal, &t, &pr)) == 0) {
          ck_assert_msg(t >= 0 && t < nq && pr >= 0 && pr < np,
                        "block %d place %d: tile %d pair %d", b, k, t, pr);
          ck_assert_msg(!seen[(size_t)pr * nq + t],
                        "tiles %d pairs %d grid %d causal %d: tile %d "
                        "of pair %d twice",
                        nq, np, grid, causal, t, pr);
          seen[(size_t)pr * nq + t] = 1;
          work += causal ? t + 1 : nq;
          if (causal && (k & 1) && nq % 2 == 0)
            ck_assert_msg(pr == prev_p && t + prev_t == nq - 1,
                          "block %d places %d, %d: tiles %d and %d of pairs %d and %d", b, k - 1, k,
                          prev_t, t, prev_p, pr);
          prev_t = t, prev_p = pr, ++k;
        }
        ck_assert_int_eq(rc, 1);
        lo = lo < 0 || work < lo ? work : lo;
        hi = work > hi ? work : hi;
      }
      for (int i = 0; i < nq * np; ++i)
        ck_assert_msg(seen[i], "tiles %d pairs %d grid %d causal %d: item %d in no list", nq, np,
                      grid, causal, i);
      free(seen);
      if (!causal)
        ck_assert_msg(hi - lo <= nq, "lists of %ld to %ld tiles", lo, hi);
      else if (nq % 2 == 0)
        ck_assert_msg(hi - lo <= nq + 1, "lists of %ld to %ld tiles under the mask", lo, hi);
    }
  int t = 0, pr = 0;
  ck_assert_int_eq(l05_pair_item(-1, 4, 0, 4, 4, 1, &t, &pr), -1);
  ck_assert_int_eq(l05_pair_item(0, 0, 0, 4, 4, 1, &t, &pr), -1);
  ck_assert_int_eq(l05_pair_item(0, 4, 4, 4, 4, 1, &t, &pr), -1);
  ck_assert_int_eq(l05_pair_item(0, 4, 0, 0, 4, 1, &t, &pr), -1);
  ck_assert_int_eq(l05_pair_item(0, 4, 0, 4, 4, 1, NULL, &pr), -1);
}
END_TEST

/* Seq 2048 in Q tiles of 128 rows (16 a head), batch 8 x 16 heads, 132 blocks, with the mask:
 * 1024 two-by-twos, so blocks 0-99 take 8 and blocks 100-131 take 7 (the README's "8 for the
 * busiest, 7.76 on average"). Block 0 starts with pair 0's tiles 0 and 15, then takes two-by-two
 * 132: items 264 and 265, pair 16's tiles 4 and 11. */
START_TEST(pair_lists_worked_example) {
  int t = -1, pr = -1;
  ck_assert_int_eq(l05_pair_item(0, 132, 0, 16, 128, 1, &t, &pr), 0);
  ck_assert_int_eq(t, 0);
  ck_assert_int_eq(pr, 0);
  ck_assert_int_eq(l05_pair_item(1, 132, 0, 16, 128, 1, &t, &pr), 0);
  ck_assert_int_eq(t, 15);
  ck_assert_int_eq(pr, 0);
  ck_assert_int_eq(l05_pair_item(2, 132, 0, 16, 128, 1, &t, &pr), 0);
  ck_assert_int_eq(t, 4);
  ck_assert_int_eq(pr, 16);
  ck_assert_int_eq(l05_pair_item(3, 132, 0, 16, 128, 1, &t, &pr), 0);
  ck_assert_int_eq(t, 11);
  ck_assert_int_eq(pr, 16);
  ck_assert_int_eq(l05_pair_item(15, 132, 99, 16, 128, 1, &t, &pr), 0);
  ck_assert_int_eq(l05_pair_item(16, 132, 99, 16, 128, 1, &t, &pr), 1);
  ck_assert_int_eq(l05_pair_item(13, 132, 100, 16, 128, 1, &t, &pr), 0);
  ck_assert_int_eq(l05_pair_item(14, 132, 100, 16, 128, 1, &t, &pr), 1);
  /* without the mask, block 5's third item is item 5 + 2 x 132 = 269: pair 16, tile 13 */
  ck_assert_int_eq(l05_pair_item(2, 132, 5, 16, 128, 0, &t, &pr), 0);
  ck_assert_int_eq(t, 13);
  ck_assert_int_eq(pr, 16);
}
END_TEST

/* Batch 2 x 16 heads at seq 8192 (64 Q tiles of 128 rows), 132 blocks, two waves: at least
 * ceil(264 / 64) = 5 pairs a group, so 32 / 5 = 6 groups, of 6, 6, 5, 5, 5 and 5 pairs. */
START_TEST(causal_order_worked_example) {
  int t = -1, p = -1;
  ck_assert_int_eq(l05_causal_item(0, 64, 32, 132, 2, &t, &p), 0);
  ck_assert_int_eq(t, 63);
  ck_assert_int_eq(p, 0);
  ck_assert_int_eq(l05_causal_item(7, 64, 32, 132, 2, &t, &p), 0);
  ck_assert_int_eq(t, 62); /* the second round of the first group of 6 */
  ck_assert_int_eq(p, 1);
  ck_assert_int_eq(l05_causal_item(2 * 6 * 64, 64, 32, 132, 2, &t, &p), 0);
  ck_assert_int_eq(t, 63); /* the third group's first item: its first pair, 12 */
  ck_assert_int_eq(p, 12);
  ck_assert_int_eq(l05_causal_item(32 * 64 - 1, 64, 32, 132, 2, &t, &p), 0);
  ck_assert_int_eq(t, 0); /* the launch's last item: the lightest tile of the last pair */
  ck_assert_int_eq(p, 31);
  /* refusals */
  ck_assert_int_eq(l05_causal_item(32 * 64, 64, 32, 132, 2, &t, &p), -1);
  ck_assert_int_eq(l05_causal_item(-1, 64, 32, 132, 2, &t, &p), -1);
  ck_assert_int_eq(l05_causal_item(0, 0, 32, 132, 2, &t, &p), -1);
  ck_assert_int_eq(l05_causal_item(0, 64, 32, 0, 2, &t, &p), -1);
  ck_assert_int_eq(l05_causal_item(0, 64, 32, 132, 0, &t, &p), -1);
  ck_assert_int_eq(l05_causal_item(0, 64, 32, 132, 2, NULL, &p), -1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson05_checklist");
  TCase *tc = tcase_create("checklist");
  tcase_add_test(tc, stage_cycles_through_the_ring);
  tcase_add_test(tc, descriptor_by_addition);
  tcase_add_test(tc, full_parity_waits_for_this_use_only);
  tcase_add_test(tc, empty_parity_first_pass_free_then_waits);
  tcase_add_test(tc, swizzle_is_a_conflict_free_permutation);
  tcase_add_test(tc, swizzle_worked_examples);
  tcase_add_test(tc, descriptor_fields);
  tcase_add_test(tc, causal_order_longest_first_in_groups);
  tcase_add_test(tc, causal_order_worked_example);
  tcase_add_test(tc, exp2_from_the_bits);
  tcase_add_test(tc, last_tile_half_where_no_row_sees_the_second_half);
  tcase_add_test(tc, pair_lists_take_every_item_once_and_even_out_the_mask);
  tcase_add_test(tc, pair_lists_worked_example);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
