#!/usr/bin/env python3
"""Lesson 04 against PyTorch SDPA's flash (FlashAttention-2) and cuDNN backends, same shapes, same run.

The FlashAttention papers' forward benchmark: 16k tokens in total (batch = 16384 / seq), hidden
2048 (heads = 2048 / dim), seq 512 to 16k, dim 64 and 128, causal and not, bf16. FLOPs are
4 * batch * heads * seq^2 * dim, halved for causal (the papers' convention, also used here for the
lesson's kernels, so every column is comparable).

The lesson's kernels are called through build/lib/libattn_lessons.so (ctypes) on the same torch
tensors: [batch, seq, heads, dim] is the lesson's BSHD layout; SDPA gets .transpose(1, 2) views.
Each run is timed alone with CUDA events, the L2 flushed before it; the figure is the median.

    python3 bench/lesson04_peers.py [--lib build/lib/libattn_lessons.so] [--iters 10]
        [--seqs 512,1024,2048,4096,8192,16384] [--dims 64,128] [--versions 3,4,5,6,7] [--csv FILE]
        [--gemm 8192] [--out DIR]

Prints one line per measurement (`l04 impl=... dim=... causal=... seq=... ms=... tflops=...`),
then a table with the best lesson version over each peer. --gemm N also times torch.matmul on an
N x N x N bf16 GEMM (cuBLAS), the tensor-core rate this machine reaches outside attention (0: skip).

With --out DIR (or $PEERS_OUT) every figure is also a row of DIR/peers-lesson04.csv, in the columns
of bench/peer_timing.py (the GEMM: rows = M, cols = N, dim = K); --csv FILE keeps its own short format.
"""
import argparse
import ctypes
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from peer_timing import L2Flush, PeerCsv, peers_out_dir, software, timings


def load_lib(path):
    lib = ctypes.CDLL(path)
    f = lib.l04_forward
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [
        ctypes.c_float, ctypes.c_void_p]
    lib.l04_version_name.restype = ctypes.c_char_p
    lib.l04_version_name.argtypes = [ctypes.c_int]
    return lib


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.environ.get("ATTN_LIB") or os.path.join(
        root, "build", "lib", "libattn_lessons.so"),
        help="path to libattn_lessons.so (default: $ATTN_LIB, else build/lib of this checkout)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seqs", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--versions", default="3,4,5,6,7")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--gemm", type=int, default=8192, help="N of an N^3 bf16 torch.matmul (0: skip)")
    ap.add_argument("--out", default=None,
                    help="folder for peers-lesson04.csv (default: $PEERS_OUT; neither: no CSV)")
    a = ap.parse_args()

    if not torch.cuda.is_available():
        print("lesson04_peers: no CUDA device; nothing measured")
        return 0
    lib = load_lib(a.lib)
    versions = [int(x) for x in a.versions.split(",") if x]
    names = {v: lib.l04_version_name(v).decode() for v in versions}
    dev = torch.cuda.get_device_properties(0)
    print(f"device: {dev.name}, {dev.multi_processor_count} SMs; torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}; bf16; tokens 16384, hidden 2048")
    flush = L2Flush()
    out = PeerCsv(4, peers_out_dir(a.out))
    out.set_common(iters=a.iters, **software(dev))
    if a.gemm > 0:
        n = a.gemm
        gen = torch.Generator(device="cuda").manual_seed(n)
        x, y = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
                for _ in range(2))
        ms, best = timings(lambda: torch.matmul(x, y), flush, a.iters, a.warmup)
        tflops = 2.0 * n ** 3 / (ms * 1e-3) / 1e12
        print(f"l04 impl=torch.matmul m={n} n={n} k={n} dtype=bf16 ms={ms:.4f} tflops={tflops:.1f}",
              flush=True)
        out.row(impl="torch.matmul", what="GEMM M x N x K, bf16 in, cuBLAS", dtype="bf16", rows=n,
                cols=n, dim=n, ms=f"{ms:.5f}", min_ms=f"{best:.5f}", tflops=f"{tflops:.2f}")
        del x, y
        torch.cuda.empty_cache()
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    rows, csv = [], []
    status = 0
    for dim in [int(x) for x in a.dims.split(",")]:
        for causal in [int(x) for x in a.causal.split(",")]:
            for seq in [int(x) for x in a.seqs.split(",")]:
                batch, heads = 16384 // seq, 2048 // dim
                gen = torch.Generator(device="cuda").manual_seed(seq * 1000 + dim + causal)
                q, k, v = (torch.randn(batch, seq, heads, dim, device="cuda", dtype=torch.bfloat16,
                                       generator=gen) for _ in range(3))
                o = torch.empty_like(q)
                lse = torch.empty(batch, heads, seq, device="cuda", dtype=torch.float32)
                qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                flops = 4.0 * batch * heads * seq * seq * dim / (2.0 if causal else 1.0)
                impls = {}

                def sdpa(backend):
                    def run():
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal))
                    return run
                impls["sdpa-flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
                impls["sdpa-cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
                ref = impls["sdpa-flash"]().transpose(1, 2).float()

                def ours(ver):
                    def run():
                        err = lib.l04_forward(ver, dim, q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                              o.data_ptr(), lse.data_ptr(), batch, heads, heads,
                                              seq, seq, causal, 0.0, stream)
                        if err != 0:
                            raise RuntimeError(f"l04_forward({ver}) returned CUDA error {err}")
                    return run
                for ver in versions:
                    impls[f"v{ver}-{names[ver]}"] = ours(ver)

                res = {}
                shape = dict(dtype="bf16", batch=batch, heads=heads, kv_heads=heads, seq_q=seq,
                             seq_kv=seq, dim=dim, causal=causal)
                what = "attention forward, causal counted as half the pairs"
                for name, fn in impls.items():
                    try:
                        fn()
                        torch.cuda.synchronize()
                        note, diff, check = "", None, ""
                        if name.startswith("v"):
                            diff = (o.float() - ref).abs().max().item()
                            note = f" max_abs_vs_flash={diff:.2e}"
                            check = "ok"
                            if not diff < 2e-2:
                                status = 1
                                note += " MISMATCH"
                                check = "MISMATCH"
                        ms, best = timings(fn, flush, a.iters, a.warmup)
                        res[name] = flops / (ms * 1e-3) / 1e12
                        print(f"l04 impl={name} dim={dim} causal={causal} seq={seq} batch={batch} "
                              f"heads={heads} ms={ms:.4f} tflops={res[name]:.1f}{note}", flush=True)
                        csv.append(f"{name},{dim},{causal},{seq},{batch},{heads},{ms:.5f},{res[name]:.2f}")
                        out.row(impl=name, what=what, ms=f"{ms:.5f}", min_ms=f"{best:.5f}",
                                tflops=f"{res[name]:.2f}", check=check,
                                max_abs=f"{diff:.3e}" if diff is not None else None, **shape)
                    except Exception as e:  # a backend that refuses the shape: report, go on
                        print(f"l04 impl={name} dim={dim} causal={causal} seq={seq} error={e}")
                        out.row(impl=name, what=what, check=f"error: {e}".replace("\n", " "),
                                **shape)
                rows.append((dim, causal, seq, res))
                del q, k, v, o, lse, qt, kt, vt, ref
    out.close()

    if a.csv:
        with open(a.csv, "w") as f:
            f.write("impl,dim,causal,seq,batch,heads,ms,tflops\n" + "\n".join(csv) + "\n")
    vnames = [f"v{v}-{names[v]}" for v in versions]
    print("\nTFLOP/s (causal counted as half the pairs)")
    print(f"{'dim':>4} {'causal':>6} {'seq':>6} {'flash':>7} {'cudnn':>7} " +
          " ".join(f"{'v' + str(v):>6}" for v in versions) + f" {'best/flash':>10} {'best/cudnn':>10}")
    for dim, causal, seq, res in rows:
        best = max((res.get(n, 0.0) for n in vnames), default=0.0)
        fl, cu = res.get("sdpa-flash", 0.0), res.get("sdpa-cudnn", 0.0)
        print(f"{dim:>4} {causal:>6} {seq:>6} {fl:>7.1f} {cu:>7.1f} " +
              " ".join(f"{res.get(n, 0.0):>6.1f}" for n in vnames) +
              f" {best / fl if fl else 0:>10.2f} {best / cu if cu else 0:>10.2f}")
    return status


if __name__ == "__main__":
    sys.exit(main())
