#!/usr/bin/env python3
"""Version 13 against cuDNN's FP8 and bf16 attention in rounds taking turns (the bench times each
once): version 5, version 13 end to end and its kernel alone, version 12's kernel alone, cuDNN's FP8
on the same e4m3 values (bench/cudnn_peer.py), SDPA's cuDNN bf16; the papers' shapes at dim 128."""
import ctypes, os, statistics, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings
from cudnn_peer import cudnn_handle, fp8_inputs, fp8_sdpa
lib = ctypes.CDLL(sys.argv[1])
I, P, F_, S = ctypes.c_int, ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t
def fn(name, res, args):
    f = getattr(lib, name); f.restype = res; f.argtypes = args; return f
v5 = fn("l05_overlap_d128", I, [P] * 5 + [I] * 6 + [F_, P])
E = {pre: dict(ws=fn(pre + "_workspace_bytes", S, [I] * 6), quant=fn(pre + "_quantize", I, [P] * 3 + [I] * 6 + [P, S, P]),
               att=fn(pre + "_attention", I, [P, P, S, P, P] + [I] * 7 + [F_, P]),
               fwd=fn(pre + "_forward", I, [P] * 5 + [I] * 7 + [F_, P, S, P])) for pre in ("l05_fp8q", "l05_fp8x")}
fe, handle, note = cudnn_handle(os.getcwd()); print(torch.cuda.get_device_name(), note, flush=True)
stream = torch.cuda.current_stream().cuda_stream; flush = L2Flush(); D = 128; H = 16
SH = os.environ.get("SHAPES", "4096:0 8192:0 16384:0 4096:1 8192:1 16384:1")
for seq, causal in [tuple(int(x) for x in t.split(":")) for t in SH.split()]:
    b = 16384 // seq
    g = torch.Generator(device="cuda").manual_seed(seq + causal)
    q, k, v = (torch.randn(b, seq, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    o = torch.empty_like(q); lse = torch.empty(b, H, seq, device="cuda")
    flops = 4.0 * b * H * seq * seq * D / (2 if causal else 1)
    ws = {pre: torch.empty(E[pre]["ws"](b, H, H, seq, seq, D), device="cuda", dtype=torch.uint8) for pre in E}
    for pre in E:
        assert E[pre]["quant"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, H, H, seq, seq, D, ws[pre].data_ptr(), ws[pre].numel(), stream) == 0
    (q8, k8, v8), desc = fp8_inputs(q, k, v)
    cud8, _, _ = fp8_sdpa(fe, handle, q8, k8, v8, desc, v.abs().max().item(), causal, D ** -0.5)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    def cud16():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal))
    def run5(): assert v5(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, causal, D ** -0.5, stream) == 0
    def alone(pre): return lambda: E[pre]["att"](q.data_ptr(), ws[pre].data_ptr(), ws[pre].numel(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, stream)
    def e2e(pre): return lambda: E[pre]["fwd"](q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, ws[pre].data_ptr(), ws[pre].numel(), stream)
    impls = [("v5", run5), ("v13-e2e", e2e("l05_fp8x")), ("v13-alone", alone("l05_fp8x")), ("v12-alone", alone("l05_fp8q")),
             ("cudnn-fp8", cud8), ("cudnn-bf16", cud16)]
    res = {n: [] for n, _ in impls}
    for r in range(int(os.environ.get("ROUNDS", "5"))):
        order = impls[r % len(impls):] + impls[:r % len(impls)]
        for n, f in (order if r % 2 == 0 else order[::-1]):
            res[n].append(flops / timings(f, flush, 10, 3)[0] / 1e9)
    m = {n: statistics.median(x) for n, x in res.items()}
    print(f"seq {seq} causal {causal} batch {b} heads {H}:", flush=True)
    for n, _ in impls:
        print(f"  {n:>10}: {' '.join(f'{x:.0f}' for x in res[n])}  median {m[n]:.1f} TFLOP/s", flush=True)
    print(f"  v13 alone / cuDNN FP8 x{m['v13-alone'] / m['cudnn-fp8']:.3f}; v13 alone / v5 x{m['v13-alone'] / m['v5']:.3f}; "
          f"v13 e2e / v5 x{m['v13-e2e'] / m['v5']:.3f}; v13 / v12 alone x{m['v13-alone'] / m['v12-alone']:.3f}; "
          f"v5 / cuDNN bf16 x{m['v5'] / m['cudnn-bf16']:.3f}; cuDNN FP8 / bf16 x{m['cudnn-fp8'] / m['cudnn-bf16']:.3f}", flush=True)
