#!/usr/bin/env python3
"""Lesson 04's FlashAttention-2 forward in Triton, checked and timed beside the lesson's CUDA.

The kernel is the algorithm of v7_tiles.cu in about 80 lines: one program per (query tile,
batch * head), the KV tiles streamed past it with the online softmax in base 2, bf16 in and out,
fp32 accumulation, GQA, any length, the bottom-right causal mask with the tile skip, O and the
natural-log log-sum-exp. Each block of the kernel names the version of lesson 04 that introduced
the same idea; what the CUDA spells out by hand (warp roles, fragments, swizzle, cp.async), Triton
derives from the tile shapes, the block sizes and num_warps / num_stages.

    python3 lessons/04_fa2_warps/triton_fa2.py [--drill] [--lib build/lib/libattn_lessons.so]
        [--iters N] [--warmup N] [--check-only]

1. Without torch, triton or a CUDA GPU: one line saying which, exit 77 (skipped, not passed).
2. The check: O against SDPA's math backend in float32 on the same bf16 inputs, the LSE against
   float32 logsumexp(scale * Q K^T, masked), on awkward shapes (1 token, lengths that are no tile
   multiple, seq_q != seq_kv both ways with causal, rows that see no key, GQA 8:1, dim 64 and 128).
   One line per case; any failure: exit 1 after the check.
3. The timing (not with --check-only): this kernel, SDPA flash, SDPA cuDNN and lesson 04's version
   7 (l04_forward through ctypes; skipped with a note when the library is missing) at batch 4,
   16 heads, seq 4096, dim 64 and 128, causal and not: CUDA events, median of --iters runs, the L2
   flushed before each (bench/peer_timing.py). FLOPs 4 * b * h * sq * skv * d, halved for causal.

--drill runs the same check on triton_fa2_drill.py's kernel, whose inner loop is left for you to
write: it fails, naming each case, until the loop is right (then it is timed too).
"""
import argparse
import ctypes
import os
import sys

SKIPPED = 77  # the exit status of a run that could not happen here (as ctest's SKIP_RETURN_CODE)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def missing():
    """Why this cannot run here, or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    try:
        import triton  # noqa: F401
    except ImportError:
        return "triton is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA GPU"
    if torch.cuda.get_device_capability() < (8, 0):
        return f"{torch.cuda.get_device_name()} is older than sm_80 (no bf16 tensor cores)"
    return None


if (WHY := missing()) is not None:
    print(f"triton_fa2: skipped: {WHY}")
    sys.exit(SKIPPED)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

LOG2E = 1.4426950408889634  # exp(x) = 2^(x log2 e): the scale carries log2(e) (v3's FA_LOG2E)
LN2: tl.constexpr = tl.constexpr(0.6931471805599453)  # base-2 LSE back to natural log (FA_LN2)
# v7 tiles: the tile shape per head dim, (BLOCK_M, BLOCK_N, num_warps, num_stages), each the
# fastest of a small sweep on an H200 at the timed shape. Unlike v7, BLOCK_N 64 won at dim 64 too;
# dim 128 needs 8 warps (with 4, each thread would hold 128 floats of O beside 64 of S).
CONFIGS = {64: (128, 64, 4, 3), 128: (128, 64, 8, 3)}


@triton.jit
def kv_tile(acc, m_i, l_i, q, k_ptrs, v_ptrs, cols, last_col, seq_kv, scale_log2,
            MASK: tl.constexpr, CAUSAL: tl.constexpr):
    """One KV tile of the inner loop: S = Q K^T, the online softmax, O += P V."""
    # Keys past seq_kv read as 0, never a stale NaN (every version; v5: cp.async's src-size 0).
    if MASK:
        k = tl.load(k_ptrs, mask=cols[:, None] < seq_kv, other=0.0)
    else:
        k = tl.load(k_ptrs)
    # v3 mma: tl.dot is the tensor-core matmul, bf16 in, fp32 out. Triton picks the instruction
    # (mma.sync as in v3 on sm_80; on sm_90, wgmma, lesson 05's) and, for its operands, ldmatrix
    # and swizzled shared-memory layouts (v4's swizzle): nothing of that is written here.
    s = tl.dot(q, tl.trans(k)) * scale_log2
    if MASK:  # v6: the mask only on the tiles that need it (ragged end, causal diagonal)
        keep = cols[None, :] < seq_kv
        if CAUSAL:  # bottom-right: row r sees key c when c <= r + seq_kv - seq_q
            keep = keep & (cols[None, :] <= last_col[:, None])
        s = tl.where(keep, s, float("-inf"))
    # v2 split-Q: the dot layout gives each warp whole rows, so these row reductions are warp
    # shuffles, no block barrier. v3: exp2 with log2(e) folded into the scale.
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)  # v1: a row with nothing visible yet
    alpha = tl.exp2(m_i - m_use)
    p = tl.exp2(s - m_use[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    if MASK:
        v = tl.load(v_ptrs, mask=cols[:, None] < seq_kv, other=0.0)
    else:
        v = tl.load(v_ptrs)
    # v3: P, rounded to bf16, is the A operand of O += P V; O is rescaled by alpha first.
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, m_new, l_i


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


def attention(q, k, v, causal=False, scale=None, kernel=fa2_fwd):
    """q [batch, seq_q, heads, dim], k and v [batch, seq_kv, kv_heads, dim], bf16, last dimension
    contiguous -> O like q and the LSE [batch, heads, seq_q] in fp32, natural log."""
    batch, seq_q, heads, dim = q.shape
    seq_kv, kv_heads = k.shape[1], k.shape[2]
    assert dim in CONFIGS and heads % kv_heads == 0 and v.shape == k.shape
    assert q.stride(-1) == k.stride(-1) == v.stride(-1) == 1
    o = torch.empty_like(q)
    lse = torch.empty(batch, heads, seq_q, device=q.device, dtype=torch.float32)
    block_m, block_n, warps, stages = CONFIGS[dim]
    scale = dim ** -0.5 if scale is None else scale
    grid = (triton.cdiv(seq_q, block_m), batch * heads)
    kernel[grid](q, k, v, o, lse, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3],
                 *o.stride()[:3], heads, heads // kv_heads, seq_q, seq_kv, scale * LOG2E,
                 CAUSAL=bool(causal), D=dim, BLOCK_M=block_m, BLOCK_N=block_n,
                 num_warps=warps, num_stages=stages)
    return o, lse


# --- the check -------------------------------------------------------------------------------

# (what it tests, batch, heads, kv_heads, seq_q, seq_kv, dim, causal)
CASES = [
    ("1 token", 1, 2, 2, 1, 1, 64, False),
    ("1 query, 333 keys, causal: it sees them all", 1, 4, 4, 1, 333, 128, True),
    ("333 tokens: no tile multiple", 2, 3, 3, 333, 333, 64, False),
    ("333 tokens, causal", 2, 3, 3, 333, 333, 128, True),
    ("seq_q < seq_kv, causal", 1, 4, 2, 100, 333, 64, True),
    ("seq_q > seq_kv, causal: rows that see no key", 1, 4, 2, 333, 100, 128, True),
    ("seq_q > seq_kv, causal: rows that see no key", 2, 2, 1, 700, 129, 64, True),
    ("seq_q != seq_kv, full", 2, 4, 4, 257, 1000, 128, False),
    ("GQA 8:1, causal", 1, 16, 2, 512, 512, 64, True),
    ("GQA 8:1, seq_q < seq_kv", 2, 8, 1, 300, 700, 128, False),
    ("several tiles, causal, tile multiples", 1, 2, 2, 1024, 1024, 128, True),
]
O_TOL = 2e-2    # bf16 output: one rounding at |O| up to 4 is 7.8e-3, plus P rounded to bf16
LSE_TOL = 1e-3  # the LSE is fp32 all the way (the lessons' fp32 LSE tolerance)


def reference(q, k, v, causal, scale):
    """O from SDPA's math backend and the LSE from logsumexp, both in float32 on the bf16 inputs."""
    seq_q, heads, seq_kv, kv_heads = q.shape[1], q.shape[2], k.shape[1], k.shape[2]
    qf = q.float().transpose(1, 2)  # [batch, heads, seq, dim] for SDPA
    kf, vf = (x.float().repeat_interleave(heads // kv_heads, dim=2).transpose(1, 2) for x in (k, v))
    r = torch.arange(seq_q, device=q.device)[:, None]
    c = torch.arange(seq_kv, device=q.device)[None, :]
    visible = c <= r + (seq_kv - seq_q) if causal else torch.ones_like(c + r, dtype=torch.bool)
    s = (qf @ kf.transpose(-1, -2)) * scale
    lse = torch.logsumexp(s.masked_fill(~visible, float("-inf")), dim=-1)  # -inf: no visible key
    with sdpa_kernel(SDPBackend.MATH):
        o = F.scaled_dot_product_attention(qf, kf, vf, attn_mask=visible, scale=scale)
    o = torch.where(visible.any(-1)[:, None], o, 0.0)  # the lessons' O = 0 for such a row
    return o.transpose(1, 2), lse


def lse_error(got, ref):
    """Largest |got - ref| over the finite reference; inf if any -inf is not matched exactly."""
    none = torch.isneginf(ref)
    if not torch.equal(torch.isneginf(got), none):
        return float("inf")
    return (got[~none] - ref[~none]).abs().max().item() if (~none).any() else 0.0


def check(kernel):
    failed = 0
    for name, batch, heads, kv_heads, seq_q, seq_kv, dim, causal in CASES:
        gen = torch.Generator(device="cuda").manual_seed(seq_q * 7919 + seq_kv + dim + causal)
        q = torch.randn(batch, seq_q, heads, dim, device="cuda", generator=gen).bfloat16()
        k, v = (torch.randn(batch, seq_kv, kv_heads, dim, device="cuda", generator=gen).bfloat16()
                for _ in range(2))
        o, lse = attention(q, k, v, causal, kernel=kernel)
        ref_o, ref_lse = reference(q, k, v, causal, dim ** -0.5)
        err_o = (o.float() - ref_o).abs().max().item()  # NaN compares false below: a failure
        err_l = lse_error(lse, ref_lse)
        ok = err_o <= O_TOL and err_l <= LSE_TOL
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'}  b {batch} h {heads:>2}/{kv_heads:<2} sq {seq_q:>4} "
              f"skv {seq_kv:>4} d {dim:>3} {'causal' if causal else 'full  '}  O max_abs "
              f"{err_o:.2e} (tol {O_TOL:.0e})  LSE max_abs {err_l:.2e} (tol {LSE_TOL:.0e})  {name}",
              flush=True)
    print(f"check: {len(CASES) - failed} passed, {failed} failed")
    return failed


# --- the timing ------------------------------------------------------------------------------

def load_l04(path):
    """lesson 04's l04_forward, loaded as bench/lesson04_peers.py loads it, or None with a note."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from lesson04_peers import load_lib
    try:
        return load_lib(path).l04_forward
    except OSError as e:
        print(f"lesson 04's library not loaded ({e}); `make lesson-4` builds it. Timing the rest.")
        return None


def bench(kernel, label, l04, iters, warmup):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from peer_timing import L2Flush, timings
    flush = L2Flush()
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    batch, heads, seq = 4, 16, 4096
    print(f"\n{torch.cuda.get_device_name()}; torch {torch.__version__}, triton "
          f"{triton.__version__}, cuDNN {torch.backends.cudnn.version()}; batch {batch}, heads "
          f"{heads}, seq {seq}; median of {iters} runs, L2 flushed before each")
    print(f"{'dim':>4} {'causal':>6}  {'impl':<18} {'ms':>8} {'TFLOP/s':>8}  max_abs vs flash")
    for dim in (64, 128):
        for causal in (0, 1):
            gen = torch.Generator(device="cuda").manual_seed(dim + causal)
            q, k, v = (torch.randn(batch, seq, heads, dim, device="cuda", generator=gen).bfloat16()
                       for _ in range(3))
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            o = torch.empty_like(q)
            lse = torch.empty(batch, heads, seq, device="cuda", dtype=torch.float32)
            flops = 4.0 * batch * heads * seq * seq * dim / (2.0 if causal else 1.0)

            def sdpa(backend):
                def run():
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal))
                return run

            def lesson():
                err = l04(7, dim, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                          lse.data_ptr(), batch, heads, heads, seq, seq, causal, 0.0, stream)
                if err != 0:
                    raise RuntimeError(f"l04_forward(7) returned CUDA error {err}")
                return o.transpose(1, 2)

            impls = {"sdpa-flash": sdpa(SDPBackend.FLASH_ATTENTION),  # first: the reference
                     "sdpa-cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
                     label: lambda: attention(q, k, v, causal, kernel=kernel)[0].transpose(1, 2)}
            if l04 is not None:
                impls["l04-v7-tiles-bf16"] = lesson
            ref = None
            for name, fn in impls.items():
                try:
                    out = fn().float()  # BHSD view: compared with flash's output
                    ref = out if name == "sdpa-flash" else ref
                    diff = f"{(out - ref).abs().max().item():.2e}" if ref is not None else ""
                    ms, _ = timings(fn, flush, iters, warmup)
                    print(f"{dim:>4} {causal:>6}  {name:<18} {ms:>8.4f} "
                          f"{flops / (ms * 1e-3) / 1e12:>8.1f}  {diff}", flush=True)
                except Exception as e:  # a backend that refuses the shape: say so, go on
                    print(f"{dim:>4} {causal:>6}  {name:<18} error: {e}".splitlines()[0])
            del q, k, v, qt, kt, vt, o, lse, ref


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--drill", action="store_true", help="check triton_fa2_drill.py's kernel")
    ap.add_argument("--lib", default=os.environ.get("ATTN_LIB") or os.path.join(
        ROOT, "build", "lib", "libattn_lessons.so"), help="lesson 04's libattn_lessons.so")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--check-only", action="store_true", help="no timing")
    a = ap.parse_args(argv)
    kernel, label = fa2_fwd, "triton"
    if a.drill:
        sys.path.insert(0, HERE)
        from triton_fa2_drill import fa2_fwd as kernel
        label = "triton-drill"
    print(f"triton_fa2: the check, {'triton_fa2_drill.py' if a.drill else 'triton_fa2.py'}; "
          f"{torch.cuda.get_device_name()}")
    if check(kernel):
        return 1
    if not a.check_only:
        bench(kernel, label, load_l04(a.lib), a.iters, a.warmup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
