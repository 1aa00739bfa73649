#!/usr/bin/env python3
"""A/B of lesson 05 version 7's kernel alone: libraries NAME=PATH (the first is the baseline).
Checks on awkward shapes against a float32 reference, then the kernel alone, rounds taking turns."""
import ctypes, sys, statistics, torch
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings

libs = []
for a in sys.argv[1:]:
    name, path = a.split("=", 1)
    lib = ctypes.CDLL(path)
    pre = __import__("os").environ.get("PREFIX", "l05_fp8t")
    f = {p: getattr(lib, pre + "_" + p) for p in ("workspace_bytes", "quantize", "attention")}
    f["workspace_bytes"].restype = ctypes.c_size_t
    f["workspace_bytes"].argtypes = [ctypes.c_int] * 6
    f["quantize"].restype = ctypes.c_int
    f["quantize"].argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 6 + [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    f["attention"].restype = ctypes.c_int
    f["attention"].argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int] * 7 + [ctypes.c_float, ctypes.c_void_p]
    for d in (64, 128):
        g = getattr(lib, f"l05_overlap_d{d}")
        g.restype = ctypes.c_int
        g.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p]
        f[d] = g
    libs.append((name, f))
import os
BF16 = os.environ.get("MODE", "fp8") == "bf16"
DIMS = [int(x) for x in os.environ.get("DIMS", "128").split(",")]
print(torch.cuda.get_device_name(), flush=True)
stream = torch.cuda.current_stream().cuda_stream

def setup(f, q, k, v, b, h, hk, sq, sk, d):
    if BF16:
        return (q, k, v), 0
    n = f["workspace_bytes"](b, h, hk, sq, sk, d)
    ws = torch.empty(n, device="cuda", dtype=torch.uint8)
    assert f["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, h, hk, sq, sk, d, ws.data_ptr(), n, stream) == 0
    return ws, n

def run(f, ws, n, o, lse, b, h, hk, sq, sk, d, causal):
    if BF16:
        err = f[d](ws[0].data_ptr(), ws[1].data_ptr(), ws[2].data_ptr(), o.data_ptr(), lse.data_ptr(), b, h, hk, sq, sk, causal, d ** -0.5, stream)
        assert err == 0, err
        return
    err = f["attention"](ws.data_ptr(), n, o.data_ptr(), lse.data_ptr(), b, h, hk, sq, sk, d, causal, d ** -0.5, stream)
    assert err == 0, err

def ref(q, k, v, causal):
    b, sq, h, d = q.shape; sk, hk = k.shape[1], k.shape[2]
    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))
    kf = kf.repeat_interleave(h // hk, 1); vf = vf.repeat_interleave(h // hk, 1)
    s = qf @ kf.transpose(-1, -2) * d ** -0.5
    if causal:
        r = torch.arange(sq, device="cuda")[:, None]; c = torch.arange(sk, device="cuda")[None, :]
        s = s.masked_fill(c > r + sk - sq, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return (p @ vf).transpose(1, 2)

checks = [(2, 8, 2, 333, 1000, 1, 1.0), (1, 4, 1, 1, 777, 0, 1.0), (1, 4, 4, 130, 130, 1, 1.0),
          (2, 6, 3, 517, 2049, 0, 1.0), (1, 4, 2, 700, 1500, 1, 6.0), (1, 4, 2, 64, 4000, 0, 12.0),
          (1, 2, 1, 5, 1, 0, 1.0), (1, 2, 2, 383, 383, 1, 1.0), (1, 2, 1, 300, 257, 0, 1.0),
          (1, 4, 2, 900, 1700, 0, -1.0), (1, 4, 2, 900, 1700, 1, -1.0),
          (2, 16, 4, 1100, 700, 1, 1.0), (1, 48, 8, 700, 1300, 0, 1.0), (2, 16, 4, 1100, 700, 1, 1.0)]
for D, (b, h, hk, sq, sk, causal, amp) in [(D, c) for D in DIMS for c in checks]:
    g = torch.Generator(device="cuda").manual_seed(sq * 7 + sk)
    q = (torch.randn(b, sq, h, D, device="cuda", generator=g) * amp).bfloat16()
    k = (torch.randn(b, sk, hk, D, device="cuda", generator=g)).bfloat16()
    if amp > 6:  # scores that grow along the keys: the max moves up tile after tile
        k = (k.float() * torch.linspace(0.2, 1.5, sk, device="cuda")[None, :, None, None]).bfloat16()
    v = torch.randn(b, sk, hk, D, device="cuda", generator=g).bfloat16()
    if amp < 0:  # V's 128-key blocks of different ranges: every odd block 2^-7 of the others
        f = torch.ones(sk, device="cuda"); f[(torch.arange(sk, device="cuda") // 128) % 2 == 1] = 2.0 ** -7
        v = (v.float() * f[None, :, None, None]).bfloat16(); amp = 1.0
    r = ref(q, k, v, causal)
    line = f"check d{D} b{b} h{h}/{hk} sq{sq} sk{sk} causal{causal} amp{amp}:"
    outs = []
    for name, f in libs:
        ws, n = setup(f, q, k, v, b, h, hk, sq, sk, D)
        o = torch.full_like(q, float("nan")); lse = torch.full((b, h, sq), float("nan"), device="cuda")
        run(f, ws, n, o, lse, b, h, hk, sq, sk, D, causal); torch.cuda.synchronize()
        rel = ((o.float() - r).norm() / r.norm()).item()
        line += f"  {name} rel_l2 {rel:.3e} nan {bool(o.isnan().any())}"
        if outs: line += f" max|dO| {(o.float() - outs[0]).abs().max().item():.2e}"
        outs.append(o.float())
    print(line, flush=True)

flush = L2Flush()
import cudnn_peer as cp
CU = None
if os.environ.get("CUDNN", "1") == "1":
    fe, hd, note = cp.cudnn_handle(os.getcwd()); print(note, flush=True)
    if fe is not None: CU = (fe, hd)
rounds = int(__import__("os").environ.get("ROUNDS", "3"))
SH = os.environ.get("SHAPES", "2048:1:8:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 8192:0:2:16:16")
for D, seq, causal, b, h, hk in [(D,) + tuple(int(x) for x in t.split(":")) for D in DIMS for t in SH.split()]:
    g = torch.Generator(device="cuda").manual_seed(seq * 1000 + 128 + causal)
    q = torch.randn(b, seq, h, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k, v = (torch.randn(b, seq, hk, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    o = torch.empty_like(q); lse = torch.empty(b, h, seq, device="cuda")
    flops = 4.0 * b * h * seq * seq * D / (2 if causal else 1)
    st = [setup(f, q, k, v, b, h, hk, seq, seq, D) for _, f in libs]
    res = {name: [] for name, _ in libs}
    crun = None
    if BF16 and os.environ.get("SDPA", "0") == "1":  # cuDNN's bf16 through PyTorch, as the bench
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        def crun(qt=qt, kt=kt, vt=vt, causal=causal, gqa=hk != h):
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal),
                                                      **({"enable_gqa": True} if gqa else {}))
        res["cudnn8"] = []
    elif CU is not None and hk == h:
        (q8, k8, v8), ds = cp.fp8_inputs(q, k, v)
        crun, _, _ = cp.fp8_sdpa(CU[0], CU[1], q8, k8, v8, ds, float(v.abs().max()), causal, D ** -0.5)
        res["cudnn8"] = []
    for r in range(rounds):
        order = list(range(len(libs)))
        order = order[r % len(order):] + order[:r % len(order)]
        if r % 2: order.reverse()
        for i in order:
            name, f = libs[i]; ws, n = st[i]
            med, _ = timings(lambda: run(f, ws, n, o, lse, b, h, hk, seq, seq, D, causal), flush, 10, 3)
            res[name].append(flops / med / 1e9)
        if crun is not None:
            med, _ = timings(crun, flush, 10, 3)
            res["cudnn8"].append(flops / med / 1e9)
    base = statistics.median(res[libs[0][0]])
    print(f"{'bf16' if BF16 else 'fp8'} dim {D} seq {seq} batch {b} heads {h}/{hk} causal {causal}:", flush=True)
    for name in res:
        m = statistics.median(res[name])
        print(f"  {name:>8}: {' '.join(f'{x:.0f}' for x in res[name])}  median {m:.1f} TFLOP/s  x{m / base:.3f}", flush=True)
