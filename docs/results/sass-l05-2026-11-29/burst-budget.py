#!/usr/bin/env python3
"""The burst of a turn in the machine code: for each kernel named, the instructions between its first
two BAR.SYNC on the turn's barrier (0x4), by opcode, and the cycles their stall counts add up to
(the control bits' four bits from bit 41 of each instruction's second word: the cycles the warp
waits before its next instruction, one warp alone on its scheduler).

Usage: burst-budget.py SASS KERNEL_SUBSTRING...   (SASS: `cuobjdump -sass` of lesson-5)"""
import collections, re, sys

text = open(sys.argv[1]).read().split("\n")
for want in sys.argv[2:]:
    start = next(i for i, l in enumerate(text) if "Function : " in l and want in l)
    ins = []
    for i in range(start + 1, len(text)):
        if "Function : " in text[i]:
            break
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/", text[i])
        if m:
            hi = int(re.search(r"/\* (0x[0-9a-f]+) \*/", text[i + 1]).group(1), 16)
            ins.append((m.group(2).strip(), (hi >> 41) & 0xF))
    bars = [k for k, (s, _) in enumerate(ins) if s.startswith("BAR.SYNC.DEFER_BLOCKING 0x4,")]
    a, b = bars[0], bars[1]
    region = ins[a + 1:b]
    op = lambda s: s.split()[0] if not s.startswith("@") else s.split()[1]
    mix = collections.Counter(op(s).split(".")[0] for s, _ in region)
    cycles = sum(max(c, 1) for _, c in region)
    mufu = sum(1 for s, _ in region if "MUFU.EX2" in s)
    print(f"{want}: {len(region)} instructions between the turn's barriers, {mufu} MUFU.EX2, "
          f"stall counts {cycles} cycles (at 8 cycles a MUFU.EX2 the unit needs {8 * mufu})")
    print("  " + ", ".join(f"{k} {v}" for k, v in mix.most_common(12)))
