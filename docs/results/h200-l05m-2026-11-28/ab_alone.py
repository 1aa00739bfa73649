#!/usr/bin/env python3
"""Version 12's kernel alone from several libraries (NAME=PATH, the first also gives version 11's),
rounds in turns; outputs compared bit for bit with the first library's version 12 (NOCHECK=name
skips one: a timing-only variant)."""
import ctypes, os, statistics, sys, torch
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings
I, P, F, S = ctypes.c_int, ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t
libs = []
for a in sys.argv[1:]:
    name, path = a.split("=", 1); lib = ctypes.CDLL(path); f = {}
    for pre in ("l05_fp8p", "l05_fp8q"):
        g = getattr(lib, pre + "_workspace_bytes"); g.restype = S; g.argtypes = [I] * 6; f[pre + "ws"] = g
        g = getattr(lib, pre + "_quantize"); g.restype = I; g.argtypes = [P] * 3 + [I] * 6 + [P, S, P]; f[pre + "q"] = g
        g = getattr(lib, pre + "_attention"); g.restype = I
        g.argtypes = ([P] if pre == "l05_fp8q" else []) + [P, S, P, P] + [I] * 7 + [F, P]; f[pre + "a"] = g
    libs.append((name, f))
skip = set(os.environ.get("NOCHECK", "").split(","))
stream = torch.cuda.current_stream().cuda_stream; flush = L2Flush(); D = 128
def outputs(b, h, hk, sq, sk, causal, amp):
    g = torch.Generator(device="cuda").manual_seed(sq * 7 + sk)
    q = (torch.randn(b, sq, h, D, device="cuda", generator=g) * amp).bfloat16()
    k, v = (torch.randn(b, sk, hk, D, device="cuda", generator=g).bfloat16() for _ in range(2))
    res = {}
    for name, f in libs:
        n = f["l05_fp8qws"](b, h, hk, sq, sk, D); ws = torch.full((n,), 255, device="cuda", dtype=torch.uint8)
        assert f["l05_fp8qq"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, h, hk, sq, sk, D, ws.data_ptr(), n, stream) == 0
        o = torch.full_like(q, float("nan")); lse = torch.full((b, h, sq), float("nan"), device="cuda")
        assert f["l05_fp8qa"](q.data_ptr(), ws.data_ptr(), n, o.data_ptr(), lse.data_ptr(), b, h, hk, sq, sk, D, causal, D ** -0.5, stream) == 0
        torch.cuda.synchronize(); res[name] = (o, lse)
    return res
for c in [(1, 2, 1, 1, 1, 0, 1.0), (2, 8, 2, 333, 1000, 1, 1.0), (1, 6, 6, 4100, 129, 1, 1.0), (1, 4, 2, 64, 4000, 0, 12.0),
          (3, 140, 140, 20, 20, 0, 1.0), (2, 16, 4, 1100, 700, 1, 300.0), (1, 48, 8, 700, 1300, 0, 1e-3),
          (2, 6, 3, 517, 2049, 1, 1.0), (1, 2, 2, 383, 383, 1, 1.0), (4, 16, 16, 2048, 2048, 1, 1.0)]:
    r = outputs(*c); o0, l0 = r[libs[0][0]]
    line = f"check b{c[0]} h{c[1]}/{c[2]} sq{c[3]} sk{c[4]} causal{c[5]} amp{c[6]}: base nan {bool(o0.isnan().any())}"
    for name in r:
        if name == libs[0][0] or name in skip: continue
        o, l = r[name]
        line += f"; {name} {'bitwise' if torch.equal(o, o0) and torch.equal(l.nan_to_num(0), l0.nan_to_num(0)) else 'DIFF'}"
    print(line, flush=True)
SH = os.environ.get("SHAPES", "2048:0:8:16:16 4096:0:4:16:16 8192:0:2:16:16 4096:1:4:16:16 16384:1:1:16:16")
for seq, causal, b, h, hk in [tuple(int(x) for x in t.split(":")) for t in SH.split()]:
    g = torch.Generator(device="cuda").manual_seed(seq + causal)
    q = torch.randn(b, seq, h, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k, v = (torch.randn(b, seq, hk, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    flops = 4.0 * b * h * seq * seq * D / (2 if causal else 1)
    runs, outs = [], {}
    for name, f in libs:
        for pre in (("l05_fp8p",) if name == libs[0][0] else ()) + ("l05_fp8q",):
            n = f[pre + "ws"](b, h, hk, seq, seq, D); ws = torch.empty(n, device="cuda", dtype=torch.uint8)
            assert f[pre + "q"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, h, hk, seq, seq, D, ws.data_ptr(), n, stream) == 0
            o = torch.full_like(q, float("nan")); lse = torch.empty(b, h, seq, device="cuda")
            args = ([q.data_ptr()] if pre == "l05_fp8q" else []) + [ws.data_ptr(), n, o.data_ptr(), lse.data_ptr(), b, h, hk, seq, seq, D, causal, D ** -0.5, stream]
            def run(fa=f[pre + "a"], args=args): assert fa(*args) == 0
            run(); torch.cuda.synchronize()
            label = ("v11" if pre == "l05_fp8p" else "v12-" + name)
            outs[label] = o.clone(); runs.append((label, run, ws, o))
    ref = outs["v12-" + libs[0][0]]
    same = {l: ("skip" if l[4:] in skip else ("bitwise" if torch.equal(outs[l], ref) else "DIFF %.2e" % (outs[l].float() - ref.float()).abs().max().item())) for l in outs if l.startswith("v12")}
    res = {l: [] for l, *_ in runs}
    for r in range(int(os.environ.get("ROUNDS", "5"))):
        order = list(range(len(runs))); order = order[r % len(order):] + order[:r % len(order)]
        if r % 2: order.reverse()
        for i in order:
            l, run, *_ = runs[i]
            med, _ = timings(run, flush, 10, 3); res[l].append(flops / med / 1e9)
    base = statistics.median(res["v11"])
    print(f"seq {seq} causal {causal} batch {b} heads {h}/{hk} (kernel alone, TFLOP/s; vs v11):", flush=True)
    for l in res:
        m = statistics.median(res[l])
        print(f"  {l:>14}: {' '.join(f'{x:.0f}' for x in res[l])}  median {m:.1f}  x{m / base:.3f}  {same.get(l, '')}", flush=True)
