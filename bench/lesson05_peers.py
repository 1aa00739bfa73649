#!/usr/bin/env python3
"""Lesson 05 against PyTorch SDPA (flash, cuDNN) and lesson 04's version 7, same shapes, same run.

The FlashAttention papers' forward benchmark: 16k tokens in total (batch = 16384 / seq), hidden
2048 (heads = 2048 / dim), seq 512 to 16k, dim 64 and 128, causal and not, bf16. FLOPs are
4 * batch * heads * seq^2 * dim, halved for causal (the papers' convention, also used here for the
lessons' kernels, so every column is comparable).

The lesson's versions (l05_forward) and lesson 04's version 7 (l04_forward, the best of lesson 04)
are called through build/lib/libattn_lessons.so (ctypes) on the same torch tensors: [batch, seq,
heads, dim] is the lessons' BSHD layout; SDPA gets .transpose(1, 2) views. Each run is timed alone
with CUDA events, the L2 flushed before it; the figure is the median. Every lesson kernel's O is
compared with SDPA flash's once per shape; a mismatch (or a lesson kernel's error) makes the exit
status 1.

    python3 bench/lesson05_peers.py [--lib build/lib/libattn_lessons.so] [--iters 10]
        [--seqs 512,1024,2048,4096,8192,16384] [--dims 64,128] [--causal 0,1] [--versions 1,2]
        [--batch B] [--heads H1,H2] [--csv FILE] [--out DIR]

--batch and --heads replace the papers' rule (batch = 16384 / seq, heads = 2048 / dim): with
--heads 64,66 at --batch 1 --seqs 4096 the grid holds 2048 and 2112 blocks of 128 query rows, 15.5
and 16.0 waves of 132, which shows what the last, partly filled wave costs each kernel.

--versions defaults to every version the library names (l05_version_name(1), (2), ... up to the
first NULL). The kernels are built for sm_90a: on any other device the script says so in one line
and exits 0 with nothing measured.

The FP8 version (dim 128 only) runs twice: as the harness times it, converting Q, K and V first
(its `vN-fp8-e4m3` row), and its kernel alone on tensors converted before the timing
(`fp8-kernel-only`); its output is checked against flash's with the FP8 tolerance. Beside it,
cuDNN's FP8 attention (`cudnn-fp8`, the nvidia-cudnn-frontend graph, from .peers/ when it is not
installed: bench/cudnn_peer.py) on the same e4m3 values and per-tensor scales, timed alone as the
lesson's kernel is; without the frontend its rows are errors saying why.

Every output is also checked against a float64 reference on sampled rows (the first and last
batch and head, 33 rows spread over the sequence, from the bf16 inputs): its largest error and
relative L2 error go into accuracy-lesson05.csv beside peers-lesson05.csv (--out), one row per
implementation and shape, and the FP8 table at the end prints them.

Prints one line per measurement (`l05 impl=... dim=... causal=... seq=... ms=... tflops=...`),
then a table with the best bf16 lesson-05 version over SDPA flash, SDPA cuDNN and lesson 04's
version 7, beside the FP8 figures.

With --out DIR (or $PEERS_OUT) every figure is also a row of DIR/peers-lesson05.csv, in the columns
of bench/peer_timing.py; --csv FILE keeps its own short format.
"""
import argparse
import csv as csv_module
import ctypes
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cudnn_peer import cudnn_handle, default_picks, fp8_inputs, fp8_sdpa, fp64_rows, row_errors
from peer_timing import L2Flush, PeerCsv, peers_out_dir, software, timings

# Lesson 04's version timed beside lesson 05's: its fastest, the kernel lesson 05 starts from.
L04_BEST = 7
# The FP8 version's kernel timed alone, on tensors converted before the timing.
FP8_KERNEL = "fp8-kernel-only"
# FP8's check against flash's output: e4m3 keeps 4 significant bits, so V and P are each rounded
# by up to 2^-4 of themselves; an output row can be as close to one V row as the softmax allows,
# so its error is bounded by about 2^-3 of the largest |V|.
FP8_REL_TO_VMAX = 2.0 ** -3
# cuDNN's FP8 output is e4m3 too on Hopper: one more rounding of up to 2^-4 of |O| <= max |V|.
CUDNN_FP8_REL_TO_VMAX = 2.0 ** -3 + 2.0 ** -4
CUDNN_FP8 = "cudnn-fp8"
# The columns of accuracy-lesson05.csv: each implementation's error against float64 on sampled rows.
ACCURACY_COLUMNS = ["impl", "dim", "causal", "seq", "batch", "heads", "rows", "max_abs", "rel_l2"]


def load_lib(path):
    lib = ctypes.CDLL(path)
    for f in (lib.l04_forward, lib.l05_forward):
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [
            ctypes.c_float, ctypes.c_void_p]
    for f in (lib.l04_version_name, lib.l05_version_name):
        f.restype = ctypes.c_char_p
        f.argtypes = [ctypes.c_int]
    # The FP8 version's two halves, to time its kernel without the conversion.
    lib.l05_fp8_workspace_bytes.restype = ctypes.c_size_t
    lib.l05_fp8_workspace_bytes.argtypes = [ctypes.c_int] * 6
    lib.l05_fp8_quantize.restype = ctypes.c_int
    lib.l05_fp8_quantize.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 6 + [
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    lib.l05_fp8_attention.restype = ctypes.c_int
    lib.l05_fp8_attention.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                      ctypes.c_void_p] + [ctypes.c_int] * 7 + [ctypes.c_float,
                                                                              ctypes.c_void_p]
    return lib


def lesson_versions(lib):
    """Every lesson-05 version the library has: 1, 2, ... up to the first without a name."""
    found = []
    while lib.l05_version_name(len(found) + 1) is not None:
        found.append(len(found) + 1)
    return found


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
    ap.add_argument("--versions", default="",
                    help="lesson-05 versions, e.g. 1,2 (default: every one the library has)")
    ap.add_argument("--batch", type=int, default=0,
                    help="sequences per call (default: 16384 / seq)")
    ap.add_argument("--heads", default="",
                    help="query heads, comma-separated (default: 2048 / dim)")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--out", default=None,
                    help="folder for peers-lesson05.csv (default: $PEERS_OUT; neither: no CSV)")
    a = ap.parse_args()

    if not torch.cuda.is_available():
        print("lesson05_peers: no CUDA device; nothing measured")
        return 0
    dev = torch.cuda.get_device_properties(0)
    if (dev.major, dev.minor) != (9, 0):
        print(f"lesson05_peers: lesson 05 needs sm_90 (Hopper); {dev.name} is "
              f"sm_{dev.major}{dev.minor}; nothing measured")
        return 0
    lib = load_lib(a.lib)
    known = lesson_versions(lib)
    versions = [int(x) for x in a.versions.split(",") if x] or known
    for ver in versions:
        if ver not in known:
            ap.error(f"--versions: lesson 05 has no version {ver} (it has {known[0]}-{known[-1]})"
                     if known else f"--versions: {a.lib} names no lesson-05 version")
    names = {v: lib.l05_version_name(v).decode() for v in versions}
    l04_name = f"l04-v{L04_BEST}-{lib.l04_version_name(L04_BEST).decode()}"
    print(f"device: {dev.name}, {dev.multi_processor_count} SMs; torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}; bf16; "
          + (f"batch {a.batch or '16384 / seq'}, heads {a.heads or '2048 / dim'}"
             if a.batch or a.heads else "tokens 16384, hidden 2048"))
    fe, handle, fe_note = cudnn_handle(root)
    print(f"cuDNN FP8 peer: {fe_note}" if fe is not None else
          f"cuDNN FP8 peer: UNAVAILABLE, its rows are errors: {fe_note}", flush=True)
    flush = L2Flush()
    out = PeerCsv(5, peers_out_dir(a.out))
    accuracy = []
    out.set_common(iters=a.iters, **software(dev))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    vnames = [f"v{v}-{names[v]}" for v in versions]
    rows, csv = [], []
    status = 0
    for dim in [int(x) for x in a.dims.split(",")]:
        for causal in [int(x) for x in a.causal.split(",")]:
            for seq, heads in [(s, h) for s in [int(x) for x in a.seqs.split(",")]
                               for h in ([int(x) for x in a.heads.split(",") if x]
                                         or [2048 // dim])]:
                batch = a.batch or 16384 // seq
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
                            return F.scaled_dot_product_attention(qt, kt, vt,
                                                                  is_causal=bool(causal))
                    return run
                impls["sdpa-flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
                impls["sdpa-cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
                ref = impls["sdpa-flash"]().transpose(1, 2).float()
                vmax = v.abs().max().item()

                def lesson(forward, ver, tag):
                    def run():
                        err = forward(ver, dim, q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                      o.data_ptr(), lse.data_ptr(), batch, heads, heads, seq, seq,
                                      causal, 0.0, stream)
                        if err != 0:
                            raise RuntimeError(f"{tag}_forward({ver}) returned CUDA error {err}")
                    return run
                impls[l04_name] = lesson(lib.l04_forward, L04_BEST, "l04")
                for ver, name in zip(versions, vnames):
                    if "fp8" in name and dim != 128:
                        continue  # FP8 is built for dim 128 only
                    impls[name] = lesson(lib.l05_forward, ver, "l05")
                ours = set(vnames) | {l04_name}
                ws = None
                if dim == 128 and any("fp8" in n for n in vnames):
                    # the FP8 kernel alone, on tensors converted once before the timing
                    nbytes = lib.l05_fp8_workspace_bytes(batch, heads, heads, seq, seq, dim)
                    ws = torch.empty(nbytes, device="cuda", dtype=torch.uint8)
                    err = lib.l05_fp8_quantize(q.data_ptr(), k.data_ptr(), v.data_ptr(), batch,
                                               heads, heads, seq, seq, dim, ws.data_ptr(), nbytes,
                                               stream)
                    if err != 0:
                        raise RuntimeError(f"l05_fp8_quantize returned CUDA error {err}")

                    def fp8_kernel():
                        err = lib.l05_fp8_attention(ws.data_ptr(), nbytes, o.data_ptr(),
                                                    lse.data_ptr(), batch, heads, heads, seq, seq,
                                                    dim, causal, dim ** -0.5, stream)
                        if err != 0:
                            raise RuntimeError(f"l05_fp8_attention returned CUDA error {err}")
                    impls[FP8_KERNEL] = fp8_kernel
                    ours.add(FP8_KERNEL)
                    # cuDNN's FP8 attention on the same e4m3 values, built once per shape
                    cudnn_out = None
                    try:
                        if fe is None:
                            raise RuntimeError(fe_note)
                        (q8, k8, v8), descales = fp8_inputs(q, k, v)
                        impls[CUDNN_FP8], cudnn_out, _ = fp8_sdpa(
                            fe, handle, q8, k8, v8, descales, vmax, causal, dim ** -0.5)
                    except Exception as e:
                        err = f"{type(e).__name__}: {e}".replace("\n", " ")

                        def cudnn_fp8_refused(err=err):
                            raise RuntimeError(err)
                        impls[CUDNN_FP8] = cudnn_fp8_refused

                picks = default_picks(batch, heads, seq)
                ref64 = fp64_rows(q, k, v, causal, dim ** -0.5, picks)
                res = {}
                shape = dict(dtype="bf16", batch=batch, heads=heads, kv_heads=heads, seq_q=seq,
                             seq_kv=seq, dim=dim, causal=causal)
                what = "attention forward, causal counted as half the pairs"
                for name, fn in impls.items():
                    try:
                        got = fn()
                        torch.cuda.synchronize()
                        note, diff, check = "", None, ""
                        if name in ours or name == CUDNN_FP8:
                            got = o.float() if name in ours else cudnn_out()
                            diff = (got - ref).abs().max().item()
                            note = f" max_abs_vs_flash={diff:.2e}"
                            check = "ok"
                            tol = (CUDNN_FP8_REL_TO_VMAX * vmax if name == CUDNN_FP8 else
                                   FP8_REL_TO_VMAX * vmax if "fp8" in name else 2e-2)
                            if not diff < tol:
                                status = 1 if name in ours else status
                                note += " MISMATCH"
                                check = "MISMATCH"
                        else:
                            got = got.transpose(1, 2)  # SDPA's [batch, heads, seq, dim] view
                        worst, rel = row_errors(got, picks, ref64)
                        note += f" vs_fp64 max_abs={worst:.2e} rel_l2={rel:.2e}"
                        accuracy.append(dict(impl=name, dim=dim, causal=causal, seq=seq,
                                             batch=batch, heads=heads,
                                             rows=sum(len(r) for _, _, r in picks),
                                             max_abs=f"{worst:.3e}", rel_l2=f"{rel:.3e}"))
                        ms, best = timings(fn, flush, a.iters, a.warmup)
                        res[name] = flops / (ms * 1e-3) / 1e12
                        print(f"l05 impl={name} dim={dim} causal={causal} seq={seq} batch={batch} "
                              f"heads={heads} ms={ms:.4f} tflops={res[name]:.1f}{note}", flush=True)
                        csv.append(f"{name},{dim},{causal},{seq},{batch},{heads},{ms:.5f},{res[name]:.2f}")
                        out.row(impl=name, what=what, ms=f"{ms:.5f}", min_ms=f"{best:.5f}",
                                tflops=f"{res[name]:.2f}", check=check,
                                max_abs=f"{diff:.3e}" if diff is not None else None, **shape)
                    except Exception as e:  # a backend that refuses the shape: report, go on
                        if name in ours:
                            status = 1
                        print(f"l05 impl={name} dim={dim} causal={causal} seq={seq} error={e}")
                        out.row(impl=name, what=what, check=f"error: {e}".replace("\n", " "),
                                **shape)
                rows.append((dim, causal, seq, batch, heads, res))
                del q, k, v, o, lse, qt, kt, vt, ref, ws, ref64
                impls.clear()
    wrote_csv = out.file is not None
    out.close()
    if wrote_csv and accuracy:
        path = os.path.join(os.path.dirname(out.path), "accuracy-lesson05.csv")
        with open(path, "w", newline="") as f:
            w = csv_module.DictWriter(f, fieldnames=ACCURACY_COLUMNS)
            w.writeheader()
            w.writerows(accuracy)

    if a.csv:
        with open(a.csv, "w") as f:
            f.write("impl,dim,causal,seq,batch,heads,ms,tflops\n" + "\n".join(csv) + "\n")
    print(f"\nTFLOP/s (causal counted as half the pairs); l04 = lesson 04's {l04_name[4:]}; best "
          f"among the bf16 versions; fp8k = the FP8 kernel alone ({FP8_KERNEL})")
    print(f"{'dim':>4} {'causal':>6} {'seq':>6} {'batch':>5} {'heads':>5} {'flash':>7} {'cudnn':>7} {'l04':>7} " +
          " ".join(f"{'v' + str(v):>6}" for v in versions) +
          f" {'fp8k':>6} {'best':>5} {'tflops':>7} {'best/flash':>10} {'best/cudnn':>10}"
          f" {'best/l04':>8}")
    for dim, causal, seq, batch, heads, res in rows:
        best_ver, best = max(((v, res.get(n, 0.0)) for v, n in zip(versions, vnames)
                              if "fp8" not in n), key=lambda t: t[1], default=(None, 0.0))
        tag = f"v{best_ver}" if best > 0 else "-"
        fl, cu, l4 = res.get("sdpa-flash", 0.0), res.get("sdpa-cudnn", 0.0), res.get(l04_name, 0.0)
        print(f"{dim:>4} {causal:>6} {seq:>6} {batch:>5} {heads:>5} {fl:>7.1f} {cu:>7.1f} {l4:>7.1f} " +
              " ".join(f"{res.get(n, 0.0):>6.1f}" for n in vnames) +
              f" {res.get(FP8_KERNEL, 0.0):>6.1f} {tag:>5} {best:>7.1f} {best / fl if fl else 0:>10.2f}"
              f" {best / cu if cu else 0:>10.2f} {best / l4 if l4 else 0:>8.2f}")
    fp8 = [r for r in rows if r[0] == 128 and (r[5].get(FP8_KERNEL) or r[5].get(CUDNN_FP8))]
    if fp8:
        err = {(x["impl"], x["causal"], x["seq"]): x for x in accuracy}
        v5 = next((n for n in vnames if n.startswith("v5-")), None)
        print("\nFP8 at dim 128 (TFLOP/s; kernel alone, inputs converted before the timing) and "
              "the error against float64 on sampled rows (relative L2)")
        print(f"{'causal':>6} {'seq':>6} {'fp8k':>7} {'cudnn-fp8':>9} {'fp8k/cudnn':>10} "
              f"{'fp8k/v5':>7} {'err fp8k':>9} {'err cudnn':>9} {'err v5':>9}")
        for dim, causal, seq, batch, heads, res in fp8:
            fk, cf = res.get(FP8_KERNEL, 0.0), res.get(CUDNN_FP8, 0.0)
            b5 = res.get(v5, 0.0) if v5 else 0.0

            def e(name):
                x = err.get((name, causal, seq))
                return x["rel_l2"] if x else "-"
            print(f"{causal:>6} {seq:>6} {fk:>7.1f} {cf:>9.1f} {fk / cf if cf else 0:>10.2f} "
                  f"{fk / b5 if b5 else 0:>7.2f} {e(FP8_KERNEL):>9} {e(CUDNN_FP8):>9} "
                  f"{e(v5) if v5 else '-':>9}")
    return status


if __name__ == "__main__":
    sys.exit(main())
