#!/usr/bin/env python3
"""Lesson 05's version 14 (kernel alone, on K and V converted once) from several libraries taking
turns: r0 the tree's file; r1 no O stored; r2 Q not converted; r3 no mask; r4 neither O nor Q
(timing-only forms, output wrong). ab14r.py NAME=LIB ... (SHAPES "seq:causal:batch")"""
import ctypes, os, sys, torch
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings_in_turns
I, P, F, S = ctypes.c_int, ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t
libs = {}
for a in sys.argv[1:]:
    name, path = a.split("=", 1); lib = ctypes.CDLL(path); d = {}
    for part, res, args in (("workspace_bytes", S, [I] * 6), ("quantize", I, [P] * 3 + [I] * 6 + [P, S, P]),
                            ("attention", I, [P, P, S, P, P] + [I] * 7 + [F, P])):
        f = getattr(lib, "l05_fp8h_" + part); f.restype = res; f.argtypes = args; d[part] = f
    libs[name] = d
stream = torch.cuda.current_stream().cuda_stream
flush = L2Flush(busy_us=20.0)
SH = os.environ.get("SHAPES", "1024:1:16 2048:1:8 4096:1:4 16384:1:1 2048:0:8 4096:0:4 16384:0:1")
D, H = 128, 16
for seq, causal, b in [tuple(int(x) for x in t.split(":")) for t in SH.split()]:
    g = torch.Generator(device="cuda").manual_seed(seq + causal)
    q, k, v = (torch.randn(b, seq, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    flops = 4.0 * b * H * seq * seq * D / (2 if causal else 1)
    fns = {}
    for name, d in libs.items():
        n = d["workspace_bytes"](b, H, H, seq, seq, D); ws = torch.empty(n, device="cuda", dtype=torch.uint8)
        assert d["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, H, H, seq, seq, D, ws.data_ptr(), n, stream) == 0
        o = torch.empty_like(q); lse = torch.empty(b, H, seq, device="cuda")
        def run(d=d, ws=ws, o=o, lse=lse, n=n): assert d["attention"](q.data_ptr(), ws.data_ptr(), n, o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, stream) == 0
        fns[name] = run
    res = timings_in_turns(fns, flush, int(os.environ.get("ITERS", "24")), 3, int(os.environ.get("ROUNDS", "8")))
    base = res["r0"][0]
    print(f"seq {seq} causal {causal} batch {b}: " + "  ".join(f"{n} {r[0]*1e3:.1f} us ({base / r[0]:.3f}x)" for n, r in res.items()), flush=True)
