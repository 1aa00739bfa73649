#!/usr/bin/env python3
"""Lesson 05's version 5 (l05_overlap_d64/d128) from several libraries (NAME=PATH, the first the
tree's): first each library's output against the first's and a float32 reference on awkward shapes
(NaN-poisoned), then rounds in turns with SDPA cuDNN beside them (L2 flushed, 20 us sleep kernel)."""
import ctypes, os, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings_in_turns
I, P, Fl = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
libs = {}
for a in sys.argv[1:]:
    name, path = a.split("=", 1); prefix = "l05_overlap"
    if "@" in path: path, prefix = path.split("@", 1)
    lib = ctypes.CDLL(path); d = {}
    for dim in (64, 128):
        f = getattr(lib, f"{prefix}_d{dim}"); f.restype = I; f.argtypes = [P] * 5 + [I] * 6 + [Fl, P]; d[dim] = f
    libs[name] = d
names = list(libs); stream = torch.cuda.current_stream().cuda_stream

def ref(q, k, v, causal):
    b, sq, h, d = q.shape; sk, hk = k.shape[1], k.shape[2]
    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))
    kf = kf.repeat_interleave(h // hk, 1); vf = vf.repeat_interleave(h // hk, 1)
    s = qf @ kf.transpose(-1, -2) * d ** -0.5
    if causal:
        r = torch.arange(sq, device="cuda")[:, None]; c = torch.arange(sk, device="cuda")[None, :]
        s = s.masked_fill(c > r + sk - sq, float("-inf"))
    return (torch.softmax(s, -1).nan_to_num(0.0) @ vf).transpose(1, 2)
bad = 0
checks = [(1, 2, 1, 1, 1, 0), (2, 8, 2, 333, 1000, 1), (1, 4, 1, 1, 777, 0), (1, 4, 4, 130, 130, 1),
          (2, 6, 3, 517, 2049, 0), (1, 2, 1, 5, 1, 0), (1, 2, 2, 383, 383, 1), (1, 6, 6, 4100, 129, 1),
          (2, 16, 4, 1100, 700, 1), (3, 140, 140, 20, 20, 0), (1, 8, 2, 2900, 2900, 0), (2, 8, 4, 3000, 3000, 1),
          (1, 4, 1, 1, 100, 0), (1, 4, 4, 640, 1152, 1), (1, 4, 4, 1000, 1000, 1)]
for D in (64, 128):
    for (b, h, hk, sq, sk, causal) in checks:
        g = torch.Generator(device="cuda").manual_seed(sq * 7 + sk + D)
        q, k, v = (torch.randn(b, s_, x, D, device="cuda", generator=g).bfloat16() for s_, x in ((sq, h), (sk, hk), (sk, hk)))
        r = ref(q, k, v, causal); line = f"check d{D} b{b} h{h}/{hk} sq{sq} sk{sk} causal{causal}:"; outs = {}
        for n in names:
            o = torch.full_like(q, float("nan")); lse = torch.full((b, h, sq), float("nan"), device="cuda")
            rc = libs[n][D](q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, h, hk, sq, sk, causal, D ** -0.5, stream)
            torch.cuda.synchronize(); outs[n] = (o, lse)
            rel = ((o.float() - r).norm() / r.norm()).item(); nan = bool(o.isnan().any())
            same = torch.equal(o, outs[names[0]][0]) and torch.equal(lse.nan_to_num(), outs[names[0]][1].nan_to_num())
            ok = rc == 0 and not nan and rel < 1.5e-2 and same
            bad += not ok; line += f"  {n} rc {rc} rel {rel:.2e} nan {nan} same {same}{'' if ok else ' FAIL'}"
        print(line, flush=True)
print(f"checks: {bad} failing", flush=True)
flush = L2Flush(busy_us=20.0)
SH = os.environ.get("SHAPES", "2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 8192:1:2:128 16384:1:1:128")
for seq, causal, b, D in [tuple(int(x) for x in t.split(":")) for t in SH.split()]:
    H = 16 if D == 128 else 32
    g = torch.Generator(device="cuda").manual_seed(seq + causal)
    q, k, v = (torch.randn(b, seq, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    flops = 4.0 * b * H * seq * seq * D / (2 if causal else 1); fns = {}; outs = {}
    for n in names:
        o = torch.empty_like(q); lse = torch.empty(b, H, seq, device="cuda"); outs[n] = o
        def run(d=libs[n], o=o, lse=lse): assert d[D](q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, causal, D ** -0.5, stream) == 0
        fns[n] = run
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    def cud():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal))
    fns["cudnn"] = cud
    res = timings_in_turns(fns, flush, int(os.environ.get("ITERS", "15")), 3, int(os.environ.get("ROUNDS", "5")))
    tf = {n: flops / r[0] / 1e9 for n, r in res.items()}
    print(f"d{D} seq {seq} causal {causal} batch {b}: " + "  ".join(f"{n} {t:.1f}" for n, t in tf.items()) + "  " +
          "  ".join(f"{n}/{names[0]} {tf[n] / tf[names[0]]:.3f}" for n in names[1:]) + "  " +
          "  ".join(f"{n}/cudnn {tf[n] / tf['cudnn']:.3f}" for n in names) +
          "  same " + str(all(torch.equal(outs[n], outs[names[0]]) for n in names)), flush=True)
