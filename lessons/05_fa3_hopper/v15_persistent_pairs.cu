// clang-format off
/** @file
 * @brief Version 15: version 5 in persistent blocks, a head's Q tiles dealt in pairs under the mask.
 *
 * What changed: version 5's consumers' pieces are included here unchanged (softmax_p(),
 * rescale_pack(), issue_s(), issue_pv() and the O stores); around them:
 *  - the grid is one block per SM (or fewer, when there are fewer Q tiles), and a block walks a
 *    list of items, each a (Q tile, head, batch) that version 5 gives a block of its own. The list
 *    is fixed before the launch (no counter): without the mask block b takes items b, b + G,
 *    b + 2G, ... of G blocks; with it, a head's Q tiles are paired, tile i with tile n - 1 - i of the
 *    head's n, and block b takes pairs b, b + G, ..., both items of a pair one after the other;
 *  - the KV ring is carried from item to item: the producer's tile count and the consumers' run on
 *    over the whole list, so the next item's first K and V tile is loaded while this item's last
 *    ones are still in use, as version 5 loads its next tile;
 *  - two Q buffers: the producer loads item k + 1's Q tile while item k runs (and asks TMA to fetch
 *    item k + 2's into L2), and the consumers release a buffer once their O has left it;
 *  - the warpgroups' turns run on over the whole list: warpgroup 1 hands the turn over after its
 *    last P V of an item, which is the hand-over warpgroup 0 waits for at the next item's first S;
 *  - the consumers' loop is built twice, for an item that starts at an even place of the ring and
 *    for one that starts at an odd place (persistent_turns() called with the place's parity a
 *    constant), so that inside each copy every tile's stage and barrier parity is known from j.
 *
 * Why: a version 5 block spends about 2.3 us (NVIDIA H200, stamped at seq 2k: the lesson's NOTES,
 * "The block's fixed part") before and after its tiles: setup, Q's trip from memory, the first S
 * with nothing under it, the store of O, the gap until the next block starts on the SM. At seq 2k
 * a block is about 16 tiles of 1.5 us, so that part is several percent of it; a persistent block
 * pays the setup once and overlaps the rest with the previous item's tiles. Under the mask the
 * items differ in length (Q tile i sees i + 1 KV tiles), and a fixed list of single items leaves SMs
 * idle at the end; a pair (i, n - 1 - i) always sees n + 1 tiles, so every block's list has the same
 * work, to one pair.
 *
 * Two things that lost, measured on the way (the NOTES, "Version 5 in persistent blocks"): the ring's
 * place as a runtime value in one copy of the loop (each tile's stage computed from it) ran every
 * tile 3-5% slower than version 5's; items taken from an atomic counter balance the mask, but ptxas
 * then moved the second wait ahead of the exponentials and the tile was 4-5% slower again.
 *
 * Prediction: 1-3% over version 5 without the mask at seq 1k-2k, where the fixed part weighs most,
 * level from 4k; with the mask about the same gain, less where the pairs do not divide among the
 * SMs (1024 pairs on 132 SMs: 7.76 a block, 8 for the slowest, 3% idle).
 *
 * Measured: NVIDIA H200, 2026-11-29 (docs/results/h200-l05v15-2026-11-29), fifteen rounds taking
 * turns with version 5 in two processes (ab-v15-1.log, ab-v15-2.log), dim 128: without the mask
 * 1.045-1.046x at seq 1k, 1.013-1.018x at 2k, 0.997-1.011x at 4k, 0.985-0.998x at 8k-16k; with it
 * 1.064-1.066x at seq 1k, 1.045-1.052x at 2k, 1.020-1.025x at 4k, 1.010x at 8k, and 0.952-0.956x at
 * 16k, where version 5's single items, heaviest first, fill the SMs better than the pairs' last
 * round; seq 3000 with the mask 1.027-1.033x; dim 64 at seq 2k 1.007-1.018x and 1.024-1.031x with
 * the mask. The output is version 5's bit for bit. In the bench (five processes, the median):
 * 1.014x version 5 at seq 2k without the mask, 1.010-1.057x cuDNN's bf16 there in every process
 * (version 5 0.994-1.043x). Inside the prediction at seq 2k and 4k; above it with the mask at 1k-2k,
 * where version 5's grid has many short blocks; below it at 8k-16k, where each tile runs about 1%
 * slower than version 5's and no fixed part is left to win. The draft that first ran this idea, as
 * a library of its own (ab-draft-*.log, draft-v5z-against-v5.patch), measured the same to 1%.
 *
 * Run: `./run 15` (dim 128, 16 heads, batch 4, seq 4096), `./run 15 --seq 2048 --batch 8`.
 */
// clang-format on
/* Built twice by CMake (attn_lesson DIM_KERNELS), with -DHEAD_DIM=64 and -DHEAD_DIM=128. */
#ifndef HEAD_DIM
#error "HEAD_DIM is not set: CMake builds this file once per head dimension with -DHEAD_DIM=N"
#endif

/** Version 5's file without its kernel and launcher: the consumers' pieces and the ring's sizes. */
#define L05_OVERLAP_TURNS_ONLY
#include "v5_overlap.cu"

/** This build's kernel: l05_pairs_kernel_d64 or l05_pairs_kernel_d128. */
#define PP_KERNEL FA_CAT(l05_pairs_kernel_d, HEAD_DIM)
/** This build's launcher: l05_pairs_d64() or l05_pairs_d128(), declared in fa3_hopper.h. */
#define PP_LAUNCH FA_CAT(l05_pairs_d, HEAD_DIM)
/** Dynamic shared memory: two Q buffers, two K and two V stages, twelve mbarriers (Q landed and O
 * stored for each Q buffer; full and empty for K and V of each stage), and 1024 bytes to align the
 * start to a swizzle atom. */
#define PP_SMEM_BYTES (2 * FA_Q_BYTES + 4 * FA_TILE_BYTES + 128 + 1024)

/* The registers of the two roles: at dim 64 the producer's walk over the list did not fit 24
 * (ptxas spilled one value), and the consumers, whose O is 32 floats, fit 232. */
#if HEAD_DIM == 64
/** The producer warpgroup's registers: 32 at dim 64. */
#define PP_PRODUCER_REGS setmaxnreg_dec_32
/** The consumer warpgroups' registers: 232 at dim 64. */
#define PP_CONSUMER_REGS setmaxnreg_inc_232
#else
/** The producer warpgroup's registers: 24, as version 5's. */
#define PP_PRODUCER_REGS setmaxnreg_dec_24
/** The consumer warpgroups' registers: 240, as version 5's. */
#define PP_CONSUMER_REGS setmaxnreg_inc_240
#endif

#if FA_STAGES != 2
#error "version 15 carries a ring of two stages from item to item"
#endif

/** A consumer warpgroup's turns over one item: version 5's overlap_turns() with the ring's place
 * carried in. Tile j of the item is tile t0 + j of the block's walk, at stage (t0 + j) % 2; @p t0
 * is passed as a constant of known parity (the caller has two calls), so the stages and parities
 * below fold to version 5's. @p pending: warpgroup 1 handed the turn over at the end of the block's
 * previous item (then it does not hand it over again before the first S); it is set here when this
 * item's end hands it over, which it does unless @p last (no item follows in the block's list). */
static __device__ __forceinline__ void persistent_turns(
    float acc[FA_NO], float row_m[2], float row_l[2], uint32_t q_base, uint32_t sK_a, uint32_t sV_a,
    uint32_t full_k, uint32_t full_v, uint32_t empty_k, uint32_t empty_v, int n_tiles,
    int n_unmasked, int wg, int lane, int q0, int wr0, int g, int t4, int seq_kv, int causal,
    int diag, float scale_log2, int t0, int *pending, int last) {
#pragma unroll
  for (int i = 0; i < FA_NO; ++i) acc[i] = 0.f;
  row_m[0] = row_m[1] = -INFINITY;
  row_l[0] = row_l[1] = 0.f;
  const int my_bar = 1 + wg, other_bar = 2 - wg;
  uint32_t pa[FA_PK][4]; /* P_{j-1}, packed, waiting for its turn */
  float s[FA_NS];
  if (n_tiles > 0) {
    /* Tile 0: S alone. Warpgroup 1 lets warpgroup 0 go first, unless its hand-over at the end of
     * the previous item already did. */
    if (wg == 1 && !*pending) named_bar_arrive(1, 256);
    *pending = 0;
    mbar_wait(full_k + 8 * FA_STAGE(t0), FA_PHASE(t0)); /* K_0 has landed */
    named_bar_sync(my_bar, 256);
    wgmma_fence();
    issue_s(s, q_base, sK_a + FA_STAGE(t0) * FA_TILE_BYTES);
    wgmma_commit();
    named_bar_arrive(other_bar, 256);
    wgmma_wait0();
    reg_fence(s, FA_NS);
    if (lane == 0) mbar_arrive(empty_k + 8 * FA_STAGE(t0)); /* my warp is done with K_0 */
    float alpha[2];
    softmax_p(s, row_m, row_l, alpha, 0 >= n_unmasked, q0, wr0, 0, g, t4, seq_kv, causal, diag,
              scale_log2);
    rescale_pack(s, acc, alpha, pa);
  }
  /* Tiles 1 .. n_tiles - 1, the unmasked ones first: version 5's loop, the stages from t0 + j. */
  const int j_mid = max(1, min(n_tiles, n_unmasked));
#pragma unroll
  for (int masked = 0; masked < 2; ++masked)
    for (int j = masked ? j_mid : 1; j < (masked ? n_tiles : j_mid); ++j) {
      const int st = FA_STAGE(t0 + j), pst = FA_STAGE(t0 + j - 1);
      mbar_wait(full_k + 8 * st, FA_PHASE(t0 + j));      /* K_j has landed */
      mbar_wait(full_v + 8 * pst, FA_PHASE(t0 + j - 1)); /* V_{j-1} has landed */
      named_bar_sync(my_bar, 256);                       /* my turn */
      reg_fence(acc, FA_NO);
      wgmma_fence();
      issue_s(s, q_base, sK_a + st * FA_TILE_BYTES);
      wgmma_commit(); /* group 1: S_j */
      issue_pv(acc, pa, sV_a + pst * FA_TILE_BYTES);
      wgmma_commit();                   /* group 2: P_{j-1} V_{j-1} */
      named_bar_arrive(other_bar, 256); /* your turn */
      wgmma_wait1();                    /* S_j is complete; P_{j-1} V_{j-1} may still be running */
      reg_fence(s, FA_NS);
      if (lane == 0) mbar_arrive(empty_k + 8 * st); /* my warp is done with K_j */
      float alpha[2];
      softmax_p(s, row_m, row_l, alpha, masked, q0, wr0, j * FA_BC, g, t4, seq_kv, causal, diag,
                scale_log2); /* under my own P V on the tensor cores */
      wgmma_wait0();
      reg_fence(acc, FA_NO);
      if (lane == 0) mbar_arrive(empty_v + 8 * pst); /* ... and with V_{j-1} */
      rescale_pack(s, acc, alpha, pa);
    }
  if (n_tiles > 0) {
    /* The last turn: P V alone. Warpgroup 0 always hands the turn over (warpgroup 1's last turn
     * waits for it); warpgroup 1 hands it over when another item follows, for that item's first
     * S. */
    const int pst = FA_STAGE(t0 + n_tiles - 1);
    mbar_wait(full_v + 8 * pst, FA_PHASE(t0 + n_tiles - 1)); /* the last V has landed */
    named_bar_sync(my_bar, 256);
    reg_fence(acc, FA_NO);
    wgmma_fence();
    issue_pv(acc, pa, sV_a + pst * FA_TILE_BYTES);
    wgmma_commit();
    if (wg == 0) named_bar_arrive(other_bar, 256);
    if (wg == 1 && !last) {
      named_bar_arrive(other_bar, 256);
      *pending = 1;
    }
    wgmma_wait0();
    reg_fence(acc, FA_NO);
    if (lane == 0) mbar_arrive(empty_v + 8 * pst);
  }
}

/** One block per SM, each walking its list of items (attn_pair_place()); bf16 in and out: warpgroup
 * 0 loads, warpgroups 1 and 2 compute 64 rows each of every item and write them with their
 * log-sum-exp. */
static __global__ void __launch_bounds__(FA_THREADS, 1)
    PP_KERNEL(const __grid_constant__ CUtensorMap tm_q,  // Q, boxes of 64 x FA_BR
              const __grid_constant__ CUtensorMap tm_k,  // K, boxes of 64 x FA_BC
              const __grid_constant__ CUtensorMap tm_v,  // V, boxes of 64 x FA_BC
              const __grid_constant__ CUtensorMap tm_o,  // O, boxes of 64 x 64 (FA_O_BY_TMA)
              attn_bf16 *__restrict__ o,                 // [batch, seq_q, heads, HEAD_DIM]
              float *__restrict__ lse,                   // [batch, heads, seq_q]
              int heads, int kv_heads, int seq_q, int seq_kv, int causal, float scale_log2,
              int n_q_tiles, int n_items) {
  extern __shared__ unsigned char smem[];
  /* The swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary. */
  const uint32_t sQ_a = (smem_u32(smem) + 1023u) & ~1023u;   /* [2][panel][FA_BR][64] */
  const uint32_t sK_a = sQ_a + 2 * FA_Q_BYTES;               /* [2][panel][FA_BC][64] */
  const uint32_t sV_a = sK_a + 2 * FA_TILE_BYTES;            /* [2][panel][FA_BC][64] */
  const uint32_t bar_q = sV_a + 2 * FA_TILE_BYTES;           /* [2]: the Q buffer's tile landed */
  const uint32_t full_k = bar_q + 16, full_v = bar_q + 32;   /* [2]: the stage's tile landed */
  const uint32_t empty_k = bar_q + 48, empty_v = bar_q + 64; /* [2]: both consumers are done */
  const uint32_t q_free = bar_q + 80; /* [2]: both consumers' O has left the Q buffer */

  if (threadIdx.x == 0) {
    for (int st = 0; st < 2; ++st) {
      mbar_init(bar_q + 8 * st, 1);
      mbar_init(full_k + 8 * st, 1);
      mbar_init(full_v + 8 * st, 1);
      mbar_init(empty_k + 8 * st, FA_CONSUMER_WARPS);
      mbar_init(empty_v + 8 * st, FA_CONSUMER_WARPS);
      mbar_init(q_free + 8 * st, 2); /* one arrival per consumer warpgroup */
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (threadIdx.x < 128) {
    /* The producer warpgroup: its warp 0 walks the list, Q then the item's K and V tiles, through
     * the ring whose place t runs on from item to item. */
    PP_PRODUCER_REGS();
    if (threadIdx.x < 32) {
      const int leader = threadIdx.x == 0;
      int t = 0; /* tiles loaded so far, over the whole list */
      for (int k = 0; attn_pair_place(k, gridDim.x, blockIdx.x, causal) < n_items; ++k) {
        int q_tile, bh;
        attn_pair_item(attn_pair_place(k, gridDim.x, blockIdx.x, causal), n_q_tiles, causal,
                       &q_tile, &bh);
        const int h = bh % heads, b = bh / heads;
        const int kvh = h / (heads / kv_heads);
        const int q0 = q_tile * FA_BR;
        const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
        const int qb = k & 1;
        if (k >= 2) mbar_wait(q_free + 8 * qb, ((k >> 1) - 1) & 1); /* item k - 2's O is out */
        if (leader) {
          tma_tile(sQ_a + qb * FA_Q_BYTES, &tm_q, bar_q + 8 * qb, FA_BR, h, q0, b);
#if FA_PREFETCH_NEXT
          /* the item after this one: its Q into L2, nothing waits on it (dim 128, as version 5) */
          const int nx = attn_pair_place(k + 1, gridDim.x, blockIdx.x, causal);
          if (nx < n_items) {
            int nq, nbh;
            attn_pair_item(nx, n_q_tiles, causal, &nq, &nbh);
#pragma unroll
            for (int p = 0; p < FA_PANELS; ++p)
              tma_prefetch_4d(&tm_q, p * 64, nbh % heads, nq * FA_BR, nbh / heads);
          }
#endif
        }
        for (int j = 0; j < n_tiles; ++j, ++t) {
          const int st = t & 1;                       /* l05_stage(t, 2) */
          const uint32_t parity = ((t >> 1) & 1) ^ 1; /* l05_empty_parity(t, 2) */
          const uint32_t off = st * FA_TILE_BYTES;
          mbar_wait(empty_k + 8 * st, parity);
          if (leader) tma_tile(sK_a + off, &tm_k, full_k + 8 * st, FA_BC, kvh, j * FA_BC, b);
          mbar_wait(empty_v + 8 * st, parity);
          if (leader) tma_tile(sV_a + off, &tm_v, full_v + 8 * st, FA_BC, kvh, j * FA_BC, b);
          __syncwarp();
        }
      }
    }
  } else {
    /* A consumer warpgroup. */
    PP_CONSUMER_REGS();
    const int wg = (threadIdx.x >> 7) - 1; /* rows 64 wg .. 64 wg + 63 of every Q tile */
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int wr0 = wg * L05_WG_ROWS + warp * 16;
    const int diag = seq_kv - seq_q;
    int t = 0;       /* tiles consumed so far, over the whole list */
    int pending = 0; /* warpgroup 1 handed the turn over at the end of its last item with tiles */
    int handed = 0;  /* the same, kept by both warpgroups */
    for (int k = 0; attn_pair_place(k, gridDim.x, blockIdx.x, causal) < n_items; ++k) {
      int q_tile, bh;
      attn_pair_item(attn_pair_place(k, gridDim.x, blockIdx.x, causal), n_q_tiles, causal, &q_tile,
                     &bh);
      const int h = bh % heads, b = bh / heads;
      const int q0 = q_tile * FA_BR;
      const int n_tiles = attn_kv_tiles_visited(q0, FA_BR, seq_q, seq_kv, FA_BC, causal);
      const int n_unmasked = attn_kv_tiles_unmasked(q0, seq_q, seq_kv, FA_BC, causal);
      const int qb = k & 1;
      const uint32_t qbuf = sQ_a + qb * FA_Q_BYTES;
      const uint32_t q_base = qbuf + wg * L05_WG_ROWS * 128; /* my warpgroup's rows of Q */
      mbar_wait(bar_q + 8 * qb, (k >> 1) & 1);
      float acc[FA_NO];
      float row_m[2], row_l[2];
      /* Two calls, the ring's place even in one and odd in the other: ptxas builds the loop
       * twice, each with its stages known. Whether an item follows is worked out in the calls,
       * not kept from before the wait on Q: held across that wait, it made ptxas put a WARPSYNC
       * before every named barrier of the loop, and the tile ran 6-7% slower
       * (first-form-against-v15.patch and ab-first-form-*.log in h200-l05v15-2026-11-29). */
      if (t & 1)
        persistent_turns(acc, row_m, row_l, q_base, sK_a, sV_a, full_k, full_v, empty_k, empty_v,
                         n_tiles, n_unmasked, wg, lane, q0, wr0, g, t4, seq_kv, causal, diag,
                         scale_log2, (t & ~1) | 1, &pending,
                         attn_pair_place(k + 1, gridDim.x, blockIdx.x, causal) >= n_items);
      else
        persistent_turns(acc, row_m, row_l, q_base, sK_a, sV_a, full_k, full_v, empty_k, empty_v,
                         n_tiles, n_unmasked, wg, lane, q0, wr0, g, t4, seq_kv, causal, diag,
                         scale_log2, t & ~1, &pending,
                         attn_pair_place(k + 1, gridDim.x, blockIdx.x, causal) >= n_items);
      t += n_tiles;
      if (n_tiles > 0) handed = attn_pair_place(k + 1, gridDim.x, blockIdx.x, causal) < n_items;
#if FA_O_BY_TMA
      (void)o;
      store_o_tma(&tm_o, qbuf, lse, acc, row_m, row_l, q0, wg, warp, g, t4, seq_q, b, h, bh);
#else
      store_o(o, lse, acc, row_m, row_l, q0, wr0, g, t4, seq_q, (size_t)heads * HEAD_DIM, b, h, bh);
      named_bar_sync(FA_O_BAR + wg, 128); /* every warp of mine is past its last S */
#endif
      if ((threadIdx.x & 127) == 0) mbar_arrive(q_free + 8 * qb); /* the buffer is free */
    }
    /* A hand-over that no turn took (the items after it saw no key): warpgroup 0 takes it, so
     * that both named barriers end balanced. */
    if (handed && wg == 0) named_bar_sync(1, 256);
#if FA_O_BY_TMA
    if ((threadIdx.x & 127) == 0) bulk_wait0(); /* the last O stores are done */
#endif
  }
}

/** The launcher, l05_pairs_d64() or l05_pairs_d128(): the four tensor maps, then one block per SM
 * (fewer when there are fewer items). */
extern "C" cudaError_t PP_LAUNCH(const void *q, const void *k, const void *v, void *o, float *lse,
                                 int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                 int causal, float scale, cudaStream_t stream) {
  ATTN_TRY(attn_check_shape(batch, heads, kv_heads, seq_q, seq_kv));
  const int n_q_tiles = attn_cdiv(seq_q, FA_BR);
  const long long items = (long long)n_q_tiles * batch * heads;
  if (items > INT_MAX / 2)
    return cudaErrorInvalidConfiguration; /* attn_pair_place() doubles pairs */
  CUtensorMap tm_q, tm_k, tm_v, tm_o;
  ATTN_TRY(l05_tensor_map(&tm_q, q, batch, seq_q, heads, HEAD_DIM, FA_BR));
  ATTN_TRY(l05_tensor_map(&tm_k, k, batch, seq_kv, kv_heads, HEAD_DIM, FA_BC));
  ATTN_TRY(l05_tensor_map(&tm_v, v, batch, seq_kv, kv_heads, HEAD_DIM, FA_BC));
#if FA_O_BY_TMA
  ATTN_TRY(l05_tensor_map(&tm_o, o, batch, seq_q, heads, HEAD_DIM, L05_WG_ROWS));
#else
  memset(&tm_o, 0, sizeof tm_o);
#endif
  ATTN_TRY(
      cudaFuncSetAttribute(PP_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, PP_SMEM_BYTES));
  /* One block fits an SM (launch bounds of one block; 192 KB of shared memory at dim 128). */
  int dev = 0, sms = 0;
  ATTN_TRY(cudaGetDevice(&dev));
  ATTN_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int grid = (int)(items < sms ? items : sms);
  PP_KERNEL<<<(unsigned)grid, FA_THREADS, PP_SMEM_BYTES, stream>>>(
      tm_q, tm_k, tm_v, tm_o, (attn_bf16 *)o, lse, heads, kv_heads, seq_q, seq_kv, causal,
      scale * FA_LOG2E, n_q_tiles, (int)items);
  ATTN_TRY_LAUNCH();
  return cudaSuccess;
}
