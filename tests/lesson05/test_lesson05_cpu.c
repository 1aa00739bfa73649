/* Lesson 05, CPU: the CPU model of FA3's pipelined tile loop (S of tile j + 1 formed before the
 * softmax of tile j) against the double-precision reference on awkward shapes, at the GPU
 * versions' tiles and at small ones; the FP8 conversion's transposed V words; the flat entry
 * point's and the tensor-map encoder's argument checks, which answer before any GPU or driver is
 * touched. No GPU needed. */
#include <stdint.h>
#include <string.h>

#include "attn_test.h"
#include "fa3_hopper.h"
#include "fp8_workspace.cuh"

/* batch, heads, kv_heads, seq_q, seq_kv, dim, causal: attn_test_problem()'s order */
static const int kShapes[][7] = {
    {1, 4, 1, 1, 1, 64, 0},      /* one token, GQA 4:1 */
    {2, 8, 1, 17, 17, 128, 1},   /* GQA 8:1, causal, less than one tile */
    {1, 2, 2, 129, 129, 64, 1},  /* one past a tile multiple */
    {1, 2, 1, 40, 300, 128, 1},  /* causal, q_len < kv_len: bottom-right */
    {1, 2, 2, 300, 70, 64, 1},   /* causal, q_len > kv_len: rows that see nothing */
    {1, 2, 2, 1, 1000, 64, 1},   /* one row sees every key */
    {1, 2, 1, 200, 260, 128, 0}, /* not causal, three KV tiles of 128 */
};
enum { N_SHAPES = sizeof kShapes / sizeof kShapes[0] };

static void check_model(const attn_problem *p, int br, int wg_rows, int bc) {
  l05_cpu_tiles t = {.br = br, .wg_rows = wg_rows, .bc = bc, .s_products = 0, .max_early = 0};
  attn_verdict vo, vl;
  const int rc = attn_cpu_check(p, 7, l05_cpu_attention, &t, &vo, &vl);
  ck_assert_int_ge(rc, 0);
  ck_assert_msg(vo.pass, "O: max_abs %g rel_l2 %g unwritten %zu", vo.max_abs, vo.rel_l2,
                vo.unwritten);
  ck_assert_msg(vl.pass, "LSE: max_abs %g nonfinite %zu", vl.max_abs, vl.nonfinite);
  /* Without the mask every warpgroup computes one S per KV tile; the early S needs two tiles. */
  const long kv_tiles = (p->seq_kv + bc - 1) / bc;
  long wgs = 0;
  for (int q0 = 0; q0 < p->seq_q; q0 += br)
    for (int w0 = q0; w0 < q0 + br && w0 < p->seq_q; w0 += wg_rows) wgs++;
  if (!p->causal) ck_assert_int_eq(t.s_products, (long)p->batch * p->heads * wgs * kv_tiles);
  ck_assert_int_le(t.max_early, 2);
  if (!p->causal && kv_tiles >= 2) ck_assert_int_eq(t.max_early, 2);
}

START_TEST(cpu_model_matches_reference) {
  const int *x = kShapes[_i];
  const attn_problem p = attn_test_problem(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
  check_model(&p, 32, 16, 16);
  check_model(&p, L05_BR, L05_WG_ROWS, L05_BC); /* the GPU versions' tiles */
}
END_TEST

/* The flat entry point (what the bench calls through ctypes) reports bad input as an error, with
 * no launch: an unknown version or dimension, GQA that does not divide, an empty sequence. */
/* The FP8 conversion's transposed V (fp8_quant_tiles.cu's v_tile): the keys a word holds are the
 * order a thread holds P in (l05_fp8_key(), a permutation of each group of 32), and the byte
 * permutes turn four keys' codes into the four dims' words. The codes are made up: byte j of key
 * k's word is 16 (k mod 16) + j, so every byte says where it came from. */
START_TEST(fp8_transposed_v_words) {
  int seen[32] = {0};
  for (int p = 0; p < 32; ++p) {
    const int k = l05_fp8_key(p);
    ck_assert_int_ge(k, 0);
    ck_assert_int_lt(k, 32);
    seen[k]++;
  }
  for (int k = 0; k < 32; ++k) ck_assert_int_eq(seen[k], 1);
  for (int quad = 0; quad < 32; ++quad) {
    /* word `quad`: keys 2 t, 2 t + 1, 2 t + 8, 2 t + 9 of group quad / 4 of 16, t = quad % 4 */
    const int t = quad & 3, base = (quad >> 2) * 16;
    const int want[4] = {base + 2 * t, base + 2 * t + 1, base + 2 * t + 8, base + 2 * t + 9};
    uint32_t in[4];
    for (int u = 0; u < 4; ++u) {
      ck_assert_int_eq(l05_vt_key(quad, u), want[u]);
      const int k = l05_vt_key(quad, u);
      in[u] = 0;
      for (int j = 0; j < 4; ++j) in[u] |= (uint32_t)((16 * (k & 15) + j) & 0xFF) << (8 * j);
    }
    uint32_t w[4];
    l05_vt_words(in[0], in[1], in[2], in[3], w);
    for (int j = 0; j < 4; ++j)     /* dim j's word */
      for (int u = 0; u < 4; ++u) { /* its byte u: dim j of key want[u] */
        const uint32_t got = (w[j] >> (8 * u)) & 0xFF;
        ck_assert_uint_eq(got, (uint32_t)((16 * (want[u] & 15) + j) & 0xFF));
      }
  }
  /* the byte permute itself, as PTX defines prmt: selector 0x5140 interleaves the low halves */
  ck_assert_uint_eq(l05_prmt(0x03020100u, 0x07060504u, 0x5140u), 0x05010400u);
  ck_assert_uint_eq(l05_prmt(0x03020100u, 0x07060504u, 0x7632u), 0x07060302u);
}
END_TEST

START_TEST(flat_entry_point_refuses_bad_input) {
  ck_assert_int_eq(l05_forward(0, 128, NULL, NULL, NULL, NULL, NULL, 1, 4, 4, 16, 16, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  ck_assert_int_eq(l05_forward(1, 96, NULL, NULL, NULL, NULL, NULL, 1, 4, 4, 16, 16, 0, 0.f, 0),
                   cudaErrorInvalidValue);
  ck_assert_int_eq(
      l05_forward(L05_VERSIONS + 1, 128, NULL, NULL, NULL, NULL, NULL, 1, 4, 4, 16, 16, 0, 0.f, 0),
      cudaErrorInvalidValue);
  for (int v = 1; v <= L05_VERSIONS; ++v) {
    ck_assert_int_eq(l05_forward(v, 128, NULL, NULL, NULL, NULL, NULL, 1, 4, 3, 16, 16, 0, 0.f, 0),
                     cudaErrorInvalidValue);
    ck_assert_int_eq(l05_forward(v, 64, NULL, NULL, NULL, NULL, NULL, 1, 4, 4, 0, 16, 0, 0.f, 0),
                     cudaErrorInvalidValue);
  }
  ck_assert_ptr_null(l05_version_name(0));
  ck_assert_ptr_nonnull(l05_version_name(L05_VERSIONS));
}
END_TEST

/* What TMA cannot describe is refused before the driver is asked. */
START_TEST(tensor_map_refuses_what_tma_cannot_describe) {
  unsigned char map[128];
  const void *base = (const void *)(uintptr_t)0x10000;
  ck_assert_int_eq(l05_tensor_map(map, (const void *)(uintptr_t)0x10008, 1, 16, 1, 64, 64),
                   cudaErrorInvalidValue); /* not 16-byte aligned */
  ck_assert_int_eq(l05_tensor_map(map, base, 1, 16, 1, 96, 64), cudaErrorInvalidValue);
  ck_assert_int_eq(l05_tensor_map(map, base, 1, 16, 1, 128, 0), cudaErrorInvalidValue);
  ck_assert_int_eq(l05_tensor_map(map, base, 1, 16, 1, 128, 257), cudaErrorInvalidValue);
  ck_assert_int_eq(l05_tensor_map(map, base, 0, 16, 1, 128, 64), cudaErrorInvalidValue);
  ck_assert_int_eq(l05_tensor_map(NULL, base, 1, 16, 1, 128, 64), cudaErrorInvalidValue);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lesson05_cpu");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, cpu_model_matches_reference, 0, N_SHAPES);
  tcase_add_test(tc, fp8_transposed_v_words);
  tcase_add_test(tc, flat_entry_point_refuses_bad_input);
  tcase_add_test(tc, tensor_map_refuses_what_tma_cannot_describe);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
