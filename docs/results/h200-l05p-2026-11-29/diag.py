#!/usr/bin/env python3
"""Where the pass beside the kernel loses: the tree's pass (version 12's, one block a tile), the
persistent pass alone in 22-132 blocks, the kernel alone (no stamps) from the tree and the variant,
and both forwards; dim 128, TFLOP/s of the attention or GB/s of the pass (3 bytes a K or V value)."""
import ctypes, statistics, sys, torch
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings_in_turns
I, P, F, S = ctypes.c_int, ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t
def ents(path):
    lib = ctypes.CDLL(path); d = {}
    for part, res, args in (("workspace_bytes", S, [I] * 6), ("quantize", I, [P] * 3 + [I] * 6 + [P, S, P]),
                            ("attention", I, [P, P, S, P, P] + [I] * 7 + [F, P]),
                            ("forward", I, [P] * 5 + [I] * 7 + [F, P, S, P])):
        f = getattr(lib, "l05_fp8x_" + part); f.restype = res; f.argtypes = args; d[part] = f
    if hasattr(lib, "l05_fp8x_pass_only"):
        f = lib.l05_fp8x_pass_only; f.restype = I; f.argtypes = [P, P, I, I, I, I, P, P]; d["pass"] = f
    return d
tree, var = ents(sys.argv[1]), ents(sys.argv[2])
stream = torch.cuda.current_stream().cuda_stream; flush = L2Flush(); D = 128; H = 16
for seq, causal in ((4096, 1), (16384, 0)):
    b = 16384 // seq
    q, k, v = (torch.randn(b, seq, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q); lse = torch.empty(b, H, seq, device="cuda")
    flops = 4.0 * b * H * seq * seq * D / (2 if causal else 1); moved = 3.0 * 2 * b * seq * H * D
    wt = torch.empty(tree["workspace_bytes"](b, H, H, seq, seq, D), device="cuda", dtype=torch.uint8)
    wv = torch.empty(var["workspace_bytes"](b, H, H, seq, seq, D), device="cuda", dtype=torch.uint8)
    for d, w in ((tree, wt), (var, wv)):
        assert d["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, H, H, seq, seq, D, w.data_ptr(), w.numel(), stream) == 0
    fns = {"tree pass": (lambda: tree["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, H, H, seq, seq, D, wt.data_ptr(), wt.numel(), stream), moved, 1)}
    for n in (22, 33, 44, 66, 132):
        fns[f"pass in {n}"] = ((lambda n=n: var["pass"](k.data_ptr(), v.data_ptr(), b, H, seq, n, wv.data_ptr(), stream)), moved, 1)
    fns["tree kernel alone"] = (lambda: tree["attention"](q.data_ptr(), wt.data_ptr(), wt.numel(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, stream), flops, 0)
    fns["variant kernel alone"] = (lambda: var["attention"](q.data_ptr(), wv.data_ptr(), wv.numel(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, stream), flops, 0)
    fns["tree forward"] = (lambda: tree["forward"](q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, wt.data_ptr(), wt.numel(), stream), flops, 0)
    fns["variant forward"] = (lambda: var["forward"](q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, wv.data_ptr(), wv.numel(), stream), flops, 0)
    t = timings_in_turns({n: f for n, (f, _, _) in fns.items()}, flush, 10, 2, 5)
    print(f"seq {seq} causal {causal} batch {b} heads {H}:", flush=True)
    for n, (f, amount, is_bytes) in fns.items():
        ms = t[n][0]
        print(f"  {n:>22}: {ms * 1e3:8.1f} us  " + (f"{amount / ms / 1e6:7.0f} GB/s" if is_bytes else f"{amount / ms / 1e9:7.1f} TFLOP/s"), flush=True)
