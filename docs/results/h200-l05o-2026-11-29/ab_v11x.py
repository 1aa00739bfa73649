#!/usr/bin/env python3
"""The kernels alone, rounds in turns: version 5, version 11 (Q converted ahead), version 11 with
half its exponentials on the FMA pipes (version 13's line), versions 12 and 13; the papers' shapes."""
import ctypes, os, statistics, sys, torch
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings
I, P, F, S = ctypes.c_int, ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t
tree, var = ctypes.CDLL(sys.argv[1]), ctypes.CDLL(sys.argv[2])
def fn(lib, name, res, args):
    f = getattr(lib, name); f.restype = res; f.argtypes = args; return f
v5 = fn(tree, "l05_overlap_d128", I, [P] * 5 + [I] * 6 + [F, P])
def entry(lib, pre, q_arg):
    return dict(ws=fn(lib, pre + "_workspace_bytes", S, [I] * 6), quant=fn(lib, pre + "_quantize", I, [P] * 3 + [I] * 6 + [P, S, P]),
                att=fn(lib, pre + "_attention", I, ([P] if q_arg else []) + [P, S, P, P] + [I] * 7 + [F, P]), q=q_arg)
K = {"v11": entry(tree, "l05_fp8p", False), "v11-line": entry(var, "l05_fp8p", False),
     "v12": entry(tree, "l05_fp8q", True), "v13": entry(tree, "l05_fp8x", True)}
stream = torch.cuda.current_stream().cuda_stream; flush = L2Flush(); D = 128; H = 16
print(torch.cuda.get_device_name(), flush=True)
for seq, causal in [tuple(int(x) for x in t.split(":")) for t in os.environ.get("SHAPES", "4096:0 8192:0 16384:0 4096:1 8192:1 16384:1").split()]:
    b = 16384 // seq
    g = torch.Generator(device="cuda").manual_seed(seq + causal)
    q, k, v = (torch.randn(b, seq, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    flops = 4.0 * b * H * seq * seq * D / (2 if causal else 1); outs = {}
    def run5(o=torch.empty_like(q), lse=torch.empty(b, H, seq, device="cuda")):
        assert v5(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, causal, D ** -0.5, stream) == 0
    impls = [("v5", run5)]
    for name, e in K.items():
        n = e["ws"](b, H, H, seq, seq, D); ws = torch.empty(n, device="cuda", dtype=torch.uint8)
        assert e["quant"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, H, H, seq, seq, D, ws.data_ptr(), n, stream) == 0
        o = torch.full_like(q, float("nan")); lse = torch.empty(b, H, seq, device="cuda")
        args = ([q.data_ptr()] if e["q"] else []) + [ws.data_ptr(), n, o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, stream]
        def run(a=e["att"], args=args, ws=ws): assert a(*args) == 0
        run(); torch.cuda.synchronize(); outs[name] = o
        impls.append((name, run))
    res = {n: [] for n, _ in impls}
    for r in range(int(os.environ.get("ROUNDS", "5"))):
        order = impls[r % len(impls):] + impls[:r % len(impls)]
        for n, f in (order if r % 2 == 0 else order[::-1]):
            res[n].append(flops / timings(f, flush, 10, 3)[0] / 1e9)
    m = {n: statistics.median(x) for n, x in res.items()}
    d = (outs["v11-line"].float() - outs["v11"].float()).abs().max().item()
    print(f"seq {seq} causal {causal}: " + "; ".join(f"{n} {m[n]:.1f} (x{m[n] / m['v5']:.3f} v5)" for n, _ in impls)
          + f"; v11-line/v11 x{m['v11-line'] / m['v11']:.3f}; max|v11-line - v11| {d:.2e}, nan {bool(outs['v11-line'].isnan().any())}", flush=True)
