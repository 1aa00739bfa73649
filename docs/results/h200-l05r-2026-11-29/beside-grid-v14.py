#!/usr/bin/env python3
"""Version 14 beside the papers' grid (dim 128), from this folder's l05-lengths-peers.csv (lengths
3000, 6000, 12000 with the grid rows around them, one process) and l05-gqa-peers.csv (4 KV heads,
a second process): each off-grid row's ratio beside its two grid neighbours' and over the lower
of them; each GQA row's beside the grid row's of the lengths' process.
    python3 beside-grid-v14.py  (in this folder)"""
import csv
import os

HERE = os.path.dirname(os.path.abspath(__file__))
GRID = {3000: (2048, 4096), 6000: (4096, 8192), 12000: (8192, 16384)}
RATIOS = {
    "v14 kernel / v5": ("fp8h-kernel-only", "v5-overlap-bf16"),
    "v14 kernel / cuDNN FP8": ("fp8h-kernel-only", "cudnn-fp8"),
    "v14 end to end / v5": ("v14-fp8-half-tile", "v5-overlap-bf16"),
    "v14 kernel / v13 kernel": ("fp8h-kernel-only", "fp8x-kernel-only"),
}


def rates(name):
    out = {}
    with open(os.path.join(HERE, name)) as f:
        for r in csv.DictReader(f):
            if r["tflops"] and r["dim"] == "128":
                out[(r["impl"], int(r["causal"]), int(r["seq_q"]))] = float(r["tflops"])
    return out


def main():
    lens, gqa = rates("l05-lengths-peers.csv"), rates("l05-gqa-peers.csv")
    for label, (a, b) in RATIOS.items():
        print(f"== {label}")
        for c in (0, 1):
            for s, (lo, hi) in GRID.items():
                r = lens[(a, c, s)] / lens[(b, c, s)]
                n = [lens[(a, c, x)] / lens[(b, c, x)] for x in (lo, hi)]
                print(f"  causal {c} seq {s:>5}: {r:.3f}  neighbours {n[0]:.3f} {n[1]:.3f}  "
                      f"over the lower {r / min(n):.3f}")
            for s in (4096, 8192, 16384):
                r, g = gqa[(a, c, s)] / gqa[(b, c, s)], lens[(a, c, s)] / lens[(b, c, s)]
                print(f"  causal {c} seq {s:>5} GQA: {r:.3f}  grid row {g:.3f}  over it {r / g:.3f}")


if __name__ == "__main__":
    main()
