/* The device header and datasheet peaks. See attn_device.h. */
#include "attn_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ATTN_BUILD_ARCHS
#define ATTN_BUILD_ARCHS "unknown"
#endif

/* Datasheet rates per SM per clock. FP32: CUDA cores x 2 (an FMA is two flops). bf16: the dense
 * tensor-core rate with fp32 accumulation, which is what the lessons use. Within one architecture
 * the GeForce parts run that mode at half the rate of their professional siblings, so a row may
 * name a part: the first row whose architecture matches and whose name (when it has one) occurs in
 * the device's name wins. Each figure is the whitepaper's or datasheet's TFLOP/s divided by SMs x
 * boost clock, as the comment on its row shows. */
typedef struct {
  int sm;
  const char *part; /* substring of the device name; NULL: any part of this architecture */
  double fp32;
  double bf16;
} peak_row;

static const peak_row kPeaks[] = {
    {70, NULL, 128.0, 0.0},       /* V100: no bf16 tensor cores */
    {75, NULL, 128.0, 0.0},       /* T4, RTX 20: no bf16 tensor cores */
    {80, NULL, 128.0, 2048.0},    /* A100: 312 TFLOP/s / (108 SMs x 1.41 GHz) */
    {86, "A40", 256.0, 1024.0},   /* A40: 149.7 TFLOP/s / (84 SMs x 1.74 GHz) */
    {86, "A10", 256.0, 1024.0},   /* A10: 125 TFLOP/s / (72 SMs x 1.695 GHz) */
    {86, "RTX A", 256.0, 1024.0}, /* RTX A6000: 154.8 TFLOP/s / (84 SMs x 1.8 GHz) */
    {86, NULL, 256.0, 512.0},     /* RTX 30 (GA102 whitepaper, RTX 3090): 71 / (82 x 1.695 GHz) */
    {89, "L40S", 256.0, 1024.0},  /* L40S: 362 TFLOP/s / (142 SMs x 2.52 GHz) */
    {89, "L4", 256.0, 1024.0},    /* L4: 121 TFLOP/s / (58 SMs x 2.04 GHz); L40 (512) is below */
    {89, "RTX 6000 Ada", 256.0, 1024.0}, /* 364 TFLOP/s / (142 SMs x 2.505 GHz) */
    {89, NULL, 256.0, 512.0},  /* RTX 40 (Ada whitepaper, RTX 4090): 165.2 / (128 x 2.52 GHz) */
    {90, NULL, 256.0, 4096.0}, /* H100 SXM: 989 TFLOP/s / (132 SMs x 1.83 GHz); H200 the same */
    {100, NULL, 256.0, 8192.0} /* B200 */
};

static const peak_row *peak_find(int sm, const char *name) {
  for (size_t i = 0; i < sizeof kPeaks / sizeof kPeaks[0]; ++i) {
    const peak_row *r = &kPeaks[i];
    if (r->sm != sm) continue;
    if (r->part && !(name && strstr(name, r->part))) continue;
    /* "L4" must not catch the L40: a part name ending in a digit needs a non-digit after it. */
    if (r->part && name) {
      const char *at = strstr(name, r->part);
      char next = at[strlen(r->part)];
      if (next >= '0' && next <= '9') continue;
    }
    return r;
  }
  return NULL;
}

double attn_datasheet_fp32_flops_per_sm_clk(int sm) {
  const peak_row *r = peak_find(sm, NULL);
  return r ? r->fp32 : 0.0;
}

double attn_datasheet_bf16_flops_per_sm_clk(int sm) {
  const peak_row *r = peak_find(sm, NULL);
  return r ? r->bf16 : 0.0;
}

double attn_datasheet_fp32_flops_for(int sm, const char *name) {
  const peak_row *r = peak_find(sm, name);
  return r ? r->fp32 : 0.0;
}

double attn_datasheet_bf16_flops_for(int sm, const char *name) {
  const peak_row *r = peak_find(sm, name);
  return r ? r->bf16 : 0.0;
}

const char *attn_build_archs(void) {
  return ATTN_BUILD_ARCHS;
}

int attn_device_sm(const attn_device *d) {
  return d->cc_major * 10 + d->cc_minor;
}

static int attr(enum cudaDeviceAttr a, int dev) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) v = 0;
  return v;
}

int attn_no_device_reason(int device_count_error, int driver_version, int runtime_version,
                          char *why, size_t why_len) {
  const cudaError_t err = (cudaError_t)device_count_error;
  const int rt_major = runtime_version / 1000, rt_minor = (runtime_version % 1000) / 10;
  if (driver_version == 0) {
    snprintf(why, why_len,
             "no usable CUDA device: no NVIDIA driver is installed on this machine (no GPU, or its "
             "driver is missing)");
  } else if (err == cudaErrorInsufficientDriver || driver_version < runtime_version) {
    snprintf(
        why, why_len,
        "no usable CUDA device: the NVIDIA driver supports CUDA up to %d.%d, this program was "
        "built with CUDA %d.%d: update the driver, or build with a toolkit no newer than %d.%d",
        driver_version / 1000, (driver_version % 1000) / 10, rt_major, rt_minor,
        driver_version / 1000, (driver_version % 1000) / 10);
  } else if (err == cudaErrorNoDevice || err == cudaSuccess) {
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (vis)
      snprintf(why, why_len,
               "no usable CUDA device: none is visible (CUDA_VISIBLE_DEVICES=\"%s\" hides them)",
               vis);
    else
      snprintf(why, why_len, "no usable CUDA device: the driver is installed but finds no GPU");
  } else {
    snprintf(why, why_len, "no usable CUDA device: %s (%s)", cudaGetErrorString(err),
             cudaGetErrorName(err));
  }
  return 0;
}

int attn_device_query(attn_device *d, char *why, size_t why_len) {
  memset(d, 0, sizeof *d);
  int count = 0, driver = 0, runtime = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError(); /* clear it so later calls start clean */
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    (void)cudaGetLastError();
    attn_no_device_reason((int)err, driver, runtime, why, why_len);
    return -1;
  }
  err = cudaGetDevice(&d->id);
  struct cudaDeviceProp prop;
  if (err == cudaSuccess) err = cudaGetDeviceProperties(&prop, d->id);
  if (err != cudaSuccess) {
    snprintf(why, why_len, "no usable CUDA device (%s)", cudaGetErrorString(err));
    (void)cudaGetLastError();
    return -1;
  }
  snprintf(d->name, sizeof d->name, "%s", prop.name);
  d->cc_major = prop.major;
  d->cc_minor = prop.minor;
  d->sm_count = prop.multiProcessorCount;
  d->global_mem_bytes = prop.totalGlobalMem;
  d->l2_bytes = (size_t)prop.l2CacheSize;
  d->smem_per_sm_bytes = prop.sharedMemPerMultiprocessor;
  d->smem_per_block_optin = prop.sharedMemPerBlockOptin;
  d->regs_per_sm = prop.regsPerMultiprocessor;
  /* Clocks are device attributes since CUDA 13 removed them from cudaDeviceProp. */
  d->sm_clock_khz = attr(cudaDevAttrClockRate, d->id);
  d->mem_clock_khz = attr(cudaDevAttrMemoryClockRate, d->id);
  d->bus_width_bits = attr(cudaDevAttrGlobalMemoryBusWidth, d->id);
  d->mem_bw_gbs = 2.0 * d->mem_clock_khz * 1e3 * (d->bus_width_bits / 8.0) / 1e9;
  cudaDriverGetVersion(&d->driver_version);
  cudaRuntimeGetVersion(&d->runtime_version);
  int sm = attn_device_sm(d);
  double clk = d->sm_clock_khz * 1e3;
  d->fp32_tflops = attn_datasheet_fp32_flops_for(sm, d->name) * d->sm_count * clk / 1e12;
  d->bf16_tensor_tflops = attn_datasheet_bf16_flops_for(sm, d->name) * d->sm_count * clk / 1e12;
  return 0;
}

void attn_device_print(const attn_device *d, FILE *f) {
  int sm = attn_device_sm(d);
  fprintf(f, "device   %s, sm_%d, %d SMs, SM clock %d MHz (peak)\n", d->name, sm, d->sm_count,
          d->sm_clock_khz / 1000);
  fprintf(f, "memory   %.1f GiB, %d-bit bus at %d MHz: %.0f GB/s theoretical\n",
          d->global_mem_bytes / 1073741824.0, d->bus_width_bits, d->mem_clock_khz / 1000,
          d->mem_bw_gbs);
  fprintf(f,
          "caches   L2 %.1f MiB, shared memory %zu KiB per SM (%zu KiB per block opt-in), "
          "%d registers per SM\n",
          d->l2_bytes / 1048576.0, d->smem_per_sm_bytes / 1024, d->smem_per_block_optin / 1024,
          d->regs_per_sm);
  fprintf(f, "software driver %d.%d, runtime %d.%d, built for sm %s\n", d->driver_version / 1000,
          (d->driver_version % 1000) / 10, d->runtime_version / 1000,
          (d->runtime_version % 1000) / 10, attn_build_archs());
  if (d->fp32_tflops > 0.0) {
    fprintf(f, "peaks    datasheet rates x %d SMs x %d MHz: fp32 %.1f TFLOP/s (%.0f flop/clk/SM)",
            d->sm_count, d->sm_clock_khz / 1000, d->fp32_tflops,
            attn_datasheet_fp32_flops_for(sm, d->name));
    if (d->bf16_tensor_tflops > 0.0)
      fprintf(f, ", bf16 tensor %.0f TFLOP/s (%.0f flop/clk/SM)", d->bf16_tensor_tflops,
              attn_datasheet_bf16_flops_for(sm, d->name));
    else
      fprintf(f, ", bf16 tensor: none on this architecture (%% of peak not shown)");
    fprintf(f, "\n");
  } else {
    fprintf(f,
            "peaks    sm_%d is not in the datasheet table (common/device.c): TFLOP/s are shown, "
            "%% of peak is not\n",
            sm);
  }
}
