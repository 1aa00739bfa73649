#!/usr/bin/env python3
"""The instructions between consecutive clock64 stamps of the stamped version 11, from its machine code.

Usage: v11-timeline-sass.py SASS   (`cuobjdump -sass` of the object built from the stamped file:
nvcc -O3 -gencode arch=compute_90a,code=sm_90a -c ... ; the second 64-bit word of each instruction
carries its control bits: the stall count in bits 41-44, the scoreboards it waits on in bits 52-57)

Prints per segment the instruction count, the sum of the stall counts (the cycles the compiler
spaces the warp's instructions by, at least 1 each), how many instructions wait on a scoreboard,
and the most frequent opcodes. The segment after S's wait holds the mask's block, which the
unmasked tiles branch over.
"""
import collections, re, sys

lines = open(sys.argv[1]).read().split("\n")
ins = []
for i, line in enumerate(lines):
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/", line)
    if m:
        hi = int(re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1]).group(1), 16)
        ctrl = hi >> 41
        ins.append((m.group(2).strip(), ctrl & 0xF, (ctrl >> 11) & 0x3F))
names = ["top", "K landed", "S issued", "S done", "max done", "V landed", "turn acquired",
         "burst end", "turn passed", "PV issued", "PV done", "fold done"]
clk = [k for k, x in enumerate(ins) if "SR_CLOCKLO" in x[0]]
op = lambda s: (s.split()[1] if s.startswith("@") else s.split()[0]).split(".")[0]
for i, (a, b) in enumerate(zip(clk, clk[1:])):
    seg = ins[a + 1:b]
    mix = collections.Counter(op(x[0]) for x in seg).most_common(6)
    print(f"{names[i]:>13} -> {names[i + 1]:<13} {len(seg):4d} instructions, "
          f"{sum(max(x[1], 1) for x in seg):5d} stall-count cycles, {sum(1 for x in seg if x[2]):2d} "
          f"wait on a scoreboard; {', '.join(f'{o} {n}' for o, n in mix)}")
