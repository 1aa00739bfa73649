/* libattn_lessons.so can be loaded by a program that was not linked against it (as a Python script
 * through ctypes would), and what it exports works. */
#include <dlfcn.h>
#include <math.h>

#include "attn_test.h"

typedef void (*reference_fn)(const attn_problem *, const float *, const float *, const float *,
                             const size_t *, size_t, double *, double *);
typedef uint16_t (*to_bf16_fn)(float);

START_TEST(load_and_call) {
  void *lib = dlopen(ATTN_SHARED_LIB, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(lib != NULL, "dlopen: %s", dlerror());
  reference_fn ref = (reference_fn)dlsym(lib, "attn_reference");
  to_bf16_fn to_bf16 = (to_bf16_fn)dlsym(lib, "attn_f32_to_bf16");
  ck_assert_ptr_nonnull(ref);
  ck_assert_ptr_nonnull(to_bf16);
  ck_assert_ptr_nonnull(dlsym(lib, "attn_main"));
  ck_assert_uint_eq(to_bf16(1.0f), 0x3F80);
  attn_problem p = attn_test_problem(1, 1, 1, 1, 2, 1, 0);
  p.scale = 1.0f;
  float q[1] = {1.0f}, k[2] = {0.0f, (float)log(3.0)}, v[2] = {2.0f, 6.0f};
  double o = 0, lse = 0;
  ref(&p, q, k, v, NULL, 1, &o, &lse);
  ck_assert_double_eq_tol(o, 5.0, 1e-6);
  /* No dlclose: OpenMP's idle worker threads would be left pointing into unloaded code. */
}
END_TEST

int main(void) {
  Suite *s = suite_create("shared_lib");
  TCase *tc = tcase_create("dlopen");
  tcase_add_test(tc, load_and_call);
  suite_add_tcase(s, tc);
  return attn_test_run(s, 0);
}
