#!/usr/bin/env python3
"""How version 11's compiler paces the exponentials of a burst, and what cuDNN's burst holds.

Usage: mufu-pacing.py V11_SASS CUDNN_LISTING
  V11_SASS       `cuobjdump -sass` of version 11's sm_90a build (two 64-bit words an instruction:
                 the second carries the control bits, whose low four bits, after bit 41, are the
                 stall count: the cycles the warp waits before its next instruction)
  CUDNN_LISTING  cudnn-fp8-fprop-sass.txt of docs/results/h200-l05h-2026-11-28 (Nsight Compute's
                 source counters: address, warp-level executions, samples, instruction)

Prints, for version 11, the instructions and the stall-count cycles between consecutive
`MUFU.EX2` of its burst, the instruction mix of the burst and of the stretch from its last
exponential to the next `QGMMA`; for cuDNN, the instruction mix of its steady loop (the
instructions executed once per consumer warp and tile).
"""
import collections, re, statistics, sys


def v11(path):
    lines = open(path).read().split("\n")
    ins = []
    for i, line in enumerate(lines):
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/", line)
        if m:
            hi = int(re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1]).group(1), 16)
            ins.append((m.group(2).strip(), (hi >> 41) & 0xF, int(m.group(1), 16)))
    op = lambda k: ins[k][0].split()[0].split(".")[0]
    mufu = [k for k, x in enumerate(ins) if x[0].startswith("MUFU.EX2")]
    gemm = [k for k, x in enumerate(ins) if "GMMA" in x[0]]
    cyc = [sum(max(ins[k][1], 1) for k in range(a, b)) for a, b in zip(mufu, mufu[1:])]
    print(f"version 11: {len(mufu)} MUFU.EX2")
    print(f"  instructions between consecutive ones: median {statistics.median(b - a for a, b in zip(mufu, mufu[1:]))}")
    print(f"  stall-count cycles between consecutive ones: {sorted(collections.Counter(cyc).items())}")
    print(f"  first to last: {sum(cyc)} cycles; one warp's floor at 8 cycles an exponential: {8 * len(cyc)}")
    mix = collections.Counter(op(k) for k in range(mufu[0], mufu[-1] + 1))
    print(f"  the burst's instructions: {mix.most_common(8)}")
    nxt = min(k for k in gemm if k > mufu[-1])
    mix = collections.Counter(op(k) for k in range(mufu[-1] + 1, nxt))
    print(f"  from the last exponential to the next QGMMA: {mix.most_common(6)}, "
          f"{sum(max(ins[k][1], 1) for k in range(mufu[-1] + 1, nxt))} cycles")
    # The loop of a tile without the mask: from the back edge's target (the branch after the last
    # QGMMA that jumps back before the first) to that branch, less the mask's block (skipped by
    # the first branch after S's wait, forward).
    addr = lambda k: ins[k][2]
    target = lambda k: int(re.search(r"BRA 0x([0-9a-f]+)", ins[k][0]).group(1), 16)
    bras = [k for k, x in enumerate(ins) if re.search(r"BRA 0x", x[0])]
    back = min(k for k in bras if k > gemm[-1] and target(k) < addr(gemm[0]))
    top = next(k for k, x in enumerate(ins) if addr(k) == target(back))
    wait_s = next(k for k in range(gemm[0], len(ins)) if "DEPBAR" in ins[k][0])
    skip = next(k for k in bras if k > wait_s)
    resume = next(k for k, x in enumerate(ins) if addr(k) == target(skip))
    body = list(range(top, skip + 1)) + list(range(resume, back + 1))
    print(f"  a tile's loop without the mask: {len(body)} instructions, "
          f"{sum(max(ins[k][1], 1) for k in body)} cycles of stall counts")


def cudnn(path):
    rows = [l.split(None, 3) for l in open(path) if not l.startswith("#")]
    rows = [r for r in rows if len(r) == 4]
    n = collections.Counter(int(r[1]) for r in rows if "MUFU.EX2" in r[3]).most_common(1)[0][0]
    mix = collections.Counter(r[3].split()[0] for r in rows if int(r[1]) == n)
    print(f"cuDNN: the instructions executed {n} times (once per consumer warp and tile):")
    print(f"  {mix.most_common(8)}")


v11(sys.argv[1])
cudnn(sys.argv[2])
