#!/usr/bin/env python3
"""Version 13's kernel alone from several libraries (NAME=PATH; the first is the tree's), rounds in
turns; each output compared with the first library's (max |difference|)."""
import ctypes, os, statistics, sys, torch
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings
I, P, F, S = ctypes.c_int, ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t
libs = []
for a in sys.argv[1:]:
    name, path = a.split("=", 1); lib = ctypes.CDLL(path); d = {}
    for part, res, args in (("workspace_bytes", S, [I] * 6), ("quantize", I, [P] * 3 + [I] * 6 + [P, S, P]),
                            ("attention", I, [P, P, S, P, P] + [I] * 7 + [F, P])):
        f = getattr(lib, "l05_fp8x_" + part); f.restype = res; f.argtypes = args; d[part] = f
    libs.append((name, d))
stream = torch.cuda.current_stream().cuda_stream; flush = L2Flush(); D = 128

def ref(q, k, v, causal):
    b, sq, h, d = q.shape; sk, hk = k.shape[1], k.shape[2]
    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))
    kf = kf.repeat_interleave(h // hk, 1); vf = vf.repeat_interleave(h // hk, 1)
    s = qf @ kf.transpose(-1, -2) * d ** -0.5
    if causal:
        r = torch.arange(sq, device="cuda")[:, None]; c = torch.arange(sk, device="cuda")[None, :]
        s = s.masked_fill(c > r + sk - sq, float("-inf"))
    return (torch.softmax(s, -1).nan_to_num(0.0) @ vf).transpose(1, 2)
checks = [(1, 2, 1, 1, 1, 0, 1.0), (2, 8, 2, 333, 1000, 1, 1.0), (1, 4, 1, 1, 777, 0, 1.0),
          (1, 4, 4, 130, 130, 1, 1.0), (2, 6, 3, 517, 2049, 0, 1.0), (1, 4, 2, 64, 4000, 0, 12.0),
          (1, 2, 1, 5, 1, 0, 1.0), (1, 2, 2, 383, 383, 1, 1.0), (1, 6, 6, 4100, 129, 1, 1.0),
          (2, 16, 4, 1100, 700, 1, 300.0), (1, 48, 8, 700, 1300, 0, 1e-3), (3, 140, 140, 20, 20, 0, 1.0),
          (1, 4, 4, 1000, 1000, 1, 30.0), (2, 8, 8, 4096, 4096, 1, 1.0), (1, 140, 140, 200, 130, 1, 1.0),
          (1, 8, 2, 2900, 2900, 0, 1.0), (1, 4, 4, 256, 256, 1, 1.0), (1, 4, 4, 640, 1152, 1, 1.0),
          (2, 8, 4, 3000, 3000, 1, 1.0), (1, 4, 1, 1, 100, 0, 1.0)]
for (b, h, hk, sq, sk, causal, amp) in (checks if os.environ.get("CHECKS", "1") == "1" else []):
    g = torch.Generator(device="cuda").manual_seed(sq * 7 + sk)
    q = (torch.randn(b, sq, h, D, device="cuda", generator=g) * amp).bfloat16()
    k, v = (torch.randn(b, sk, hk, D, device="cuda", generator=g).bfloat16() for _ in range(2))
    r = ref(q, k, v, causal); line = f"check b{b} h{h}/{hk} sq{sq} sk{sk} causal{causal} amp{amp}:"; rel = {}
    for name, d in libs:
        n = d["workspace_bytes"](b, h, hk, sq, sk, D); ws = torch.full((n,), 255, device="cuda", dtype=torch.uint8)
        assert d["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, h, hk, sq, sk, D, ws.data_ptr(), n, stream) == 0
        o = torch.full_like(q, float("nan")); lse = torch.full((b, h, sq), float("nan"), device="cuda")
        assert d["attention"](q.data_ptr(), ws.data_ptr(), n, o.data_ptr(), lse.data_ptr(), b, h, hk, sq, sk, D, causal, D ** -0.5, stream) == 0
        torch.cuda.synchronize()
        rel[name] = ((o.float() - r).norm() / r.norm()).item()
        line += f" {name} {rel[name]:.3e} nan {bool(o.isnan().any() or lse.isnan().any())}"
    print(line + "  " + " ".join(f"{n}/{libs[0][0]} {rel[n] / max(rel[libs[0][0]], 1e-30):.3f}" for n, _ in libs[1:]), flush=True)
SH = os.environ.get("SHAPES", "2048:0:8:16:16 4096:0:4:16:16 8192:0:2:16:16 16384:0:1:16:16 4096:1:4:16:16 16384:1:1:16:16")
for seq, causal, b, h, hk in [tuple(int(x) for x in t.split(":")) for t in SH.split()]:
    g = torch.Generator(device="cuda").manual_seed(seq + causal)
    q, k, v = (torch.randn(b, seq, x, D, device="cuda", dtype=torch.bfloat16, generator=g) for x in (h, hk, hk))
    flops = 4.0 * b * h * seq * seq * D / (2 if causal else 1); runs, outs = [], {}
    for name, d in libs:
        n = d["workspace_bytes"](b, h, hk, seq, seq, D); ws = torch.empty(n, device="cuda", dtype=torch.uint8)
        assert d["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, h, hk, seq, seq, D, ws.data_ptr(), n, stream) == 0
        o = torch.full_like(q, float("nan")); lse = torch.empty(b, h, seq, device="cuda")
        def run(d=d, ws=ws, o=o, lse=lse, n=n): assert d["attention"](q.data_ptr(), ws.data_ptr(), n, o.data_ptr(), lse.data_ptr(), b, h, hk, seq, seq, D, causal, D ** -0.5, stream) == 0
        run(); torch.cuda.synchronize(); outs[name] = o.clone(); runs.append((name, run, ws, o))
    ref = outs[libs[0][0]]
    res = {l: [] for l, *_ in runs}
    for r in range(int(os.environ.get("ROUNDS", "5"))):
        order = runs[r % len(runs):] + runs[:r % len(runs)]
        for l, run, *_ in (order if r % 2 == 0 else order[::-1]):
            res[l].append(flops / timings(run, flush, 10, 3)[0] / 1e9)
    base = statistics.median(res[libs[0][0]])
    print(f"seq {seq} causal {causal} batch {b} heads {h}/{hk} (version 13's kernel alone, TFLOP/s):", flush=True)
    for l in res:
        m = statistics.median(res[l]); diff = (outs[l].float() - ref.float()).abs().max().item()
        print(f"  {l:>8}: {' '.join(f'{x:.0f}' for x in res[l])}  median {m:.1f}  x{m / base:.3f}  max|diff| {diff:.2e} nan {bool(outs[l].isnan().any())}", flush=True)
