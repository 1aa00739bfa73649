#!/usr/bin/env python3
"""Where a consumer warp of version 11 spends a tile, from Nsight Compute's sampling per instruction.

Usage: v11-source-regions.py ncu-source-v11.csv.gz CYCLES TILES
  the CSV is `ncu --page source --csv --print-source sass` of one launch (call-ncu-source.sh);
  CYCLES the launch's SM active cycles (ncu-details-v11.txt), TILES the KV tiles each consumer
  warpgroup runs per SM (batch 4 x 16 heads x 32 Q tiles x 16 KV tiles / 132 SMs = 248.2 at the
  default shape), so that the loop's share of the samples converts to cycles of a tile.

The consumer loop is cut at landmarks of its machine code: the wait for K (the first mbarrier try-wait
inside the loop), the four QGMMA.64x256x32 of S and their wait, the row maxima up to the turn's first
named barrier (warpgroup 1 waits there), the exponentials up to the last MUFU.EX2, the rest up to the
second named barrier (warpgroup 0 arrives there), the eight QGMMA.64x128x32 of P V and their wait,
and the fold to the loop's back edge. Out-of-line retry blocks of an mbarrier wait count with the
wait that branches to them. Samples elsewhere (the producer warp, the item's start and end) are
left out of the loop's total.
"""
import collections, csv, gzip, re, sys

rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))
hdr, data = rows[1], [r for r in rows[2:] if r and r[0]]
num = lambda x: float(x.replace(",", "") or 0) if re.match(r"^[\d,.]*$", x) else 0.0
addr = [int(r[0], 16) for r in data]
sass = [r[1] for r in data]
samples = [num(r[2]) for r in data]
reasons = {h[6:]: [num(r[i]) for r in data] for i, h in enumerate(hdr)
           if h.startswith("stall_") and "Not Issued" not in h}
at = {a: k for k, a in enumerate(addr)}
first = lambda pred, start=0: next(k for k in range(start, len(sass)) if pred(sass[k]))
s_mma = [k for k, s in enumerate(sass) if "QGMMA.64x256x32" in s]
pv_mma = [k for k, s in enumerate(sass) if "QGMMA.64x128x32" in s]
s_wait = first(lambda s: "WARPGROUP.DEPBAR" in s, s_mma[-1])
pv_wait = first(lambda s: "WARPGROUP.DEPBAR" in s, pv_mma[-1])
back = first(lambda s: re.search(r"BRA 0x", s) is not None and
             at.get(int(re.search(r"BRA 0x([0-9a-f]+)", s).group(1), 16), 1 << 30) < s_mma[0], pv_wait)
top = at[int(re.search(r"BRA 0x([0-9a-f]+)", sass[back]).group(1), 16)]
k_wait = first(lambda s: "SYNCS.PHASECHK" in s, top) + 1  # its retry branch
turn1 = first(lambda s: "BAR.SYNC" in s and "0x4" in s, s_wait)
last_ex2 = max(k for k in range(turn1, pv_mma[0]) if "MUFU.EX2" in sass[k])
turn0 = first(lambda s: "BAR.SYNC" in s and "0x4" in s, last_ex2)
cuts = [("loop top, wait for K", top, k_wait), ("issue S", k_wait + 1, s_wait - 1),
        ("wait for S", s_wait, s_wait), ("row maxima, alpha, wait for V", s_wait + 1, turn1 - 1),
        ("warpgroup 1 waits for its turn", turn1, turn1),
        ("the exponentials (and the pack between them)", turn1 + 1, last_ex2),
        ("O's rescale, the rest of the pack", last_ex2 + 1, turn0 - 1),
        ("warpgroup 0 hands the turn over", turn0, turn0), ("issue P V", turn0 + 1, pv_wait - 1),
        ("wait for P V", pv_wait, pv_wait), ("the fold, the loop's end", pv_wait + 1, back)]
region = {}
for name, a, b in cuts:
    for k in range(a, b + 1):
        region[k] = name
for k, s in enumerate(sass):  # retry blocks
    m = re.search(r"BRA 0x([0-9a-f]+)", s)
    if k in region and m and at.get(int(m.group(1), 16), 0) > back:
        t = at[int(m.group(1), 16)]
        for j in range(t, min(t + 3, len(sass))):
            region.setdefault(j, region[k])
cycles, tiles = float(sys.argv[2]), float(sys.argv[3])
loop = sum(samples[k] for k in region)
print(f"samples: {sum(samples):.0f} in the launch, {loop:.0f} in the consumer loop; "
      f"a tile: {cycles / tiles:.0f} cycles ({cycles:.0f} / {tiles})")
print(f"{'stretch of the tile':46s} {'share':>6s} {'cycles':>7s}  the three largest stall reasons (cycles)")
for name, a, b in cuts:
    ks = [k for k in region if region[k] == name]
    v = sum(samples[k] for k in ks)
    c = collections.Counter({r: sum(x[k] for k in ks) for r, x in reasons.items()})
    per = cycles / tiles / loop
    print(f"{name:46s} {v / loop * 100:5.1f}% {v * per:7.0f}  " +
          ", ".join(f"{r} {n * per:.0f}" for r, n in c.most_common(3)))
