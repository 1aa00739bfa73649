#!/usr/bin/env python3
"""Drill: triton_fa2.py's kernel with the inner loop's body left for you to write.

Fill in kv_tile() below (TODO 1-4), from memory of lesson 04 rather than from triton_fa2.py, then
run the check, which fails and names each failing case until the body is right:

    python3 lessons/04_fa2_warps/triton_fa2_drill.py [--check-only]
    python3 lessons/04_fa2_warps/triton_fa2.py --drill            (the same)

Once every case passes, the run goes on to time your kernel beside SDPA and lesson 04's version 7.
Without torch, triton or a CUDA GPU it says which and exits 77 (skipped).
fa2_fwd() is triton_fa2.py's, line for line: the grid, the causal bounds and the epilogue are given.
"""
if __name__ == "__main__":  # run the check of triton_fa2.py on this file's kernel
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import triton_fa2
    sys.exit(triton_fa2.main(["--drill"] + sys.argv[1:]))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

LN2: tl.constexpr = tl.constexpr(0.6931471805599453)  # base-2 LSE back to natural log (FA_LN2)


@triton.jit
def kv_tile(acc, m_i, l_i, q, k_ptrs, v_ptrs, cols, last_col, seq_kv, scale_log2,
            MASK: tl.constexpr, CAUSAL: tl.constexpr):
    """One KV tile of the inner loop: S = Q K^T, the online softmax, O += P V.

    acc [BLOCK_M, D] fp32, the unnormalised O; m_i [BLOCK_M], the running row max in log2 units
    (-inf until a row has seen a key); l_i [BLOCK_M], the running row sum; q [BLOCK_M, D] bf16;
    k_ptrs, v_ptrs [BLOCK_N, D], this tile's K and V rows; cols [BLOCK_N], their key indices;
    last_col [BLOCK_M], the last key each row may see under the causal mask; scale_log2 the
    softmax scale times log2(e). MASK: this tile may hold keys past seq_kv or, with CAUSAL, keys
    some row must not see; without it every key of the tile is real and visible.
    Returns (acc, m_i, l_i) after this tile.
    """
    # TODO 1 (v3 mma, v5 zero fill): load the K tile (where MASK, a key at or past seq_kv must read
    #   as 0, never garbage), then S = Q K^T on the tensor cores (tl.dot, K transposed), times
    #   scale_log2.
    # TODO 2 (v6): where MASK, scores of keys past seq_kv become -inf, and with CAUSAL also those
    #   of keys past the row's last_col.
    # TODO 3 (v1-v3): the online softmax in base 2: the new row max; alpha = 2^(old max - new),
    #   with a row whose max is still -inf treated as max 0 (else -inf - -inf = NaN); P = 2^(S -
    #   max); l_i = l_i * alpha + the row sums of P.
    # TODO 4 (v3): load the V tile as K; acc = acc * alpha + P V, with P cast to bf16 for tl.dot.
    return acc, m_i, l_i


@triton.jit
def fa2_fwd(Q, K, V, O, LSE, sqb, sqs, sqh, skb, sks, skh, svb, svs, svh, sob, sos, soh,
            heads, group, seq_q, seq_kv, scale_log2,
            CAUSAL: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # v1 splitk: FlashAttention-2's grid, Q outer: one program per (query tile, batch * head).
    # v6 heavy first: under causal a head's last Q tile, which sees the most keys, starts first.
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m
    bh = tl.program_id(1)
    b = (bh // heads).to(tl.int64)
    h = (bh % heads).to(tl.int64)
    kvh = h // group  # GQA: `group` query heads read one KV head (every version)
    q0 = pid_m * BLOCK_M
    rows = q0 + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    # BSHD with explicit strides (the last dimension contiguous), like the lessons' pointers.
    q = tl.load(Q + b * sqb + h * sqh + rows[:, None] * sqs + offs_d[None, :],
                mask=rows[:, None] < seq_q, other=0.0)  # held for the whole loop
    k_ptrs = K + b * skb + kvh * skh + offs_n[:, None] * sks + offs_d[None, :]
    v_ptrs = V + b * svb + kvh * svh + offs_n[:, None] * svs + offs_d[None, :]
    # The running row max m (log2 units), row sum l and unnormalised O, fp32 (every version).
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    diag = seq_kv - seq_q
    # v6 causal skip: keys [0, full) are visible to every row of the tile (no mask); the loop ends
    # at the last key the tile's last row sees (kv_tiles_visited / kv_tiles_unmasked).
    full = seq_kv
    hi = seq_kv
    if CAUSAL:
        full = tl.maximum(tl.minimum(q0 + diag + 1, seq_kv), 0)
        hi = tl.maximum(tl.minimum(tl.minimum(q0 + BLOCK_M, seq_q) + diag, seq_kv), 0)
    full = full // BLOCK_N * BLOCK_N
    # v5 cp.async double buffering -> num_stages: Triton's pipeliner issues the cp.async loads of
    # the next num_stages - 1 tiles before this tile's arithmetic (v5 keeps one tile ahead).
    for start in range(0, full, BLOCK_N):
        acc, m_i, l_i = kv_tile(acc, m_i, l_i, q, k_ptrs + start * sks, v_ptrs + start * svs,
                                start + offs_n, rows + diag, seq_kv, scale_log2, False, CAUSAL)
    for start in range(full, hi, BLOCK_N):
        acc, m_i, l_i = kv_tile(acc, m_i, l_i, q, k_ptrs + start * sks, v_ptrs + start * svs,
                                start + offs_n, rows + diag, seq_kv, scale_log2, True, CAUSAL)
    # FlashAttention-2's fewer non-matmul flops: O divided by l once, after the last tile. A row
    # that sees no key (seq_q > seq_kv, causal) has l = 0: O = 0 and LSE = -inf (every version).
    seen = l_i > 0
    o = acc / tl.where(seen, l_i, 1.0)[:, None]
    tl.store(O + b * sob + h * soh + rows[:, None] * sos + offs_d[None, :],
             o.to(O.dtype.element_ty), mask=rows[:, None] < seq_q)
    lse = tl.where(seen, (m_i + tl.log2(l_i)) * LN2, float("-inf"))
    tl.store(LSE + bh.to(tl.int64) * seq_q + rows, lse, mask=rows < seq_q)  # [batch, heads, seq_q]

