/** @file
 * @brief Inline PTX for the tensor-core versions (3-6), one instruction per function.
 *
 * Everything here exists on every GPU from sm_80 (A100, RTX 30/40, H100/H200): mma.sync, ldmatrix
 * and cp.async are Ampere instructions that Hopper still runs. Hopper's own wgmma and TMA are
 * lesson 05's subject.
 *
 * Shared-memory addresses are 32-bit offsets in the shared window (what ldmatrix and cp.async
 * take), made once from a generic pointer by smem_u32().
 */
#ifndef L04_PTX_CUH
#define L04_PTX_CUH

#include <stdint.h>

#include "attn_cuda.cuh"

/** A generic pointer into shared memory as the 32-bit shared-window address PTX wants. */
static __device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

/** D = A * B + D on the tensor cores: m16n8k16, A and B bf16 (two per register), D fp32.
 *   a[4]: the 16x16 A fragment, b[2]: the 16x8 B fragment, d[4]: the 16x8 accumulator.
 * Which lane holds which element is drawn in the lesson's README (and drilled in
 * warp_partition.h): row g = lane / 4 and column pair 2 * (lane % 4) of each 8x8 quarter. */
static __device__ __forceinline__ void mma_bf16_16816(float d[4], const uint32_t a[4], uint32_t b0,
                                                      uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/** Four 8x8 bf16 matrices from shared memory into the warp's registers. Lanes 8i..8i+7 give the
 * addresses of the 8 rows (16 bytes each) of matrix i; afterwards r[i] of lane l holds row l / 4,
 * columns 2 * (l % 4) and 2 * (l % 4) + 1 of matrix i: exactly an mma fragment. */
static __device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/** The same, transposed on the way: r[i] of lane l holds rows 2 * (l % 4) and 2 * (l % 4) + 1 of
 * column l / 4 of matrix i. Reads V (stored key-major) as the B operand of P.V, which needs two
 * consecutive keys of one dimension in each register. */
static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/** One 16-byte load from shared memory at a shared-window address. */
static __device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr) {
  uint4 x;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w)
               : "r"(addr)
               : "memory");
  return x;
}

/** One 16-byte store to shared memory at a shared-window address. */
static __device__ __forceinline__ void st_shared_v4(uint32_t addr, uint4 x) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(x.x), "r"(x.y),
               "r"(x.z), "r"(x.w));
}

/** Two fp32 values rounded to bf16 and packed into one register: lo in the low half (the lower
 * column of an mma fragment), hi in the high half. cvt puts its first source in the high half. */
static __device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/** 2^x with the special-function unit (about 2 ulp; 2^-inf = +0, which masked scores rely on). */
static __device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/** Copy 16 bytes global -> shared without passing through registers. src_bytes is 16 or 0; with 0
 * nothing is read and the 16 bytes in shared memory are zero-filled: how rows past the end of the
 * sequence become zeros (src must still be a valid address). .cg: cache in L2 only, skip L1. */
static __device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}

/** Close the group of cp.async issued so far by this thread (an empty group is allowed). */
static __device__ __forceinline__ void cp_async_commit(void) {
  asm volatile("cp.async.commit_group;\n" ::);
}

/** Wait until at most 1 of this thread's committed groups is still in flight. Other threads' copies
 * become visible only after a __syncthreads() that follows. */
static __device__ __forceinline__ void cp_async_wait_1(void) {
  asm volatile("cp.async.wait_group 1;\n" ::);
}

/** Wait until at most 2 of this thread's committed groups are still in flight. */
static __device__ __forceinline__ void cp_async_wait_2(void) {
  asm volatile("cp.async.wait_group 2;\n" ::);
}

#endif /* L04_PTX_CUH */
