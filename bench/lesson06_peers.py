#!/usr/bin/env python3
"""Lesson 06 against PyTorch SDPA's flash (FlashAttention-2) and cuDNN backends on decode shapes.

One query token per sequence (seq_q 1), 32 query heads, 32 or 8 KV heads, bf16, batch 1 to 128,
kv length 1k to 128k. The figure is the rate of K + V read, counted once per (batch, KV head):
2 * batch * kv_heads * seq_kv * dim * 2 bytes over the time, the bytes any decode kernel must read.
A peer that needs K and V expanded to one copy per query head (when SDPA refuses enable_gqa for a
backend) reads more than that; its row says "expanded" and its rate still counts the unexpanded
bytes, so it is the rate the caller sees.

The lesson's versions are called through build/lib/libattn_lessons.so (ctypes, l06_forward) on the
same torch tensors in the lesson's [batch, seq, heads, dim] layout; SDPA gets .transpose(1, 2)
views. Each run is timed alone with CUDA events, the L2 flushed before it and then (--busy-us) a
sleep kernel, so that the GPU is still busy while the host enqueues the run: the figure is the
GPU's time, not the host's launch cost (Python, PyTorch's dispatch, ctypes), as in lessons 07 and
10. Without it (--busy-us 0, this script's method until 2026-11-29) cuDNN's and flash's rows at
dim 64 with kv 1k took 58-91 us on the H200 of that day, with the implementations taking turns or
not, and 20.6-36.2 us with it, while the lesson's version 5 took 26.7 us either way
(docs/results/h200-l06t-2026-11-29/launch-cost.log): how much of a launch the flush hides depends
on the host. The figure is the median.
Every version's O is compared with SDPA flash's first; then a shape's implementations are timed
taking turns: --warmup runs each, then --rounds rounds (default 5), each running every
implementation once untimed and then --iters / --rounds times timed, the order rotated from round
to round (bench/peer_timing.py, timings_in_turns), so that the clocks' drift over the shape falls
on all of them alike.

    python3 bench/lesson06_peers.py [--lib build/lib/libattn_lessons.so] [--iters 20]
        [--batches 1,8,32,128] [--kv-heads 32,8] [--kvs 1024,8192,32768,131072] [--dims 128,64]
        [--versions 1,2,3,4,5] [--rounds 5] [--busy-us 100] [--max-gb 24] [--out DIR]

Shapes whose K + V would pass --max-gb are skipped and said so. Prints one line per measurement
(`l06 impl=... batch=... kv_heads=... seq_kv=... us=... tbs=...`), then a table of TB/s with the
best lesson version over each peer. With --out DIR (or $PEERS_OUT) every figure is also a row of
DIR/peers-lesson06.csv in the columns of bench/peer_timing.py.
"""
import argparse
import ctypes
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from peer_timing import L2Flush, PeerCsv, peers_out_dir, software, timings_in_turns, turn_plan


def load_lib(path):
    lib = ctypes.CDLL(path)
    f = lib.l06_forward
    f.restype = ctypes.c_int
    f.argtypes = ([ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 6 + [ctypes.c_size_t] +
                  [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p])
    lib.l06_version_name.restype = ctypes.c_char_p
    lib.l06_version_name.argtypes = [ctypes.c_int]
    lib.l06_workspace_bytes.restype = ctypes.c_size_t
    lib.l06_workspace_bytes.argtypes = [ctypes.c_int] * 7
    return lib


def ints(s):
    return [int(x) for x in s.split(",") if x]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.environ.get("ATTN_LIB") or os.path.join(
        root, "build", "lib", "libattn_lessons.so"),
        help="path to libattn_lessons.so (default: $ATTN_LIB, else build/lib of this checkout)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds in which a shape's implementations take turns (--iters runs each "
                         "in all)")
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", default="32,8")
    ap.add_argument("--kvs", default="1024,8192,32768,131072")
    ap.add_argument("--dims", default="128,64")
    ap.add_argument("--versions", default="1,2,3,4,5")
    ap.add_argument("--max-gb", type=float, default=24.0,
                    help="skip shapes whose K + V pass this many GB")
    ap.add_argument("--busy-us", type=float, default=100.0,
                    help="microseconds of a sleep kernel after each L2 flush, covering the host's "
                         "launch cost (0: none)")
    ap.add_argument("--out", default=None,
                    help="folder for peers-lesson06.csv (default: $PEERS_OUT; neither: no CSV)")
    a = ap.parse_args()
    if a.iters < 1 or a.warmup < 0 or a.rounds < 1:
        ap.error("--iters and --rounds must be positive, --warmup not negative")

    if not torch.cuda.is_available():
        print("lesson06_peers: no CUDA device; nothing measured")
        return 0
    lib = load_lib(a.lib)
    versions = ints(a.versions)
    names = {v: lib.l06_version_name(v).decode() for v in versions}
    dev = torch.cuda.get_device_properties(0)
    print(f"device: {dev.name}, {dev.multi_processor_count} SMs; torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}; bf16; decode, seq_q 1, {a.heads} query heads")
    flush = L2Flush(a.busy_us)
    print(f"timing: {flush.what}", flush=True)
    out = PeerCsv(6, peers_out_dir(a.out))
    rounds, per_round = turn_plan(a.iters, a.rounds)
    out.set_common(iters=rounds * per_round, **software(dev))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    heads, table, status = a.heads, [], 0
    for dim in ints(a.dims):
        for hkv in ints(a.kv_heads):
            for batch in ints(a.batches):
                for skv in ints(a.kvs):
                    kv_bytes = 2.0 * batch * hkv * skv * dim * 2
                    shape = dict(dtype="bf16", batch=batch, heads=heads, kv_heads=hkv, seq_q=1,
                                 seq_kv=skv, dim=dim, causal=0, bytes=int(kv_bytes))
                    if kv_bytes > a.max_gb * 1e9:
                        print(f"l06 batch={batch} kv_heads={hkv} seq_kv={skv} dim={dim} skipped: "
                              f"K + V {kv_bytes / 1e9:.1f} GB > --max-gb {a.max_gb}")
                        continue
                    res = measure(lib, a, versions, names, flush, out, stream, shape, kv_bytes)
                    status |= res.pop("_status", 0)
                    table.append((dim, hkv, batch, skv, res))
                    torch.cuda.empty_cache()
    out.close()

    vnames = [f"v{v}-{names[v]}" for v in versions]
    print("\nTB/s of K + V read once per (batch, KV head); ratios: best lesson version over the peer")
    print(f"{'dim':>4} {'Hkv':>4} {'batch':>5} {'kv':>7} {'flash':>6} {'cudnn':>6} " +
          " ".join(f"{'v' + str(v):>6}" for v in versions) + f" {'best/flash':>10} {'best/cudnn':>10}")
    for dim, hkv, batch, skv, res in table:
        best = max((res.get(n, 0.0) for n in vnames), default=0.0)
        fl, cu = res.get("sdpa-flash", 0.0), res.get("sdpa-cudnn", 0.0)
        print(f"{dim:>4} {hkv:>4} {batch:>5} {skv:>7} {fl:>6.2f} {cu:>6.2f} " +
              " ".join(f"{res.get(n, 0.0):>6.2f}" for n in vnames) +
              f" {best / fl if fl else 0:>10.2f} {best / cu if cu else 0:>10.2f}")
    return status


def measure(lib, a, versions, names, flush, out, stream, shape, kv_bytes):
    """Every implementation on one shape; returns {impl: TB/s}, and _status 1 on a mismatch."""
    batch, heads, hkv, skv, dim = (shape[x] for x in ("batch", "heads", "kv_heads", "seq_kv", "dim"))
    gen = torch.Generator(device="cuda").manual_seed(batch * 1000003 + hkv * 1009 + skv + dim)
    q = torch.randn(batch, 1, heads, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    k = torch.randn(batch, skv, hkv, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    v = torch.randn(batch, skv, hkv, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    o = torch.empty_like(q)
    lse = torch.empty(batch, heads, 1, device="cuda", dtype=torch.float32)
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    impls, what = {}, {}
    base = "decode attention forward, TB/s of K + V once per (batch, KV head)"

    def sdpa(backend):
        def run_gqa():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=hkv != heads)
        try:  # the backend takes GQA itself, or the caller expands K and V
            r = run_gqa()
            torch.cuda.synchronize()
            return run_gqa, r, base
        except RuntimeError:
            ke = kt.repeat_interleave(heads // hkv, dim=1)
            ve = vt.repeat_interleave(heads // hkv, dim=1)

            def run_exp():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qt, ke, ve)
            return run_exp, run_exp(), base + "; K, V expanded to every query head"

    ref, status = None, 0
    for label, backend in (("sdpa-flash", SDPBackend.FLASH_ATTENTION),
                           ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            fn, r, w = sdpa(backend)
            impls[label], what[label] = fn, w
            if label == "sdpa-flash":
                ref = r.transpose(1, 2).float()
        except RuntimeError as e:
            print(f"l06 impl={label} batch={batch} kv_heads={hkv} seq_kv={skv} error={e}")
            out.row(impl=label, what=base, check=f"error: {e}".replace("\n", " ")[:200], **shape)

    for ver in versions:
        ws_bytes = lib.l06_workspace_bytes(ver, batch, heads, hkv, 1, skv, dim)
        # zeroed once: version 5 keeps counters there that every call leaves at 0
        ws = torch.zeros(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")

        def ours(ver=ver, ws=ws, ws_bytes=ws_bytes):
            def run():
                err = lib.l06_forward(ver, dim, q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                      o.data_ptr(), lse.data_ptr(), ws.data_ptr(), ws_bytes,
                                      batch, heads, hkv, 1, skv, 0, 0.0, stream)
                if err != 0:
                    raise RuntimeError(f"l06_forward({ver}) returned CUDA error {err}")
            return run
        impls[f"v{ver}-{names[ver]}"] = ours()
        what[f"v{ver}-{names[ver]}"] = base

    def error_row(name, e):
        print(f"l06 impl={name} batch={batch} kv_heads={hkv} seq_kv={skv} error={e}")
        out.row(impl=name, what=what[name], check=f"error: {e}".replace("\n", " ")[:200], **shape)

    # First every version's check, then the shape's implementations timed taking turns.
    checked = {}  # name: (check, max |O - flash|, the line's note)
    for name, fn in impls.items():
        try:
            check, diff, note = "", None, ""
            if name.startswith("v"):
                o.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                check = "ok"
                if ref is not None:
                    diff = (o.float() - ref).abs().max().item()
                    note = f" max_abs_vs_flash={diff:.2e}"
                    if not diff < 2e-2:
                        status, check, note = 1, "MISMATCH", note + " MISMATCH"
            checked[name] = (check, diff, note)
        except RuntimeError as e:
            error_row(name, e)
            status = 1 if name.startswith("v") else status
    got = (timings_in_turns({n: impls[n] for n in checked}, flush, a.iters, a.warmup, a.rounds)
           if checked else {})
    res = {}
    for name, (check, diff, note) in checked.items():
        t = got[name]
        if isinstance(t, Exception):
            error_row(name, t)
            status = 1 if name.startswith("v") else status
            continue
        ms, best = t
        res[name] = kv_bytes / (ms * 1e-3) / 1e12
        print(f"l06 impl={name} dim={dim} batch={batch} kv_heads={hkv} seq_kv={skv} "
              f"us={ms * 1e3:.1f} tbs={res[name]:.3f}{note}", flush=True)
        out.row(impl=name, what=what[name], ms=f"{ms:.5f}", min_ms=f"{best:.5f}",
                gbs=f"{res[name] * 1e3:.1f}", check=check,
                max_abs=f"{diff:.3e}" if diff is not None else None, **shape)
    res["_status"] = status
    return res


if __name__ == "__main__":
    sys.exit(main())
