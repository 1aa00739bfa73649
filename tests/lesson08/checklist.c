/* Lesson 08's checklist: the shards, the ring's order, the pair kinds and the work model of
 * ring_plan.h. Built against the lesson's answers (checklist-8, must pass) and against
 * drills/08 (drill-8). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ring_plan.h"

/* Sequence lengths for the sweeps: below p, below 2p, multiples of nothing, and a few long. */
static const int kLens[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 100, 101, 255, 1237, 4099};
enum { N_LENS = sizeof kLens / sizeof kLens[0], MAX_N = 4099 };

/* Tokens of the whole sequence, counted as the shards claim them. */
static int g_seen[MAX_N];

/* Query i sees key j: the causal rule of one sequence (self-attention), or always. */
static int visible(int i, int j, int causal) {
  return !causal || j <= i;
}

/* The visible (query, key) pairs of two token ranges, counted one by one. */
static double brute_pairs(int q0, int q_len, int k0, int k_len, int causal) {
  double n = 0.0;
  for (int i = q0; i < q0 + q_len; ++i)
    for (int j = k0; j < k0 + k_len; ++j) n += visible(i, j, causal);
  return n;
}

/* Every token belongs to exactly one chunk of one rank, in both layouts, and the chunks are
 * near-equal: the first n % c of them one token longer than the rest. */
START_TEST(shards_cover_the_sequence_once) {
  for (int a = 0; a < N_LENS; ++a)
    for (int p = 1; p <= L08_MAX_RANKS; ++p)
      for (int layout = L08_CONTIGUOUS; layout <= L08_ZIGZAG; ++layout) {
        const int n = kLens[a], chunks = layout == L08_ZIGZAG ? 2 * p : p;
        memset(g_seen, 0, sizeof g_seen);
        for (int r = 0; r < p; ++r) {
          l08_shard s;
          ck_assert_int_eq(l08_shard_of(n, p, (l08_layout)layout, r, &s), 0);
          ck_assert_int_eq(s.n_chunks, (layout == L08_ZIGZAG ? 2 : 1));
          int tokens = 0;
          for (int c = 0; c < s.n_chunks; ++c) {
            ck_assert_msg(s.len[c] == n / chunks || s.len[c] == n / chunks + 1,
                          "n %d p %d layout %d rank %d: chunk of %d", n, p, layout, r, s.len[c]);
            ck_assert(s.start[c] >= 0 && s.start[c] + s.len[c] <= n);
            for (int t = s.start[c]; t < s.start[c] + s.len[c]; ++t) ++g_seen[t];
            tokens += s.len[c];
          }
          ck_assert_int_eq(s.tokens, tokens);
        }
        for (int t = 0; t < n; ++t)
          ck_assert_msg(g_seen[t] == 1, "n %d p %d layout %d: token %d held %d times", n, p, layout,
                        t, g_seen[t]);
      }
}
END_TEST

/* Contiguous: rank r's chunk starts where rank r - 1's ends, the longer chunks come first. */
START_TEST(contiguous_chunks_in_rank_order) {
  for (int a = 0; a < N_LENS; ++a)
    for (int p = 1; p <= L08_MAX_RANKS; ++p) {
      const int n = kLens[a];
      int next = 0;
      for (int r = 0; r < p; ++r) {
        l08_shard s;
        ck_assert_int_eq(l08_shard_of(n, p, L08_CONTIGUOUS, r, &s), 0);
        ck_assert_int_eq(s.start[0], next);
        ck_assert_int_eq(s.len[0], n / p + (r < n % p));
        next += s.len[0];
      }
      ck_assert_int_eq(next, n);
    }
  l08_shard s;
  ck_assert_int_eq(l08_shard_of(10, 4, L08_CONTIGUOUS, 2, &s), 0); /* 3, 3, 2, 2 */
  ck_assert(s.start[0] == 6 && s.len[0] == 2 && s.tokens == 2);
}
END_TEST

/* Zig-zag: rank r holds chunk r and chunk 2p - 1 - r of 2p, in that order, so the front chunks
 * run up the ranks to the middle of the sequence and the back chunks run down them to its end. */
START_TEST(zigzag_chunk_identities) {
  for (int a = 0; a < N_LENS; ++a)
    for (int p = 1; p <= L08_MAX_RANKS; ++p) {
      const int n = kLens[a], c2 = 2 * p;
      l08_shard s[L08_MAX_RANKS];
      for (int r = 0; r < p; ++r) ck_assert_int_eq(l08_shard_of(n, p, L08_ZIGZAG, r, &s[r]), 0);
      ck_assert_int_eq(s[0].start[0], 0);
      ck_assert_int_eq(s[0].start[1] + s[0].len[1], n);
      ck_assert_int_eq(s[p - 1].start[0] + s[p - 1].len[0], s[p - 1].start[1]);
      for (int r = 0; r < p; ++r) {
        ck_assert_int_eq(s[r].len[0], n / c2 + (r < n % c2));
        ck_assert_int_eq(s[r].len[1], n / c2 + (c2 - 1 - r < n % c2));
        ck_assert_int_le(s[r].start[0], s[r].start[1]);
        if (r + 1 < p) {
          ck_assert_int_eq(s[r].start[0] + s[r].len[0], s[r + 1].start[0]);
          ck_assert_int_eq(s[r + 1].start[1] + s[r + 1].len[1], s[r].start[1]);
        }
      }
    }
  l08_shard s;
  ck_assert_int_eq(l08_shard_of(10, 2, L08_ZIGZAG, 0, &s), 0); /* chunks 3, 3, 2, 2 */
  ck_assert(s.start[0] == 0 && s.len[0] == 3 && s.start[1] == 8 && s.len[1] == 2 && s.tokens == 5);
  ck_assert_int_eq(l08_shard_of(10, 2, L08_ZIGZAG, 1, &s), 0);
  ck_assert(s.start[0] == 3 && s.len[0] == 3 && s.start[1] == 6 && s.len[1] == 2 && s.tokens == 5);
  /* n < 2p: chunks 1, 1, 1, 0, so rank 0's back chunk holds no token */
  ck_assert_int_eq(l08_shard_of(3, 2, L08_ZIGZAG, 0, &s), 0);
  ck_assert(s.start[0] == 0 && s.len[0] == 1 && s.start[1] == 3 && s.len[1] == 0 && s.tokens == 1);
  ck_assert_int_eq(l08_shard_of(3, 2, L08_ZIGZAG, 1, &s), 0);
  ck_assert(s.start[0] == 1 && s.len[0] == 1 && s.start[1] == 2 && s.len[1] == 1 && s.tokens == 2);
}
END_TEST

/* Arguments out of range: -1 and a zeroed shard, never a half-filled one. */
START_TEST(shard_refuses_bad_arguments) {
  const int bad[][4] = {
      {0, 2, L08_CONTIGUOUS, 0},
      {-5, 2, L08_ZIGZAG, 0},
      {10, 0, L08_CONTIGUOUS, 0},
      {10, 9, L08_ZIGZAG, 0},
      {10, 4, L08_CONTIGUOUS, -1},
      {10, 4, L08_ZIGZAG, 4},
      {10, 4, 2, 0},
      {10, L08_MAX_RANKS + 1, 0, 0},
  };
  for (size_t c = 0; c < sizeof bad / sizeof bad[0]; ++c) {
    l08_shard s;
    memset(&s, 0x5a, sizeof s);
    ck_assert_int_eq(l08_shard_of(bad[c][0], bad[c][1], (l08_layout)bad[c][2], bad[c][3], &s), -1);
    ck_assert(s.n_chunks == 0 && s.tokens == 0 && s.len[0] == 0 && s.start[0] == 0);
  }
  ck_assert_int_eq(l08_shard_of(10, 2, L08_CONTIGUOUS, 0, NULL), -1);
}
END_TEST

/* (rank - step) mod p, in 0..p-1 also when rank - step is negative; at every step the ranks hold
 * p different blocks, and over the p steps every rank holds every block once. */
START_TEST(block_origin_wraps_around) {
  ck_assert_int_eq(l08_block_origin(0, 0, 4), 0);
  ck_assert_int_eq(l08_block_origin(0, 1, 4), 3);
  ck_assert_int_eq(l08_block_origin(1, 3, 4), 2);
  ck_assert_int_eq(l08_block_origin(2, 2, 3), 0);
  ck_assert_int_eq(l08_block_origin(0, 7, 8), 1);
  ck_assert_int_eq(l08_block_origin(5, 9, 8), 4); /* a step past the ring still wraps */
  ck_assert_int_eq(l08_block_origin(0, 5, 1), 0);
  for (int p = 1; p <= L08_MAX_RANKS; ++p) {
    int seen_at_step[L08_MAX_RANKS][L08_MAX_RANKS] = {{0}};
    int seen_by_rank[L08_MAX_RANKS][L08_MAX_RANKS] = {{0}};
    for (int r = 0; r < p; ++r)
      for (int s = 0; s < p; ++s) {
        const int o = l08_block_origin(r, s, p);
        ck_assert_msg(o >= 0 && o < p, "rank %d step %d p %d: %d", r, s, p, o);
        ck_assert_int_eq((o + s) % p, r); /* the block came s hops from its origin */
        ++seen_at_step[s][o];
        ++seen_by_rank[r][o];
      }
    for (int x = 0; x < p; ++x)
      for (int y = 0; y < p; ++y) {
        ck_assert_int_eq(seen_at_step[x][y], 1);
        ck_assert_int_eq(seen_by_rank[x][y], 1);
      }
    /* step s + 1's block at rank r is step s's at rank r - 1: what the ring sends */
    for (int r = 0; r < p; ++r)
      for (int s = 0; s + 1 < p; ++s)
        ck_assert_int_eq(l08_block_origin(r, s + 1, p), l08_block_origin((r + p - 1) % p, s, p));
  }
}
END_TEST

/* Every kind of pair, at its edges. */
START_TEST(pair_kinds) {
  /* causal, keys wholly before the queries (the last key may be the first query) */
  ck_assert_int_eq(l08_pair_kind(8, 4, 0, 4, 1), L08_PAIR_FULL);
  ck_assert_int_eq(l08_pair_kind(4, 4, 0, 5, 1), L08_PAIR_FULL);
  ck_assert_int_eq(l08_pair_kind(3, 1, 3, 1, 1), L08_PAIR_FULL); /* one token against itself */
  /* causal, keys wholly after the queries */
  ck_assert_int_eq(l08_pair_kind(0, 4, 4, 4, 1), L08_PAIR_SKIP);
  ck_assert_int_eq(l08_pair_kind(0, 4, 100, 1, 1), L08_PAIR_SKIP);
  /* the same chunk, and keys that start earlier but end on the same token */
  ck_assert_int_eq(l08_pair_kind(4, 4, 4, 4, 1), L08_PAIR_DIAG);
  ck_assert_int_eq(l08_pair_kind(4, 4, 0, 8, 1), L08_PAIR_DIAG);
  ck_assert_int_eq(l08_pair_kind(0, 2, 0, 2, 1), L08_PAIR_DIAG);
  /* an empty chunk is skipped, masked or not */
  for (int causal = 0; causal <= 1; ++causal) {
    ck_assert_int_eq(l08_pair_kind(3, 0, 0, 5, causal), L08_PAIR_SKIP);
    ck_assert_int_eq(l08_pair_kind(0, 5, 3, 0, causal), L08_PAIR_SKIP);
    ck_assert_int_eq(l08_pair_kind(2, 0, 2, 0, causal), L08_PAIR_SKIP);
  }
  /* overlaps no layout makes */
  ck_assert_int_eq(l08_pair_kind(0, 4, 2, 4, 1), -1);  /* keys start inside, end after */
  ck_assert_int_eq(l08_pair_kind(0, 8, 4, 4, 1), -1);  /* same end, keys start after */
  ck_assert_int_eq(l08_pair_kind(4, 4, 2, 4, 1), -1);  /* keys start before, end inside */
  ck_assert_int_eq(l08_pair_kind(0, 10, 2, 4, 1), -1); /* keys inside the queries */
  /* without the mask every non-empty pair is full, wherever the keys are */
  ck_assert_int_eq(l08_pair_kind(0, 4, 4, 4, 0), L08_PAIR_FULL);
  ck_assert_int_eq(l08_pair_kind(4, 4, 4, 4, 0), L08_PAIR_FULL);
  ck_assert_int_eq(l08_pair_kind(0, 4, 2, 4, 0), L08_PAIR_FULL);
  ck_assert_int_eq(l08_pair_kind(8, 4, 0, 4, 0), L08_PAIR_FULL);
}
END_TEST

/* The work of a pair is its visible (query, key) pairs counted one by one, for every kind but -1
 * (which counts 0); a DIAG pair counts exactly the pairs of the bottom-right mask. */
START_TEST(pair_work_matches_brute_force) {
  int kinds[3] = {0};
  for (int causal = 0; causal <= 1; ++causal)
    for (int q0 = 0; q0 <= 9; ++q0)
      for (int ql = 0; ql <= 7; ++ql)
        for (int k0 = 0; k0 <= 9; ++k0)
          for (int kl = 0; kl <= 7; ++kl) {
            const int kind = l08_pair_kind(q0, ql, k0, kl, causal);
            const double w = l08_pair_work(q0, ql, k0, kl, causal);
            if (kind < 0) {
              ck_assert_msg(w == 0.0, "q %d+%d k %d+%d: -1 counts %g", q0, ql, k0, kl, w);
              continue;
            }
            ++kinds[kind];
            const double want = brute_pairs(q0, ql, k0, kl, causal);
            ck_assert_msg(w == want, "q %d+%d k %d+%d causal %d kind %d: %g, want %g", q0, ql, k0,
                          kl, causal, kind, w, want);
            if (kind == L08_PAIR_SKIP) ck_assert(want == 0.0);
            if (kind == L08_PAIR_FULL) ck_assert(want == (double)ql * kl);
          }
  ck_assert(kinds[L08_PAIR_SKIP] > 0 && kinds[L08_PAIR_FULL] > 0 && kinds[L08_PAIR_DIAG] > 0);
  /* the triangle of a chunk against itself, and the bottom-right band */
  ck_assert(l08_pair_work(100, 64, 100, 64, 1) == 64.0 * 65 / 2);
  ck_assert(l08_pair_work(60, 4, 0, 64, 1) == 4.0 * 60 + 10);
  ck_assert(l08_pair_work(0, 1000, 1000, 1000, 0) == 1e6);
}
END_TEST

/* A rank's work at a step is its queries against the block it holds, counted one by one. */
START_TEST(step_work_matches_brute_force) {
  for (int n = 1; n <= 40; ++n)
    for (int p = 1; p <= L08_MAX_RANKS; ++p)
      for (int layout = L08_CONTIGUOUS; layout <= L08_ZIGZAG; ++layout)
        for (int causal = 0; causal <= 1; ++causal) {
          double total = 0.0; /* the brute-force counts add up to the whole problem */
          for (int r = 0; r < p; ++r)
            for (int s = 0; s < p; ++s) {
              l08_shard mine, held;
              ck_assert_int_eq(l08_shard_of(n, p, (l08_layout)layout, r, &mine), 0);
              ck_assert_int_eq(
                  l08_shard_of(n, p, (l08_layout)layout, l08_block_origin(r, s, p), &held), 0);
              double want = 0.0;
              for (int a = 0; a < mine.n_chunks; ++a)
                for (int b = 0; b < held.n_chunks; ++b)
                  want +=
                      brute_pairs(mine.start[a], mine.len[a], held.start[b], held.len[b], causal);
              const double w = l08_step_work(n, p, (l08_layout)layout, causal, r, s);
              ck_assert_msg(w == want, "n %d p %d layout %d causal %d rank %d step %d: %g, want %g",
                            n, p, layout, causal, r, s, w, want);
              total += want;
            }
          ck_assert(total == (causal ? (double)n * (n + 1) / 2 : (double)n * n));
        }
  /* out of range: nothing */
  ck_assert(l08_step_work(10, 4, L08_ZIGZAG, 1, 0, 4) == 0.0);
  ck_assert(l08_step_work(10, 4, L08_ZIGZAG, 1, 0, -1) == 0.0);
  ck_assert(l08_step_work(10, 4, L08_ZIGZAG, 1, 4, 0) == 0.0);
  ck_assert(l08_step_work(0, 4, L08_ZIGZAG, 1, 0, 0) == 0.0);
  ck_assert(l08_step_work(10, 9, L08_CONTIGUOUS, 0, 0, 0) == 0.0);
}
END_TEST

/* Over every rank and step the ring computes the whole problem once: n^2 pairs, n (n + 1) / 2
 * with the mask. */
START_TEST(step_work_sums_to_the_problem) {
  for (int a = 0; a < N_LENS; ++a)
    for (int p = 1; p <= L08_MAX_RANKS; ++p)
      for (int layout = L08_CONTIGUOUS; layout <= L08_ZIGZAG; ++layout)
        for (int causal = 0; causal <= 1; ++causal) {
          const int n = kLens[a];
          double sum = 0.0;
          for (int r = 0; r < p; ++r)
            for (int s = 0; s < p; ++s)
              sum += l08_step_work(n, p, (l08_layout)layout, causal, r, s);
          const double want = causal ? (double)n * (n + 1) / 2 : (double)n * n;
          ck_assert_msg(sum == want, "n %d p %d layout %d causal %d: %g, want %g", n, p, layout,
                        causal, sum, want);
          l08_balance b;
          ck_assert_int_eq(l08_balance_of(n, p, (l08_layout)layout, causal, &b), 0);
          ck_assert(b.total == want);
          ck_assert(b.max_rank >= b.total / p && b.max_rank <= b.total);
          ck_assert(b.critical >= b.max_rank && b.critical <= b.total);
          ck_assert(fabs(b.imbalance * b.ideal_speedup - p) < 1e-9 * p);
          ck_assert(fabs(b.critical_speedup - b.total / b.critical) < 1e-12 * p);
        }
}
END_TEST

/* Zig-zag under the mask: perfect balance when 2p divides n (every rank, every step: step 0 a
 * chunk's triangle twice and a full square, then two full squares), and within 3p / n of it
 * otherwise. */
START_TEST(zigzag_balances_the_causal_ring) {
  for (int p = 1; p <= L08_MAX_RANKS; ++p) {
    for (int c = 1; c <= 64; c += 9) {
      const int n = 2 * p * c;
      for (int s = 0; s < p; ++s)
        for (int r = 0; r < p; ++r) {
          const double want = s == 0 ? 2.0 * c * c + c : 2.0 * c * c;
          ck_assert(l08_step_work(n, p, L08_ZIGZAG, 1, r, s) == want);
        }
      l08_balance b;
      ck_assert_int_eq(l08_balance_of(n, p, L08_ZIGZAG, 1, &b), 0);
      ck_assert(b.imbalance == 1.0 && b.critical == b.max_rank);
      ck_assert(fabs(b.critical_speedup - p) < 1e-12 * p);
    }
    for (int n = 1; n <= 600; ++n) {
      l08_balance b;
      ck_assert_int_eq(l08_balance_of(n, p, L08_ZIGZAG, 1, &b), 0);
      ck_assert_msg(b.imbalance <= 1.0 + 3.0 * p / n, "n %d p %d: imbalance %g", n, p, b.imbalance);
    }
  }
}
END_TEST

/* Contiguous under the mask: rank r does r full squares and one triangle, so the last rank does
 * (p - 1) c^2 + c (c + 1) / 2 of n (n + 1) / 2; the imbalance tends to (2p - 1) / p, and the
 * last rank does about 2p - 1 times the first one's work. The zig-zag bound above fails it. */
START_TEST(contiguous_is_unbalanced_under_the_mask) {
  for (int p = 2; p <= L08_MAX_RANKS; ++p) {
    for (int c = 1; c <= 1000; c += 111) {
      const int n = p * c;
      l08_balance b;
      ck_assert_int_eq(l08_balance_of(n, p, L08_CONTIGUOUS, 1, &b), 0);
      const double last = (double)(p - 1) * c * c + (double)c * (c + 1) / 2;
      ck_assert(b.max_rank == last);
      ck_assert(b.critical == last); /* the busiest rank at every step is the last */
      ck_assert(fabs(b.imbalance - last * p / ((double)n * (n + 1) / 2)) < 1e-12);
      const double first = l08_step_work(n, p, L08_CONTIGUOUS, 1, 0, 0);
      ck_assert(first == (double)c * (c + 1) / 2);
      for (int s = 1; s < p; ++s) ck_assert(l08_step_work(n, p, L08_CONTIGUOUS, 1, 0, s) == 0.0);
    }
    l08_balance b;
    ck_assert_int_eq(l08_balance_of(1000 * p, p, L08_CONTIGUOUS, 1, &b), 0);
    ck_assert_msg(fabs(b.imbalance - (2.0 * p - 1) / p) < 1e-2, "p %d: %g", p, b.imbalance);
    const double ratio = b.max_rank / l08_step_work(1000 * p, p, L08_CONTIGUOUS, 1, 0, 0);
    ck_assert_msg(fabs(ratio - (2.0 * p - 1)) < 0.01 * p, "p %d: last / first %g", p, ratio);
    for (int n = 16 * p; n <= 600; n += 7) {
      ck_assert_int_eq(l08_balance_of(n, p, L08_CONTIGUOUS, 1, &b), 0);
      ck_assert_msg(b.imbalance > 1.0 + 3.0 * p / n, "n %d p %d: %g", n, p, b.imbalance);
    }
  }
}
END_TEST

/* Without the mask every pair is full: balance is the tokens' balance. */
START_TEST(balance_without_the_mask) {
  for (int p = 1; p <= L08_MAX_RANKS; ++p) {
    l08_balance b;
    ck_assert_int_eq(l08_balance_of(24 * p, p, L08_CONTIGUOUS, 0, &b), 0);
    ck_assert(b.imbalance == 1.0 && b.total == 576.0 * p * p);
    ck_assert_int_eq(l08_balance_of(24 * p, p, L08_ZIGZAG, 0, &b), 0);
    ck_assert(b.imbalance == 1.0 && b.critical == b.max_rank);
  }
  /* 10 tokens on 4 ranks: 3, 3, 2, 2, so the busiest holds 3 x 10 of the 100 pairs */
  l08_balance b;
  ck_assert_int_eq(l08_balance_of(10, 4, L08_CONTIGUOUS, 0, &b), 0);
  ck_assert(b.total == 100.0 && b.max_rank == 30.0 && fabs(b.imbalance - 1.2) < 1e-12);
}
END_TEST

START_TEST(balance_refuses_bad_arguments) {
  l08_balance b;
  memset(&b, 0x5a, sizeof b);
  ck_assert_int_eq(l08_balance_of(0, 4, L08_ZIGZAG, 1, &b), -1);
  ck_assert(b.total == 0.0 && b.imbalance == 0.0);
  memset(&b, 0x5a, sizeof b);
  ck_assert_int_eq(l08_balance_of(100, L08_MAX_RANKS + 1, L08_ZIGZAG, 1, &b), -1);
  ck_assert(b.max_rank == 0.0 && b.critical == 0.0);
  ck_assert_int_eq(l08_balance_of(100, 0, L08_CONTIGUOUS, 1, &b), -1);
  ck_assert_int_eq(l08_balance_of(100, 2, (l08_layout)5, 1, &b), -1);
  ck_assert_int_eq(l08_balance_of(100, 2, L08_CONTIGUOUS, 1, NULL), -1);
}
END_TEST

/* A step hides its send when 4 L^2 H D / F (halved by the mask) exceeds 4 L Hkv D / B. */
START_TEST(compute_bound_length) {
  /* 32 query heads on 8 KV heads, 600 TFLOP/s against 100 GB/s: L > 8 / 32 * 6000 */
  ck_assert(fabs(l08_compute_bound_len(32, 8, 0, 600e12, 100e9) - 1500.0) < 1e-6);
  ck_assert(fabs(l08_compute_bound_len(32, 8, 1, 600e12, 100e9) - 3000.0) < 1e-6);
  ck_assert(fabs(l08_compute_bound_len(16, 16, 0, 400e12, 400e9) - 1000.0) < 1e-6);
  /* the length at which the two times are equal */
  const double L = l08_compute_bound_len(8, 2, 1, 300e12, 50e9), dim = 128;
  const double compute = 4.0 * L * L * 8 * dim / 2 / 300e12, send = 2.0 * L * 2 * dim * 2 / 50e9;
  ck_assert(fabs(compute - send) < 1e-9 * send);
  ck_assert(l08_compute_bound_len(0, 8, 0, 1e12, 1e9) == 0.0);
  ck_assert(l08_compute_bound_len(8, 0, 0, 1e12, 1e9) == 0.0);
  ck_assert(l08_compute_bound_len(8, 8, 0, 0.0, 1e9) == 0.0);
  ck_assert(l08_compute_bound_len(8, 8, 1, 1e12, -1.0) == 0.0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("checklist-8");
  TCase *tc = tcase_create("ring_plan");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, shards_cover_the_sequence_once);
  tcase_add_test(tc, contiguous_chunks_in_rank_order);
  tcase_add_test(tc, zigzag_chunk_identities);
  tcase_add_test(tc, shard_refuses_bad_arguments);
  tcase_add_test(tc, block_origin_wraps_around);
  tcase_add_test(tc, pair_kinds);
  tcase_add_test(tc, pair_work_matches_brute_force);
  tcase_add_test(tc, step_work_matches_brute_force);
  tcase_add_test(tc, step_work_sums_to_the_problem);
  tcase_add_test(tc, zigzag_balances_the_causal_ring);
  tcase_add_test(tc, contiguous_is_unbalanced_under_the_mask);
  tcase_add_test(tc, balance_without_the_mask);
  tcase_add_test(tc, balance_refuses_bad_arguments);
  tcase_add_test(tc, compute_bound_length);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
