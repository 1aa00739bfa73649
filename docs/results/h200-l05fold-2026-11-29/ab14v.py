#!/usr/bin/env python3
"""Lesson 05's version 14 and variants from several libraries (NAME=LIB, the first the tree's):
first each one's output (NaN-poisoned first) against a float32 reference and against the first
library's on awkward shapes, then rounds in turns: each library's kernel alone (K and V converted
once), end to end (the pass, then the kernel), and version 5 (bf16) from the first library."""
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
    f = lib.l05_overlap_d128; f.restype = I; f.argtypes = [P] * 5 + [I] * 6 + [F, P]; d["v5"] = f
    libs[name] = d
names = list(libs); stream = torch.cuda.current_stream().cuda_stream
D = 128
def ref(q, k, v, causal):
    b, sq, h, d = q.shape; sk, hk = k.shape[1], k.shape[2]
    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))
    kf = kf.repeat_interleave(h // hk, 1); vf = vf.repeat_interleave(h // hk, 1)
    s = qf @ kf.transpose(-1, -2) * d ** -0.5
    if causal:
        r = torch.arange(sq, device="cuda")[:, None]; c = torch.arange(sk, device="cuda")[None, :]
        s = s.masked_fill(c > r + sk - sq, float("-inf"))
    return (torch.softmax(s, -1).nan_to_num(0.0) @ vf).transpose(1, 2)
checks = [(1, 2, 1, 1, 1, 0, 1.0), (2, 8, 2, 333, 1000, 1, 1.0), (1, 4, 1, 1, 777, 0, 1.0), (1, 4, 4, 130, 130, 1, 1.0),
          (2, 6, 3, 517, 2049, 0, 1.0), (1, 2, 1, 5, 1, 0, 1.0), (1, 2, 2, 383, 383, 1, 1.0), (1, 6, 6, 4100, 129, 1, 1.0),
          (2, 16, 4, 1100, 700, 1, 1.0), (3, 140, 140, 20, 20, 0, 1.0), (1, 8, 2, 2900, 2900, 0, 1.0), (2, 8, 4, 3000, 3000, 1, 1.0),
          (1, 4, 4, 1000, 1000, 1, 300.0), (1, 4, 4, 1000, 1000, 0, 0.001), (1, 4, 4, 4096, 4096, 1, 1.0)]
bad = 0
for (b, h, hk, sq, sk, causal, vs) in checks:
    g = torch.Generator(device="cuda").manual_seed(sq * 7 + sk)
    q, k, v = (torch.randn(b, s_, x, D, device="cuda", generator=g).bfloat16() for s_, x in ((sq, h), (sk, hk), (sk, hk)))
    # V of varying magnitude along the keys (tiles of very different scales)
    v = (v.float() * vs * torch.logspace(-6, 2, sk, device="cuda")[None, :, None, None]).bfloat16() if vs != 1.0 else v
    r = ref(q, k, v, causal); line = f"check b{b} h{h}/{hk} sq{sq} sk{sk} causal{causal} vscale{vs}:"; outs = {}
    for n in names:
        d = libs[n]; wsb = d["workspace_bytes"](b, h, hk, sq, sk, D); ws = torch.empty(max(wsb, 1), device="cuda", dtype=torch.uint8)
        o = torch.full_like(q, float("nan")); lse = torch.full((b, h, sq), float("nan"), device="cuda")
        rc = d["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, h, hk, sq, sk, D, ws.data_ptr(), wsb, stream)
        rc = rc or d["attention"](q.data_ptr(), ws.data_ptr(), wsb, o.data_ptr(), lse.data_ptr(), b, h, hk, sq, sk, D, causal, D ** -0.5, stream)
        torch.cuda.synchronize(); outs[n] = o
        rel = ((o.float() - r).norm() / r.norm().clamp_min(1e-30)).item(); nan = bool(o.isnan().any())
        rel0 = ((o.float() - outs[names[0]].float()).norm() / outs[names[0]].float().norm().clamp_min(1e-30)).item()
        ok = rc == 0 and not nan and rel < 1e-1
        bad += not ok; line += f"  {n} rc {rc} rel {rel:.2e} vs-{names[0]} {rel0:.1e} nan {nan}{'' if ok else ' FAIL'}"
    print(line, flush=True)
print(f"checks: {bad} failing", flush=True)
flush = L2Flush(busy_us=20.0)
SH = os.environ.get("SHAPES", "1024:1:16 2048:1:8 4096:1:4 8192:1:2 16384:1:1 2048:0:8 4096:0:4 8192:0:2 16384:0:1")
H = 16
for seq, causal, b in [tuple(int(x) for x in t.split(":")) for t in SH.split()]:
    g = torch.Generator(device="cuda").manual_seed(seq + causal)
    q, k, v = (torch.randn(b, seq, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    flops = 4.0 * b * H * seq * seq * D / (2 if causal else 1)
    fns = {}
    o5 = torch.empty_like(q); l5 = torch.empty(b, H, seq, device="cuda")
    d0 = libs[names[0]]
    fns["v5"] = lambda: d0["v5"](q.data_ptr(), k.data_ptr(), v.data_ptr(), o5.data_ptr(), l5.data_ptr(), b, H, H, seq, seq, causal, D ** -0.5, stream)
    for n in names:
        d = libs[n]; wsb = d["workspace_bytes"](b, H, H, seq, seq, D); ws = torch.empty(wsb, device="cuda", dtype=torch.uint8)
        assert d["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, H, H, seq, seq, D, ws.data_ptr(), wsb, stream) == 0
        o = torch.empty_like(q); lse = torch.empty(b, H, seq, device="cuda")
        def kern(d=d, ws=ws, o=o, lse=lse, wsb=wsb): d["attention"](q.data_ptr(), ws.data_ptr(), wsb, o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, stream)
        def e2e(d=d, ws=ws, o=o, lse=lse, wsb=wsb):
            d["quantize"](q.data_ptr(), k.data_ptr(), v.data_ptr(), b, H, H, seq, seq, D, ws.data_ptr(), wsb, stream)
            d["attention"](q.data_ptr(), ws.data_ptr(), wsb, o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, stream)
        fns[n + "-kernel"] = kern; fns[n + "-e2e"] = e2e
    res = timings_in_turns(fns, flush, int(os.environ.get("ITERS", "24")), 3, int(os.environ.get("ROUNDS", "8")))
    t5 = res["v5"][0]; k0 = res[names[0] + "-kernel"][0]
    line = f"seq {seq} causal {causal} batch {b}: v5 {flops / t5 / 1e9:.1f}"
    for n in names:
        tk, te = res[n + "-kernel"][0], res[n + "-e2e"][0]
        line += f" | {n} kernel {flops / tk / 1e9:.1f} ({t5 / tk:.3f}x v5, {k0 / tk:.3f}x {names[0]}) e2e {te * 1e3:.1f} us ({t5 / te:.3f}x v5)"
    print(line, flush=True)
