/* Lesson 08's ring: the buffers every rank keeps, the two moves a step is made of (compute the
 * queries against the block in hand; pass the block on) and the bookkeeping around them (scatter,
 * gather, the timeline). The versions (v2_ring_serial.cu, v3_ring_overlap.cu, v4_ring_zigzag.cu)
 * only decide in which order, and on which streams, a step's moves are enqueued.
 *
 * What a rank keeps, on its device:
 *  - q      its query chunks, each a [batch, len, heads, dim] bf16 tensor, back to back;
 *  - own    its own key/value block: the K chunks, then the V chunks, each [batch, len, kv_heads,
 *           dim]; it never changes, so a run can start again from it;
 *  - kv[2]  two buffers a block arrives in: at step s the block in hand is own (s = 0) or kv[s %
 * 2], and the next one arrives in kv[(s + 1) % 2] while the compute reads the first;
 *  - o_acc, lse_acc  the running fp32 state of each query chunk (merge.cu);
 *  - o_part, lse_part  one pair's partial output, as the forward kernel writes it;
 *  - o, lse  the final output (bf16) and log-sum-exp of its chunks.
 *
 * A block's layout depends only on the rank it started on (its origin): rank r at step s holds
 * the block of l08_block_origin(r, s, p), so sender and receiver agree on its size without talking.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_cuda.cuh"
#include "attn_timer.h"
#include "fa2_warps.h"
#include "ring_attention.h"
#include "ring_internal.h"
#if L08_HAVE_L05
#include "fa3_hopper.h"
#endif

/* ---- The forward kernel -------------------------------------------------------------------------
 */

/* Compute capability of each device, asked once. */
static int g_sm[64];

static int device_sm(int device) {
  if (device < 0 || device >= 64) return 0;
  if (!g_sm[device]) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
      return 0;
    g_sm[device] = major * 10 + minor;
  }
  return g_sm[device];
}

/* Lesson 05's kernel runs only on sm_90 (its code is sm_90a), and only where this build has it. */
static int use_lesson05(int device) {
#if L08_HAVE_L05
  return device_sm(device) == 90;
#else
  return device < 0; /* never */
#endif
}

extern "C" const char *l08_kernel_name(int device, int dim) {
  if (dim != 64 && dim != 128) return NULL;
  if (use_lesson05(device)) return "lesson 05 v5 (overlap, wgmma + TMA)";
  if (device_sm(device) >= 80) return "lesson 04 v7 (tiles, mma.sync)";
  return NULL;
}

extern "C" cudaError_t l08_forward(const void *q, const void *k, const void *v, void *o, float *lse,
                                   int batch, int heads, int kv_heads, int seq_q, int seq_kv,
                                   int dim, int causal, float scale, cudaStream_t stream) {
  int device = 0;
  ATTN_TRY(cudaGetDevice(&device));
#if L08_HAVE_L05
  if (use_lesson05(device))
    return l05_forward(L08_L05_VERSION, dim, q, k, v, o, lse, batch, heads, kv_heads, seq_q, seq_kv,
                       causal, scale, stream);
#endif
  return l04_forward(L08_L04_VERSION, dim, q, k, v, o, lse, batch, heads, kv_heads, seq_q, seq_kv,
                     causal, scale, stream);
}

/* ---- Sizes and places ---------------------------------------------------------------------------
 */

/* Elements of one token's row in Q (or O) and in K (or V). */
static size_t q_row(const l08_ring_config *c) {
  return (size_t)c->heads * c->dim;
}
static size_t kv_row(const l08_ring_config *c) {
  return (size_t)c->kv_heads * c->dim;
}

/* Tokens of a shard before chunk @p chunk. */
static int tokens_before(const l08_shard *s, int chunk) {
  int t = 0;
  for (int c = 0; c < chunk; ++c) t += s->len[c];
  return t;
}

/* Bytes of rank @p origin's block: its K chunks then its V chunks. */
static size_t block_bytes(const l08_ring *r, int origin) {
  return 2 * (size_t)r->cfg.batch * r->rank[origin].shard.tokens * kv_row(&r->cfg) * 2;
}

/* Where chunk @p chunk of a block from rank @p origin starts: K (which 0) or V (which 1). */
static const void *block_chunk(const l08_ring *r, const void *block, int origin, int chunk,
                               int which) {
  const l08_shard *s = &r->rank[origin].shard;
  const size_t k_elems = (size_t)r->cfg.batch * s->tokens * kv_row(&r->cfg);
  const size_t off =
      which * k_elems + (size_t)r->cfg.batch * tokens_before(s, chunk) * kv_row(&r->cfg);
  return (const char *)block + off * 2;
}

/* The block rank @p rank computes on at step @p step: its own, then the two buffers in turn. */
static const void *block_at(const l08_ring *r, int rank, int step) {
  const l08_rank *k = &r->rank[rank];
  return step == 0 ? k->own : k->kv[step % 2];
}

extern "C" double l08_ring_block_bytes(const l08_ring *r) {
  double most = 0.0;
  for (int i = 0; i < r->cfg.ranks; ++i) most = fmax(most, (double)block_bytes(r, i));
  return most;
}

extern "C" int l08_have_nccl(void) {
  return L08_HAVE_NCCL;
}

extern "C" const l08_ring_config *l08_ring_get_config(const l08_ring *r) {
  return &r->cfg;
}

/* ---- Build and free -----------------------------------------------------------------------------
 */

/* One line into the caller's why buffer. */
#define L08_WHY(...) ((why && why_len) ? (void)snprintf(why, why_len, __VA_ARGS__) : (void)0)

extern "C" void l08_ring_destroy(l08_ring *r) {
  if (!r) return;
  int prev = 0;
  cudaGetDevice(&prev);
  for (int i = 0; i < r->cfg.ranks; ++i) {
    l08_rank *k = &r->rank[i];
    if (cudaSetDevice(k->device) != cudaSuccess) continue;
    if (k->compute) cudaStreamSynchronize(k->compute);
    if (k->comm) cudaStreamSynchronize(k->comm);
#if L08_HAVE_NCCL
    if (k->nccl) ncclCommDestroy(k->nccl);
#endif
    cudaFree(k->q), cudaFree(k->own), cudaFree(k->kv[0]), cudaFree(k->kv[1]);
    cudaFree(k->o_acc), cudaFree(k->lse_acc), cudaFree(k->o_part), cudaFree(k->lse_part);
    cudaFree(k->o), cudaFree(k->lse);
    for (int s = 0; s < L08_MAX_RANKS; ++s) {
      for (int e = 0; e < L08_EV_COUNT; ++e)
        if (k->ev[s][e]) cudaEventDestroy(k->ev[s][e]);
    }
    if (k->t0) cudaEventDestroy(k->t0);
    if (k->done) cudaEventDestroy(k->done);
    if (k->compute) cudaStreamDestroy(k->compute);
    if (k->comm) cudaStreamDestroy(k->comm);
  }
  if (r->start) {
    cudaSetDevice(r->rank[0].device);
    cudaEventDestroy(r->start);
  }
  cudaSetDevice(prev);
  free(r);
}

#define L08_TRY_ALLOC(ptr, bytes) ATTN_TRY(cudaMalloc((void **)&(ptr), (bytes) > 0 ? (bytes) : 16))

static cudaError_t rank_create(l08_ring *r, int i) {
  const l08_ring_config *c = &r->cfg;
  l08_rank *k = &r->rank[i];
  ATTN_TRY(cudaSetDevice(k->device));
  const size_t tokens = (size_t)c->batch * k->shard.tokens;
  int longest = 0, most = 0;
  for (int j = 0; j < c->ranks; ++j) {
    for (int ch = 0; ch < r->rank[j].shard.n_chunks; ++ch)
      longest = r->rank[j].shard.len[ch] > longest ? r->rank[j].shard.len[ch] : longest;
    most = r->rank[j].shard.tokens > most ? r->rank[j].shard.tokens : most;
  }
  const size_t biggest_block = 2 * (size_t)c->batch * most * kv_row(c) * 2;
  L08_TRY_ALLOC(k->q, tokens * q_row(c) * 2);
  L08_TRY_ALLOC(k->own, tokens * kv_row(c) * 2 * 2);
  L08_TRY_ALLOC(k->kv[0], biggest_block);
  L08_TRY_ALLOC(k->kv[1], biggest_block);
  L08_TRY_ALLOC(k->o_acc, tokens * q_row(c) * 4);
  L08_TRY_ALLOC(k->lse_acc, tokens * c->heads * 4);
  L08_TRY_ALLOC(k->o_part, (size_t)c->batch * longest * q_row(c) * 2);
  L08_TRY_ALLOC(k->lse_part, (size_t)c->batch * longest * c->heads * 4);
  L08_TRY_ALLOC(k->o, tokens * q_row(c) * 2);
  L08_TRY_ALLOC(k->lse, tokens * c->heads * 4);
  ATTN_TRY(cudaStreamCreateWithFlags(&k->compute, cudaStreamNonBlocking));
  ATTN_TRY(cudaStreamCreateWithFlags(&k->comm, cudaStreamNonBlocking));
  for (int s = 0; s < L08_MAX_RANKS; ++s)
    for (int e = 0; e < L08_EV_COUNT; ++e) ATTN_TRY(cudaEventCreate(&k->ev[s][e]));
  ATTN_TRY(cudaEventCreate(&k->t0));
  ATTN_TRY(cudaEventCreateWithFlags(&k->done, cudaEventDisableTiming));
  return cudaSuccess;
}

extern "C" cudaError_t l08_ring_create(l08_ring **out, const l08_ring_config *cfg, char *why,
                                       size_t why_len) {
  *out = NULL;
  if (why && why_len) why[0] = '\0';
  const l08_ring_config *c = cfg;
  if (c->ranks < 1 || c->ranks > L08_MAX_RANKS) {
    L08_WHY("ranks must be 1..%d (got %d)", L08_MAX_RANKS, c->ranks);
    return cudaErrorInvalidValue;
  }
  if (c->gpus != 1 && c->gpus != c->ranks) {
    L08_WHY("one rank per GPU or every rank on one GPU: --gpus must be 1 or %d (got %d)", c->ranks,
            c->gpus);
    return cudaErrorInvalidValue;
  }
  if (c->dim != 64 && c->dim != 128) {
    L08_WHY("the forward kernels are built for head dimensions 64 and 128 (got %d)", c->dim);
    return cudaErrorInvalidValue;
  }
  if (attn_check_shape(c->batch, c->heads, c->kv_heads, c->seq, c->seq) != cudaSuccess) {
    L08_WHY("bad shape: heads %d, kv_heads %d (extents >= 1, kv_heads dividing heads)", c->heads,
            c->kv_heads);
    return cudaErrorInvalidValue;
  }
  int count = 0;
  ATTN_TRY(cudaGetDeviceCount(&count));
  if (c->first_device < 0 || c->first_device + c->gpus > count) {
    L08_WHY("needs %d GPUs from the first one asked for; %d visible", c->gpus, count);
    return cudaErrorInvalidValue;
  }
  l08_transport t = c->transport;
  if (t == L08_TRANSPORT_AUTO)
    t = (L08_HAVE_NCCL && c->gpus > 1) ? L08_TRANSPORT_NCCL : L08_TRANSPORT_COPY;
  if (t == L08_TRANSPORT_NCCL && !L08_HAVE_NCCL) {
    L08_WHY(
        "this build has no NCCL (CMake did not find it: pip install nvidia-nccl-cu13, or "
        "-DNCCL_ROOT=DIR)");
    return cudaErrorInvalidValue;
  }
  if (t == L08_TRANSPORT_NCCL && c->gpus == 1 && c->ranks > 1) {
    L08_WHY("NCCL needs a GPU per rank (%d ranks on %d GPU)", c->ranks, c->gpus);
    return cudaErrorInvalidValue;
  }
  int prev = 0;
  ATTN_TRY(cudaGetDevice(&prev));
  l08_ring *r = (l08_ring *)calloc(1, sizeof *r);
  if (!r) return cudaErrorMemoryAllocation;
  r->cfg = *c;
  r->cfg.transport = t;
  if (r->cfg.scale == 0.0f) r->cfg.scale = 1.0f / sqrtf((float)c->dim);
  for (int i = 0; i < c->ranks; ++i) {
    r->rank[i].device = c->first_device + (c->gpus == 1 ? 0 : i);
    l08_shard_of(c->seq, c->ranks, c->layout, i, &r->rank[i].shard);
  }
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < c->ranks && e == cudaSuccess; ++i) e = rank_create(r, i);
  if (e == cudaSuccess) {
    e = cudaSetDevice(r->rank[0].device);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&r->start, cudaEventDisableTiming);
  }
  /* Peer access lets a copy between two GPUs go straight over the link (NCCL sets up its own). */
  if (e == cudaSuccess && c->gpus > 1 && t == L08_TRANSPORT_COPY) {
    for (int i = 0; i < c->ranks; ++i) {
      const int a = r->rank[i].device, b = r->rank[(i + c->ranks - 1) % c->ranks].device;
      int can = 0;
      if (a != b && cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess && can) {
        cudaSetDevice(a);
        const cudaError_t pe = cudaDeviceEnablePeerAccess(b, 0);
        if (pe != cudaSuccess && pe != cudaErrorPeerAccessAlreadyEnabled) e = pe;
        (void)cudaGetLastError();
      }
    }
  }
#if L08_HAVE_NCCL
  if (e == cudaSuccess && t == L08_TRANSPORT_NCCL) {
    /* NVLink multicast (NVLS) stays off: the ring needs only point-to-point sends. */
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    ncclComm_t comms[L08_MAX_RANKS];
    int devs[L08_MAX_RANKS];
    for (int i = 0; i < c->ranks; ++i) devs[i] = r->rank[i].device;
    const ncclResult_t n = ncclCommInitAll(comms, c->ranks, devs);
    if (n != ncclSuccess) {
      if (why && why_len) snprintf(why, why_len, "ncclCommInitAll: %s", ncclGetErrorString(n));
      e = cudaErrorUnknown;
    } else {
      for (int i = 0; i < c->ranks; ++i) r->rank[i].nccl = comms[i];
    }
  }
#endif
  cudaSetDevice(prev);
  if (e != cudaSuccess) {
    l08_ring_destroy(r);
    return e;
  }
  *out = r;
  return cudaSuccess;
}

/* ---- Scatter, poison, gather --------------------------------------------------------------------
 */

/* Copy rows [start, start + len) of every sequence between a whole-sequence host tensor of
 * row_elems elements per token and a chunk tensor (bf16 or fp32 rows: elem bytes each). */
static cudaError_t copy_chunk(void *chunk, void *whole, int to_chunk, int batch, int seq, int start,
                              int len, size_t row_elems, size_t elem) {
  if (len == 0) return cudaSuccess;
  const size_t width = (size_t)len * row_elems * elem;
  char *w = (char *)whole + (size_t)start * row_elems * elem;
  const size_t pitch = (size_t)seq * row_elems * elem;
  if (to_chunk) return cudaMemcpy2D(chunk, width, w, pitch, width, batch, cudaMemcpyHostToDevice);
  return cudaMemcpy2D(w, pitch, chunk, width, width, batch, cudaMemcpyDeviceToHost);
}

extern "C" cudaError_t l08_ring_scatter(l08_ring *r, const uint16_t *q, const uint16_t *k,
                                        const uint16_t *v) {
  const l08_ring_config *c = &r->cfg;
  int prev = 0;
  ATTN_TRY(cudaGetDevice(&prev));
  for (int i = 0; i < c->ranks; ++i) {
    l08_rank *rk = &r->rank[i];
    ATTN_TRY(cudaSetDevice(rk->device));
    for (int ch = 0; ch < rk->shard.n_chunks; ++ch) {
      const int before = tokens_before(&rk->shard, ch), st = rk->shard.start[ch],
                len = rk->shard.len[ch];
      char *qc = (char *)rk->q + (size_t)c->batch * before * q_row(c) * 2;
      ATTN_TRY(copy_chunk(qc, (void *)q, 1, c->batch, c->seq, st, len, q_row(c), 2));
      ATTN_TRY(copy_chunk((void *)block_chunk(r, rk->own, i, ch, 0), (void *)k, 1, c->batch, c->seq,
                          st, len, kv_row(c), 2));
      ATTN_TRY(copy_chunk((void *)block_chunk(r, rk->own, i, ch, 1), (void *)v, 1, c->batch, c->seq,
                          st, len, kv_row(c), 2));
    }
  }
  return cudaSetDevice(prev);
}

extern "C" cudaError_t l08_ring_poison(l08_ring *r) {
  const l08_ring_config *c = &r->cfg;
  int prev = 0;
  ATTN_TRY(cudaGetDevice(&prev));
  for (int i = 0; i < c->ranks; ++i) {
    l08_rank *k = &r->rank[i];
    const size_t tokens = (size_t)c->batch * k->shard.tokens;
    ATTN_TRY(cudaSetDevice(k->device));
    ATTN_TRY(attn_poison(k->o, tokens * q_row(c) * 2, k->compute));
    ATTN_TRY(attn_poison(k->lse, tokens * c->heads * 4, k->compute));
    ATTN_TRY(cudaStreamSynchronize(k->compute));
  }
  return cudaSetDevice(prev);
}

extern "C" cudaError_t l08_ring_gather(const l08_ring *r, uint16_t *o, float *lse) {
  const l08_ring_config *c = &r->cfg;
  int prev = 0;
  ATTN_TRY(cudaGetDevice(&prev));
  for (int i = 0; i < c->ranks; ++i) {
    const l08_rank *k = &r->rank[i];
    ATTN_TRY(cudaSetDevice(k->device));
    ATTN_TRY(cudaStreamSynchronize(k->compute));
    ATTN_TRY(cudaStreamSynchronize(k->comm));
    for (int ch = 0; ch < k->shard.n_chunks; ++ch) {
      const int before = tokens_before(&k->shard, ch), st = k->shard.start[ch],
                len = k->shard.len[ch];
      char *oc = (char *)k->o + (size_t)c->batch * before * q_row(c) * 2;
      ATTN_TRY(copy_chunk(oc, o, 0, c->batch, c->seq, st, len, q_row(c), 2));
      if (lse && len > 0) {
        /* [batch, heads, len] -> rows [start, start + len) of [batch, heads, seq] */
        const float *lc = k->lse + (size_t)c->batch * c->heads * before;
        ATTN_TRY(cudaMemcpy2D(lse + st, (size_t)c->seq * 4, lc, (size_t)len * 4, (size_t)len * 4,
                              (size_t)c->batch * c->heads, cudaMemcpyDeviceToHost));
      }
    }
  }
  return cudaSetDevice(prev);
}

/* ---- The two moves of a step --------------------------------------------------------------------
 */

cudaError_t l08_compute_step(l08_ring *r, int rank, int step) {
  const l08_ring_config *c = &r->cfg;
  l08_rank *k = &r->rank[rank];
  const int origin = l08_block_origin(rank, step, c->ranks);
  const l08_shard *kv = &r->rank[origin].shard;
  const void *block = block_at(r, rank, step);
  ATTN_TRY(cudaSetDevice(k->device));
  ATTN_TRY(cudaEventRecord(k->ev[step][L08_EV_COMPUTE_START], k->compute));
  if (step == 0)
    ATTN_TRY(l08_state_init(k->o_acc, k->lse_acc, (size_t)c->batch * k->shard.tokens * c->heads,
                            c->dim, k->compute));
  for (int a = 0; a < k->shard.n_chunks; ++a) {
    const int qs = k->shard.start[a], qn = k->shard.len[a], before = tokens_before(&k->shard, a);
    const void *qc = (const char *)k->q + (size_t)c->batch * before * q_row(c) * 2;
    float *oc = k->o_acc + (size_t)c->batch * before * q_row(c);
    float *lc = k->lse_acc + (size_t)c->batch * c->heads * before;
    for (int b = 0; b < kv->n_chunks; ++b) {
      const int kind = l08_pair_kind(qs, qn, kv->start[b], kv->len[b], c->causal);
      if (kind == L08_PAIR_SKIP) continue;
      if (kind < 0) return cudaErrorInvalidValue; /* the layouts never overlap partly */
      ATTN_TRY(l08_forward(qc, block_chunk(r, block, origin, b, 0),
                           block_chunk(r, block, origin, b, 1), k->o_part, k->lse_part, c->batch,
                           c->heads, c->kv_heads, qn, kv->len[b], c->dim, kind == L08_PAIR_DIAG,
                           c->scale, k->compute));
      ATTN_TRY(l08_state_merge(oc, lc, k->o_part, k->lse_part, c->batch, qn, c->heads, c->dim,
                               k->compute));
    }
  }
  ATTN_TRY(cudaEventRecord(k->ev[step][L08_EV_COMPUTE_END], k->compute));
  return cudaSuccess;
}

cudaError_t l08_exchange(l08_ring *r, int step, int on_comm) {
  const l08_ring_config *c = &r->cfg;
  const int p = c->ranks;
  /* Before anything moves, each rank's stream waits until the buffer the block arrives in is
   * free: it held the block of step - 1, which that step's compute read. (On the compute stream
   * itself, the serial schedule, the wait is already implied by the order.) */
  for (int i = 0; i < p; ++i) {
    l08_rank *k = &r->rank[i];
    cudaStream_t s = on_comm ? k->comm : k->compute;
    ATTN_TRY(cudaSetDevice(k->device));
    if (on_comm && step > 0)
      ATTN_TRY(cudaStreamWaitEvent(s, k->ev[step - 1][L08_EV_COMPUTE_END], 0));
    ATTN_TRY(cudaEventRecord(k->ev[step][L08_EV_EXCHANGE_START], s));
  }
  if (c->transport == L08_TRANSPORT_NCCL) {
#if L08_HAVE_NCCL
    /* One group: every rank sends the block in hand to the next and receives the next one from
     * the one before. The group lets NCCL pair the sends with the receives without deadlock. */
    ncclGroupStart();
    for (int i = 0; i < p; ++i) {
      l08_rank *k = &r->rank[i];
      cudaStream_t s = on_comm ? k->comm : k->compute;
      const int sent = l08_block_origin(i, step, p), coming = l08_block_origin(i, step + 1, p);
      ncclSend(block_at(r, i, step), block_bytes(r, sent), ncclUint8, (i + 1) % p, k->nccl, s);
      ncclRecv(k->kv[(step + 1) % 2], block_bytes(r, coming), ncclUint8, (i + p - 1) % p, k->nccl,
               s);
    }
    const ncclResult_t n = ncclGroupEnd();
    if (n != ncclSuccess) {
      fprintf(stderr, "ring: NCCL send/receive at step %d: %s\n", step, ncclGetErrorString(n));
      return cudaErrorUnknown;
    }
#endif
  } else {
    /* Copies in place of NCCL. Each rank pulls the block in hand of the rank before it, on its
     * own stream, once that rank's stream has reached this step (its block is complete there);
     * then each rank waits until the rank after it has pulled, as NCCL's send would. */
    for (int i = 0; i < p; ++i) {
      l08_rank *k = &r->rank[i];
      ATTN_TRY(cudaSetDevice(k->device));
      ATTN_TRY(cudaEventRecord(k->ev[step][L08_EV_READY], on_comm ? k->comm : k->compute));
    }
    for (int i = 0; i < p; ++i) {
      l08_rank *k = &r->rank[i];
      const int from = (i + p - 1) % p;
      cudaStream_t s = on_comm ? k->comm : k->compute;
      ATTN_TRY(cudaSetDevice(k->device));
      ATTN_TRY(cudaStreamWaitEvent(s, r->rank[from].ev[step][L08_EV_READY], 0));
      ATTN_TRY(cudaMemcpyPeerAsync(k->kv[(step + 1) % 2], k->device, block_at(r, from, step),
                                   r->rank[from].device,
                                   block_bytes(r, l08_block_origin(from, step, p)), s));
    }
  }
  for (int i = 0; i < p; ++i) {
    l08_rank *k = &r->rank[i];
    cudaStream_t s = on_comm ? k->comm : k->compute;
    ATTN_TRY(cudaSetDevice(k->device));
    ATTN_TRY(cudaEventRecord(k->ev[step][L08_EV_EXCHANGE_END], s));
  }
  if (c->transport != L08_TRANSPORT_NCCL) {
    for (int i = 0; i < p; ++i) {
      l08_rank *k = &r->rank[i];
      ATTN_TRY(cudaSetDevice(k->device));
      ATTN_TRY(cudaStreamWaitEvent(on_comm ? k->comm : k->compute,
                                   r->rank[(i + 1) % p].ev[step][L08_EV_EXCHANGE_END], 0));
    }
  }
  return cudaSuccess;
}

cudaError_t l08_run_begin(l08_ring *r, cudaStream_t after) {
  if (after) {
    ATTN_TRY(cudaSetDevice(r->rank[0].device));
    ATTN_TRY(cudaEventRecord(r->start, after));
  }
  for (int i = 0; i < r->cfg.ranks; ++i) {
    l08_rank *k = &r->rank[i];
    ATTN_TRY(cudaSetDevice(k->device));
    if (after) {
      ATTN_TRY(cudaStreamWaitEvent(k->compute, r->start, 0));
      ATTN_TRY(cudaStreamWaitEvent(k->comm, r->start, 0));
    }
    ATTN_TRY(cudaEventRecord(k->t0, k->compute));
    ATTN_TRY(cudaStreamWaitEvent(k->comm, k->t0, 0));
  }
  return cudaSuccess;
}

cudaError_t l08_run_end(l08_ring *r, cudaStream_t after) {
  const l08_ring_config *c = &r->cfg;
  for (int i = 0; i < c->ranks; ++i) {
    l08_rank *k = &r->rank[i];
    ATTN_TRY(cudaSetDevice(k->device));
    const size_t tokens = (size_t)c->batch * k->shard.tokens;
    ATTN_TRY(l08_state_finish(k->o_acc, k->o, tokens * q_row(c), k->compute));
    ATTN_TRY(cudaMemcpyAsync(k->lse, k->lse_acc, tokens * c->heads * 4, cudaMemcpyDeviceToDevice,
                             k->compute));
    ATTN_TRY(cudaEventRecord(k->done, k->compute));
  }
  ATTN_TRY(cudaSetDevice(r->rank[0].device));
  if (after)
    for (int i = 0; i < c->ranks; ++i) ATTN_TRY(cudaStreamWaitEvent(after, r->rank[i].done, 0));
  return cudaSuccess;
}

extern "C" cudaError_t l08_ring_run(l08_ring *r, cudaStream_t after) {
  int prev = 0;
  ATTN_TRY(cudaGetDevice(&prev));
  r->ran_steps = 0;
  const cudaError_t e = r->cfg.schedule == L08_SERIAL ? l08_run_serial(r, after)
                        : r->cfg.layout == L08_ZIGZAG ? l08_run_zigzag(r, after)
                                                      : l08_run_overlap(r, after);
  r->ran_steps = e == cudaSuccess ? r->cfg.ranks : 0;
  cudaSetDevice(prev);
  return e;
}

/* ---- The timeline -------------------------------------------------------------------------------
 */

static float since(cudaEvent_t t0, cudaEvent_t e) {
  float ms = -1.0f;
  if (cudaEventElapsedTime(&ms, t0, e) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1.0f;
  }
  return ms;
}

extern "C" l08_step_times l08_ring_step_times(const l08_ring *r, int rank, int step) {
  l08_step_times t = {-1.0f, -1.0f, -1.0f, -1.0f};
  if (rank < 0 || rank >= r->cfg.ranks || step < 0 || step >= r->ran_steps) return t;
  const l08_rank *k = &r->rank[rank];
  int prev = 0;
  cudaGetDevice(&prev);
  cudaSetDevice(k->device);
  t.compute_start = since(k->t0, k->ev[step][L08_EV_COMPUTE_START]);
  t.compute_end = since(k->t0, k->ev[step][L08_EV_COMPUTE_END]);
  if (step < r->cfg.ranks - 1) {
    t.exchange_start = since(k->t0, k->ev[step][L08_EV_EXCHANGE_START]);
    t.exchange_end = since(k->t0, k->ev[step][L08_EV_EXCHANGE_END]);
  }
  cudaSetDevice(prev);
  return t;
}

static int cmp_float(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

extern "C" cudaError_t l08_ring_time_exchange(l08_ring *r, int iters, float *ms) {
  *ms = -1.0f;
  if (r->cfg.ranks < 2) return cudaSuccess;
  if (iters < 1) iters = 1;
  if (iters > 64) iters = 64;
  float got[64];
  int prev = 0;
  ATTN_TRY(cudaGetDevice(&prev));
  r->ran_steps = 0; /* the events now hold this, not a run */
  for (int it = 0; it < iters; ++it) {
    ATTN_TRY(l08_run_begin(r, 0));
    ATTN_TRY(l08_exchange(r, 0, 1));
    float worst = 0.0f;
    for (int i = 0; i < r->cfg.ranks; ++i) {
      const l08_rank *k = &r->rank[i];
      ATTN_TRY(cudaSetDevice(k->device));
      ATTN_TRY(cudaStreamSynchronize(k->comm));
      float t = 0.0f;
      ATTN_TRY(
          cudaEventElapsedTime(&t, k->ev[0][L08_EV_EXCHANGE_START], k->ev[0][L08_EV_EXCHANGE_END]));
      worst = t > worst ? t : worst;
    }
    got[it] = worst;
  }
  qsort(got, (size_t)iters, sizeof got[0], cmp_float);
  *ms = got[iters / 2];
  return cudaSetDevice(prev);
}
