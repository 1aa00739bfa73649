#!/usr/bin/env python3
"""How far after each MUFU.EX2 its result is first read, in instructions of the listing.

exp-spacing.py LISTING: a SASS listing, one instruction a line, the instruction last (the
`cudnn-fp8-fprop-sass.txt` format: address, executed count, samples, SASS; or `cuobjdump -sass`
lines with the addresses and the encodings stripped). Lines with an executed count of 0 are left
out. Prints the count of exponentials and the median and quartiles of the distance."""
import re
import statistics
import sys

ins = []
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    f = line.split()
    if len(f) > 3 and re.fullmatch(r"[0-9a-f]{5}", f[0]) and f[1].isdigit():
        if int(f[1]) == 0:
            continue
        text = line.split(None, 3)[3]
    else:
        text = line
    ins.append(text.strip().rstrip(";").strip())

dist = []
for i, t in enumerate(ins):
    m = re.search(r"MUFU\.EX2\s+(R\d+)", t)
    if not m:
        continue
    reg = m.group(1)
    for j in range(i + 1, min(i + 300, len(ins))):
        ops = ins[j].split(None, 1)
        if len(ops) < 2:
            continue
        if ops[0].startswith("@"):
            ops = ops[1].split(None, 1)
            if len(ops) < 2:
                continue
        srcs = [p.strip().replace("|", "").lstrip("-") for p in ops[1].split(",")][1:]
        if any(re.fullmatch(reg + r"(\.\w+)?", p) for p in srcs):
            dist.append(j - i)
            break
dist.sort()
q = lambda f: dist[int(f * (len(dist) - 1))]
print(f"{sys.argv[1]}: {len(dist)} exponentials; first read after a median of "
      f"{statistics.median(dist)} instructions (quartiles {q(0.25)}, {q(0.75)})")
