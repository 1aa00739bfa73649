/* Lesson 10's checklist: what a draft token sees under each mask, and the merge of two partial
 * states (draft.h). Built against the lesson's answers (checklist-10, must pass) and against
 * drills/10 (drill-10). */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "draft.h"

/* No mask: every key of the sequence, and nothing outside it. */
START_TEST(none_sees_the_whole_sequence) {
  for (int i = 0; i < 3; ++i) {
    for (int key = 0; key < 10; ++key)
      ck_assert_msg(l10_sees(L10_MASK_NONE, 0u, i, 3, 10, key), "token %d key %d", i, key);
    ck_assert(!l10_sees(L10_MASK_NONE, 0u, i, 3, 10, -1));
    ck_assert(!l10_sees(L10_MASK_NONE, 0u, i, 3, 10, 10));
  }
}
END_TEST

/* Causal, bottom-right: 10 keys, 3 draft tokens at positions 7, 8, 9; token i sees keys 0..7+i. */
START_TEST(causal_sees_up_to_its_own_position) {
  for (int i = 0; i < 3; ++i)
    for (int key = -2; key < 12; ++key)
      ck_assert_msg(l10_sees(L10_MASK_CAUSAL, 0u, i, 3, 10, key) == (key >= 0 && key <= 7 + i),
                    "token %d key %d", i, key);
  /* one draft token sees all; as many tokens as keys: the first sees only key 0 */
  ck_assert(l10_sees(L10_MASK_CAUSAL, 0u, 0, 1, 5, 4));
  ck_assert(l10_sees(L10_MASK_CAUSAL, 0u, 0, 4, 4, 0));
  ck_assert(!l10_sees(L10_MASK_CAUSAL, 0u, 0, 4, 4, 1));
  ck_assert(l10_sees(L10_MASK_CAUSAL, 0u, 3, 4, 4, 3));
}
END_TEST

/* Tree: 10 keys, 4 draft tokens (keys 6..9). Every token sees keys 0..5; token 2 with the word
 * 0b101 (root 0 and itself) sees keys 6 and 8, not 7 or 9. */
START_TEST(tree_sees_the_prefix_and_its_path) {
  for (int key = 0; key < 6; ++key)
    for (int i = 0; i < 4; ++i) ck_assert(l10_sees(L10_MASK_TREE, 0u, i, 4, 10, key));
  ck_assert(l10_sees(L10_MASK_TREE, 0x5u, 2, 4, 10, 6));
  ck_assert(!l10_sees(L10_MASK_TREE, 0x5u, 2, 4, 10, 7));
  ck_assert(l10_sees(L10_MASK_TREE, 0x5u, 2, 4, 10, 8));
  ck_assert(!l10_sees(L10_MASK_TREE, 0x5u, 2, 4, 10, 9));
  ck_assert(!l10_sees(L10_MASK_TREE, 0xFFFFFFFFu, 2, 4, 10, 10)); /* no such key */
  ck_assert(!l10_sees(L10_MASK_TREE, 0xFFFFFFFFu, 2, 4, 10, -1));
  /* the word is a set of draft tokens, not a position: bit 3 alone is token 3's key, key 9 */
  ck_assert(l10_sees(L10_MASK_TREE, 0x8u, 0, 4, 10, 9));
  ck_assert(!l10_sees(L10_MASK_TREE, 0x8u, 0, 4, 10, 6));
  /* only draft tokens, no prefix, an empty word: the token sees nothing */
  for (int key = 0; key < 4; ++key) ck_assert(!l10_sees(L10_MASK_TREE, 0u, 1, 4, 4, key));
}
END_TEST

/* Softmax over four keys with two-element values, computed whole and in two halves. */
static void softmax_state(const float *s, const float (*v)[2], int n, float *lse, float *o) {
  float m = -INFINITY, l = 0.0f;
  for (int j = 0; j < n; ++j) m = fmaxf(m, s[j]);
  o[0] = o[1] = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float p = expf(s[j] - m);
    l += p;
    o[0] += p * v[j][0], o[1] += p * v[j][1];
  }
  o[0] /= l, o[1] /= l;
  *lse = m + logf(l);
}

/* The merge of two halves is the whole: the same lse and the same weighted mean, either order. */
START_TEST(merge_of_halves_is_the_whole) {
  const float s[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  const float v[4][2] = {{1.0f, -2.0f}, {3.0f, 0.5f}, {-1.0f, 4.0f}, {2.0f, 2.0f}};
  float lse, o[2], lse_a, o_a[2], lse_b, o_b[2];
  softmax_state(s, v, 4, &lse, o);
  for (int order = 0; order < 2; ++order) {
    softmax_state(order ? s + 2 : s, order ? v + 2 : v, 2, &lse_a, o_a);
    softmax_state(order ? s : s + 2, order ? v : v + 2, 2, &lse_b, o_b);
    l10_merge_state(&lse_a, o_a, lse_b, o_b, 2);
    ck_assert_msg(fabsf(lse_a - lse) < 1e-6f, "order %d: lse %g, want %g", order, lse_a, lse);
    for (int d = 0; d < 2; ++d)
      ck_assert_msg(fabsf(o_a[d] - o[d]) < 1e-6f, "order %d: o[%d] %g, want %g", order, d, o_a[d],
                    o[d]);
  }
}
END_TEST

/* -inf is a state that saw no key: merging one in changes nothing, merging into one copies the
 * other, and two empty states stay empty. */
START_TEST(merge_with_empty_states) {
  float lse = 1.5f, o[2] = {0.25f, -3.0f};
  const float empty_o[2] = {7.0f, 7.0f}, full_o[2] = {0.25f, -3.0f};
  l10_merge_state(&lse, o, -INFINITY, empty_o, 2);
  ck_assert(lse == 1.5f && o[0] == 0.25f && o[1] == -3.0f);
  float lse2 = -INFINITY, o2[2] = {0.0f, 0.0f};
  l10_merge_state(&lse2, o2, 1.5f, full_o, 2);
  ck_assert(lse2 == 1.5f && o2[0] == 0.25f && o2[1] == -3.0f);
  float lse3 = -INFINITY, o3[2] = {0.0f, 0.0f};
  l10_merge_state(&lse3, o3, -INFINITY, empty_o, 2);
  ck_assert(lse3 == -INFINITY && o3[0] == 0.0f && o3[1] == 0.0f);
}
END_TEST

/* States far apart: the larger wins, nothing overflows to inf or NaN. */
START_TEST(merge_far_apart_does_not_overflow) {
  float lse = 1000.0f, o[1] = {2.0f};
  const float small[1] = {-5.0f};
  l10_merge_state(&lse, o, 0.0f, small, 1);
  ck_assert(isfinite(lse) && isfinite(o[0]));
  ck_assert_float_eq_tol(lse, 1000.0f, 1e-3f);
  ck_assert_float_eq_tol(o[0], 2.0f, 1e-6f);
  float lse2 = -80.0f, o2[1] = {-5.0f};
  const float big[1] = {2.0f};
  l10_merge_state(&lse2, o2, 80.0f, big, 1);
  ck_assert(isfinite(lse2) && isfinite(o2[0]));
  ck_assert_float_eq_tol(lse2, 80.0f, 1e-5f);
  ck_assert_float_eq_tol(o2[0], 2.0f, 1e-6f);
  /* equal states: twice the weight, the same mean */
  float lse3 = 0.5f, o3[1] = {3.0f};
  const float same[1] = {3.0f};
  l10_merge_state(&lse3, o3, 0.5f, same, 1);
  ck_assert_float_eq_tol(lse3, 0.5f + logf(2.0f), 1e-6f);
  ck_assert_float_eq_tol(o3[0], 3.0f, 1e-6f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("checklist-10");
  TCase *tc = tcase_create("draft");
  tcase_add_test(tc, none_sees_the_whole_sequence);
  tcase_add_test(tc, causal_sees_up_to_its_own_position);
  tcase_add_test(tc, tree_sees_the_prefix_and_its_path);
  tcase_add_test(tc, merge_of_halves_is_the_whole);
  tcase_add_test(tc, merge_with_empty_states);
  tcase_add_test(tc, merge_far_apart_does_not_overflow);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
