#!/usr/bin/env python3
"""One peer CSV from the same bench run in several processes: each row's median process.

    python3 bench/peers_median.py OUT.csv PROCESS1.csv PROCESS2.csv ... [--all ALL.csv]

Why several processes. A peer's rate moves from one process to the next by more than it moves
inside one: cuDNN's forward at seq 2k, dim 128 ran at 541 TFLOP/s in one process and 647 in another
on the same H200 the same day (lesson 05's NOTES, "cuDNN's rate between runs"), while the
lesson's kernels moved by a few percent. Inside a process the bench already takes turns
(bench/peer_timing.py, timings_in_turns), so the clocks' drift falls on every row alike; what it
cannot see is the process itself. So scripts/gpu-suite.sh (BENCH_PROCS=N) runs each peer script N
times, each a process of its own, and this script makes the run's CSV from theirs.

The rule, for each row (the same implementation on the same shape: every column but the timing
ones, `iters` to `max_abs`, must match):
- the row of the median process by `ms`: with N rows sorted by time, the one at index N // 2, so
  for an odd N the true median and for an even N the slower of the two middle ones. Its `ms`,
  `tflops`, `gbs`, `pct_hbm` and `iters` stay as that process measured them, together;
- `min_ms`: the fastest run of any process;
- `check`: the processes' word where they all said the same; otherwise the first that is not
  `ok` (or empty), with the process it came from;
- `max_abs`: the largest of any process;
- a row with no time in some processes (an error, a skip) is the median of those that timed it;
  one that no process timed is the first process's row.
Rows keep the first process's order; a row missing from it comes after, in the order first seen.
Every implementation on a shape gets the same rule, so a ratio of two rows is the ratio of two
medians over the same processes (each rate still measured beside the others in its own process).

--all writes every process's rows as they were, with a first column `process` (1 to N): the
spread the medians hide. Standard library only.
"""
import argparse
import csv
import sys

TIMING = ("iters", "ms", "min_ms", "tflops", "gbs", "pct_hbm", "check", "max_abs")


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def read(path):
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        return r.fieldnames or [], list(r)


def key_of(row, columns):
    return tuple(row.get(c, "") for c in columns if c not in TIMING)


def median_row(rows):
    """rows: [(process number, row)] of one implementation on one shape -> the combined row."""
    timed = [(p, r) for p, r in rows if number(r.get("ms")) is not None]
    if not timed:
        return dict(rows[0][1])
    timed.sort(key=lambda pr: number(pr[1]["ms"]))
    out = dict(timed[len(timed) // 2][1])
    mins = [number(r.get("min_ms")) for _, r in timed]
    mins = [m for m in mins if m is not None]
    if mins:
        out["min_ms"] = f"{min(mins):.5f}"
    checks = [(p, r.get("check", "")) for p, r in rows]
    bad = [(p, c) for p, c in checks if c not in ("", "ok")]
    if len({c for _, c in checks}) == 1:
        out["check"] = checks[0][1]
    elif bad:
        out["check"] = f"{bad[0][1]} (process {bad[0][0]})"
    errs = [number(r.get("max_abs")) for _, r in rows]
    errs = [e for e in errs if e is not None]
    if errs:
        out["max_abs"] = f"{max(errs):.3e}"
    return out


def combine(tables):
    """tables: [(columns, rows)] one per process -> (columns, combined rows, every row)."""
    columns = tables[0][0]
    for cols, _ in tables[1:]:
        if cols != columns:
            raise ValueError(f"the processes' CSVs have different columns: {cols} against "
                             f"{columns}")
    groups, order = {}, []
    for p, (_, rows) in enumerate(tables, start=1):
        for r in rows:
            k = key_of(r, columns)
            if k not in groups:
                groups[k] = []
                order.append(k)
            groups[k].append((p, r))
    combined = [median_row(groups[k]) for k in order]
    every = [dict(r, process=str(p)) for p, (_, rows) in enumerate(tables, start=1) for r in rows]
    return columns, combined, every


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="the combined CSV")
    ap.add_argument("inputs", nargs="+", help="one CSV per process, the same columns in each")
    ap.add_argument("--all", default=None, help="also every process's rows, with a process column")
    a = ap.parse_args(argv)
    tables = [read(p) for p in a.inputs]
    try:
        columns, combined, every = combine(tables)
    except ValueError as e:
        print(f"peers_median: {e}", file=sys.stderr)
        return 1
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(combined)
    if a.all:
        with open(a.all, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["process"] + columns)
            w.writeheader()
            w.writerows(every)
    print(f"peers_median: {len(combined)} rows, the median of {len(tables)} processes -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
