#!/usr/bin/env python3
"""Lesson 05's version 5 (bf16, dims 64 and 128) and version 14 (FP8) from two libraries taking
turns: tree=the tree's files, nl=the same files whose producer loads only the first two KV tiles
(every later tile's full barrier completed by a plain arrival: the consumers run on stale tiles,
output wrong, the time what the kernel takes with no K or V to move). ab_nl.py tree=A.so nl=B.so"""
import ctypes, os, sys, torch
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings_in_turns
I, P, F, S = ctypes.c_int, ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t
libs = {}
for a in sys.argv[1:]:
    name, path = a.split("=", 1); lib = ctypes.CDLL(path); d = {}
    for dim in (64, 128):
        f = getattr(lib, f"l05_overlap_d{dim}"); f.restype = I; f.argtypes = [P] * 5 + [I] * 6 + [F, P]; d[dim] = f
    for part, res, args in (("workspace_bytes", S, [I] * 6), ("quantize", I, [P] * 3 + [I] * 6 + [P, S, P]),
                            ("attention", I, [P, P, S, P, P] + [I] * 7 + [F, P])):
        f = getattr(lib, "l05_fp8h_" + part); f.restype = res; f.argtypes = args; d[part] = f
    libs[name] = d
stream = torch.cuda.current_stream().cuda_stream
flush = L2Flush(busy_us=20.0)
SH = os.environ.get("SHAPES", "2048:0:8:128 4096:0:4:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 16384:1:1:128 4096:0:4:64 4096:1:4:64")
for seq, causal, b, D in [tuple(int(x) for x in t.split(":")) for t in SH.split()]:
    H = 16 if D == 128 else 32
    g = torch.Generator(device="cuda").manual_seed(seq + causal)
    q, k, v = (torch.randn(b, seq, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    flops = 4.0 * b * H * seq * seq * D / (2 if causal else 1)
    fns = {}
    for name, d in libs.items():
        o = torch.empty_like(q); lse = torch.empty(b, H, seq, device="cuda")
        def v5(d=d, o=o, lse=lse): assert d[D](q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, causal, D ** -0.5, stream) == 0
        fns[f"v5-{name}"] = v5
        if D == 128:
            n = d["workspace_bytes"](b, H, H, seq, seq, D); ws = torch.empty(n, device="cuda", dtype=torch.uint8)
            assert d["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, H, H, seq, seq, D, ws.data_ptr(), n, stream) == 0
            o8 = torch.empty_like(q)
            def v14(d=d, ws=ws, o8=o8, n=n): assert d["attention"](q.data_ptr(), ws.data_ptr(), n, o8.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, stream) == 0
            fns[f"v14-{name}"] = v14
    res = timings_in_turns(fns, flush, int(os.environ.get("ITERS", "12")), 3, int(os.environ.get("ROUNDS", "4")))
    tf = {n: flops / r[0] / 1e9 for n, r in res.items()}
    line = f"d{D} seq {seq} causal {causal} batch {b} heads {H}: " + "  ".join(f"{n} {t:.1f}" for n, t in tf.items())
    for ver in ("v5", "v14"):
        if f"{ver}-nl" in tf: line += f"  {ver} nl/tree {tf[ver + '-nl'] / tf[ver + '-tree']:.3f}"
    print(line, flush=True)
