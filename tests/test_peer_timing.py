#!/usr/bin/env python3
"""The benches' timing method (bench/peer_timing.py) on the CPU, with a stand-in for torch.

    tests/test_peer_timing.py SOURCE_DIR

The benches can only run on a GPU, but what decides their figures is plain Python: the rounds of
timings_in_turns(), the order the rows take in each, the untimed run that opens every visit, a row
that raises leaving the others timed, the host's runs of turns_and_host_us(), and the sleep kernel
L2Flush(busy_us) runs after its read. This test imports the module with a small fake `torch` (events
that read a clock the fake kernels advance, a `_sleep` that records its cycles) and checks each of
those against what it must be. Every check can fail: each one names what it expected and what it
got. Exit 0 when all pass, 1 otherwise. Standard library only.
"""
import os
import sys
import types


class FakeClock:
    """The GPU's time: each fake kernel advances it by its duration."""
    now = 0.0


class FakeEvent:
    def __init__(self, enable_timing=True):
        self.t = None

    def record(self):
        self.t = FakeClock.now

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.t - self.t


class FakeBuffer:
    def __init__(self, log):
        self.log = log

    def sum(self):
        self.log.append("flush")


def fake_torch(log, clock_khz):
    torch = types.ModuleType("torch")
    cuda = types.SimpleNamespace()
    cuda.Event = FakeEvent
    cuda.synchronize = lambda: None
    cuda.current_device = lambda: 0
    cuda.get_device_properties = lambda dev: types.SimpleNamespace(L2_cache_size=1 << 20,
                                                                   clock_rate=clock_khz)
    cuda._sleep = lambda cycles: log.append(("sleep", cycles))
    torch.cuda = cuda
    torch.float32 = "float32"
    torch.zeros = lambda *a, **k: FakeBuffer(log)
    return torch


def main(argv):
    src = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    log = []
    sys.modules["torch"] = fake_torch(log, clock_khz=1980000)
    sys.path.insert(0, os.path.join(src, "bench"))
    import peer_timing as pt

    bad = []

    def expect(what, got, want):
        if got != want:
            bad.append(f"{what}: expected {want!r}, got {got!r}")

    # turn_plan: no more rounds than timed runs, at least `iters` timed runs in all
    expect("turn_plan(10, 5)", pt.turn_plan(10, 5), (5, 2))
    expect("turn_plan(20, 5)", pt.turn_plan(20, 5), (5, 4))
    expect("turn_plan(3, 5)", pt.turn_plan(3, 5), (3, 1))
    expect("turn_plan(11, 5)", pt.turn_plan(11, 5), (5, 3))
    expect("turn_plan(0, 5)", pt.turn_plan(0, 5), (1, 1))

    # timings_in_turns: three rows of 1, 2 and 3 ms; "c" raises on its 4th call
    calls = []

    def kernel(name, ms, fail_at=None):
        def run():
            calls.append(name)
            if fail_at is not None and calls.count(name) == fail_at:
                raise RuntimeError(f"{name} failed")
            FakeClock.now += ms
        return run
    fns = {"a": kernel("a", 1.0), "b": kernel("b", 2.0), "c": kernel("c", 3.0, fail_at=4)}
    out = pt.timings_in_turns(fns, lambda: None, iters=4, warmup=1, rounds=2)
    expect("a's (median, min)", out.get("a"), (1.0, 1.0))
    expect("b's (median, min)", out.get("b"), (2.0, 2.0))
    expect("c's result is its exception", type(out.get("c")).__name__, "RuntimeError")
    # warm-up a b c; round 0: a (untimed + 2 timed), b (3), c (untimed, 2 timed, the 2nd raises);
    # round 1 rotated by one: b (3), then a (3); c has left the rounds
    want = (["a", "b", "c"] + ["a"] * 3 + ["b"] * 3 + ["c"] * 3 + ["b"] * 3 + ["a"] * 3)
    expect("the order of the calls", calls, want)

    # turns_and_host_us: the host's runs follow the turns; a row that raises there is its error
    calls.clear()
    fns = {"a": kernel("a", 1.0), "d": kernel("d", 1.0, fail_at=6)}
    out = pt.turns_and_host_us(fns, lambda: None, iters=2, warmup=0, rounds=2, host_runs=3)
    got_a = out.get("a")
    expect("a gets (median, min, host us)", isinstance(got_a, tuple) and len(got_a), 3)
    expect("a's median", got_a[0] if isinstance(got_a, tuple) else None, 1.0)
    expect("d's host runs raised", type(out.get("d")).__name__, "RuntimeError")
    expect("a ran 2 rounds x (1 + 1) then 3 host runs", calls.count("a"), 7)

    # L2Flush: the read, then the sleep kernel of busy_us at the SM clock (kHz)
    log.clear()
    flush = pt.L2Flush(100.0)
    flush()
    expect("L2Flush(100) runs", log, ["flush", ("sleep", 198000)])
    expect("L2Flush(100).what", "100 us sleep kernel" in flush.what, True)
    log.clear()
    flush = pt.L2Flush()
    flush()
    expect("L2Flush() runs", log, ["flush"])
    expect("L2Flush().what", "no sleep kernel" in flush.what, True)

    for line in bad:
        print("test_peer_timing: " + line)
    print(f"test_peer_timing: {'every check passed' if not bad else f'{len(bad)} checks FAILED'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
