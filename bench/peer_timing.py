"""Timing for the peer scripts, the same method as the harness (common/timer.c).

CUDA events around each run, warm-up first, the median of the timed runs, and the L2 flushed before
each run by *reading* a zeroed buffer twice the L2's size. A read leaves the L2 full of clean lines;
a write (buffer.zero_()) would leave dirty ones that the timed kernel then pays to write back, up to
an L2's worth of extra traffic, which handicaps memory-bound kernels by a few percent.

PeerCsv writes what a peer script measures as CSV too, one row per figure, for the results archive
(docs/results/README.md): every script writes the same columns into peers-lessonNN.csv in the folder
given by --out or $PEERS_OUT, and scripts/gpu-suite.sh joins them into the run's peers.csv.
"""
import csv
import os
import time

import torch

# The columns of every peer CSV; a figure leaves the ones that do not apply to it empty.
#   lesson         01, 02, 04
#   impl           what ran: torch.copy, torch.softmax, sdpa-flash, v7-tiles-bf16, lesson02.v6-...
#   what           the operation in words
#   dtype          fp32 or bf16
#   batch .. causal  the attention shape (lesson 01's naive attention, lesson 04)
#   rows, cols     a matrix shape (lesson 02's softmax; lesson 04's GEMM: M and N, K in dim)
#   bytes          bytes moved per run as the figure counts them (lesson 01: per buffer for the copy)
#   pinned         host-link copies: 1 for pinned host memory, 0 for pageable
#   iters          timed runs (the figure is their median)
#   ms, min_ms     median and fastest run
#   tflops, gbs    rates from ms (causal attention: visible pairs only)
#   pct_hbm        gbs over the HBM peak from clock x bus width
#   check          ok, BAD..., skipped: why, error: why
#   max_abs        largest difference from the script's reference (torch's output, or flash's)
#   device, torch, cuda, cudnn   the device's name and the software versions
PEER_COLUMNS = ["lesson", "impl", "what", "dtype", "batch", "heads", "kv_heads", "seq_q", "seq_kv",
                "dim", "causal", "rows", "cols", "bytes", "pinned", "iters", "ms", "min_ms",
                "tflops", "gbs", "pct_hbm", "check", "max_abs", "device", "torch", "cuda", "cudnn"]


def peers_out_dir(arg):
    """The folder for the peer CSV: the script's --out, else $PEERS_OUT, else None (no CSV)."""
    return arg or os.environ.get("PEERS_OUT") or None


class PeerCsv:
    """peers-lessonNN.csv in a folder (nothing when the folder is None); row() writes one figure."""

    def __init__(self, lesson, out_dir):
        self.lesson = f"{int(lesson):02d}"
        self.common = {}
        self.file = None
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            self.path = os.path.join(out_dir, f"peers-lesson{self.lesson}.csv")
            self.file = open(self.path, "w", newline="")
            self.writer = csv.DictWriter(self.file, fieldnames=PEER_COLUMNS, extrasaction="raise")
            self.writer.writeheader()

    def set_common(self, **kv):
        """Columns every later row carries (device, versions)."""
        self.common.update(kv)

    def row(self, **kv):
        if self.file is None:
            return
        r = {c: "" for c in PEER_COLUMNS}
        r.update(self.common)
        r.update({k: v for k, v in kv.items() if v is not None})
        r["lesson"] = self.lesson
        self.writer.writerow(r)
        self.file.flush()

    def close(self):
        if self.file is not None:
            self.file.close()
            self.file = None


def software(props):
    """device, torch, cuda and cudnn columns for PeerCsv.set_common()."""
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda or "",
            "cudnn": cudnn if cudnn is not None else ""}


class L2Flush:
    """Evicts the L2 of the current device by reading a zeroed buffer of twice its size, then, with
    busy_us > 0, runs a sleep kernel of that many microseconds (torch.cuda._sleep, which touches no
    memory), so that the GPU is still busy while the host enqueues the timed run: the figure is the
    GPU's time, not the host's launch cost (Python, PyTorch's dispatch, cuDNN's execute, ctypes).
    Without it a run starts as soon as the host has enqueued it and the flush has finished, and
    whatever the launch takes beyond the flush is in the figure: on an H200 of 2026-11-29 cuDNN's
    decode at dim 64 with 1k keys took 59-91 us that way and 20.6 us with the sleep kernel
    (docs/results/h200-l06t-2026-11-29/launch-cost.log). what says which, for the bench's header."""

    def __init__(self, busy_us=0.0):
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = getattr(props, "L2_cache_size", 0) or (64 << 20)
        self.buf = torch.zeros(2 * l2 // 4, dtype=torch.float32, device="cuda")
        khz = getattr(props, "clock_rate", 0) or 2000000  # the SM clock, for the sleep's cycles
        self.cycles = int(busy_us * khz / 1e3) if busy_us > 0 else 0
        self.sleep = getattr(torch.cuda, "_sleep", None) if self.cycles > 0 else None
        self.what = ("L2 flushed before each run, then " +
                     (f"a {busy_us:g} us sleep kernel covering the host's launch cost"
                      if self.sleep is not None else
                      "no sleep kernel (host launch cost not covered beyond the flush)"))

    def __call__(self):
        self.buf.sum()  # one read pass; writes only a scalar
        if self.sleep is not None:
            self.sleep(self.cycles)  # touches no memory: the L2 stays as the flush left it


def _median_min(times):
    times = sorted(times)
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return median, times[0]


def _timed_run(fn, flush, start, stop):
    flush()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def timings(fn, flush, iters, warmup):
    """(median, min) in ms of `iters` runs of fn, each alone between two events, L2 flushed first."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    return _median_min([_timed_run(fn, flush, start, stop) for _ in range(max(1, iters))])


def turn_plan(iters, rounds):
    """(rounds, timed runs a round) of timings_in_turns(): no more rounds than timed runs, and at
    least `iters` timed runs in all."""
    rounds = max(1, min(rounds, iters))
    return rounds, -(-max(1, iters) // rounds)


def timings_in_turns(fns, flush, iters, warmup, rounds):
    """timings() for several functions taking turns. Each is warmed up, then in each of `rounds`
    rounds every function runs once untimed and then ceil(iters / rounds) times timed, each timed
    run alone between two events with the L2 flushed first, the order rotated by one from round to
    round. Timed one block after another, a function finds the GPU as the ones before it left it
    (clocks and temperature drift over a call by several percent); taking turns spreads that drift
    over all of them alike. The untimed run keeps what a block gave every run but its first: the
    same function just before it. cuDNN called through PyTorch or the cuDNN frontend ran its first
    run after another function's 1.5-4.7% slower than its second, the lessons' single launches
    0.3-1.5% (docs/results/h200-l05p-2026-11-29/turns-vs-blocks.log).

    fns: {name: fn}. Returns {name: (median, min) in ms}, or {name: the exception} for a function
    that raised, which then leaves the rounds while the others go on."""
    out, times = {}, {name: [] for name in fns}
    for name, fn in fns.items():
        try:
            for _ in range(warmup):
                fn()
        except Exception as e:  # reported to the caller, the others still timed
            out[name] = e
    torch.cuda.synchronize()
    live = [name for name in fns if name not in out]
    rounds, per_round = turn_plan(iters, rounds)
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for r in range(rounds):
        k = r % len(live) if live else 0
        for name in live[k:] + live[:k]:
            if name in out:
                continue
            try:
                fns[name]()
                torch.cuda.synchronize()
                times[name] += [_timed_run(fns[name], flush, start, stop) for _ in range(per_round)]
            except Exception as e:
                out[name] = e
    for name in live:
        if name not in out:
            out[name] = _median_min(times[name])
    return out


def turns_and_host_us(fns, flush, iters, warmup, rounds, host_runs):
    """timings_in_turns(), then for each function timed, its host cost: the mean wall time of
    host_runs calls back to back (the host's side of a launch, which the sleep kernel keeps out of
    the timed figure). Returns {name: (median, min in ms, host us)}, or {name: the exception} for a
    function that raised, in the turns or in the host's runs."""
    out = timings_in_turns(fns, flush, iters, warmup, rounds) if fns else {}
    for name, t in out.items():
        if isinstance(t, Exception):
            continue
        try:
            t0 = time.perf_counter()
            for _ in range(host_runs):
                fns[name]()
            host_us = (time.perf_counter() - t0) / host_runs * 1e6
            torch.cuda.synchronize()
            out[name] = (t[0], t[1], host_us)
        except Exception as e:
            out[name] = e
    return out


def median_ms(fn, flush, iters, warmup):
    """The median of timings()."""
    return timings(fn, flush, iters, warmup)[0]
