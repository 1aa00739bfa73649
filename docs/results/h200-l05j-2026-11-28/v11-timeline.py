#!/usr/bin/env python3
"""Medians of version 11's chain segments from its clock64 stamps.

Usage: v11-timeline.py STAMPS   (the .txt.gz beside it, or the stderr of a build with
v11-timeline.patch run as `L05_TL=1 lesson-5 11 ... --iters 3 --warmup 0`: lines
"TL block warpgroup tile event cycles", the third launch; tiles 0-3 of each warpgroup skipped)
"""
import collections, gzip, statistics, sys
EV = ["top", "K landed", "S issued", "S done", "max done", "V landed", "turn acquired",
      "burst end", "turn passed", "PV issued", "PV done", "fold done"]
d = collections.defaultdict(dict)
for line in (gzip.open if sys.argv[1].endswith(".gz") else open)(sys.argv[1], "rt"):
    p = line.split()
    if p and p[0] == "TL":
        bl, wg, t, e, c = map(int, p[1:])
        d[(bl, wg, t)][e] = c
for bl in (0, 1):
    for wg in (0, 1):
        ts = sorted(t for (b, w, t) in d if b == bl and w == wg)
        seg = collections.defaultdict(list)
        for t in ts[4:]:
            x = d[(bl, wg, t)]
            for e in range(1, 12):
                if e in x and e - 1 in x:
                    seg[f"{EV[e - 1]} -> {EV[e]}"].append(x[e] - x[e - 1])
            if (bl, wg, t + 1) in d and 0 in d[(bl, wg, t + 1)] and 11 in x:
                seg["fold done -> next top"].append(d[(bl, wg, t + 1)][0] - x[11])
                seg["PERIOD (top to top)"].append(d[(bl, wg, t + 1)][0] - x[0])
        print(f"block {bl} warpgroup {wg}: {len(ts)} tiles")
        for k, v in seg.items():
            print(f"  {k:32s} median {statistics.median(v):7.0f}  q1 {statistics.quantiles(v, n=4)[0]:7.0f}  q3 {statistics.quantiles(v, n=4)[2]:7.0f}")
