// Microbenchmarks: the exponential burst in f32 against packed f16, and FP8 wgmma with f32 against
// f16 accumulators. Development only. Built from the repository's root with
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ilessons/05_fa3_hopper \
//        -Ilessons/04_fa2_warps -Icommon -o mb half-precision-mb.cu
// and run as ./mb (twice in the call; half-precision-mb.log).
#include <cuda_fp16.h>
#include <cstdint>
#include <cstdio>
#include "hopper.cuh"

__device__ unsigned long long g_cyc[2048];
__device__ uint32_t g_sink[1 << 16];

// f32 burst: 128 values a thread, as version 11's tile: fma, ex2, sum, pack to e4m3 pairs.
__global__ void burst32(int iters, float c) {
  float s[128];
  for (int i = 0; i < 128; ++i) s[i] = -0.01f * (float)((threadIdx.x * 7 + i * 13) & 255);
  float sum = 0.f;
  uint32_t acc = 0;
  __syncthreads();
  unsigned long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    const float o = -0.001f * it;
    float sm[4] = {0, 0, 0, 0};
    uint32_t pk[64];
#pragma unroll
    for (int i = 0; i < 128; i += 2) {
      float p0, p1;
      asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(p0) : "f"(fmaf(s[i], c, o)));
      asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(p1) : "f"(fmaf(s[i + 1], c, o)));
      sm[(i >> 1) & 3] += p0 + p1;
      uint16_t h;
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(p1), "f"(p0));
      pk[i >> 1] = h;
    }
#pragma unroll
    for (int i = 0; i < 64; i += 2) acc ^= pk[i] | (pk[i + 1] << 16);
    sum += sm[0] + sm[1] + sm[2] + sm[3];
  }
  unsigned long long t1 = clock64();
  if ((threadIdx.x & 31) == 0) g_cyc[blockIdx.x * 16 + threadIdx.x / 32] = t1 - t0;
  g_sink[(blockIdx.x * blockDim.x + threadIdx.x) & 0xffff] = acc ^ __float_as_uint(sum);
}

// f16 burst: the same 128 values as 64 f16x2: hfma2, ex2.f16x2, hadd2 sums, pack f16x2 to e4m3.
__global__ void burst16(int iters, float c) {
  uint32_t s[64];
  for (int i = 0; i < 64; ++i) {
    __half2 h = __floats2half2_rn(-0.01f * (float)((threadIdx.x * 7 + i * 26) & 255),
                                  -0.01f * (float)((threadIdx.x * 7 + i * 26 + 13) & 255));
    s[i] = *(uint32_t *)&h;
  }
  __half2 c2 = __float2half2_rn(c);
  uint32_t cc = *(uint32_t *)&c2;
  float sum = 0.f;
  uint32_t acc = 0;
  __syncthreads();
  unsigned long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    __half2 o2 = __float2half2_rn(-0.001f * it);
    uint32_t oo = *(uint32_t *)&o2;
    uint32_t sm[4] = {0, 0, 0, 0};
    uint32_t pk[32];
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
      uint32_t x0, x1, p0, p1;
      asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(x0) : "r"(s[i]), "r"(cc), "r"(oo));
      asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(x1) : "r"(s[i + 1]), "r"(cc), "r"(oo));
      asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(p0) : "r"(x0));
      asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(p1) : "r"(x1));
      asm("add.rn.f16x2 %0, %0, %1;" : "+r"(sm[(i >> 1) & 3]) : "r"(p0));
      asm("add.rn.f16x2 %0, %0, %1;" : "+r"(sm[(i >> 1) & 3]) : "r"(p1));
      uint16_t h0, h1;
      asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(h0) : "r"(p0));
      asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(h1) : "r"(p1));
      pk[i >> 1] = (uint32_t)h0 | ((uint32_t)h1 << 16);
    }
#pragma unroll
    for (int i = 0; i < 32; ++i) acc ^= pk[i];
    for (int j = 0; j < 4; ++j) {
      __half2 h = *(__half2 *)&sm[j];
      sum += __low2float(h) + __high2float(h);
    }
  }
  unsigned long long t1 = clock64();
  if ((threadIdx.x & 31) == 0) g_cyc[blockIdx.x * 16 + threadIdx.x / 32] = t1 - t0;
  g_sink[(blockIdx.x * blockDim.x + threadIdx.x) & 0xffff] = acc ^ __float_as_uint(sum);
}

// ex2 alone, independent chains: f32 vs f16x2 (elements a clock).
__global__ void ex2only(int iters, int half) {
  uint32_t x[16];
  for (int i = 0; i < 16; ++i) x[i] = 0x3c003c00u ^ (threadIdx.x + i);
  unsigned long long t0 = clock64();
  if (half) {
    for (int it = 0; it < iters; ++it)
#pragma unroll
      for (int i = 0; i < 16; ++i) asm volatile("ex2.approx.f16x2 %0, %0;" : "+r"(x[i]));
  } else {
    for (int it = 0; it < iters; ++it)
#pragma unroll
      for (int i = 0; i < 16; ++i) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+r"(x[i]));
  }
  unsigned long long t1 = clock64();
  if ((threadIdx.x & 31) == 0) g_cyc[blockIdx.x * 16 + threadIdx.x / 32] = t1 - t0;
  uint32_t a = 0;
  for (int i = 0; i < 16; ++i) a ^= x[i];
  g_sink[(blockIdx.x * blockDim.x + threadIdx.x) & 0xffff] = a;
}

static __device__ __forceinline__ void wgmma_fp8_ss_n256_f16(uint32_t d[64], uint64_t da,
                                                             uint64_t db, int sd) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, "
      "0;\nwgmma.mma_async.sync.aligned.m64n256k32.f16.e4m3.e4m3 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
        "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
        "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),
        "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]),
        "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]),
        "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
        "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
        "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]),
        "+r"(d[63])
      : "l"(da), "l"(db), "r"(sd));
}

static __device__ __forceinline__ void reg_fence_u(uint32_t d[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
// wgmma throughput: each of 2 warpgroups issues 4 m64n256k32 (one S), waits, again.
#define GEMM_PRO                                                     \
  extern __shared__ unsigned char sm[];                              \
  const uint32_t base = (smem_u32(sm) + 1023u) & ~1023u;             \
  for (int i = threadIdx.x; i < 40960 / 4; i += blockDim.x)          \
    ((uint32_t *)(sm + (base - smem_u32(sm))))[i] = 0x38383838u ^ i; \
  __syncthreads();                                                   \
  const uint32_t qa = base, kb = base + 8192;                        \
  uint32_t x = 0;
__global__ void gemm16(int iters) {
  GEMM_PRO
  uint32_t d[64];
  for (int i = 0; i < 64; ++i) d[i] = 0;
  unsigned long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      wgmma_fp8_ss_n256_f16(d, wgmma_desc(qa + ks * 32, 16, 1024),
                            wgmma_desc(kb + ks * 32, 16, 1024), ks > 0);
    wgmma_commit();
    wgmma_wait0();
    reg_fence_u(d);
  }
  unsigned long long t1 = clock64();
  for (int i = 0; i < 64; ++i) x ^= d[i];
  if ((threadIdx.x & 31) == 0) g_cyc[blockIdx.x * 16 + threadIdx.x / 32] = t1 - t0;
  g_sink[(blockIdx.x * blockDim.x + threadIdx.x) & 0xffff] = x;
}
__global__ void gemm32(int iters) {
  GEMM_PRO
  float d[128];
  for (int i = 0; i < 128; ++i) d[i] = 0.f;
  unsigned long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      wgmma_fp8_ss_n256(d, wgmma_desc(qa + ks * 32, 16, 1024), wgmma_desc(kb + ks * 32, 16, 1024),
                        ks > 0);
    wgmma_commit();
    wgmma_wait0();
    reg_fence(d, 128);
  }
  unsigned long long t1 = clock64();
  for (int i = 0; i < 128; ++i) x ^= __float_as_uint(d[i]);
  if ((threadIdx.x & 31) == 0) g_cyc[blockIdx.x * 16 + threadIdx.x / 32] = t1 - t0;
  g_sink[(blockIdx.x * blockDim.x + threadIdx.x) & 0xffff] = x;
}

static double mean_cyc(int blocks, int warps) {
  static unsigned long long h[2048];
  cudaMemcpyFromSymbol(h, g_cyc, sizeof h);
  double s = 0;
  int n = 0;
  for (int b = 0; b < blocks; ++b)
    for (int w = 0; w < warps; ++w) {
      s += (double)h[b * 16 + w];
      ++n;
    }
  return s / n;
}

int main() {
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int it = 2000;
  for (int warps = 4; warps <= 8; warps += 4) {
    for (int half = 0; half < 2; ++half) {
      ex2only<<<sms, 32 * warps>>>(it, half);
      cudaDeviceSynchronize();
      ex2only<<<sms, 32 * warps>>>(it, half);
      cudaDeviceSynchronize();
      double c = mean_cyc(sms, warps);
      double inst = (double)it * 16 * (half ? 2 : 1); /* MUFU per thread */
      printf(
          "ex2 %s, %d warps/SMSP: %.2f cycles per MUFU warp-instr per warp, %.1f elements/clk/SM\n",
          half ? "f16x2" : "f32", warps / 4, c / inst,
          (double)it * 16 * (half ? 2 : 1) * 32 * warps / c);
    }
    burst32<<<sms, 32 * warps>>>(200, 0.37f);
    cudaDeviceSynchronize();
    burst32<<<sms, 32 * warps>>>(200, 0.37f);
    cudaDeviceSynchronize();
    double c32 = mean_cyc(sms, warps);
    burst16<<<sms, 32 * warps>>>(200, 0.37f);
    cudaDeviceSynchronize();
    burst16<<<sms, 32 * warps>>>(200, 0.37f);
    cudaDeviceSynchronize();
    double c16 = mean_cyc(sms, warps);
    printf(
        "burst of 128 exps (fma, ex2, sum, e4m3 pack), %d warps/SMSP: f32 %.1f cycles (%.2f an "
        "exp), f16x2 %.1f cycles (%.2f an exp)\n",
        warps / 4, c32 / 200, c32 / 200 / 128, c16 / 200, c16 / 200 / 128);
  }
  cudaFuncSetAttribute(gemm16, cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * 1024);
  cudaFuncSetAttribute(gemm32, cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * 1024);
  for (int f16 = 0; f16 < 2; ++f16) {
    for (int r = 0; r < 2; ++r) {
      if (f16)
        gemm16<<<sms, 256, 48 * 1024>>>(1000);
      else
        gemm32<<<sms, 256, 48 * 1024>>>(1000);
    }
    cudaError_t e = cudaDeviceSynchronize();
    double c = mean_cyc(sms, 8);
    printf(
        "S = 4 x m64n256k32 e4m3, acc %s, 2 warpgroups: %.1f cycles per S per warpgroup (%s); peak "
        "pace 512 for both\n",
        f16 ? "f16" : "f32", c / 1000, cudaGetErrorString(e));
  }
  return 0;
}
