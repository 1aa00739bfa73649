#!/usr/bin/env python3
"""Lesson 02's peer: torch.softmax on the lesson's row-softmax shapes, timed like the lesson times.

    python3 bench/lesson02_peers.py                          # 16384 x 4096 and 4096 x 32768
    python3 bench/lesson02_peers.py --rows 16384 --cols 4096 # one shape (repeat --shape RxC for more)
    python3 bench/lesson02_peers.py --lib build/lib/libattn_lessons.so   # the lesson's v5-v7 too
                                        (found by itself in build-gpu/ or build/; --no-lib: torch only)
    python3 bench/lesson02_peers.py --out DIR               # also DIR/peers-lesson02.csv

Method, as in common/attn_timer.h: fp32 [rows, cols], warm-up runs, then --iters runs each between two
CUDA events with the L2 flushed before each by a read of twice its size (bench/peer_timing.py), median
reported. Bytes counted: one read and one write of the matrix (what torch.softmax must move), so
GB/s here compares with the lesson's "1R+1W GB/s" column.

Data: uniform in [-8, 8), every eighth row shifted by an offset from [-1e4, 1e4], like the lesson's
table (not bit-identical: drawn by torch; timing does not depend on the values).

With --lib, the lesson's launchers (extern "C" in lessons/02_online_softmax/online_softmax.h) run
through ctypes on the same tensors, on torch's current stream, in the same process, checked against
torch's output: the side-by-side the lesson's README quotes.

Output: one line per figure, `key=value` pairs, e.g.
    lesson02 impl=torch.softmax rows=R cols=C dtype=fp32 median_ms=T min_ms=T gbs=G pct_hbm=P check=ok
With --out DIR (or $PEERS_OUT) every figure is also a row of DIR/peers-lesson02.csv, in the columns
of bench/peer_timing.py (bytes: the 1 R + 1 W the GB/s count).
"""
import argparse
import ctypes
import math
import os
import sys

import torch

from peer_timing import L2Flush, PeerCsv, peers_out_dir, software, timings

LESSON_FNS = [  # (name in the output, symbol) for --lib
    ("lesson02.v5-online-block", "l02_softmax_v5_online_block"),
    ("lesson02.v6-online-regs", "l02_softmax_v6_online_regs"),
    ("lesson02.v7-online-regs+smem", "l02_softmax_v7_regs_smem"),
]


def find_lib():
    """The shared library of a build of this checkout, if there is one."""
    if os.environ.get("ATTN_LIB"):
        return os.environ["ATTN_LIB"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for build in ("build-gpu", "build"):
        path = os.path.join(root, build, "lib", "libattn_lessons.so")
        if os.path.exists(path):
            return path
    return None


def hbm_peak_gbs(dev, override):
    """2 x memory clock x bus width, from the CUDA runtime (the figure the lesson's header prints)."""
    if override:
        return override
    props = torch.cuda.get_device_properties(dev)
    clock_khz = getattr(props, "memory_clock_rate", 0)
    width = getattr(props, "memory_bus_width", 0)
    if not (clock_khz and width):
        for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
            try:
                rt = ctypes.CDLL(name)
            except OSError:
                continue
            v = ctypes.c_int(0)
            # cudaDevAttrMemoryClockRate = 36 (kHz), cudaDevAttrGlobalMemoryBusWidth = 37 (bits)
            if rt.cudaDeviceGetAttribute(ctypes.byref(v), 36, dev) == 0:
                clock_khz = v.value
            if rt.cudaDeviceGetAttribute(ctypes.byref(v), 37, dev) == 0:
                width = v.value
            break
    if clock_khz and width:
        return 2.0 * clock_khz * 1e3 * width / 8 / 1e9
    return float("nan")


def make_scores(rows, cols, seed, dev):
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    x = torch.rand(rows, cols, device=dev, generator=g, dtype=torch.float32) * 16.0 - 8.0
    shifted = x[7::8]
    if shifted.shape[0]:
        offsets = torch.rand(shifted.shape[0], 1, device=dev, generator=g) * 2e4 - 1e4
        shifted += offsets
    return x


def report(out, impl, rows, cols, median, best, peak, check, max_abs=None):
    gbs = 2.0 * rows * cols * 4 / (median * 1e-3) / 1e9
    pct = 100.0 * gbs / peak if peak == peak else float("nan")
    print(f"lesson02 impl={impl} rows={rows} cols={cols} dtype=fp32 median_ms={median:.4f} "
          f"min_ms={best:.4f} gbs={gbs:.1f} pct_hbm={pct:.1f} check={check}", flush=True)
    out.row(impl=impl, what="row softmax, 1 R + 1 W counted", dtype="fp32", rows=rows, cols=cols,
            bytes=2 * rows * cols * 4, ms=f"{median:.5f}", min_ms=f"{best:.5f}", gbs=f"{gbs:.2f}",
            pct_hbm=f"{pct:.2f}" if pct == pct else "", check=check,
            max_abs=f"{max_abs:.3e}" if max_abs is not None else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, help="rows (batch*heads*seq in the lesson)")
    ap.add_argument("--cols", type=int, help="columns (kv-seq in the lesson)")
    ap.add_argument("--shape", action="append", default=[], help="RxC, repeatable")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lib", help="path to libattn_lessons.so: also time the lesson's kernels "
                    "(default: $ATTN_LIB, else build-gpu/lib or build/lib of this checkout, if built)")
    ap.add_argument("--no-lib", action="store_true", help="time torch.softmax only")
    ap.add_argument("--peak-gbs", type=float, default=0.0, help="override the HBM peak")
    ap.add_argument("--out", default=None,
                    help="folder for peers-lesson02.csv (default: $PEERS_OUT; neither: no CSV)")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        print("lesson02 skipped: no CUDA device visible to torch")
        return 0
    shapes = []
    if args.rows or args.cols:
        if not (args.rows and args.cols):
            ap.error("--rows and --cols go together")
        shapes.append((args.rows, args.cols))
    for s in args.shape:
        r, c = s.lower().split("x")
        shapes.append((int(r), int(c)))
    if not shapes:
        shapes = [(16384, 4096), (4096, 32768)]

    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    lib = None
    lib_path = None if args.no_lib else (args.lib or find_lib())
    if lib_path:
        print(f"lesson02 lib={lib_path}", flush=True)
        lib = ctypes.CDLL(lib_path)
        for _, sym in LESSON_FNS:
            f = getattr(lib, sym)
            f.restype = ctypes.c_int
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                          ctypes.c_void_p]
    peak = hbm_peak_gbs(dev, args.peak_gbs)
    print(f"lesson02 device=\"{props.name}\" sms={props.multi_processor_count} "
          f"hbm_peak_gbs={peak:.0f} torch={torch.__version__} cuda={torch.version.cuda}", flush=True)
    flush = L2Flush()
    out = PeerCsv(2, peers_out_dir(args.out))
    out.set_common(iters=args.iters, **software(props))

    for rows, cols in shapes:
        x = make_scores(rows, cols, args.seed, dev)
        ref = torch.softmax(x, dim=-1)
        sums = ref.sum(dim=-1)
        ok = bool(torch.isfinite(ref).all()) and bool((sums - 1).abs().max() < 1e-4)
        median, best = timings(lambda: torch.softmax(x, dim=-1), flush, args.iters, args.warmup)
        report(out, "torch.softmax", rows, cols, median, best, peak, "ok" if ok else "BAD")
        if lib is not None:
            y = torch.empty_like(x)
            for name, sym in LESSON_FNS:
                f = getattr(lib, sym)
                stream = torch.cuda.current_stream().cuda_stream

                def run(f=f, stream=stream):
                    err = f(x.data_ptr(), y.data_ptr(), rows, cols, stream)
                    if err != 0:
                        raise RuntimeError(f"{sym} returned CUDA error {err}")

                try:
                    y.fill_(float("nan"))
                    run()
                    torch.cuda.synchronize()
                except RuntimeError as e:  # e.g. a shape the version does not support
                    print(f"lesson02 impl={name} rows={rows} cols={cols} skipped=\"{e}\"", flush=True)
                    out.row(impl=name, what="row softmax, 1 R + 1 W counted", dtype="fp32",
                            rows=rows, cols=cols, check=f"skipped: {e}")
                    continue
                diff = (y - ref).abs().max().item()
                check = "ok" if math.isfinite(diff) and diff <= 1e-5 else f"BAD(max_abs={diff:.2e})"
                median, best = timings(run, flush, args.iters, args.warmup)
                report(out, name, rows, cols, median, best, peak, check, diff)
        del x, ref
        torch.cuda.empty_cache()
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
