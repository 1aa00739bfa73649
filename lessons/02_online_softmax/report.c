/* Lesson 02's printed parts: before the table (CPU only: the shape, the bytes each version moves,
 * the overflow and the merge shown on the CPU) and after it (bandwidth per version, and the naive
 * version overflowing on the GPU, next to version 6 on the same rows).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "online_softmax.h"
#include "online_state.h"

/* The name of version i + 1, as the lesson's table spells it. */
static const char *version_name(int i) {
  return l02_lesson.versions[i].name;
}

static void print_row(const char *label, const float *y, int n, int with_sum) {
  printf("  %-22s [", label);
  for (int j = 0; j < n; ++j) printf("%s%.4g", j ? " " : "", y[j]);
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum += y[j];
  if (with_sum)
    printf("]  sum %.4g\n", sum);
  else
    printf("]\n");
}

static int has_nan(const float *y, int n) {
  for (int j = 0; j < n; ++j)
    if (isnan(y[j])) return 1;
  return 0;
}

/* The two rows that break naive softmax: one score above 88.7 (exp overflows: inf / inf = NaN) and
 * a row of scores below -103.9 (every exp underflows to 0: the row sums to 0, not 1). */
#define DEMO_COLS 8
static const float kDemo[2][DEMO_COLS] = {
    {0.5f, 1.0f, 2.0f, 100.0f, -3.0f, 4.0f, 0.0f, 1.0f},
    {-120.0f, -121.0f, -122.0f, -119.0f, -125.0f, -120.5f, -130.0f, -118.0f}};

/* |y - reference| over a row, in double. */
static double max_err(const float *x, const float *y, int n) {
  double *ref = (double *)malloc(sizeof(double) * (size_t)n);
  if (!ref) return INFINITY;
  l02_softmax_row_reference(x, n, ref);
  double e = 0.0;
  for (int j = 0; j < n; ++j) {
    double d = fabs((double)y[j] - ref[j]);
    if (!(d <= e)) e = d; /* NaN wins */
  }
  free(ref);
  return e;
}

int l02_cpu_part(const attn_options *o) {
  const attn_problem *p = &o->problem;
  const size_t rows = l02_softmax_rows(p);
  const int cols = l02_softmax_cols(p);
  const double mib = (double)rows * cols * sizeof(float) / (1 << 20);
  int bad = 0;

  printf(
      "\nsoftmax matrix: rows = batch*heads*seq = %d*%d*%d = %zu, cols = kv-seq = %d"
      "  (fp32: %.1f MiB in, %.1f MiB out)\n",
      p->batch, p->heads, p->seq_q, rows, cols, mib, mib);
  printf(
      "data: versions 2-7: uniform in [-8, 8), every 8th row shifted by an offset from "
      "[-1e4, 1e4]%s\n"
      "      version 1: uniform in [-4, 4), the only kind naive softmax survives\n"
      "      version 8: the harness's Q, K, V (attention, head dim %d)\n",
      p->causal ? "; keys hidden by the causal mask are -inf" : "", p->dim);

  printf("\nwork model: a version reads the matrix `reads` times and writes it once\n");
  printf("   %-20s %5s %6s %12s\n", "version", "reads", "writes", "MB moved");
  for (int i = 0; i < L02_N_VARIANTS; ++i)
    printf("%d  %-20s %5d %6d %12.1f\n", i + 1, version_name(i), l02_softmax_variants[i].reads, 1,
           l02_softmax_model_bytes(l02_softmax_variants[i].reads, rows, cols) / 1e6);
  printf("8  %-20s Q, K, V read once, O and LSE written once: %.1f MB\n",
         version_name(L02_N_VARIANTS), attn_min_bytes(p, ATTN_F32, 1) / 1e6);

  /* Overflow, on the CPU. */
  float y[DEMO_COLS];
  printf("\nnaive softmax in fp32 overflows once a score passes ln(FLT_MAX) = %.2f:\n",
         log((double)FLT_MAX));
  print_row("x", kDemo[0], DEMO_COLS, 0);
  l02_softmax_row_naive_cpu(kDemo[0], DEMO_COLS, y);
  print_row("naive (CPU)", y, DEMO_COLS, 1);
  bad |= !has_nan(y, DEMO_COLS);
  l02_softmax_row_safe_cpu(kDemo[0], DEMO_COLS, y);
  print_row("safe (CPU)", y, DEMO_COLS, 1);
  bad |= max_err(kDemo[0], y, DEMO_COLS) > 1e-6;
  printf("and underflows when every score is below ln(2^-150) = %.2f (exp rounds to 0):\n",
         -150.0 * log(2.0));
  print_row("x", kDemo[1], DEMO_COLS, 0);
  l02_softmax_row_naive_cpu(kDemo[1], DEMO_COLS, y);
  print_row("naive (CPU)", y, DEMO_COLS, 1);
  bad |= y[0] != 0.0f;
  l02_softmax_row_safe_cpu(kDemo[1], DEMO_COLS, y);
  print_row("safe (CPU)", y, DEMO_COLS, 1);
  bad |= max_err(kDemo[1], y, DEMO_COLS) > 1e-6;

  /* Online = safe, and a split row merges back exactly (within rounding). */
  enum { N = 1000, HALF = 377 };
  float *x = (float *)malloc(sizeof(float) * N), *y1 = (float *)malloc(sizeof(float) * N);
  if (!x || !y1) {
    free(x);
    free(y1);
    return 1;
  }
  /* Scores near 5000 (naive softmax would overflow on every one), every 10th masked. */
  l02_softmax_fill(x, 1, N, L02_DATA_SCORES, o->seed);
  for (int j = 0; j < N; ++j) x[j] = j % 10 == 9 ? -INFINITY : x[j] + 5000.0f;
  l02_softmax_row_online_cpu(x, N, y1);
  const double e_online = max_err(x, y1, N);
  l02_online_ml whole = l02_online_ml_empty(), a = l02_online_ml_empty(), b = l02_online_ml_empty();
  for (int j = 0; j < N; ++j) whole = l02_online_ml_push(whole, x[j]);
  for (int j = 0; j < HALF; ++j) a = l02_online_ml_push(a, x[j]);
  for (int j = HALF; j < N; ++j) b = l02_online_ml_push(b, x[j]);
  const l02_online_ml merged = l02_online_ml_merge(a, b);
  const double rel_l = fabs((double)merged.l - whole.l) / whole.l;
  printf(
      "\nonline softmax on a row of %d scores in [4992, 5008), every 10th masked: "
      "max |y - reference| %.1e\n",
      N, e_online);
  printf(
      "split at %d and merged: m %.6g (whole row %.6g), l %.7g (whole row %.7g, rel. diff %.1e)\n",
      HALF, merged.m, whole.m, merged.l, whole.l, rel_l);
  bad |= !(e_online <= 1e-6) || merged.m != whole.m || !(rel_l <= 1e-6);
  free(x);
  free(y1);
  if (bad) printf("CPU part: a demonstration did not behave as documented\n");
  return bad;
}

/* Run v1 and v6 on the two demo rows on the GPU; print; 0 when they behave as documented. */
static int gpu_overflow_demo(void) {
  float *dx = NULL, *dy = NULL, y[2][DEMO_COLS];
  int bad = 0;
  const size_t bytes = sizeof kDemo;
  if (cudaMalloc((void **)&dx, bytes) != cudaSuccess ||
      cudaMalloc((void **)&dy, bytes) != cudaSuccess ||
      cudaMemcpy(dx, kDemo, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    printf("overflow demo: cannot allocate or copy\n");
    cudaFree(dx);
    cudaFree(dy);
    return 1;
  }
  printf(
      "\nthe same rows on the GPU (expected: naive NaN on the first row, zeros on the second):\n");
  for (int pass = 0; pass < 2; ++pass) {
    const int i = pass == 0 ? 0 : 5; /* v1, v6 */
    const l02_softmax_variant *v = &l02_softmax_variants[i];
    if (v->launch(dx, dy, 2, DEMO_COLS, 0) != cudaSuccess ||
        cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
      printf("overflow demo: %s failed to run\n", version_name(i));
      bad = 1;
      break;
    }
    for (int r = 0; r < 2; ++r) {
      char label[48];
      snprintf(label, sizeof label, "%s, row %d", pass == 0 ? "naive" : version_name(i), r);
      print_row(label, y[r], DEMO_COLS, 1);
    }
    if (pass == 0) {
      bad |= !has_nan(y[0], DEMO_COLS) || y[1][0] != 0.0f;
    } else {
      bad |= !(max_err(kDemo[0], y[0], DEMO_COLS) <= 1e-6);
      bad |= !(max_err(kDemo[1], y[1], DEMO_COLS) <= 1e-6);
    }
  }
  cudaFree(dx);
  cudaFree(dy);
  if (bad) printf("overflow demo: the GPU did not behave as documented\n");
  return bad;
}

int l02_report(const attn_options *o, const attn_device *dev, const attn_result *results, int n) {
  if (!dev) return 0;
  const attn_problem *p = &o->problem;
  const size_t rows = l02_softmax_rows(p);
  const int cols = l02_softmax_cols(p);
  const double min_bytes = l02_softmax_model_bytes(1, rows, cols); /* one read + one write */

  int timed = 0;
  for (int i = 0; i < L02_N_VARIANTS && i < n; ++i) timed += results[i].timed;
  if (!timed) return gpu_overflow_demo();

  printf(
      "\nbandwidth of the softmax versions, %zu x %d fp32, HBM peak %.0f GB/s (2 x memory "
      "clock x bus width):\n",
      rows, cols, dev->mem_bw_gbs);
  printf(
      "  'own' counts the bytes each version requests (its reads + 1 write); re-reads of a row "
      "may\n"
      "  hit the L2, so it can exceed the HBM peak and gets no %% of it. '1R+1W' counts only the\n"
      "  read and write every version must do: its %% of HBM is the table's, and ranks by time.\n");
  printf("   %-20s %6s %10s %10s %11s %6s\n", "version", "passes", "ms", "own GB/s", "1R+1W GB/s",
         "%HBM");
  int best = -1;
  double best_gbs = 0.0;
  for (int i = 0; i < L02_N_VARIANTS && i < n; ++i) {
    const attn_result *r = &results[i];
    if (!r->timed || r->timing.median_ms <= 0.0) continue;
    const double s = r->timing.median_ms * 1e-3;
    const double own = l02_softmax_model_bytes(l02_softmax_variants[i].reads, rows, cols) / s / 1e9;
    const double eff = min_bytes / s / 1e9;
    printf("%d  %-20s %4dR1W %10.4f %10.1f %11.1f %5.1f%%%s\n", i + 1, version_name(i),
           l02_softmax_variants[i].reads, r->timing.median_ms, own, eff,
           100.0 * eff / dev->mem_bw_gbs, r->status == ATTN_PASS ? "" : "  (not a PASS)");
    if (r->status == ATTN_PASS && i > 0 && eff > best_gbs) {
      best_gbs = eff;
      best = i;
    }
  }
  if (best >= 0)
    printf("best checked version: %d %s, %.1f GB/s = %.1f%% of HBM peak (1 read + 1 write)\n",
           best + 1, version_name(best), best_gbs, 100.0 * best_gbs / dev->mem_bw_gbs);
  printf("peer on the same shape: python3 bench/lesson02_peers.py --rows %zu --cols %d\n", rows,
         cols);
  return gpu_overflow_demo();
}
