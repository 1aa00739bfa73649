/* The device header and datasheet peaks. See attn_device.h. */
#include "attn_device.h"

#include <stdio.h>
#include <string.h>

#ifndef ATTN_BUILD_ARCHS
#define ATTN_BUILD_ARCHS "unknown"
#endif

/* Datasheet rates per SM per clock. FP32: CUDA cores x 2 (an FMA is two flops). bf16: dense tensor
 * core rate with fp32 accumulation. GeForce parts of sm_86/sm_89 run bf16 with fp32 accumulation at
 * half the rate of their professional siblings; the table holds the GeForce rate. */
typedef struct {
  int sm;
  double fp32;
  double bf16;
} peak_row;

static const peak_row kPeaks[] = {
    {70, 128.0, 0.0},    /* V100: no bf16 tensor cores */
    {75, 128.0, 0.0},    /* T4, RTX 20: no bf16 tensor cores */
    {80, 128.0, 2048.0}, /* A100: 64 FP32 cores/SM; 312 TFLOP/s bf16 at 1410 MHz, 108 SMs */
    {86, 256.0, 256.0},  /* RTX 30 (GeForce rate) */
    {89, 256.0, 512.0},  /* RTX 40 (GeForce rate) */
    {90, 256.0, 4096.0}, /* H100/H200: 128 FP32 cores/SM; 4096 dense bf16 flops/clk/SM */
    {100, 256.0, 8192.0} /* B200 */
};

double attn_datasheet_fp32_flops_per_sm_clk(int sm) {
  for (size_t i = 0; i < sizeof kPeaks / sizeof kPeaks[0]; ++i)
    if (kPeaks[i].sm == sm) return kPeaks[i].fp32;
  return 0.0;
}

double attn_datasheet_bf16_flops_per_sm_clk(int sm) {
  for (size_t i = 0; i < sizeof kPeaks / sizeof kPeaks[0]; ++i)
    if (kPeaks[i].sm == sm) return kPeaks[i].bf16;
  return 0.0;
}

const char *attn_build_archs(void) { return ATTN_BUILD_ARCHS; }

int attn_device_sm(const attn_device *d) { return d->cc_major * 10 + d->cc_minor; }

static int attr(enum cudaDeviceAttr a, int dev) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) v = 0;
  return v;
}

int attn_device_query(attn_device *d, char *why, size_t why_len) {
  memset(d, 0, sizeof *d);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    snprintf(why, why_len, "no usable CUDA device (%s)",
             err != cudaSuccess ? cudaGetErrorString(err) : "no GPU found");
    (void)cudaGetLastError(); /* clear it so later calls start clean */
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
  d->fp32_tflops = attn_datasheet_fp32_flops_per_sm_clk(sm) * d->sm_count * clk / 1e12;
  d->bf16_tensor_tflops = attn_datasheet_bf16_flops_per_sm_clk(sm) * d->sm_count * clk / 1e12;
  return 0;
}

void attn_device_print(const attn_device *d, FILE *f) {
  int sm = attn_device_sm(d);
  fprintf(f, "device   %s, sm_%d, %d SMs, SM clock %d MHz (peak)\n", d->name, sm, d->sm_count,
          d->sm_clock_khz / 1000);
  fprintf(f, "memory   %.1f GiB, %d-bit bus at %d MHz: %.0f GB/s theoretical\n",
          d->global_mem_bytes / 1073741824.0, d->bus_width_bits, d->mem_clock_khz / 1000,
          d->mem_bw_gbs);
  fprintf(f, "caches   L2 %.1f MiB, shared memory %zu KiB per SM (%zu KiB per block opt-in), "
             "%d registers per SM\n",
          d->l2_bytes / 1048576.0, d->smem_per_sm_bytes / 1024, d->smem_per_block_optin / 1024,
          d->regs_per_sm);
  fprintf(f, "software driver %d.%d, runtime %d.%d, built for sm %s\n", d->driver_version / 1000,
          (d->driver_version % 1000) / 10, d->runtime_version / 1000,
          (d->runtime_version % 1000) / 10, attn_build_archs());
  if (d->fp32_tflops > 0.0) {
    fprintf(f, "peaks    datasheet rates x %d SMs x %d MHz: fp32 %.1f TFLOP/s (%.0f flop/clk/SM)",
            d->sm_count, d->sm_clock_khz / 1000, d->fp32_tflops,
            attn_datasheet_fp32_flops_per_sm_clk(sm));
    if (d->bf16_tensor_tflops > 0.0)
      fprintf(f, ", bf16 tensor %.0f TFLOP/s (%.0f flop/clk/SM)", d->bf16_tensor_tflops,
              attn_datasheet_bf16_flops_per_sm_clk(sm));
    fprintf(f, "\n");
  } else {
    fprintf(f, "peaks    sm_%d is not in the datasheet table: no %% of peak for arithmetic\n", sm);
  }
}
