/**
 * @file attn_device.h
 * @brief The device header printed on every run, and the peaks that "% of peak" divides by.
 *
 * Memory bandwidth is computed from the device's own figures: 2 (double data rate) x memory clock x
 * bus width. Arithmetic peaks come from a small table of datasheet rates per SM per clock for each
 * architecture, multiplied by the SM count and the device's peak SM clock; they are labelled
 * "datasheet" wherever they are printed, because no run measures them.
 */
#ifndef ATTN_DEVICE_H
#define ATTN_DEVICE_H

#include <stddef.h>
#include <stdio.h>

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the harness knows about the GPU it runs on. */
typedef struct attn_device {
  int id;                      /**< CUDA device ordinal */
  char name[256];              /**< e.g. "NVIDIA H200" */
  int cc_major;                /**< compute capability, major */
  int cc_minor;                /**< compute capability, minor */
  int sm_count;                /**< streaming multiprocessors */
  int sm_clock_khz;            /**< peak SM clock */
  int mem_clock_khz;           /**< peak memory clock */
  int bus_width_bits;          /**< memory bus width */
  double mem_bw_gbs;           /**< 2 x mem clock x bus width / 8, in GB/s (1e9 bytes/s) */
  size_t global_mem_bytes;     /**< device memory */
  size_t l2_bytes;             /**< L2 cache */
  size_t smem_per_sm_bytes;    /**< shared memory per SM */
  size_t smem_per_block_optin; /**< the most one block may ask for (cudaFuncSetAttribute) */
  int regs_per_sm;             /**< 32-bit registers per SM */
  int driver_version;          /**< e.g. 13000 for 13.0 */
  int runtime_version;         /**< the CUDA runtime linked in, same encoding */
  double fp32_tflops;          /**< datasheet FP32 CUDA-core peak at sm_clock (0 when unknown) */
  double bf16_tensor_tflops;   /**< datasheet dense bf16 tensor-core peak, fp32 accumulate (0:
                                  unknown) */
} attn_device;

/** Fill @p d for the current device. Returns 0, or -1 with a one-line reason in @p why when no
 *  usable CUDA device exists (no driver, no GPU, driver older than the runtime, ...). */
int attn_device_query(attn_device *d, char *why, size_t why_len);

/** Compute capability as one number: 80, 86, 90, ... */
int attn_device_sm(const attn_device *d);

/** The architectures this build carries, as CMake was told (e.g. "80;90"). */
const char *attn_build_archs(void);

/** Print the device header: name, SMs, clocks, bandwidth, L2, shared memory, versions, build archs,
 *  datasheet peaks. */
void attn_device_print(const attn_device *d, FILE *f);

/** Datasheet FP32 flops per SM per clock on CUDA cores for compute capability @p sm (e.g. 90);
 *  0 when the table lacks @p sm. */
double attn_datasheet_fp32_flops_per_sm_clk(int sm);
/** Datasheet dense bf16 tensor-core flops (fp32 accumulation) per SM per clock of the
 * architecture's consumer parts (GeForce for sm_86/sm_89); 0 when unknown. */
double attn_datasheet_bf16_flops_per_sm_clk(int sm);
/** As attn_datasheet_fp32_flops_per_sm_clk(), for the part named @p name (e.g. "NVIDIA A40"). */
double attn_datasheet_fp32_flops_for(int sm, const char *name);
/** As attn_datasheet_bf16_flops_per_sm_clk(), for the part named @p name: professional parts of
 *  sm_86/sm_89 (A40, A10, RTX A6000, L40S, L4, RTX 6000 Ada) run bf16 with fp32 accumulation at
 * twice the GeForce rate. 0 when unknown. */
double attn_datasheet_bf16_flops_for(int sm, const char *name);

/** Write into @p why the one-line reason no CUDA device can be used, telling apart no driver
 *  (@p driver_version 0), a driver older than the runtime, no device (or all hidden by
 *  CUDA_VISIBLE_DEVICES) and anything else. @p device_count_error is the cudaError_t that
 *  cudaGetDeviceCount returned. The line starts "no usable CUDA device". Returns 0. */
int attn_no_device_reason(int device_count_error, int driver_version, int runtime_version,
                          char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_DEVICE_H */
