#!/usr/bin/env python3
"""bench/peers_median.py on made-up CSVs: the row each process measured, and the one it keeps.

    tests/test_peers_median.py SOURCE_DIR

Three processes time two implementations on two shapes; the test checks that the combined CSV
holds, for each row, the median process's figures together (its ms with its own tflops), the
fastest run of any process, the worst check and error, the first process's order, a row that only
some processes timed, and that columns that differ between processes are refused. Every check can
fail and says what it expected and what it got. Exit 0 when all pass. Standard library only.
"""
import csv
import importlib.util
import io
import os
import sys
import tempfile

COLUMNS = ["lesson", "impl", "seq_q", "dim", "causal", "iters", "ms", "min_ms", "tflops",
           "check", "max_abs", "device"]


def row(impl, seq, ms, min_ms, tflops, check="ok", max_abs="1.000e-03"):
    return {"lesson": "05", "impl": impl, "seq_q": str(seq), "dim": "128", "causal": "0",
            "iters": "10", "ms": ms, "min_ms": min_ms, "tflops": tflops, "check": check,
            "max_abs": max_abs, "device": "NVIDIA H200"}


def write(path, rows, columns=COLUMNS):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(__file__))
    spec = importlib.util.spec_from_file_location(
        "peers_median", os.path.join(src, "bench", "peers_median.py"))
    pm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pm)
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: expected {want!r}, got {got!r}")

    with tempfile.TemporaryDirectory() as tmp:
        # cudnn at 2k: 0.30, 0.20, 0.25 ms in processes 1-3 -> process 3's row (0.25, 500.0)
        p = [os.path.join(tmp, f"p{i}.csv") for i in (1, 2, 3)]
        write(p[0], [row("cudnn", 2048, "0.30000", "0.29000", "416.7"),
                     row("v5", 2048, "0.26000", "0.25500", "480.8"),
                     row("v5", 4096, "1.00000", "0.99000", "500.0"),
                     row("v14", 4096, "", "", "", check="error: no entry point")])
        write(p[1], [row("v5", 4096, "1.02000", "0.98000", "490.2"),
                     row("cudnn", 2048, "0.20000", "0.19000", "625.0"),
                     row("v5", 2048, "0.27000", "0.26000", "463.0", max_abs="5.000e-03"),
                     row("v14", 4096, "0.70000", "0.69000", "714.3")])
        write(p[2], [row("cudnn", 2048, "0.25000", "0.24000", "500.0"),
                     row("v5", 2048, "0.25000", "0.24500", "500.0", check="BAD 0.5"),
                     row("v5", 4096, "1.01000", "1.00000", "495.0"),
                     row("v14", 4096, "0.72000", "0.71000", "694.4"),
                     row("sdpa-flash", 4096, "1.50000", "1.40000", "333.3")])
        out, every = os.path.join(tmp, "out.csv"), os.path.join(tmp, "all.csv")
        rc = pm.main([out, *p, "--all", every])
        expect("exit status", rc, 0)
        with open(out, newline="") as f:
            got = list(csv.DictReader(f))
        keyed = {(r["impl"], r["seq_q"]): r for r in got}
        expect("row order (the first process's, then new rows)",
               [(r["impl"], r["seq_q"]) for r in got],
               [("cudnn", "2048"), ("v5", "2048"), ("v5", "4096"), ("v14", "4096"),
                ("sdpa-flash", "4096")])
        c = keyed[("cudnn", "2048")]
        expect("cudnn 2k: the median process's ms", c["ms"], "0.25000")
        expect("cudnn 2k: its tflops with it", c["tflops"], "500.0")
        expect("cudnn 2k: the fastest run of any process", c["min_ms"], "0.19000")
        v = keyed[("v5", "2048")]
        expect("v5 2k: the median process's ms", v["ms"], "0.26000")
        expect("v5 2k: a bad check in any process is kept", v["check"], "BAD 0.5 (process 3)")
        expect("v5 2k: the largest error of any process", v["max_abs"], "5.000e-03")
        expect("v5 4k: the median of 1.00, 1.02, 1.01", keyed[("v5", "4096")]["ms"], "1.01000")
        w = keyed[("v14", "4096")]
        expect("v14 4k: of two timed processes the slower middle one", w["ms"], "0.72000")
        expect("v14 4k: the error in process 1 is kept", w["check"],
               "error: no entry point (process 1)")
        expect("sdpa-flash 4k: timed in one process only", keyed[("sdpa-flash", "4096")]["ms"],
               "1.50000")
        with open(every, newline="") as f:
            all_rows = list(csv.DictReader(f))
        expect("--all: every process's rows", len(all_rows), 13)
        expect("--all: a process column first", list(all_rows[0])[0], "process")
        expect("--all: the third process's first row",
               (all_rows[8]["process"], all_rows[8]["ms"]), ("3", "0.25000"))
        # columns that differ between processes: refused
        write(p[1], [row("v5", 2048, "0.3", "0.3", "1")], COLUMNS[:-1])
        err = io.StringIO()
        old, sys.stderr = sys.stderr, err
        try:
            rc = pm.main([out, p[0], p[1]])
        finally:
            sys.stderr = old
        expect("different columns: exit status", rc, 1)
        expect("different columns: says so", "different columns" in err.getvalue(), True)

    for f in failures:
        print(f"FAIL {f}")
    print(f"test_peers_median: {'PASS' if not failures else 'FAIL'} "
          f"({len(failures)} failure{'s' if len(failures) != 1 else ''})")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
