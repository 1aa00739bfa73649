#!/usr/bin/env python3
"""Lesson 05 against PyTorch SDPA (flash, cuDNN) and lesson 04's version 7, same shapes, same run.

The FlashAttention papers' forward benchmark: 16k tokens in total (batch = 16384 / seq), hidden
2048 (heads = 2048 / dim), seq 512 to 16k, dim 64 and 128, causal and not, bf16. FLOPs are
4 * batch * heads * seq^2 * dim, halved for causal (the papers' convention, also used here for the
lessons' kernels, so every column is comparable).

The lesson's versions (l05_forward) and lesson 04's version 7 (l04_forward, the best of lesson 04)
are called through build/lib/libattn_lessons.so (ctypes) on the same torch tensors: [batch, seq,
heads, dim] is the lessons' BSHD layout; SDPA gets .transpose(1, 2) views. Each run is timed alone
with CUDA events, the L2 flushed before it and then (--busy-us) a sleep kernel that keeps the GPU
busy while the host enqueues the run, so that the figure is the GPU's time and not the host's
launch cost (PyTorch's dispatch, cuDNN's execute, ctypes), as in lessons 07, 09 and 10; the
figure is the median of --iters runs. A shape's
rows take turns: --rounds rounds (default 5), each running every row once untimed and then
--iters / --rounds times timed, in an order rotated from round to round, so that the clocks' drift
over the shape's seconds falls on every row alike rather than on whichever ran last
(bench/peer_timing.py, timings_in_turns). Every lesson kernel's O is
compared with SDPA flash's once per shape; a mismatch (or a lesson kernel's error) makes the exit
status 1.

    python3 bench/lesson05_peers.py [--lib build/lib/libattn_lessons.so] [--iters 10] [--rounds 5]
        [--seqs 512,1024,2048,4096,8192,16384] [--dims 64,128] [--causal 0,1] [--versions 1,2]
        [--batch B] [--heads H1,H2] [--kv-heads K] [--peak-gbs G] [--busy-us 100] [--csv FILE]
        [--out DIR]

--batch and --heads replace the papers' rule (batch = 16384 / seq, heads = 2048 / dim): with
--heads 64,66 at --batch 1 --seqs 4096 the grid holds 2048 and 2112 blocks of 128 query rows, 15.5
and 16.0 waves of 132, which shows what the last, partly filled wave costs each kernel. --kv-heads
gives K and V fewer heads than Q (GQA; SDPA runs with enable_gqa, and flash's check output is
computed on K and V repeated to every query head).

--versions defaults to every version the library names (l05_version_name(1), (2), ... up to the
first NULL). The kernels are built for sm_90a: on any other device the script says so in one line
and exits 0 with nothing measured.

The FP8 versions (dim 128 only) are version 6 (`fp8-e4m3`, one scale per tensor), version 7
(`fp8-tiles`, one power-of-two scale per tile of 128 rows, converted in one pass) and version 10
(`fp8-wide`, version 7's conversion and workspace, tiles of 256 keys, the warpgroups taking turns
at the exponentials), version 11 (`fp8-persistent`, version 10 in persistent blocks), version 12
(`fp8-q-in-kernel`, version 11 reading Q in bf16 and converting it itself; its pass converts K and V
only) and version 13 (`fp8-exp-fma`, version 12 with half its exponentials on the FMA pipes; version
12's pass) and version 14 (`fp8-half-tile`, version 13 running the diagonal's half-masked last tile
over its first 128 keys; version 12's pass). Each selected one runs three ways: as the harness times it, converting first (its `vN-fp8-...` row, on
a workspace allocated once, as the harness passes one; l05_forward allocates one per call); its
kernel alone, on a workspace its conversion filled once before the timing (`fp8-kernel-only` for
version 6, `fp8t-kernel-only` for version 7, `fp8w-kernel-only` for version 10, `fp8p-kernel-only`
for version 11, `fp8q-kernel-only` for version 12, which also reads the bf16 Q, `fp8x-kernel-only`
for version 13, `fp8h-kernel-only` for version 14, the same way), its output checked against flash's with the FP8 tolerance; and its
conversion alone, on a workspace of its own (`fp8-convert`, `fp8t-convert`, `fp8q-convert`; versions
10 and 11 use version 7's, versions 13 and 14 version 12's, not timed again).
A conversion has no output to check and no FLOPs: its figure is the bytes any conversion must move
over its median time, each bf16 value of Q, K and V read once and its e4m3 written once (3 bytes a
value, the scales not counted; K and V only for version 12's), in GB/s and as a percentage of the HBM peak (2 x memory clock x bus
width, bench/lesson02_peers.py's hbm_peak_gbs; --peak-gbs replaces it). A library without version
7's, 10's, 11's, 12's, 13's or 14's entry points (l05_fp8t_*, l05_fp8w_*, l05_fp8p_*, l05_fp8q_*,
l05_fp8x_*, l05_fp8h_*) still loads; that version's kernel-alone and
conversion rows are then errors saying so. Beside version 6, cuDNN's FP8 attention (`cudnn-fp8`, the nvidia-cudnn-frontend graph, from .peers/ when
it is not installed: bench/cudnn_peer.py) on the same e4m3 values and per-tensor scales, timed
alone as the lesson's kernel is; without the frontend its rows are errors saying why.

Every attention output is also checked against a float64 reference on sampled rows (the first
and last batch and head, 33 rows spread over the sequence, from the bf16 inputs): its largest
error and relative L2 error go into accuracy-lesson05.csv beside peers-lesson05.csv (--out), one
row per implementation and shape, and the FP8 table at the end prints them.

Prints one line per measurement (`l05 impl=... dim=... causal=... seq=... ms=... tflops=...`; a
conversion's line has `gbs=... pct_hbm=...` in place of tflops), then a table with the best bf16
lesson-05 version over SDPA flash, SDPA cuDNN and lesson 04's version 7, then the FP8 figures: both
kernels alone and cuDNN's FP8, both versions end to end over version 5, the conversions' GB/s and
the errors against float64.

With --out DIR (or $PEERS_OUT) every figure is also a row of DIR/peers-lesson05.csv, in the columns
of bench/peer_timing.py (a conversion's row fills bytes, gbs and pct_hbm, and leaves tflops, check
and max_abs empty); --csv FILE keeps its own short format (tflops empty for a conversion).
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
from lesson02_peers import hbm_peak_gbs
from peer_timing import L2Flush, PeerCsv, peers_out_dir, software, timings_in_turns

# Lesson 04's version timed beside lesson 05's: its fastest, the kernel lesson 05 starts from.
L04_BEST = 7
# Version 6's kernel (one scale per tensor) timed alone, on tensors converted before the timing.
FP8_KERNEL = "fp8-kernel-only"
# Version 7's kernel (one power-of-two scale per tile of 128 rows), timed the same way.
FP8T_KERNEL = "fp8t-kernel-only"
# Version 10's kernel (version 7's workspace, 256-key tiles, turns at the exponentials), the same way.
FP8W_KERNEL = "fp8w-kernel-only"
# Version 11's kernel (version 10 in persistent blocks), the same way.
FP8P_KERNEL = "fp8p-kernel-only"
# Version 12's kernel (version 11 converting Q itself), on the bf16 Q and K, V converted before.
FP8Q_KERNEL = "fp8q-kernel-only"
# Version 13's kernel (version 12 with half the exponentials on the FMA pipes), the same way.
FP8X_KERNEL = "fp8x-kernel-only"
# Version 14's kernel (version 13 with the diagonal's half tile), the same way.
FP8H_KERNEL = "fp8h-kernel-only"
# Each FP8 version's conversion of Q, K and V timed alone.
FP8_CONVERT = "fp8-convert"
FP8T_CONVERT = "fp8t-convert"
# Version 12's conversion: K and V alone.
FP8Q_CONVERT = "fp8q-convert"
# The FP8 versions by the name the library gives them: the prefix of their C entry points, the row
# of their kernel alone and the row of their conversion alone (None: another version's, versions
# 10 and 11's being version 7's and versions 13 and 14's version 12's, not timed again).
FP8_E4M3, FP8_TILES, FP8_WIDE, FP8_PERSISTENT = "fp8-e4m3", "fp8-tiles", "fp8-wide", "fp8-persistent"
FP8_Q_IN_KERNEL, FP8_EXP_FMA, FP8_HALF_TILE = "fp8-q-in-kernel", "fp8-exp-fma", "fp8-half-tile"
FP8_PARTS = {FP8_E4M3: ("l05_fp8", FP8_KERNEL, FP8_CONVERT),
             FP8_TILES: ("l05_fp8t", FP8T_KERNEL, FP8T_CONVERT),
             FP8_WIDE: ("l05_fp8w", FP8W_KERNEL, None),
             FP8_PERSISTENT: ("l05_fp8p", FP8P_KERNEL, None),
             FP8_Q_IN_KERNEL: ("l05_fp8q", FP8Q_KERNEL, FP8Q_CONVERT),
             FP8_EXP_FMA: ("l05_fp8x", FP8X_KERNEL, None),
             FP8_HALF_TILE: ("l05_fp8h", FP8H_KERNEL, None)}
# The entry points whose kernel reads the bf16 Q as its first argument.
FP8_Q_ARG = {"l05_fp8q", "l05_fp8x", "l05_fp8h"}
# The bytes a conversion must move: each bf16 value of Q, K and V read once (2 bytes) and its e4m3
# written once (1 byte); the scales are not counted.
CONVERT_BYTES_PER_VALUE = 3
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
    # Each FP8 version's two halves, to time its kernel and its conversion apart. Version 6's are
    # required; a build older than version 7 lacks version 7's, and only its rows say so.
    fp8 = {"l05_fp8": fp8_entry_points(lib, "l05_fp8")}
    for prefix, ver in (("l05_fp8t", 7), ("l05_fp8w", 10), ("l05_fp8p", 11), ("l05_fp8q", 12),
                        ("l05_fp8x", 13), ("l05_fp8h", 14)):
        try:
            fp8[prefix] = fp8_entry_points(lib, prefix)
        except AttributeError as e:
            fp8[prefix] = (f"{os.path.basename(path)} lacks version {ver}'s entry points "
                           f"{prefix}_* ({e})").replace("\n", " ")
    return lib, fp8


def fp8_entry_points(lib, prefix):
    """An FP8 version's entry points (PREFIX_workspace_bytes, _quantize, _attention, _forward, the
    same signatures for versions 6, 7, 10, 11 and 12, but for version 12's _attention, which takes
    the bf16 Q first) with their ctypes signatures, as a dict by suffix; AttributeError when the
    library lacks one."""
    fns = {part: getattr(lib, f"{prefix}_{part}")
           for part in ("workspace_bytes", "quantize", "attention", "forward")}
    fns["workspace_bytes"].restype = ctypes.c_size_t
    fns["workspace_bytes"].argtypes = [ctypes.c_int] * 6
    fns["quantize"].restype = ctypes.c_int
    fns["quantize"].argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 6 + [
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    fns["attention"].restype = ctypes.c_int
    fns["attention"].argtypes = ([ctypes.c_void_p] if prefix in FP8_Q_ARG else []) + [
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                 ctypes.c_void_p] + [ctypes.c_int] * 7 + [ctypes.c_float,
                                                                         ctypes.c_void_p]
    fns["forward"].restype = ctypes.c_int
    fns["forward"].argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 7 + [
        ctypes.c_float, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    return fns


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
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds in which a shape's rows take turns (--iters runs each in all)")
    ap.add_argument("--seqs", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--versions", default="",
                    help="lesson-05 versions, e.g. 1,2 (default: every one the library has)")
    ap.add_argument("--batch", type=int, default=0,
                    help="sequences per call (default: 16384 / seq)")
    ap.add_argument("--heads", default="",
                    help="query heads, comma-separated (default: 2048 / dim)")
    ap.add_argument("--kv-heads", type=int, default=0,
                    help="K and V heads, dividing every --heads (default: as many as query heads)")
    ap.add_argument("--peak-gbs", type=float, default=0.0,
                    help="HBM peak in GB/s for pct_hbm (default: 2 x memory clock x bus width)")
    ap.add_argument("--busy-us", type=float, default=100.0,
                    help="microseconds of a sleep kernel after each L2 flush, covering the host's "
                         "launch cost (0: none, the bench's method until 2026-11-29)")
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
    lib, fp8_fns = load_lib(a.lib)
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
    peak = hbm_peak_gbs(torch.cuda.current_device(), a.peak_gbs)
    if any(names[v] in FP8_PARTS for v in versions):
        print(f"HBM peak: {peak:.0f} GB/s (the conversions' pct_hbm divides by it)", flush=True)
    flush = L2Flush(a.busy_us)
    print(f"timing: {flush.what}", flush=True)

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
                kv_heads = a.kv_heads or heads
                if heads % kv_heads:
                    ap.error(f"--kv-heads {kv_heads} does not divide {heads} query heads")
                gen = torch.Generator(device="cuda").manual_seed(seq * 1000 + dim + causal)
                q, k, v = (torch.randn(batch, seq, nh, dim, device="cuda", dtype=torch.bfloat16,
                                       generator=gen) for nh in (heads, kv_heads, kv_heads))
                o = torch.empty_like(q)
                lse = torch.empty(batch, heads, seq, device="cuda", dtype=torch.float32)
                qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                flops = 4.0 * batch * heads * seq * seq * dim / (2.0 if causal else 1.0)
                impls = {}

                def sdpa(backend):
                    def run():
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(
                                qt, kt, vt, is_causal=bool(causal),
                                **({"enable_gqa": True} if kv_heads != heads else {}))
                    return run
                impls["sdpa-flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
                impls["sdpa-cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
                if kv_heads == heads:
                    ref = impls["sdpa-flash"]().transpose(1, 2).float()
                else:  # the check's reference on K and V repeated to every query head
                    g_ = heads // kv_heads
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        ref = F.scaled_dot_product_attention(
                            qt, kt.repeat_interleave(g_, 1), vt.repeat_interleave(g_, 1),
                            is_causal=bool(causal)).transpose(1, 2).float()
                vmax = v.abs().max().item()

                def lesson(forward, ver, tag):
                    def run():
                        err = forward(ver, dim, q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                      o.data_ptr(), lse.data_ptr(), batch, heads, kv_heads, seq,
                                      seq, causal, 0.0, stream)
                        if err != 0:
                            raise RuntimeError(f"{tag}_forward({ver}) returned CUDA error {err}")
                    return run
                impls[l04_name] = lesson(lib.l04_forward, L04_BEST, "l04")
                for ver, name in zip(versions, vnames):
                    if "fp8" in name and dim != 128:
                        continue  # FP8 is built for dim 128 only
                    if name.endswith(("three-bf16", "persistent-bf16")) and dim != 64:
                        continue  # three consumers (versions 8, 9) are built for dim 64 only
                    impls[name] = lesson(lib.l05_forward, ver, "l05")
                ours = set(vnames) | {l04_name}
                # Each selected FP8 version's kernel alone and conversion alone, on workspaces of
                # their own (by row name; freed with the shape's tensors).
                ws, moved, converts = {}, {}, {}
                values = batch * seq * heads * dim + 2 * batch * seq * kv_heads * dim  # Q; K, V

                def refused(err):
                    def run():
                        raise RuntimeError(err)
                    return run
                for ver in (versions if dim == 128 else []):
                    if names[ver] not in FP8_PARTS:
                        continue
                    prefix, kernel_row, convert_row = FP8_PARTS[names[ver]]
                    ours |= {kernel_row, convert_row} - {None}
                    if convert_row:  # version 12's pass: K and V alone
                        moved[convert_row] = CONVERT_BYTES_PER_VALUE * (
                            values - batch * seq * heads * dim if prefix in FP8_Q_ARG else values)
                    fns = fp8_fns[prefix]
                    nbytes = 0 if isinstance(fns, str) else fns["workspace_bytes"](
                        batch, heads, kv_heads, seq, seq, dim)
                    if nbytes == 0:
                        why = fns if isinstance(fns, str) else (
                            f"{prefix}_workspace_bytes returned 0 for this shape")
                        impls[kernel_row] = refused(why)
                        if convert_row:
                            converts[convert_row] = refused(why)
                    else:
                        vrow = vnames[versions.index(ver)]
                        for row in (kernel_row, convert_row, vrow):
                            if row:
                                ws[row] = torch.empty(nbytes, device="cuda", dtype=torch.uint8)

                        def end_to_end(row=vrow, forward=fns["forward"], nbytes=nbytes,
                                       prefix=prefix):
                            # conversion and kernel, as the lesson's program times them: on a
                            # workspace allocated once (l05_forward allocates one per call, and a
                            # stream-ordered pool that releases at each synchronisation makes
                            # that a fresh allocation every time)
                            err = forward(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                                          lse.data_ptr(), batch, heads, kv_heads, seq, seq, dim,
                                          causal, dim ** -0.5, ws[row].data_ptr(), nbytes, stream)
                            if err != 0:
                                raise RuntimeError(f"{prefix}_forward returned CUDA error {err}")
                        impls[vrow] = end_to_end

                        def convert(row=convert_row, quantize=fns["quantize"], nbytes=nbytes,
                                    prefix=prefix):
                            err = quantize(q.data_ptr(), k.data_ptr(), v.data_ptr(), batch, heads,
                                           kv_heads, seq, seq, dim, ws[row].data_ptr(), nbytes,
                                           stream)
                            if err != 0:
                                raise RuntimeError(f"{prefix}_quantize returned CUDA error {err}")
                        if convert_row:
                            converts[convert_row] = convert

                        def fp8_kernel(row=kernel_row, attention=fns["attention"], nbytes=nbytes,
                                       prefix=prefix):
                            err = attention(*([q.data_ptr()] if prefix in FP8_Q_ARG else []),
                                            ws[row].data_ptr(), nbytes, o.data_ptr(),
                                            lse.data_ptr(), batch, heads, kv_heads, seq, seq, dim,
                                            causal, dim ** -0.5, stream)
                            if err != 0:
                                raise RuntimeError(f"{prefix}_attention returned CUDA error {err}")
                        try:  # the kernel's inputs, converted once before the timing
                            convert(row=kernel_row)
                            impls[kernel_row] = fp8_kernel
                        except RuntimeError as e:
                            impls[kernel_row] = refused(str(e))
                    if names[ver] != FP8_E4M3:
                        continue
                    # cuDNN's FP8 attention on version 6's e4m3 values, built once per shape
                    cudnn_out = None
                    try:
                        if fe is None:
                            raise RuntimeError(fe_note)
                        (q8, k8, v8), descales = fp8_inputs(q, k, v)
                        impls[CUDNN_FP8], cudnn_out, _ = fp8_sdpa(
                            fe, handle, q8, k8, v8, descales, vmax, causal, dim ** -0.5)
                    except Exception as e:
                        impls[CUDNN_FP8] = refused(f"{type(e).__name__}: {e}".replace("\n", " "))
                impls.update(converts)  # the conversions last, after every kernel

                picks = default_picks(batch, heads, seq)
                ref64 = fp64_rows(q, k, v, causal, dim ** -0.5, picks)
                res, gbs = {}, {}  # TFLOP/s of the attention rows, GB/s of the conversions
                shape = dict(dtype="bf16", batch=batch, heads=heads, kv_heads=kv_heads, seq_q=seq,
                             seq_kv=seq, dim=dim, causal=causal)
                what = "attention forward, causal counted as half the pairs"
                what_convert = ("Q, K, V bf16 to e4m3 alone; bytes: each value read (2 B) and "
                                "written (1 B) once")
                what_convert_kv = ("K, V bf16 to e4m3 alone (Q is converted in the kernel); bytes: "
                                   "each value read (2 B) and written (1 B) once")
                checked = {}  # name: None for a conversion, else (note, max |diff|, check)

                def failed(name, e):
                    nonlocal status
                    if name in ours:
                        status = 1
                    print(f"l05 impl={name} dim={dim} causal={causal} seq={seq} error={e}")
                    out.row(impl=name, what=(what_convert_kv if name == FP8Q_CONVERT else
                                             what_convert if name in moved else what),
                            check=f"error: {e}".replace("\n", " "), **shape)
                for name, fn in impls.items():  # each run once and checked
                    try:
                        got = fn()
                        torch.cuda.synchronize()
                        if name in moved:  # a conversion alone: nothing to check, bytes over time
                            checked[name] = None
                            continue
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
                        checked[name] = (note, diff, check)
                    except Exception as e:  # a backend that refuses the shape: report, go on
                        failed(name, e)
                # then timed, all of this shape's rows taking turns (peer_timing.timings_in_turns)
                timed = timings_in_turns({n: impls[n] for n in checked}, flush, a.iters, a.warmup,
                                         a.rounds)
                for name, info in checked.items():
                    if isinstance(timed[name], Exception):
                        failed(name, timed[name])
                        continue
                    ms, best = timed[name]
                    if info is None:
                        gbs[name] = moved[name] / (ms * 1e-3) / 1e9
                        pct = 100.0 * gbs[name] / peak if peak == peak else float("nan")
                        print(f"l05 impl={name} dim={dim} causal={causal} seq={seq} "
                              f"batch={batch} heads={heads} ms={ms:.4f} gbs={gbs[name]:.1f} "
                              f"pct_hbm={pct:.1f}", flush=True)
                        csv.append(f"{name},{dim},{causal},{seq},{batch},{heads},{ms:.5f},")
                        out.row(impl=name, bytes=moved[name],
                                what=what_convert_kv if name == FP8Q_CONVERT else what_convert,
                                ms=f"{ms:.5f}", min_ms=f"{best:.5f}", gbs=f"{gbs[name]:.2f}",
                                pct_hbm=f"{pct:.2f}" if pct == pct else "", **shape)
                        continue
                    note, diff, check = info
                    res[name] = flops / (ms * 1e-3) / 1e12
                    print(f"l05 impl={name} dim={dim} causal={causal} seq={seq} batch={batch} "
                          f"heads={heads} ms={ms:.4f} tflops={res[name]:.1f}{note}", flush=True)
                    csv.append(f"{name},{dim},{causal},{seq},{batch},{heads},{ms:.5f},{res[name]:.2f}")
                    out.row(impl=name, what=what, ms=f"{ms:.5f}", min_ms=f"{best:.5f}",
                            tflops=f"{res[name]:.2f}", check=check,
                            max_abs=f"{diff:.3e}" if diff is not None else None, **shape)
                rows.append((dim, causal, seq, batch, heads, res, gbs))
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
          f"among the bf16 versions; fp8k = version 6's FP8 kernel alone ({FP8_KERNEL})")
    print(f"{'dim':>4} {'causal':>6} {'seq':>6} {'batch':>5} {'heads':>5} {'flash':>7} {'cudnn':>7} {'l04':>7} " +
          " ".join(f"{'v' + str(v):>6}" for v in versions) +
          f" {'fp8k':>6} {'best':>5} {'tflops':>7} {'best/flash':>10} {'best/cudnn':>10}"
          f" {'best/l04':>8}")
    for dim, causal, seq, batch, heads, res, _ in rows:
        # every FP8 name holds "fp8": v6-fp8-e4m3, v7-fp8-tiles (and fp8-..., fp8t-..., cudnn-fp8)
        best_ver, best = max(((v, res.get(n, 0.0)) for v, n in zip(versions, vnames)
                              if "fp8" not in n), key=lambda t: t[1], default=(None, 0.0))
        tag = f"v{best_ver}" if best > 0 else "-"
        fl, cu, l4 = res.get("sdpa-flash", 0.0), res.get("sdpa-cudnn", 0.0), res.get(l04_name, 0.0)
        print(f"{dim:>4} {causal:>6} {seq:>6} {batch:>5} {heads:>5} {fl:>7.1f} {cu:>7.1f} {l4:>7.1f} " +
              " ".join(f"{res.get(n, 0.0):>6.1f}" for n in vnames) +
              f" {res.get(FP8_KERNEL, 0.0):>6.1f} {tag:>5} {best:>7.1f} {best / fl if fl else 0:>10.2f}"
              f" {best / cu if cu else 0:>10.2f} {best / l4 if l4 else 0:>8.2f}")
    # the FP8 versions end to end (conversion timed), by the name the library gives them
    e2e = {names[v]: n for v, n in zip(versions, vnames)}
    v6, v7, v10, v11, v12, v13, v14 = (e2e.get(n) for n in (FP8_E4M3, FP8_TILES, FP8_WIDE,
                                                             FP8_PERSISTENT, FP8_Q_IN_KERNEL,
                                                             FP8_EXP_FMA, FP8_HALF_TILE))
    fp8 = [r for r in rows if r[0] == 128 and (r[6] or any(
        r[5].get(n) for n in (FP8_KERNEL, FP8T_KERNEL, FP8W_KERNEL, FP8P_KERNEL, FP8Q_KERNEL,
                              FP8X_KERNEL, FP8H_KERNEL, CUDNN_FP8, v6, v7, v10, v11, v12, v13,
                              v14) if n))]
    if fp8:
        err = {(x["impl"], x["causal"], x["seq"]): x for x in accuracy}
        v5 = next((n for n in vnames if n.startswith("v5-")), None)
        print(f"\nFP8 at dim 128: TFLOP/s of the kernels alone, on inputs converted before the "
              f"timing (fp8k: version 6's, {FP8_KERNEL};\nfp8tk: version 7's, {FP8T_KERNEL}; "
              f"fp8wk: version 10's, {FP8W_KERNEL}; fp8pk: version 11's, {FP8P_KERNEL}; fp8qk: "
              f"version 12's, {FP8Q_KERNEL}; fp8xk: version 13's, {FP8X_KERNEL};\nfp8hk: version 14's, "
              f"{FP8H_KERNEL}), and of cuDNN's FP8 ({CUDNN_FP8}); v6/v5 ... v14/v5: the versions end to end (conversion timed) over version 5; "
              f"cvt6, cvt7, cvt12: the conversions alone\n"
              f"({FP8_CONVERT}, {FP8T_CONVERT}, {FP8Q_CONVERT}), GB/s of "
              f"{CONVERT_BYTES_PER_VALUE} bytes a value of Q, K and V (K and V for cvt12; HBM peak "
              f"{peak:.0f} GB/s);\nthe error against float64 on sampled rows (relative L2)")
        print(f"{'causal':>6} {'seq':>6} {'fp8k':>6} {'fp8tk':>6} {'fp8wk':>6} {'fp8pk':>6} "
              f"{'fp8qk':>6} {'fp8xk':>6} {'fp8hk':>6} {'cudnn-fp8':>9} {'fp8pk/cudnn':>11} "
              f"{'fp8xk/cudnn':>11} {'fp8hk/cudnn':>11} {'fp8k/v5':>7} {'fp8tk/v5':>8} "
              f"{'fp8wk/v5':>8} {'fp8pk/v5':>8} {'fp8qk/v5':>8} {'fp8xk/v5':>8} {'fp8hk/v5':>8} "
              f"{'v6/v5':>5} {'v7/v5':>5} {'v10/v5':>6} {'v11/v5':>6} {'v12/v5':>6} {'v13/v5':>6} "
              f"{'v14/v5':>6} {'cvt6':>5} "
              f"{'cvt7':>5} {'cvt12':>5} "
              f"{'err fp8k':>9} {'err fp8tk':>9} {'err fp8wk':>9} {'err fp8pk':>9} "
              f"{'err fp8qk':>9} {'err fp8xk':>9} {'err fp8hk':>9} {'err cudnn':>9} {'err v5':>9}")
        for dim, causal, seq, batch, heads, res, gbs in fp8:
            fk, ft, fw, fp, fq, fx, fh, cf = (res.get(n, 0.0) for n in (FP8_KERNEL, FP8T_KERNEL,
                                                                         FP8W_KERNEL, FP8P_KERNEL,
                                                                         FP8Q_KERNEL, FP8X_KERNEL,
                                                                         FP8H_KERNEL, CUDNN_FP8))
            b5, e6, e7, e10, e11, e12, e13, e14 = (res.get(n, 0.0) if n else 0.0
                                                   for n in (v5, v6, v7, v10, v11, v12, v13, v14))

            def over(x, y):
                return x / y if y else 0

            def e(name):
                x = err.get((name, causal, seq))
                return x["rel_l2"] if x else "-"
            print(f"{causal:>6} {seq:>6} {fk:>6.1f} {ft:>6.1f} {fw:>6.1f} {fp:>6.1f} {fq:>6.1f} "
                  f"{fx:>6.1f} {fh:>6.1f} {cf:>9.1f} {over(fp, cf):>11.2f} {over(fx, cf):>11.2f} "
                  f"{over(fh, cf):>11.2f} "
                  f"{over(fk, b5):>7.2f} {over(ft, b5):>8.2f} "
                  f"{over(fw, b5):>8.2f} {over(fp, b5):>8.2f} {over(fq, b5):>8.2f} "
                  f"{over(fx, b5):>8.2f} {over(fh, b5):>8.2f} "
                  f"{over(e6, b5):>5.2f} {over(e7, b5):>5.2f} {over(e10, b5):>6.2f} "
                  f"{over(e11, b5):>6.2f} {over(e12, b5):>6.2f} {over(e13, b5):>6.2f} "
                  f"{over(e14, b5):>6.2f} "
                  f"{gbs.get(FP8_CONVERT, 0.0):>5.0f} {gbs.get(FP8T_CONVERT, 0.0):>5.0f} "
                  f"{gbs.get(FP8Q_CONVERT, 0.0):>5.0f} "
                  f"{e(FP8_KERNEL):>9} {e(FP8T_KERNEL):>9} {e(FP8W_KERNEL):>9} "
                  f"{e(FP8P_KERNEL):>9} {e(FP8Q_KERNEL):>9} {e(FP8X_KERNEL):>9} {e(FP8H_KERNEL):>9} "
                  f"{e(CUDNN_FP8):>9} {e(v5) if v5 else '-':>9}")
    return status


if __name__ == "__main__":
    sys.exit(main())
