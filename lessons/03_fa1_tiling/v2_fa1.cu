// clang-format off
/** @file
 * @brief Version 2: FlashAttention-1, Algorithm 1 of Dao et al. 2022, as published (one block per
 * (batch, head)), on CUDA cores in fp32.
 *
 * What changed: the keys and values are cut into tiles of Bc rows that are loaded into shared
 * memory once and used by Br query rows at a time, so a key read from HBM serves Br queries instead
 * of one. The loop order is the paper's: key/value tiles outside, query tiles inside, and the
 * per-query state (O_i, l_i, m_i) lives in HBM between visits:
 *
 *     for j in 0 .. Tc-1:                          K_j, V_j: HBM -> shared memory, once
 *       for i in 0 .. Tr-1:                        Q_i, O_i, l_i, m_i: HBM -> chip
 *         S      = Q_i K_j^T                       (Br x Bc, on chip; Q pre-scaled by 1/sqrt(d))
 *         m~     = rowmax(S),  P~ = exp(S - m~),  l~ = rowsum(P~)
 *         m_new  = max(m_i, m~)
 *         l_new  = e^(m_i - m_new) l_i + e^(m~ - m_new) l~
 *         O_i    = diag(l_new)^-1 (diag(l_i) e^(m_i - m_new) O_i + e^(m~ - m_new) P~ V_j)
 *         O_i, l_i = l_new, m_i = m_new: chip -> HBM
 *
 * O_i stays normalised after every step: multiplying by l_i undoes the old division before the
 * new terms are added, and dividing by l_new normalises again. (Dividing by l_new without first
 * multiplying by l_i, as some write-ups do, shrinks the old terms at every step and is wrong.)
 * At the end LSE = m + log l.
 *
 * Tiles: Bc = ceil(M / 4d), Br = min(Bc, d), M = the per-block opt-in shared memory in floats
 * (queried at each launch). The kernel's warp tiles need Bc to be a multiple of 32 (and the padded
 * S tile must fit), so the launcher rounds Bc down: on an H200 (M = 58112) d 64 gives Bc 227 ->
 * 224, Br 64; d 128 gives Bc 114 -> 96, Br 96. l03_fa1_plan_make() does this; the program prints
 * it.
 *
 * Shared memory (floats), one block:
 *
 *     Kt  [d][Bc]     K_j transposed: 4 consecutive keys of one dimension are one float4
 *     Vs  [Bc][d]     V_j
 *     Qt  [d][Br]     Q_i transposed, times 1/sqrt(d)
 *     St  [Bc][ld_s]  S_ij transposed, overwritten by P~_ij; ld_s = Br padded to 8 mod 32
 *     fa, fb [Br]     per-row factors of the O_i update: fa = l_i e^(m_i - m_new) / l_new,
 *                     fb = e^(m~ - m_new) / l_new
 *
 * Threads (256 = 8 warps), per (i, j) step, separated by __syncthreads():
 *
 *     load    Q_i -> Qt: thread x takes row x % Br, dims 4 (x / Br) .. +3
 *     S       warp tiles of 16 rows x 32 keys; lane = 8 * rg + cg owns rows 4rg..4rg+3 and keys
 *             4cg..4cg+3 of the warp tile (a 4 x 4 block in registers):
 *
 *                         keys ->  cg=0    cg=1   ...   cg=7
 *                       rg=0     [4x4]   [4x4]  ...   [4x4]     per dimension: one float4 of Qt
 *                       rg=1     [4x4]   ...                    (4 rows) and one of Kt (4 keys),
 *                       rg=2                                    16 FMAs
 *                       rg=3
 *
 *     stats   a warp takes 8 rows at a time; lane = 8 * cgrp + r: row r, keys cgrp, cgrp+4, ...;
 *             max and sum combined over the 4 key groups with __shfl_xor_sync
 *     O       warp tiles of 16 rows x 32 dims, same lane layout as S: one float4 of P~ (4 rows)
 *             and one of V_j (4 dims) per key, 16 FMAs; the old O_i is read from HBM before the
 *             loop and the new one written after it
 *
 * Causal: a (i, j) tile pair that no query of Q_i can see is skipped whole (no loads, no work),
 * one that every query sees fully is computed without the element mask, and only the partly
 * visible ones on the diagonal test each (row, key) pair. The same classification is drill 3's
 * l03_causal_tile_class().
 *
 * Why: HBM traffic of Theta(N^2 d^2 / M) instead of version 1's Theta(N^2 d) load requests, and
 * fewer instructions per (query, key) pair: 2d FMAs instead of version 1's 3d, because O is
 * rescaled once per tile rather than once per key, with operands from shared memory that a 4 x 4
 * register block reuses four times. What it costs: Q_i and O_i cross HBM Tc times; and with one
 * block per (batch, head) the launch has batch * heads blocks (16 at the lesson's default shape, on
 * a 132-SM H200).
 *
 * Prediction: 16 busy SMs, each perhaps 1.5 x as productive as under version 1, against 132:
 * version 2 about 5 x slower than version 1.
 *
 * Measured: NVIDIA H200, 2026-11-23, batch 1, 16 heads, seq 4096, dim 64
 * (docs/results/h200-2026-11-23): 26.291 ms, 2.6 TFLOP/s, against version 1's 17.700 ms: slower,
 * but far from 5 x. With one eighth of the SMs busy, each busy SM got through several times the
 * work of an SM under version 1, not the 1.5 times assumed. At seq 16384: 421.732 ms, 2.6 TFLOP/s.
 *
 * Run: `./run 2` (the lesson's default shape) and `./run 2 --seq 16384`. Nsight Compute, in
 * build/bin (ncu-runs.txt; the README's DRAM table):
 *
 *     ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum -k regex:'l03_(fused_row|fa1)_kernel' -c 1 ./lesson-3 2 --seq 4096 --check-only
 *     ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum -k regex:'l03_(fused_row|fa1)_kernel' -c 1 ./lesson-3 2 --seq 16384 --check-only
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif
#if HEAD_DIM != 64 && HEAD_DIM != 128
#error "HEAD_DIM must be 64 or 128"
#endif

#include <math.h>

#include "attn_cuda.cuh"
#include "fa1_tiling.h"
#include "tile_loops.h"

/** Warps per block. */
#define FA_WARPS (L03_FA1_THREADS / 32)
#define FA_D4 (HEAD_DIM / 4) /**< float4s per row of d */

/** Token pasting, after expanding `b`. */
#define FA_CAT_(a, b) a##b
/** `a` and the value of `b` pasted into one name. */
#define FA_CAT(a, b) FA_CAT_(a, b)
/** This build's kernel: l03_fa1_kernel_d64 or l03_fa1_kernel_d128. */
#define FA_KERNEL FA_CAT(l03_fa1_kernel_d, HEAD_DIM)
/** This build's launcher: l03_fa1_d64() or l03_fa1_d128(), declared in fa1_tiling.h. */
#define FA_LAUNCH FA_CAT(l03_fa1_d, HEAD_DIM)
/** This build's planner: l03_fa1_device_plan_d64() or l03_fa1_device_plan_d128(). */
#define FA_PLAN FA_CAT(l03_fa1_device_plan_d, HEAD_DIM)

/** Same rule as l03_causal_tile_class() in tile_loops.c, on rows [r0, r0 + nr) and keys [c0, c0 +
 * nc) of a tile; offset = seq_kv - seq_q. */
static __device__ __forceinline__ int tile_class(int r0, int nr, int c0, int nc, int offset) {
  if (c0 > r0 + nr - 1 + offset) return L03_TILE_MASKED;
  if (c0 + nc - 1 <= r0 + offset) return L03_TILE_VISIBLE;
  return L03_TILE_PARTIAL;
}

/** A float4 of zeros. */
static __device__ __forceinline__ float4 zero4(void) {
  return make_float4(0.f, 0.f, 0.f, 0.f);
}

/** One 16-byte store to global memory. __stwb is the ordinary (write-back) store; spelled as the
 * intrinsic because nvcc split `*(float4 *)p = v` into four 4-byte stores in this kernel. */
static __device__ __forceinline__ void store4(float *p, float4 v) {
  __stwb((float4 *)p, v);
}

/** Algorithm 1, one block per (batch, head, query group): the block walks the key/value tiles of
 * its head in order, loads each into shared memory once, and for each of its query tiles (g,
 * g + q_groups, ...) computes S and P~ on chip and updates O_i, m_i and l_i in HBM; at the end it
 * writes the log-sum-exp of its rows. With q_groups = 1 this is version 2, otherwise version 3. */
static __global__ void __launch_bounds__(L03_FA1_THREADS)
    FA_KERNEL(const float *__restrict__ q,  // [batch, seq_q, heads, HEAD_DIM]
              const float *__restrict__ k,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              const float *__restrict__ v,  // [batch, seq_kv, kv_heads, HEAD_DIM]
              float *__restrict__ o,        // [batch, seq_q, heads, HEAD_DIM]: Algorithm 1's O
              float *__restrict__ lse,      // [batch, heads, seq_q]
              float *__restrict__ m_hbm,    // [batch, heads, seq_q]: Algorithm 1's m
              float *__restrict__ l_hbm,    // [batch, heads, seq_q]: Algorithm 1's l
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale, int br,
              int bc, int ld_s, int q_groups) {
  extern __shared__ float4 smem4[];
  float *Kt = (float *)smem4;      // [HEAD_DIM][bc]
  float *Vs = Kt + HEAD_DIM * bc;  // [bc][HEAD_DIM]
  float *Qt = Vs + bc * HEAD_DIM;  // [HEAD_DIM][br]
  float *St = Qt + HEAD_DIM * br;  // [bc][ld_s]
  float *fa = St + bc * ld_s;      // [br]
  float *fb = fa + br;             // [br]   (total: l03_fa1_smem_floats())

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int grp = blockIdx.x % q_groups;
  const int bh = blockIdx.x / q_groups;
  const int h = bh % heads, b = bh / heads;
  const int g = h / (heads / kv_heads);
  const int tr = attn_cdiv(seq_q, br), tc = attn_cdiv(seq_kv, bc);
  const int offset = seq_kv - seq_q; /* query r sees key c when c <= r + offset */

  const size_t q_tok = (size_t)heads * HEAD_DIM;     /* elements between tokens of Q and O */
  const size_t kv_tok = (size_t)kv_heads * HEAD_DIM; /* elements between tokens of K and V */
  const float *qbh = q + ((size_t)b * seq_q * heads + h) * HEAD_DIM;
  float *obh = o + ((size_t)b * seq_q * heads + h) * HEAD_DIM;
  const float *kbg = k + ((size_t)b * seq_kv * kv_heads + g) * HEAD_DIM;
  const float *vbg = v + ((size_t)b * seq_kv * kv_heads + g) * HEAD_DIM;
  const size_t st0 = ((size_t)b * heads + h) * seq_q; /* m, l, lse index of (b, h) row 0 */

  /* Algorithm 1, step 2: O = 0, l = 0, m = -inf in HBM, for the query tiles this block owns. */
  for (int i = grp; i < tr; i += q_groups) {
    const int r0 = i * br, nr = min(br, seq_q - r0);
    for (int x = tid; x < nr * FA_D4; x += L03_FA1_THREADS)
      store4(obh + (size_t)(r0 + x / FA_D4) * q_tok + 4 * (x % FA_D4), zero4());
    for (int r = tid; r < nr; r += L03_FA1_THREADS) {
      m_hbm[st0 + r0 + r] = -INFINITY;
      l_hbm[st0 + r0 + r] = 0.f;
    }
  }

  for (int j = 0; j < tc; ++j) { /* step 5: the outer loop, over key/value tiles */
    const int c0 = j * bc, nc = min(bc, seq_kv - c0);
    __syncthreads(); /* every warp is done with K_{j-1}, V_{j-1}; step 2's writes are visible */

    /* Step 6: K_j, V_j -> shared memory. Rows past seq_kv are zero (never NaN from stale memory).
     */
    for (int x = tid; x < bc * FA_D4; x += L03_FA1_THREADS) {
      const int c = x % bc, d = 4 * (x / bc);
      const float4 kk = c < nc ? *(const float4 *)(kbg + (size_t)(c0 + c) * kv_tok + d) : zero4();
      Kt[(d + 0) * bc + c] = kk.x;
      Kt[(d + 1) * bc + c] = kk.y;
      Kt[(d + 2) * bc + c] = kk.z;
      Kt[(d + 3) * bc + c] = kk.w;
    }
    for (int x = tid; x < bc * FA_D4; x += L03_FA1_THREADS) {
      const int c = x / FA_D4, d = 4 * (x % FA_D4);
      *(float4 *)(Vs + c * HEAD_DIM + d) =
          c < nc ? *(const float4 *)(vbg + (size_t)(c0 + c) * kv_tok + d) : zero4();
    }

    for (int i = grp; i < tr; i += q_groups) { /* step 7: the inner loop, over query tiles */
      const int r0 = i * br, nr = min(br, seq_q - r0);
      const int cls = causal ? tile_class(r0, nr, c0, nc, offset) : L03_TILE_VISIBLE;
      if (cls == L03_TILE_MASKED)
        continue; /* the same for every thread: no barrier is skipped
                     by only some of them */

      /* Step 8 (Q_i part): Q_i -> Qt, scaled. O_i, l_i, m_i are read where they are used. */
      for (int x = tid; x < br * FA_D4; x += L03_FA1_THREADS) {
        const int r = x % br, d = 4 * (x / br);
        const float4 qq = r < nr ? *(const float4 *)(qbh + (size_t)(r0 + r) * q_tok + d) : zero4();
        Qt[(d + 0) * br + r] = qq.x * scale;
        Qt[(d + 1) * br + r] = qq.y * scale;
        Qt[(d + 2) * br + r] = qq.z * scale;
        Qt[(d + 3) * br + r] = qq.w * scale;
      }
      __syncthreads();

      /* Step 9: S_ij = Q_i K_j^T, stored transposed in St. Warp tiles past nr rows or nc keys
       * are not needed by anything below. */
      {
        const int rg = lane >> 3, cg = lane & 7;
        const int wtc = bc / 32, n_wt = (br / 16) * wtc;
        for (int wt = warp; wt < n_wt; wt += FA_WARPS) {
          const int r = (wt / wtc) * 16 + 4 * rg; /* this thread's rows r .. r+3 */
          const int c = (wt % wtc) * 32 + 4 * cg; /* and keys c .. c+3 */
          if ((wt / wtc) * 16 >= nr || (wt % wtc) * 32 >= nc) continue;
          float acc[4][4];
#pragma unroll
          for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[a][e] = 0.f;
#pragma unroll 8
          for (int d = 0; d < HEAD_DIM; ++d) {
            const float4 qa = *(const float4 *)(Qt + d * br + r);
            const float4 kb = *(const float4 *)(Kt + d * bc + c);
            const float qv[4] = {qa.x, qa.y, qa.z, qa.w}, kv[4] = {kb.x, kb.y, kb.z, kb.w};
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[a][e] = fmaf(qv[a], kv[e], acc[a][e]);
          }
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if (cls == L03_TILE_PARTIAL) { /* the element mask, only on the diagonal tiles */
#pragma unroll
              for (int a = 0; a < 4; ++a)
                if (c0 + c + e > r0 + r + a + offset) acc[a][e] = -INFINITY;
            }
            *(float4 *)(St + (c + e) * ld_s + r) =
                make_float4(acc[0][e], acc[1][e], acc[2][e], acc[3][e]);
          }
        }
      }
      __syncthreads();

      /* Steps 10-11: m~ = rowmax(S), P~ = exp(S - m~) in place, l~ = rowsum(P~); with m_i, l_i
       * from HBM: m_new, l_new, the two factors of the O_i update; m_i, l_i back to HBM. */
      {
        const int rl = lane & 7, cgrp = lane >> 3;
        for (int rb = warp * 8; rb < br; rb += FA_WARPS * 8) {
          if (rb >= nr) break; /* same for the whole warp */
          const int r = rb + rl;
          const int live = r < nr; /* rows past seq_q: St holds nothing meaningful */
          float m_old = -INFINITY, l_old = 0.f;
          if (live && cgrp == 0) { /* issue the HBM loads before the arithmetic */
            m_old = m_hbm[st0 + r0 + r];
            l_old = l_hbm[st0 + r0 + r];
          }
          float mt = -INFINITY;
          if (live)
            for (int c = cgrp; c < nc; c += 4) mt = fmaxf(mt, St[c * ld_s + r]);
          mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 8));
          mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 16));
          float lt = 0.f;
          if (live && mt != -INFINITY)
            for (int c = cgrp; c < nc; c += 4) {
              const float pe = __expf(St[c * ld_s + r] - mt); /* masked: e^-inf = 0 */
              St[c * ld_s + r] = pe;
              lt += pe;
            }
          else if (live) /* a row that sees no key of this tile: P~ = 0 */
            for (int c = cgrp; c < nc; c += 4) St[c * ld_s + r] = 0.f;
          lt += __shfl_xor_sync(0xffffffffu, lt, 8);
          lt += __shfl_xor_sync(0xffffffffu, lt, 16);
          if (cgrp == 0) {
            float fa_r = 0.f, fb_r = 0.f;
            if (live) {
              const float m_new = fmaxf(m_old, mt);
              float l_new =
                  l_old; /* m_new = -inf: no key seen yet, state and O_i stay as they are */
              if (m_new != -INFINITY) {
                const float e_old = __expf(m_old - m_new); /* 0 when m_old = -inf */
                const float e_new = __expf(mt - m_new);    /* 0 when m~ = -inf */
                l_new = e_old * l_old + e_new * lt;
                fa_r = e_old * l_old / l_new;
                fb_r = e_new / l_new;
              }
              m_hbm[st0 + r0 + r] = m_new; /* step 13 */
              l_hbm[st0 + r0 + r] = l_new;
            }
            fa[r] = fa_r;
            fb[r] = fb_r;
          }
        }
      }
      __syncthreads();

      /* Step 12: O_i = fa * O_i + fb * P~ V_j, read from and written to HBM. */
      {
        const int rg = lane >> 3, dg = lane & 7;
        const int wtd = HEAD_DIM / 32, n_wt = (br / 16) * wtd;
        for (int wt = warp; wt < n_wt; wt += FA_WARPS) {
          const int r = (wt / wtd) * 16 + 4 * rg; /* rows r .. r+3 */
          const int d = (wt % wtd) * 32 + 4 * dg; /* dims d .. d+3 */
          if ((wt / wtd) * 16 >= nr) continue;
          float4 o_old[4];
#pragma unroll
          for (int a = 0; a < 4; ++a)
            o_old[a] =
                r + a < nr ? *(const float4 *)(obh + (size_t)(r0 + r + a) * q_tok + d) : zero4();
          float acc[4][4];
#pragma unroll
          for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[a][e] = 0.f;
#pragma unroll 4
          for (int c = 0; c < nc; ++c) {
            const float4 pa = *(const float4 *)(St + c * ld_s + r);
            const float4 vb = *(const float4 *)(Vs + c * HEAD_DIM + d);
            const float pv[4] = {pa.x, pa.y, pa.z, pa.w}, vv[4] = {vb.x, vb.y, vb.z, vb.w};
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[a][e] = fmaf(pv[a], vv[e], acc[a][e]);
          }
#pragma unroll
          for (int a = 0; a < 4; ++a) {
            if (r + a < nr) {
              const float x = fa[r + a], y = fb[r + a];
              float4 out;
              out.x = fmaf(x, o_old[a].x, y * acc[a][0]);
              out.y = fmaf(x, o_old[a].y, y * acc[a][1]);
              out.z = fmaf(x, o_old[a].z, y * acc[a][2]);
              out.w = fmaf(x, o_old[a].w, y * acc[a][3]);
              store4(obh + (size_t)(r0 + r + a) * q_tok + d, out);
            }
          }
        }
      }
    }
  }

  /* After the last key tile: LSE = m + log l for this block's rows (-inf for a row with no key). */
  __syncthreads();
  for (int i = grp; i < tr; i += q_groups) {
    const int r0 = i * br, nr = min(br, seq_q - r0);
    for (int r = tid; r < nr; r += L03_FA1_THREADS) {
      const float l = l_hbm[st0 + r0 + r];
      lse[st0 + r0 + r] = l > 0.f ? m_hbm[st0 + r0 + r] + logf(l) : -INFINITY;
    }
  }
}

/** The plan for the current device: tiles from its opt-in shared memory, the blocks of this kernel
 * the device runs at once, and the group count asked for. The kernel attribute and the occupancy
 * query are remembered for the last device and size, so that a timed launch does not pay for them
 * again. */
extern "C" cudaError_t FA_PLAN(const attn_problem *p, int q_groups, l03_fa1_plan *plan) {
  static int known_dev = -1, known_per_sm = 0, known_sms = 0;
  static size_t known_bytes = 0;
  if (p->dim != HEAD_DIM || q_groups < 1) return cudaErrorInvalidValue;
  int dev = 0, optin = 0;
  ATTN_TRY(cudaGetDevice(&dev));
  ATTN_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (l03_fa1_plan_make(p, optin / (long)sizeof(float), plan) != 0)
    return cudaErrorInvalidConfiguration;
  if (dev != known_dev || plan->smem_bytes != known_bytes) {
    ATTN_TRY(cudaFuncSetAttribute(FA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)plan->smem_bytes));
    ATTN_TRY(cudaDeviceGetAttribute(&known_sms, cudaDevAttrMultiProcessorCount, dev));
    ATTN_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&known_per_sm, FA_KERNEL,
                                                           L03_FA1_THREADS, plan->smem_bytes));
    known_dev = dev;
    known_bytes = plan->smem_bytes;
  }
  plan->slots = known_sms * (known_per_sm > 0 ? known_per_sm : 1);
  plan->q_groups = q_groups < plan->tr ? q_groups : (plan->tr > 0 ? plan->tr : 1);
  return cudaSuccess;
}

/** The launcher, l03_fa1_d64() or l03_fa1_d128(): plans the tiles, then launches one block per
 * (batch, head, query group); m and l live in `workspace`. Version 2 passes q_groups = 1, version 3
 * (v3_fa1_qgroups.cu) the count it chooses. */
extern "C" cudaError_t FA_LAUNCH(const attn_problem *p, const float *q, const float *k,
                                 const float *v, float *o, float *lse, float *workspace,
                                 int q_groups, cudaStream_t stream) {
  l03_fa1_plan plan;
  ATTN_TRY(FA_PLAN(p, q_groups, &plan));
  const long blocks = (long)p->batch * p->heads * plan.q_groups;
  if (plan.tr == 0 || blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffL) return cudaErrorInvalidConfiguration;
  float *m_hbm = workspace, *l_hbm = workspace + attn_rows(p);
  FA_KERNEL<<<(unsigned)blocks, L03_FA1_THREADS, plan.smem_bytes, stream>>>(
      q, k, v, o, lse, m_hbm, l_hbm, p->heads, p->kv_heads, p->seq_q, p->seq_kv, p->causal,
      attn_scale(p), plan.br, plan.bc, plan.ld_s, plan.q_groups);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
