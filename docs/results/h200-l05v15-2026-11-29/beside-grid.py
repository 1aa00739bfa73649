#!/usr/bin/env python3
"""Lesson 05's bf16 versions beside the papers' grid, with version 15: each off-grid row's best bf16
version over cuDNN's bf16 beside the grid rows next to it (offgrid-lengths-peers.csv, one process),
and with GQA (4 KV heads, offgrid-gqa-peers.csv, a second process) beside the grid row of the
lengths' process; then version 15 over version 5 on every row.
    python3 beside-grid.py  (in this folder)"""
import csv
import os

HERE = os.path.dirname(os.path.abspath(__file__))
GRID = {3000: (2048, 4096), 6000: (4096, 8192), 12000: (8192, 16384)}
BF16 = ("v5-overlap-bf16", "v8-three-bf16", "v9-persistent-bf16", "v15-pairs-bf16")


def rates(name):
    out = {}
    with open(os.path.join(HERE, name)) as f:
        for r in csv.DictReader(f):
            if r["tflops"]:
                out[(r["impl"], int(r["dim"]), int(r["causal"]), int(r["seq_q"]))] = float(r["tflops"])
    return out


def best_over_cudnn(t, d, c, s):
    return max(t.get((n, d, c, s), 0.0) for n in BF16) / t[("sdpa-cudnn", d, c, s)]


def main():
    t, g = rates("offgrid-lengths-peers.csv"), rates("offgrid-gqa-peers.csv")
    lows = []
    print("best bf16 version over cuDNN's bf16")
    for d in (64, 128):
        for c in (0, 1):
            for s, (lo, hi) in GRID.items():
                x, a, b = (best_over_cudnn(t, d, c, q) for q in (s, lo, hi))
                lows.append(x / min(a, b))
                print(f"  dim {d:3} causal {c} seq {s:5}: {x:.3f}x  (grid {lo}: {a:.3f}x, {hi}: "
                      f"{b:.3f}x)  over the lower neighbour {x / min(a, b):.3f}")
            for s in (4096, 8192, 16384):
                x, a = best_over_cudnn(g, d, c, s), best_over_cudnn(t, d, c, s)
                lows.append(x / a)
                print(f"  dim {d:3} causal {c} seq {s:5} GQA 4 KV heads: {x:.3f}x  (grid row "
                      f"{a:.3f}x)  over it {x / a:.3f}")
    print(f"  lowest over the lower neighbour / the grid row: {min(lows):.3f}")
    print("version 15 over version 5, dim / causal / seq (GQA rows marked g)")
    for name, tab in (("", t), ("g", g)):
        xs = sorted(k[1:] for k in tab if k[0] == "v15-pairs-bf16")
        print("  " + " ".join(f"{d}/{c}/{s}{name}:{tab[('v15-pairs-bf16', d, c, s)] / tab[('v5-overlap-bf16', d, c, s)]:.3f}"
                              for d, c, s in xs))


if __name__ == "__main__":
    main()
