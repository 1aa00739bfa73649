#!/usr/bin/env python3
"""Lessons 05 and 09 beside the papers' grid: each off-grid row's ratio to cuDNN (and FP8's to
version 5) beside the ratios of the grid rows next to it, all from this folder's CSVs, which
ran each set in one process. Lengths: 3000 between the grid's 2048 and 4096, 6000 between 4096 and
8192, 12000 between 8192 and 16384 (batch 16384 // seq). GQA: 4 KV heads, in a process of its
own, beside the grid rows of the lengths' process. Prints one line per off-grid row: its ratio,
the two neighbours' (or the grid row's, for GQA), and the ratio over them; then, for GQA, each
implementation's own rate over its rate on the grid row (the shared KV heads move cuDNN's more than
the lessons'). Two sets: the first calls' files (no suffix: lesson 05's from one call, lesson 09's
GQA from that call and its lengths from the next) and the repeat's (-r2: all four from one call).
    python3 beside-grid.py  (in this folder)"""
import csv
import os

HERE = os.path.dirname(os.path.abspath(__file__))
GRID = {3000: (2048, 4096), 6000: (4096, 8192), 12000: (8192, 16384)}


def rates(name):
    out = {}
    with open(os.path.join(HERE, name)) as f:
        for r in csv.DictReader(f):
            if r["tflops"]:
                out[(r["impl"], int(r["dim"]), int(r["causal"]), int(r["seq_q"]))] = float(r["tflops"])
    return out


def best(t, names, dim, causal, seq):
    xs = [t.get((n, dim, causal, seq), 0.0) for n in names]
    return max(xs) if xs else 0.0


def ratio_fns(lesson):
    if lesson == 5:
        bf16 = ("v5-overlap-bf16", "v8-three-bf16", "v9-persistent-bf16")
        return {
            "bf16 best / cuDNN": lambda t, d, c, s: best(t, bf16, d, c, s) / t[("sdpa-cudnn", d, c, s)],
            "FP8 v13 kernel / cuDNN FP8": lambda t, d, c, s: (
                t[("fp8x-kernel-only", d, c, s)] / t[("cudnn-fp8", d, c, s)] if d == 128 else None),
            "FP8 v13 kernel / v5": lambda t, d, c, s: (
                t[("fp8x-kernel-only", d, c, s)] / t[("v5-overlap-bf16", d, c, s)] if d == 128 else None),
            "FP8 v13 end to end / v5": lambda t, d, c, s: (
                t[("v13-fp8-exp-fma", d, c, s)] / t[("v5-overlap-bf16", d, c, s)] if d == 128 else None),
        }
    return {"backward best / cuDNN": lambda t, d, c, s: best(
        t, ("v6-wgmma-bf16", "v7-bulkdq-bf16"), d, c, s) / t[("sdpa-cudnn", d, c, s)]}


OWN = {5: ("sdpa-cudnn", "v5-overlap-bf16", "v8-three-bf16", "v9-persistent-bf16", "cudnn-fp8",
             "fp8x-kernel-only", "v13-fp8-exp-fma"),
       9: ("sdpa-cudnn", "v7-bulkdq-bf16")}


def main():
    for suffix in ("", "-r2"):
        print(f"==== the files ending peers{suffix}.csv ====")
        one_set(suffix)


def one_set(suffix):
    for lesson, lengths, gqa in ((5, "l05-lengths-peers", "l05-gqa-peers"),
                                 (9, "l09-lengths-peers", "l09-gqa-peers")):
        t, g = rates(lengths + suffix + ".csv"), rates(gqa + suffix + ".csv")
        for what, fn in ratio_fns(lesson).items():
            print(f"lesson {lesson:02d}, {what}")
            lows = []
            for dim in (64, 128):
                for causal in (0, 1):
                    if fn(t, dim, causal, 2048) is None:
                        continue
                    for seq, (lo, hi) in GRID.items():
                        x, a, b = fn(t, dim, causal, seq), fn(t, dim, causal, lo), fn(t, dim, causal, hi)
                        lows.append(x / max(a, b))
                        print(f"  dim {dim:3} causal {causal} seq {seq:5}: {x:.2f}x  (grid {lo}: "
                              f"{a:.2f}x, {hi}: {b:.2f}x)  over the better neighbour {x / max(a, b):.3f}, "
                              f"the worse {x / min(a, b):.3f}")
                    for seq in (4096, 8192, 16384):
                        x, a = fn(g, dim, causal, seq), fn(t, dim, causal, seq)
                        lows.append(x / a)
                        print(f"  dim {dim:3} causal {causal} seq {seq:5} GQA 4 KV heads: {x:.2f}x  "
                              f"(grid row {a:.2f}x)  over it {x / a:.3f}")
            print(f"  lowest over the better neighbour / the grid row: {min(lows):.3f}")
        print(f"lesson {lesson:02d}, GQA (4 KV heads) over the grid row, each implementation's own "
              f"TFLOP/s, dim / causal / seq:")
        for impl in OWN[lesson]:
            xs = [(d, c, s, g[(impl, d, c, s)] / t[(impl, d, c, s)])
                  for d in (64, 128) for c in (0, 1) for s in (4096, 8192, 16384)
                  if (impl, d, c, s) in g and (impl, d, c, s) in t]
            if xs:
                print(f"  {impl:18} {min(x[3] for x in xs):.3f}-{max(x[3] for x in xs):.3f}  " +
                      " ".join(f"{d}/{c}/{s // 1024}k:{x:.2f}" for d, c, s, x in xs))


if __name__ == "__main__":
    main()
