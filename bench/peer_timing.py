"""Timing for the peer scripts, the same method as the harness (common/timer.c).

CUDA events around each run, warm-up first, the median of the timed runs, and the L2 flushed before
each run by *reading* a zeroed buffer twice the L2's size. A read leaves the L2 full of clean lines;
a write (buffer.zero_()) would leave dirty ones that the timed kernel then pays to write back, up to
an L2's worth of extra traffic, which handicaps memory-bound kernels by a few percent.
"""
import torch


class L2Flush:
    """Evicts the L2 of the current device by reading a zeroed buffer of twice its size."""

    def __init__(self):
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = getattr(props, "L2_cache_size", 0) or (64 << 20)
        self.buf = torch.zeros(2 * l2 // 4, dtype=torch.float32, device="cuda")

    def __call__(self):
        self.buf.sum()  # one read pass; writes only a scalar


def timings(fn, flush, iters, warmup):
    """(median, min) in ms of `iters` runs of fn, each alone between two events, L2 flushed first."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(max(1, iters)):
        flush()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return median, times[0]


def median_ms(fn, flush, iters, warmup):
    """The median of timings()."""
    return timings(fn, flush, iters, warmup)[0]
