/** @file
 * @brief Inline PTX for lesson 05's Hopper versions (and lesson 09's versions 6 and 7), one
 * instruction (or one idiom) per function: wgmma (the warpgroup's asynchronous matrix multiply),
 * its shared-memory matrix descriptors, stmatrix, the mbarrier and the tensor-memory-accelerator
 * (TMA) copy.
 *
 * wgmma exists only on sm_90a: this header is compiled for that target alone (lesson 05's
 * CMakeLists.txt). lesson 04's ptx.cuh supplies what Ampere already had (cp.async, cvt to bf16x2,
 * ex2.approx).
 *
 * A 128-byte-swizzled tile, as every version here keeps Q, K and V in shared memory: the tile's
 * rows are cut into panels of 64 bf16 columns (128 bytes); a panel stores its rows one after
 * another, 128 bytes each, and the 16-byte chunk c of row r sits at chunk c ^ (r % 8). Eight rows
 * (1024 bytes) form one swizzle atom, so a tile starts on a 1024-byte boundary. The tensor cores
 * read that layout through a descriptor (wgmma_desc()); TMA writes it when its tensor map says
 * CU_TENSOR_MAP_SWIZZLE_128B. hopper_layout.h has the same arithmetic on the CPU (the drill).
 */
#ifndef L05_HOPPER_CUH
#define L05_HOPPER_CUH

#include <stdint.h>

#include "ptx.cuh" /* lesson 04's PTX wrappers (USES 4) */

/** Byte offset of 16-byte chunk `chunk` (0 .. dim / 8 - 1) of row `row` in a 128-byte-swizzled
 * tile of `rows` rows: panel chunk / 8, then the row, then the chunk XOR the row's place in its
 * swizzle atom. */
static __device__ __forceinline__ uint32_t sw128_off(int row, int chunk, int rows) {
  return (uint32_t)((chunk >> 3) * rows * 128 + row * 128 + (((chunk & 7) ^ (row & 7)) << 4));
}

/** A wgmma shared-memory matrix descriptor for a 128-byte-swizzled operand (l05_wgmma_desc() on
 * the CPU): the start address, the leading and the stride byte offsets, each stored without its 4
 * low bits in 14-bit fields at bits 0, 16 and 32; base offset 0 (tiles start on 1024 bytes); the
 * swizzle mode 1 (128 bytes) at bits 62-63.
 *   K-major (rows of the operand hold the reduction dimension, as Q and K do): the stride byte
 *   offset is the distance between 8-row groups (1024); the leading one is unused.
 *   MN-major (V for P.V: rows are keys, the reduction dimension): the stride byte offset is again
 *   the distance between 8-key groups (1024); the leading byte offset is the distance between
 *   64-column panels. */
static __device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr & 0x3FFFFu) >> 4) | ((uint64_t)((lbo & 0x3FFFFu) >> 4) << 16) |
         ((uint64_t)((sbo & 0x3FFFFu) >> 4) << 32) | (1ull << 62);
}

/** The descriptor @p desc of an operand, @p bytes (a multiple of 16) further on in shared memory:
 * only the start address field moves, and inside shared memory it cannot carry into the field
 * above it, so one 64-bit add replaces building the descriptor from its fields at every k-step
 * (about a dozen instructions each in the SASS). Lesson 10's version 4 uses it; in this lesson's
 * kernels it was measured level (docs/results/h200-l10u-2026-11-27/descriptors-ab.log). */
static __device__ __forceinline__ uint64_t wgmma_desc_at(uint64_t desc, uint32_t bytes) {
  return desc + (bytes >> 4);
}

/** Before the first wgmma of a batch: the warpgroup's earlier register writes (the accumulator
 * rescaled, P packed) are ordered before the tensor cores read those registers. */
static __device__ __forceinline__ void wgmma_fence(void) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

/** Close the batch of wgmma issued so far into one group. */
static __device__ __forceinline__ void wgmma_commit(void) {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/** Wait until no wgmma group of this warpgroup is in flight. */
static __device__ __forceinline__ void wgmma_wait0(void) {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

/** Wait until at most one wgmma group of this warpgroup is in flight. */
static __device__ __forceinline__ void wgmma_wait1(void) {
  asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
}

/** Tell the compiler that `n` accumulator registers may change here: no read of them is moved
 * above a wgmma_wait0() they follow, and no write below a wgmma they precede. Costs no
 * instruction. */
static __device__ __forceinline__ void reg_fence(float *d, int n) {
#pragma unroll
  for (int i = 0; i < n; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/** Order this thread's ordinary shared-memory writes (st.shared, cp.async) before later reads of
 * the async proxy: the tensor cores (wgmma) and TMA. Goes before the barrier that publishes them.
 */
static __device__ __forceinline__ void fence_proxy_async(void) {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/** Initialise an mbarrier (8 bytes of shared memory) that completes a phase after `count`
 * arrivals (and every byte announced by expect-tx has landed). */
static __device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/** Make initialised mbarriers visible to the async proxy (TMA) before any copy completes on them.
 */
static __device__ __forceinline__ void mbar_init_fence(void) {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/** Arrive on `bar` and announce `bytes` more bytes that TMA will deliver before the phase ends. */
static __device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

/** Arrive on `bar` (one of the `count` arrivals its phase waits for). */
static __device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/** Wait until the phase of `bar` with parity `parity` has completed. A barrier starts in phase 0;
 * waiting on parity 1 of a fresh barrier returns at once (the phase "before" 0 counts as done),
 * which is how a producer's first pass over empty stages goes through. l05_full_parity() and
 * l05_empty_parity() (the drill) say which parity a stage's k-th use waits on. */
static __device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

/** TMA: copy one box of a 4-D tensor (coordinates innermost first: column, head, row, batch) into
 * shared memory at `dst`, completing on mbarrier `bar` (its byte count). Rows past the tensor's end
 * arrive as zeros. `map` is the tensor map's address in the kernel's parameter space
 * (`__grid_constant__`). */
static __device__ __forceinline__ void tma_load_4d(uint32_t dst, const void *map, uint32_t bar,
                                                   int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, "
      "%4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

/** TMA: fetch one box of a 4-D tensor into L2 only (no shared memory, no barrier, nothing to wait
 * for): a later load of the same box then comes from L2 instead of HBM. */
static __device__ __forceinline__ void tma_prefetch_4d(const void *map, int c0, int c1, int c2,
                                                       int c3) {
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n" ::"l"(
                   (uint64_t)map),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

/** A 32-bit store to shared memory at a shared-window address. */
static __device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t x) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(x) : "memory");
}

/** A 32-bit load from shared memory at a shared-window address. */
static __device__ __forceinline__ uint32_t ld_shared_u32(uint32_t addr) {
  uint32_t x;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(x) : "r"(addr) : "memory");
  return x;
}

/** TMA: store one box of a 4-D tensor from shared memory at `src` (in the tensor map's swizzled
 * layout) at coordinates (column, head, row, batch); rows past the tensor's end are left out. It
 * completes as a bulk group of the issuing thread (bulk_commit(), bulk_wait_read0()). */
static __device__ __forceinline__ void tma_store_4d(const void *map, uint32_t src, int c0, int c1,
                                                    int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          (uint64_t)map),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

/** Close this thread's bulk operations issued so far into one group. */
static __device__ __forceinline__ void bulk_commit(void) {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

/** Wait until every bulk group of this thread has read its shared-memory source. */
static __device__ __forceinline__ void bulk_wait_read0(void) {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

/** Wait until every bulk group of this thread has completed (its writes done). */
static __device__ __forceinline__ void bulk_wait0(void) {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

/** Wait at named barrier `id` (1-15; 0 is __syncthreads') until `threads` threads have reached it,
 * counting this warp's 32: the ones that wait here and the ones that only arrive. */
static __device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/** Count this warp at named barrier `id` without waiting: the signal half of a hand-over. */
static __device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/** The SM's cycle counter: stamps of one block are comparable (the block stays on its SM). */
static __device__ __forceinline__ unsigned long long cycles(void) {
  return (unsigned long long)clock64();
}

#ifdef L05_TIMELINE
/** Record event `ev` of KV tile `j` for warpgroup role `role` (0 producer, 1-2 consumers), by the
 * warpgroup's first thread, in the first L05_TL_BLOCKS blocks (fa3_hopper.h has the layout). */
#define TL_STAMP(tl, role, j, ev)                                                                \
  do {                                                                                           \
    if ((tl) && blockIdx.x < L05_TL_BLOCKS && (j) < L05_TL_TILES && (threadIdx.x & 127) == 0)    \
      (tl)[((blockIdx.x * L05_TL_ROLES + (role)) * L05_TL_TILES + (j)) * L05_TL_EVENTS + (ev)] = \
          cycles();                                                                              \
  } while (0)
#else
/** Without L05_TIMELINE: nothing at all. */
#define TL_STAMP(tl, role, j, ev) ((void)(tl))
#endif

/** Give back registers: every warp of the warpgroup lowers its per-thread count to 24 (a
 * producer that only issues TMA needs few). Takes effect only when the kernel has a register cap
 * at entry (__launch_bounds__(threads, 1)); otherwise ptxas ignores it and warns (C7508). */
static __device__ __forceinline__ void setmaxnreg_dec_24(void) {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
}

/** Take registers: every warp of the warpgroup raises its per-thread count to 240 (what a consumer
 * warpgroup holding S, P and O needs). 128 x 24 + 256 x 240 = 64512 of the SM's 65536. */
static __device__ __forceinline__ void setmaxnreg_inc_240(void) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
}

/** The pair for a producer that walks a list of items and needs a few more registers: 32 for the
 * producer, 232 for each consumer (128 x 32 + 256 x 232 = 63488). */
static __device__ __forceinline__ void setmaxnreg_dec_32(void) {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 32;\n" ::: "memory");
}
/** Raise to 232: the consumers' side of setmaxnreg_dec_32(). */
static __device__ __forceinline__ void setmaxnreg_inc_232(void) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
}

/** D (+)= A B, m64n128k16, A and B from shared memory through descriptors, both K-major (the
 * transpose flags 0). d[64]: this thread's share of the 64 x 128 fp32 accumulator. scale_d 0: D =
 * A B (the first k-step); 1: D += A B. */
static __device__ __forceinline__ void wgmma_ss_n128(float d[64], uint64_t desc_a, uint64_t desc_b,
                                                     int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/** D (+)= A B, m64n64k16, A from registers (a[4]: this thread's 16 x 16 slice of its warp's
 * rows, laid out as mma.sync's A fragment), B from shared memory, MN-major (the transpose flag 1: B
 * is stored k-row by k-row with n contiguous, as V is). d[32]: the 64 x 64 fp32 accumulator;
 * scale_d as in wgmma_ss_n128(). */
static __device__ __forceinline__ void wgmma_rs_n64(float d[32], const uint32_t a[4],
                                                    uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

/** D (+)= A B, m64n128k16, A from registers (a[4]: this thread's 16 x 16 slice of its warp's
 * rows, laid out as mma.sync's A fragment), B from shared memory, MN-major (the transpose flag 1: B
 * is stored k-row by k-row with n contiguous, as V is). d[64]: the 64 x 128 fp32 accumulator;
 * scale_d as in wgmma_ss_n128(). */
static __device__ __forceinline__ void wgmma_rs_n128(float d[64], const uint32_t a[4],
                                                     uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

/** D (+)= A B, m64n64k16, A and B from shared memory, both K-major (the transpose flags 0):
 * wgmma_ss_n128() with half the columns. */
static __device__ __forceinline__ void wgmma_ss_n64(float d[32], uint64_t desc_a, uint64_t desc_b,
                                                    int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/** D (+)= A B, m64n64k16, A from shared memory K-major, B from shared memory MN-major (the
 * transpose flag of B 1: B is stored k-row by k-row with n contiguous, as K is for dQ = dS K). */
static __device__ __forceinline__ void wgmma_ss_n64_bt(float d[32], uint64_t desc_a,
                                                       uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/** Store four 8 x 8 bf16 matrices to shared memory transposed: r[m] holds this lane's two elements
 * of matrix m in the mma accumulator layout (row lane / 4, columns 2 (lane % 4) and + 1), and lane
 * 8 m + i gives the address of row i of matrix m as stored, which is column i of the fragment. */
static __device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, const uint32_t r[4]) {
  asm volatile(
      "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
      "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
      : "memory");
}

/** FP8: D (+)= A B, m64n128k32, A and B e4m3 from shared memory, both K-major (FP8 wgmma has no
 * transpose flags: every operand is K-major), fp32 accumulator d[64] laid out as in the bf16 form.
 * scale_d as in wgmma_ss_n128(). */
static __device__ __forceinline__ void wgmma_fp8_ss_n128(float d[64], uint64_t desc_a,
                                                         uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/** FP8: D (+)= A B, m64n256k32, A and B e4m3 from shared memory, both K-major: S for 256 keys in
 * one instruction (version 10). d[128]: the accumulator layout of wgmma_ss_n128(), 32 column
 * blocks of 8 instead of 16. scale_d as in wgmma_ss_n128(). */
static __device__ __forceinline__ void wgmma_fp8_ss_n256(float d[128], uint64_t desc_a,
                                                         uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, "
      "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, "
      "%87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, "
      "%103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, "
      "%117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/** FP8: D (+)= A B, m64n128k32, A e4m3 from registers (a[4]: 4 values each; a[0] row g, k 4 t4 ..
 * 4 t4 + 3; a[1] row g + 8; a[2], a[3] the same 16 k further), B e4m3 from shared memory, K-major.
 */
static __device__ __forceinline__ void wgmma_fp8_rs_n128(float d[64], const uint32_t a[4],
                                                         uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

/** Four fp32 values rounded to e4m3 (saturating at +-448) and packed into one register, x0 in the
 * lowest byte. cvt puts its first source in the upper byte of each pair. */
static __device__ __forceinline__ uint32_t pack_e4m3x4(float x0, float x1, float x2, float x3) {
  uint16_t lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(x1), "f"(x0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(x3), "f"(x2));
  return (uint32_t)lo | ((uint32_t)hi << 16);
}

#endif /* L05_HOPPER_CUH */
