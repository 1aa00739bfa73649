/* Lesson 01's report, printed after the table: the measured pyramid beside the datasheet, what the
 * bank-conflict and access-width probes say, and the naive attention on the roofline with each of
 * its three kernels timed on its own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory_hierarchy.h"

/* The result of version @p number when it was checked (or ran unchecked) and timed, else NULL. */
static const attn_result *l01_timed(const attn_result *r, int n, int number) {
  const attn_version *want = &l01_lesson.versions[number - 1];
  for (int i = 0; i < n; ++i) {
    if (r[i].version != want && r[i].index != number) continue;
    if (!r[i].timed || r[i].timing.median_ms <= 0.0) return NULL;
    if (r[i].status != ATTN_PASS && r[i].status != ATTN_UNCHECKED) return NULL;
    return &r[i];
  }
  return NULL;
}

/* "1.23 TB/s" or "45.6 GB/s". */
static const char *l01_bw(char *buf, size_t len, double gbs) {
  if (gbs <= 0.0) {
    snprintf(buf, len, "-");
  } else if (gbs >= 1000.0) {
    snprintf(buf, len, "%.2f TB/s", gbs / 1000.0);
  } else {
    snprintf(buf, len, "%.1f GB/s", gbs);
  }
  return buf;
}

/* "141 GiB", "50.0 MiB", "256 KiB". */
static const char *l01_size(char *buf, size_t len, double bytes) {
  if (bytes <= 0.0) {
    snprintf(buf, len, "-");
  } else if (bytes >= (double)(1u << 30)) {
    snprintf(buf, len, "%.1f GiB", bytes / (double)(1u << 30));
  } else if (bytes >= (double)(1u << 20)) {
    snprintf(buf, len, "%.1f MiB", bytes / (double)(1u << 20));
  } else {
    snprintf(buf, len, "%.0f KiB", bytes / 1024.0);
  }
  return buf;
}

/* Host RAM from /proc/meminfo (Linux); 0 when it cannot be read. */
static double l01_host_ram_bytes(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (f == NULL) return 0.0;
  char line[256];
  double kib = 0.0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "MemTotal:", 9) == 0) {
      kib = strtod(line + 9, NULL);
      break;
    }
  }
  fclose(f);
  return kib * 1024.0;
}

/* 1 when the device is an H200 (the only datasheet the lesson quotes). */
static int l01_is_h200(const attn_device *dev) {
  return strstr(dev->name, "H200") != NULL;
}

/* The H200 datasheet's HBM3e figure, GB/s. */
static const double l01_h200_hbm_datasheet_gbs = 4800.0;

typedef struct l01_level {
  const char *name;
  double capacity;     /* bytes */
  double gbs;          /* measured (registers: derived from the measured FMA rate) */
  char reference[112]; /* the published or computed figure, labelled */
} l01_level;

static void l01_print_pyramid(const attn_device *dev, const attn_result *r, int n) {
  const attn_result *fma = l01_timed(r, n, L01_V_FMA);
  const attn_result *smem = l01_timed(r, n, L01_V_SMEM_ROW);
  const attn_result *l2 = l01_timed(r, n, L01_V_L2_READ16);
  const attn_result *hbm = l01_timed(r, n, L01_V_HBM_READ16);
  const attn_result *link = l01_timed(r, n, L01_V_H2D_PINNED);
  const attn_result *link_back = l01_timed(r, n, L01_V_D2H_PINNED);
  l01_level lv[5];
  memset(lv, 0, sizeof lv);

  lv[0].name = "registers";
  lv[0].capacity = (double)dev->regs_per_sm * 4.0 * dev->sm_count;
  lv[0].gbs = fma != NULL ? fma->tflops * 6000.0 : 0.0; /* FMA/s x 3 operands x 4 B */
  if (dev->fp32_tflops > 0.0) {
    snprintf(lv[0].reference, sizeof lv[0].reference,
             "%.0f TB/s = datasheet fp32 peak x 6 B per flop", dev->fp32_tflops * 6.0);
  } else {
    snprintf(lv[0].reference, sizeof lv[0].reference, "no datasheet fp32 peak for this GPU");
  }

  lv[1].name = "shared memory";
  lv[1].capacity = (double)dev->smem_per_sm_bytes * dev->sm_count;
  lv[1].gbs = smem != NULL ? smem->gbs : 0.0;
  snprintf(lv[1].reference, sizeof lv[1].reference,
           "%.1f TB/s theoretical: %d SMs x 128 B x %.2f GHz", l01_smem_peak_gbs(dev) / 1000.0,
           dev->sm_count, dev->sm_clock_khz / 1e6);

  lv[2].name = "L2";
  lv[2].capacity = (double)dev->l2_bytes;
  lv[2].gbs = l2 != NULL ? l2->gbs : 0.0;
  snprintf(lv[2].reference, sizeof lv[2].reference, "no published figure");

  lv[3].name = "HBM";
  lv[3].capacity = (double)dev->global_mem_bytes;
  lv[3].gbs = hbm != NULL ? hbm->gbs : 0.0;
  if (l01_is_h200(dev)) {
    snprintf(lv[3].reference, sizeof lv[3].reference,
             "4.80 TB/s H200 datasheet (%.2f TB/s from clock x bus width)",
             dev->mem_bw_gbs / 1000.0);
  } else {
    snprintf(lv[3].reference, sizeof lv[3].reference, "%.2f TB/s from clock x bus width",
             dev->mem_bw_gbs / 1000.0);
  }

  lv[4].name = "host (pinned)";
  lv[4].capacity = l01_host_ram_bytes();
  lv[4].gbs = link != NULL ? link->gbs : 0.0;
  if (l01_is_h200(dev)) {
    snprintf(lv[4].reference, sizeof lv[4].reference,
             "PCIe Gen5 x16: 128 GB/s both ways, H200 datasheet");
  } else {
    snprintf(lv[4].reference, sizeof lv[4].reference, "not in cudaDeviceProp");
  }

  char cap[32], bw[32], ratio[32];
  printf("\nThe memory pyramid of %s, measured (best probe of each level):\n", dev->name);
  printf("  %-14s %-10s %-11s %-9s %s\n", "level", "capacity", "measured", "x below",
         "published or computed figure");
  for (int i = 0; i < 5; ++i) {
    if (i + 1 < 5 && lv[i].gbs > 0.0 && lv[i + 1].gbs > 0.0) {
      snprintf(ratio, sizeof ratio, "%.1f", lv[i].gbs / lv[i + 1].gbs);
    } else {
      snprintf(ratio, sizeof ratio, "-");
    }
    printf("  %-14s %-10s %-11s %-9s %s\n", lv[i].name, l01_size(cap, sizeof cap, lv[i].capacity),
           l01_bw(bw, sizeof bw, lv[i].gbs), ratio, lv[i].reference);
  }
  printf("  capacity: registers and shared memory summed over all SMs; host: this machine's RAM\n");
  printf("  registers: operand bandwidth the measured FMA rate implies (3 x 4 B read per FMA),\n");
  printf("             not a transfer: no probe can move registers anywhere\n");
  if (link_back != NULL) {
    printf("  host link device -> host (pinned): %s\n", l01_bw(bw, sizeof bw, link_back->gbs));
  }
  if (hbm != NULL && l01_is_h200(dev)) {
    printf("  HBM read: %.1f%% of the 4.8 TB/s datasheet figure (target: 90%%)\n",
           100.0 * hbm->gbs / l01_h200_hbm_datasheet_gbs);
  }
}

static void l01_print_widths_and_banks(const attn_result *r, int n) {
  char bw[32], bw2[32], bw3[32];
  const attn_result *r4 = l01_timed(r, n, L01_V_HBM_READ4);
  const attn_result *r16 = l01_timed(r, n, L01_V_HBM_READ16);
  const attn_result *copy = l01_timed(r, n, L01_V_HBM_COPY16);
  const attn_result *wr = l01_timed(r, n, L01_V_HBM_WRITE16);
  const attn_result *pageable = l01_timed(r, n, L01_V_H2D_PAGEABLE);
  const attn_result *pinned = l01_timed(r, n, L01_V_H2D_PINNED);
  if (r4 != NULL && r16 != NULL) {
    printf("\nAccess width: the 4-byte read reaches %.0f%% of the 16-byte read's bandwidth\n",
           100.0 * r4->gbs / r16->gbs);
  }
  if (r16 != NULL && wr != NULL && copy != NULL) {
    printf("HBM read %s, write %s, copy %s (read + write counted)\n",
           l01_bw(bw, sizeof bw, r16->gbs), l01_bw(bw2, sizeof bw2, wr->gbs),
           l01_bw(bw3, sizeof bw3, copy->gbs));
  }
  if (copy != NULL && r16 != NULL) {
    printf(
        "Copy probe: %.0f bytes read + the same written per run; read probe: %.0f bytes.\n"
        "  PyTorch on the same bytes: python3 bench/lesson01_peers.py --copy-bytes %.0f "
        "--read-bytes %.0f\n",
        copy->work.bytes / 2.0, r16->work.bytes, copy->work.bytes / 2.0, r16->work.bytes);
  }
  if (pageable != NULL && pinned != NULL) {
    printf("Host to device: pageable reaches %.0f%% of pinned\n",
           100.0 * pageable->gbs / pinned->gbs);
  }

  const attn_result *row = l01_timed(r, n, L01_V_SMEM_ROW);
  if (row == NULL) return;
  static const int numbers[3] = {L01_V_SMEM_STRIDE2, L01_V_SMEM_STRIDE32, L01_V_SMEM_PAD33};
  static const l01_smem_layout layouts[3] = {L01_SMEM_STRIDE2, L01_SMEM_STRIDE32, L01_SMEM_PAD33};
  printf("\nShared-memory bank conflicts (time against the conflict-free row read, same loads):\n");
  printf("  %-14s %-12s %-20s %-10s %s\n", "version", "lane stride", "predicted slowdown",
         "measured", "within 20%");
  for (int i = 0; i < 3; ++i) {
    const attn_result *x = l01_timed(r, n, numbers[i]);
    if (x == NULL) continue;
    int ls = 1, ks = 32;
    l01_smem_strides(layouts[i], &ls, &ks);
    const double predicted = (double)l01_smem_conflict_ways(ls);
    const double measured = x->timing.median_ms / row->timing.median_ms;
    printf("  %-14s %-12d %-20.0f %-10.2f %s\n", x->version->name, ls, predicted, measured,
           fabs(measured / predicted - 1.0) <= 0.2 ? "yes" : "NO");
  }
}

/* One naive kernel, for attn_time(). */
typedef struct l01_step_job {
  const attn_problem *p;
  const float *q, *k, *v;
  float *s, *o, *lse;
  int step; /* 1: QK^T, 2: softmax, 3: PV */
} l01_step_job;

static cudaError_t l01_step_thunk(void *ctx, cudaStream_t stream) {
  const l01_step_job *j = (const l01_step_job *)ctx;
  if (j->step == 1) return l01_naive_qk(j->p, j->q, j->k, j->s, stream);
  if (j->step == 2) return l01_naive_softmax(j->p, j->s, j->lse, stream);
  return l01_naive_pv(j->p, j->s, j->v, j->o, stream);
}

/* Time the three kernels one by one on the problem's shape. */
static cudaError_t l01_time_steps(const attn_options *o, double ms[3], int *ran) {
  const attn_problem *p = &o->problem;
  *ran = 0;
  float *q = NULL, *k = NULL, *v = NULL, *out = NULL, *lse = NULL, *s = NULL;
  const size_t q_bytes = attn_q_elems(p) * 4, kv_bytes = attn_kv_elems(p) * 4;
  cudaError_t err = cudaSuccess;
  if (cudaMalloc((void **)&q, q_bytes) != cudaSuccess ||
      cudaMalloc((void **)&k, kv_bytes) != cudaSuccess ||
      cudaMalloc((void **)&v, kv_bytes) != cudaSuccess ||
      cudaMalloc((void **)&out, q_bytes) != cudaSuccess ||
      cudaMalloc((void **)&lse, attn_rows(p) * 4) != cudaSuccess ||
      cudaMalloc((void **)&s, l01_naive_workspace(p)) != cudaSuccess) {
    (void)cudaGetLastError();
    printf("  (per-kernel timing skipped: not enough device memory)\n");
    goto done;
  }
  err = l01_fill_hash_pattern(q, q_bytes / 4, 0);
  if (err == cudaSuccess) err = l01_fill_hash_pattern(k, kv_bytes / 4, 0);
  if (err == cudaSuccess) err = l01_fill_hash_pattern(v, kv_bytes / 4, 0);
  for (int step = 1; step <= 3 && err == cudaSuccess; ++step) {
    l01_step_job job = {p, q, k, v, s, out, lse, step};
    attn_timing t = {0.0, 0.0, 0.0, 0};
    err = attn_time(l01_step_thunk, &job, 0, o->warmup, o->iters > 0 ? o->iters : 1, 1, &t);
    ms[step - 1] = t.median_ms;
  }
  if (err == cudaSuccess) *ran = 1;
done:
  (void)cudaFree(q);
  (void)cudaFree(k);
  (void)cudaFree(v);
  (void)cudaFree(out);
  (void)cudaFree(lse);
  (void)cudaFree(s);
  return err;
}

static int l01_print_naive(const attn_options *o, const attn_device *dev, const attn_result *r,
                           int n) {
  const attn_result *naive = l01_timed(r, n, L01_V_NAIVE);
  if (naive == NULL) return 0;
  const attn_result *hbm = l01_timed(r, n, L01_V_HBM_READ16);
  const attn_result *fma = l01_timed(r, n, L01_V_FMA);
  const attn_problem *p = &o->problem;
  const l01_shape s = l01_shape_of(p);
  l01_traffic t;
  l01_naive_traffic(&s, &t);
  const double useful = l01_useful_flops(&s), executed = l01_naive_flops(&s);
  const double hbm_gbs = hbm != NULL ? hbm->gbs : dev->mem_bw_gbs;
  const char *hbm_src = hbm != NULL ? "measured HBM read" : "HBM from clocks";
  const double ai = l01_intensity(executed, t.total);

  printf("\nNaive attention on the roofline (");
  attn_problem_print(p, stdout);
  printf("):\n");
  printf("  S: %.3f GiB; HBM traffic (model) %.3f GB; flops executed %.4g (useful %.4g)\n",
         l01_s_bytes(&s) / (1 << 30), t.total / 1e9, executed, useful);
  printf("  intensity %.2f flop/B (executed flops / traffic)\n", ai);
  printf("  ridge points: fp32 CUDA cores %.1f flop/B (datasheet %.1f TFLOP/s / %s %.0f GB/s)\n",
         l01_ridge(dev->fp32_tflops, hbm_gbs), dev->fp32_tflops, hbm_src, hbm_gbs);
  if (dev->bf16_tensor_tflops > 0.0) {
    printf("                bf16 tensor cores %.1f flop/B (datasheet %.0f TFLOP/s)\n",
           l01_ridge(dev->bf16_tensor_tflops, hbm_gbs), dev->bf16_tensor_tflops);
  }
  const double mem_floor = t.total / (hbm_gbs * 1e9) * 1e3;
  const double fp32_floor = dev->fp32_tflops > 0 ? executed / (dev->fp32_tflops * 1e12) * 1e3 : 0;
  const double tc_floor =
      dev->bf16_tensor_tflops > 0 ? executed / (dev->bf16_tensor_tflops * 1e12) * 1e3 : 0;
  printf("  floors: traffic / %s %.3f ms; flops / fp32 peak %.3f ms", hbm_src, mem_floor,
         fp32_floor);
  if (fma != NULL) printf(" (/ measured FMA rate %.3f ms)", executed / (fma->tflops * 1e12) * 1e3);
  printf("\n");
  if (tc_floor > 0) {
    printf(
        "          flops / bf16 tensor-core peak %.3f ms: with tensor-core matmuls the S/P "
        "traffic alone is %.0fx the compute\n",
        tc_floor, mem_floor / tc_floor);
  }
  printf("  measured %.3f ms: %.0f%% of it is the memory floor\n", naive->timing.median_ms,
         100.0 * mem_floor / naive->timing.median_ms);

  if (o->check_only) return 0;
  double ms[3] = {0, 0, 0};
  int ran = 0;
  if (l01_time_steps(o, ms, &ran) != cudaSuccess) return 1;
  if (!ran) return 0;
  const double flops[3] = {executed / 2.0, 0.0, executed / 2.0};
  const double bytes[3] = {t.qk, t.softmax, t.pv};
  const char *names[3] = {"1 S = QK^T", "2 softmax", "3 O = PV"};
  printf("  each kernel alone (L2 flushed before each run; bytes from the model):\n");
  printf("    %-12s %9s %11s %9s %9s %9s\n", "kernel", "ms", "GB/s", "% HBM rd", "TFLOP/s",
         "% fp32");
  for (int i = 0; i < 3; ++i) {
    const double gbs = bytes[i] / (ms[i] * 1e-3) / 1e9;
    const double tf = flops[i] / (ms[i] * 1e-3) / 1e12;
    printf("    %-12s %9.3f %11.1f %9.1f %9.2f %9.1f\n", names[i], ms[i], gbs,
           100.0 * gbs / hbm_gbs, tf, dev->fp32_tflops > 0 ? 100.0 * tf / dev->fp32_tflops : 0.0);
  }
  printf("    (softmax: about 5 flops per entry, none of them counted; it is pure traffic)\n");
  return 0;
}

int l01_report(const attn_options *o, const attn_device *dev, const attn_result *results, int n) {
  if (dev == NULL) {
    printf(
        "\nNo GPU: the pyramid and the roofline need measurements; the model above is all that "
        "runs on the CPU.\n");
    return 0;
  }
  l01_print_pyramid(dev, results, n);
  l01_print_widths_and_banks(results, n);
  return l01_print_naive(o, dev, results, n);
}
