/* Lesson 07, GPU: every version through the harness on the paged cache it builds (blocks in a
 * shuffled order, spare blocks, NaN in every slot no token owns), outputs poisoned, O and the
 * log-sum-exp checked: lengths 1, block_size - 1, block_size, block_size + 1 and a multiple of
 * nothing, block sizes 8 to 128 (and 24, which versions 3 to 5 must refuse), GQA 8:1 and MQA,
 * causal with several query rows, lengths per sequence (long ones first, and long ones between
 * short ones, which version 5 launches first), and batches of several waves (versions 4 and 5:
 * two blocks per SM); the dense yardsticks run on the same values. Under
 * compute-sanitizer (ATTN_TEST_SANITIZER=1, attn_test.h) each case runs its sanitizer-sized shape,
 * a few hundred keys (still several pages and 2 or more chunks of 256 keys), and the lesson's
 * default shape is left out. Exits 77 (skipped) without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "attn_test.h"
#include "paged_attention.h"

static attn_device g_dev;

static const int kLensA[] = {1, 15, 16, 17, 1000}; /* around a block of 16 */
static const int kLensASmall[] = {1, 15, 16, 17, 300};
static const int kLensB[] = {131072, 1024, 1024, 1024, 5, 1}; /* one long, short ones */
static const int kLensBSmall[] = {1000, 300, 300, 300, 5, 1};
static const int kLensC[] = {7, 8, 9, 300}; /* around a block of 8 */
/* long sequences between short ones: version 5 cuts the long ones and launches them first */
static const int kLensE[] = {1024, 65536, 7, 1024, 40000, 1};
static const int kLensESmall[] = {300, 1000, 7, 300, 900, 1};
/* 40 sequences of mixed lengths: more blocks than one wave holds */
static const int kLensD[] = {2000, 1,   31,  32,  33,  500, 1999, 64, 65,  700, 2,   1000, 1500, 3,
                             250,  900, 16,  17,  800, 77,  1234, 5,  640, 641, 999, 1,    2000, 48,
                             49,   300, 301, 302, 100, 200, 400,  8,  9,   10,  11,  12};
static const int kLensDSmall[] = {300, 1,  31, 32, 33,  250, 299, 64, 65, 100, 2,  200, 150, 3,
                                  250, 90, 16, 17, 80,  77,  123, 5,  64, 65,  99, 1,   300, 48,
                                  49,  30, 31, 32, 100, 200, 40,  8,  9,  10,  11, 12};

/* Each case twice: the full one, then the sanitizer-sized one; a sanitizer-sized shape of all
 * zeros leaves the case out of a sanitizer-sized run, and `left_out` says what only the full run
 * checks. Shape: batch, heads, kv_heads, seq_q, seq_kv, dim, causal, block size; lens (NULL: every
 * sequence has seq_kv keys). */
typedef struct paged_case {
  int shape[8];
  const int *lens;
} paged_case;
static const struct {
  paged_case full, small;
  const char *left_out;
} kCases[] = {
    /* one key, MQA */
    {{{1, 4, 1, 1, 1, 64, 0, 16}, NULL}, {{1, 4, 1, 1, 1, 64, 0, 16}, NULL}, NULL},
    /* block_size + 1, GQA 8:1 */
    {{{2, 8, 1, 1, 17, 128, 0, 16}, NULL}, {{2, 8, 1, 1, 17, 128, 0, 16}, NULL}, NULL},
    /* block_size - 1 */
    {{{1, 4, 2, 1, 15, 64, 0, 16}, NULL}, {{1, 4, 2, 1, 15, 64, 0, 16}, NULL}, NULL},
    /* exactly one block */
    {{{1, 4, 2, 1, 16, 128, 0, 16}, NULL}, {{1, 4, 2, 1, 16, 128, 0, 16}, NULL}, NULL},
    /* the lesson's default shape */
    {{{1, 32, 8, 1, 32768, 128, 0, 16}, NULL}, {{0}, NULL}, "32768 keys in 2048 pages of 16"},
    /* causal, 4 query rows */
    {{{1, 8, 2, 4, 1237, 128, 1, 32}, NULL}, {{1, 8, 2, 4, 613, 128, 1, 32}, NULL}, NULL},
    /* block size 128 (sanitizer-sized: 5 pages, the last with 5 keys) */
    {{{1, 8, 2, 1, 4099, 64, 0, 128}, NULL}, {{1, 8, 2, 1, 517, 64, 0, 128}, NULL}, NULL},
    /* block size 64 */
    {{{2, 8, 2, 1, 999, 128, 0, 64}, NULL}, {{2, 8, 2, 1, 333, 128, 0, 64}, NULL}, NULL},
    /* lengths around the block size */
    {{{5, 16, 2, 1, 1000, 128, 0, 16}, kLensA},
     {{5, 16, 2, 1, 300, 128, 0, 16}, kLensASmall},
     NULL},
    /* one long sequence, short ones */
    {{{6, 32, 8, 1, 131072, 128, 0, 16}, kLensB},
     {{6, 8, 2, 1, 1000, 128, 0, 16}, kLensBSmall},
     NULL},
    /* long ones between short ones, dim 64 */
    {{{6, 16, 4, 1, 65536, 64, 0, 16}, kLensE}, {{6, 8, 2, 1, 1000, 64, 0, 16}, kLensESmall}, NULL},
    /* block size 8, causal, MQA */
    {{{4, 8, 1, 2, 300, 64, 1, 8}, kLensC}, {{4, 8, 1, 2, 300, 64, 1, 8}, kLensC}, NULL},
    /* a batch of several waves (versions 4 and 5: two blocks per SM) */
    {{{40, 32, 8, 1, 1000, 128, 0, 16}, NULL}, {{20, 16, 8, 1, 300, 128, 0, 16}, NULL}, NULL},
    /* the same with mixed lengths, dim 64, block size 32 */
    {{{40, 8, 8, 1, 2000, 64, 0, 32}, kLensD}, {{40, 8, 8, 1, 300, 64, 0, 32}, kLensDSmall}, NULL},
    /* a block size no power of two */
    {{{2, 8, 2, 1, 100, 128, 0, 24}, NULL}, {{2, 8, 2, 1, 100, 128, 0, 24}, NULL}, NULL},
};
enum { N_CASES = sizeof kCases / sizeof kCases[0] };

START_TEST(every_version_passes_awkward_pages) {
  attn_options o;
  memset(&o, 0, sizeof o);
  const paged_case *c = attn_test_sanitizer_sized() ? &kCases[_i].small : &kCases[_i].full;
  const int *x = c->shape;
  if (x[0] == 0) {
    attn_test_left_out("every_version_passes_awkward_pages", _i, kCases[_i].left_out);
    return;
  }
  o.problem = attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
  o.problem.block_size = x[7];
  o.problem.kv_lens = c->lens;
  o.seed = 70 + (uint64_t)_i;
  o.iters = 2; /* a second call on the workspace the first left */
  o.warmup = 1;
  attn_result r[L07_VERSIONS];
  ck_assert_int_eq(attn_run_versions(&l07_lesson, &o, &g_dev, r, stdout), 0);
  const int pow2 = (x[7] & (x[7] - 1)) == 0;
  for (int v = 0; v < L07_VERSIONS; ++v) {
    /* the skips the table declares: versions 3 to 5 want a power-of-two block size, the dense
     * one-launch yardstick (6) one length for every sequence */
    const int pow2_only = v >= 2 && v < L07_PAGED_VERSIONS;
    const int may_skip = attn_device_sm(&g_dev) < 80 || (pow2_only && !pow2) ||
                         (v == L07_PAGED_VERSIONS && c->lens != NULL);
    if (pow2_only && !pow2) ck_assert_int_eq(r[v].status, ATTN_SKIPPED);
    if (r[v].status == ATTN_SKIPPED) {
      ck_assert_msg(may_skip, "%s skipped: %s", r[v].version->name, r[v].note);
      continue;
    }
    ck_assert_msg(r[v].status == ATTN_PASS, "%s: %s", r[v].version->name, r[v].note);
    ck_assert_uint_gt(r[v].verdict.compared, 0);
    ck_assert_uint_eq(r[v].verdict.unwritten, 0);
    ck_assert_uint_eq(r[v].verdict.nonfinite, 0);
  }
}
END_TEST

/* The cache manager driving the two data movers: two sequences grow, one forks, the child writes
 * into the shared last block (copy-on-write), and after the copies and appends every token's row
 * is in its slot, read back through the table, and every slot no token owns is still NaN. */
static uint16_t value(int seq, int t, int e) { /* a bf16 that names its token */
  return attn_f32_to_bf16((float)(seq * 1000 + t) + 0.125f * (float)(e % 8));
}

START_TEST(append_and_copy_on_write_through_the_manager) {
  if (attn_device_sm(&g_dev) < 80) return;
  enum { BS = 4, BLOCKS = 12, KVH = 2, DIM = 64, ROW = KVH * DIM };
  l07_cache c;
  ck_assert_int_eq(l07_cache_init(&c, BLOCKS, BS, 4, 8), L07_OK);
  uint16_t *host = malloc(sizeof(uint16_t) * BLOCKS * BS * ROW);
  uint16_t *rows = malloc(sizeof(uint16_t) * 16 * ROW);
  ck_assert(host && rows);
  void *kc, *vc, *kn;
  int *dslots;
  l07_copy *dcopy;
  ATTN_CHECK(cudaMalloc(&kc, sizeof(uint16_t) * BLOCKS * BS * ROW));
  ATTN_CHECK(cudaMalloc(&vc, sizeof(uint16_t) * BLOCKS * BS * ROW));
  ATTN_CHECK(cudaMalloc(&kn, sizeof(uint16_t) * 16 * ROW));
  ATTN_CHECK(cudaMalloc((void **)&dslots, sizeof(int) * 16));
  ATTN_CHECK(cudaMalloc((void **)&dcopy, sizeof(l07_copy)));
  ATTN_CHECK(cudaMemset(kc, 0xff, sizeof(uint16_t) * BLOCKS * BS * ROW)); /* NaN everywhere */
  ATTN_CHECK(cudaMemset(vc, 0xff, sizeof(uint16_t) * BLOCKS * BS * ROW));
  /* seq_of[s] and len_of[s]: whose tokens sequence s holds, for the check (a fork holds its
   * parent's first tokens, then its own) */
  int a, b, slots[16];
  l07_copy cp;
  const int appends[4][3] = {{0, 6, -1}, {1, 3, -1}, {0, 0, 2}, {2, 5, -1}}; /* seq, n, fork */
  int ids[3];
  ck_assert_int_eq(l07_seq_open(&c, &a), L07_OK);
  ck_assert_int_eq(l07_seq_open(&c, &b), L07_OK);
  ids[0] = a, ids[1] = b;
  for (int step = 0; step < 4; ++step) {
    if (appends[step][2] >= 0) { /* fork sequence 0 into id 2 */
      ck_assert_int_eq(l07_seq_fork(&c, ids[0], &ids[2]), L07_OK);
      continue;
    }
    const int s = ids[appends[step][0]], n = appends[step][1], len = l07_seq_len(&c, s);
    ck_assert_int_eq(l07_seq_append(&c, s, n, slots, &cp), L07_OK);
    if (cp.tokens) { /* the copy first, on the same stream, then the new tokens */
      ATTN_CHECK(cudaMemcpy(dcopy, &cp, sizeof cp, cudaMemcpyHostToDevice));
      ck_assert_int_eq(l07_copy_blocks(dcopy, 1, BS, KVH, DIM, kc, vc, 0), cudaSuccess);
    }
    for (int i = 0; i < n; ++i)
      for (int e = 0; e < ROW; ++e) rows[i * ROW + e] = value(appends[step][0], len + i, e);
    ATTN_CHECK(cudaMemcpy(kn, rows, sizeof(uint16_t) * n * ROW, cudaMemcpyHostToDevice));
    ATTN_CHECK(cudaMemcpy(dslots, slots, sizeof(int) * n, cudaMemcpyHostToDevice));
    ck_assert_int_eq(l07_append(kn, kn, dslots, n, KVH, DIM, kc, vc, 0), cudaSuccess);
  }
  ck_assert_int_eq(cp.tokens, 2); /* the fork's first append copied 2 tokens */
  ATTN_CHECK(cudaMemcpy(host, vc, sizeof(uint16_t) * BLOCKS * BS * ROW, cudaMemcpyDeviceToHost));
  char *owned = calloc(BLOCKS * BS, 1);
  ck_assert_ptr_nonnull(owned);
  for (int k = 0; k < 3; ++k) {
    const int s = ids[k], len = l07_seq_len(&c, s);
    for (int t = 0; t < len; ++t) {
      const int slot = l07_seq_table(&c, s)[t / BS] * BS + t % BS;
      const int who = k == 2 && t < 6 ? 0 : k; /* the fork's first 6 tokens are its parent's */
      owned[slot] = 1;
      for (int e = 0; e < ROW; ++e)
        ck_assert_msg(host[(size_t)slot * ROW + e] == value(who, t, e),
                      "sequence %d token %d element %d", k, t, e);
    }
  }
  for (int slot = 0; slot < BLOCKS * BS; ++slot)
    if (!owned[slot]) ck_assert_msg(host[(size_t)slot * ROW] == 0xffff, "slot %d written", slot);
  ck_assert_int_eq(l07_append(kn, kn, dslots, 1, 3, 3, kc, vc, 0), cudaErrorInvalidValue);
  free(owned), free(host), free(rows);
  ATTN_CHECK(cudaFree(kc));
  ATTN_CHECK(cudaFree(vc));
  ATTN_CHECK(cudaFree(kn));
  ATTN_CHECK(cudaFree(dslots));
  ATTN_CHECK(cudaFree(dcopy));
  l07_cache_destroy(&c);
}
END_TEST

/* The decode loop on the GPU: forks and copy-on-write, every checked row within the bf16 tolerance,
 * no NaN from a slot nobody owns, every block back at the end; block sizes 16 and 8 (versions 5
 * and 4), 16 (version 3) and 24 (version 2), GQA 4:1 and dimension 64. Sanitizer-sized: 24 steps
 * instead of 40, still four forks and sequences that finish and free their blocks for new ones. */
START_TEST(gpu_decode_loop_checks_every_step) {
  if (attn_device_sm(&g_dev) < 80) return;
  static const int bss[5] = {16, 8, 24, 16, 8}, versions[5] = {5, 4, 2, 3, 5};
  const int bs = bss[_i], version = versions[_i];
  const int steps = attn_test_sanitizer_sized() ? 24 : 40;
  l07_loop_config cfg = {.max_live = 6,
                         .steps = steps,
                         .prompt_min = 1,
                         .prompt_max = 300,
                         .output_min = 1,
                         .output_max = steps,
                         .fork_every = 5,
                         .heads = 8,
                         .kv_heads = 2,
                         .dim = 64,
                         .block_size = bs,
                         .check_pool = 1,
                         .seed = 7 + (uint64_t)_i};
  cfg.num_blocks = 2 * cfg.max_live * ((cfg.prompt_max + cfg.output_max + 1 + bs - 1) / bs);
  l07_loop_gpu_result r;
  char err[200];
  ck_assert_msg(l07_decode_loop_gpu(&cfg, version, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.loop.steps, steps);
  ck_assert_int_gt(r.loop.tokens, steps);
  ck_assert_int_gt(r.loop.copies, 0); /* forks of partly filled blocks were copied */
  ck_assert_int_eq(r.loop.started, r.loop.finished);
  ck_assert_int_eq(r.loop.free_at_end, cfg.num_blocks);
  ck_assert_int_gt(r.checked_rows, 0);
  ck_assert_int_eq(r.pool_mismatches, 0); /* every token's K and V where the table says */
  ck_assert_uint_eq(r.verdict.nonfinite, 0);
  ck_assert_msg(r.verdict.pass, "max |diff| %g", r.verdict.max_abs);
  ck_assert_double_gt(r.decode_ms, 0.0);
  /* a configuration it must refuse, and a version it does not have */
  l07_loop_config bad = cfg;
  bad.heads = 7;
  ck_assert_int_eq(l07_decode_loop_gpu(&bad, version, &r, err, sizeof err), -1);
  ck_assert_int_eq(l07_decode_loop_gpu(&cfg, 9, &r, err, sizeof err), -1);
}
END_TEST

/* The ring of versions 4 and 5: the deep one (one block per SM) while a batch's blocks fit in one
 * wave, the shallow one (two per SM) past it; with lengths that differ, the deep one until the
 * shallow ring's slots overflow too; at both head dimensions, with the occupancy each gives. */
START_TEST(overlap_ring_follows_the_waves) {
  if (attn_device_sm(&g_dev) < 80) return;
  const int sms = l06_sm_count();
  ck_assert_int_gt(sms, 0);
  for (int vd = 0; vd < 4; ++vd) {
    const int d = vd & 1, v5 = vd >> 1;
    int (*ring)(int, int, int) =
        v5 ? (d ? l07_paged_balance_ring_d128 : l07_paged_balance_ring_d64)
           : (d ? l07_paged_overlap_ring_d128 : l07_paged_overlap_ring_d64);
    int (*per_sm)(int) = v5 ? (d ? l07_paged_balance_per_sm_d128 : l07_paged_balance_per_sm_d64)
                            : (d ? l07_paged_overlap_per_sm_d128 : l07_paged_overlap_per_sm_d64);
    const int deep = ring(1, 8, 0), wave = sms * per_sm(deep);
    ck_assert_int_gt(per_sm(deep), 0);
    ck_assert_int_eq(ring(wave / 8, 8, 0), deep); /* one wave */
    const int shallow = ring(wave / 8 + 1, 8, 0);
    ck_assert_int_eq(shallow * 2, deep);
    ck_assert_int_eq(per_sm(shallow), 2 * per_sm(deep));
    ck_assert_int_eq(ring(wave / 8 + 1, 8, 1), deep); /* lengths differ, the shallow wave holds */
    ck_assert_int_eq(ring(wave / 4 + 1, 8, 1), shallow); /* and past it */
    ck_assert_int_eq(per_sm(deep + 1), 0);               /* a depth it does not build */
  }
}
END_TEST

int main(void) {
  attn_test_gpu_or_skip(&g_dev);
  Suite *s = suite_create("lesson07_gpu");
  TCase *tc = tcase_create("gpu");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, every_version_passes_awkward_pages, 0, N_CASES);
  tcase_add_test(tc, append_and_copy_on_write_through_the_manager);
  tcase_add_loop_test(tc, gpu_decode_loop_checks_every_step, 0, 5);
  tcase_add_test(tc, overlap_ring_follows_the_waves);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 1);
}
