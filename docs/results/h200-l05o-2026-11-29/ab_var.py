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
