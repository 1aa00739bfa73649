#!/usr/bin/env python3
"""The tail model of ../h200-l09q-2026-11-28/causal-order-sim.py on this folder's GQA shapes.

Its hand-out (greedy list scheduling of one block per SM, in the order of the block index) and its
attn_causal_groups() model are read from that script; a block's cost becomes the Q tiles it
visits times the heads of its group, plus `edge` for its start and end. For every shape timed
here with the order on and off below WG_ORDER_MIN_WORK (the two below-threshold logs, and the
shapes of the two later calls where the rule they tested turned the order on), it prints the
measured speed-up (off over on) beside the model's, for two values of edge.
"""
import collections
import heapq
import math
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.path.join(HERE, "..", "h200-l09q-2026-11-28", "causal-order-sim.py")
src = open(SIM).read()
ns = {}
exec(src[:src.index("def row(")], ns)  # groups(), item(); not the script's own table


def efficiency(seq, n_bh, order, br, group, edge, sms=132, bc=128, mask=0.5):
    n = math.ceil(seq / bc)
    cost = lambda kt: group * ((seq - (kt * bc) // br * br) / br + mask * bc / br) + edge
    if order == "before":
        q = [i % n for i in range(n * n_bh)]
    else:
        grp, big = ns["groups"](n_bh, n, min(sms, n * n_bh), 2)
        q = [n - 1 - ns["item"](i, n, grp, big)[0] for i in range(n * n_bh)]
    heap = [0.0] * sms
    for kt in q:
        heapq.heapreplace(heap, heap[0] + cost(kt))
    return sum(cost(kt) for kt in q) / (sms * max(heap))


def measured():
    for name, a, b in (("gqa-order-below-threshold.log", "off", "on"),
                       ("gqa-order-below-threshold-2.log", "off", "on"),
                       ("gqa-order-first-rule-ab.log", "old", "new"),
                       ("gqa-order-landing.log", "old", "new")):
        d = collections.defaultdict(lambda: collections.defaultdict(list))
        for line in open(os.path.join(HERE, name)):
            m = re.match(r"r(\d) \[(.*)\] (\w+): .*unchecked\s+-\s+-\s+([\d.]+)", line)
            if m:
                d[m.group(2)][m.group(3)].append(float(m.group(4)))
        for shape, v in d.items():
            if a in v and b in v:
                yield name, {k: int(x) for k, x in re.findall(r"--([a-z-]+) (\d+)", shape)}, \
                    sum(v[a]) / sum(v[b])


print("rule  dim tiles group blocks waves  measured  model (edge 0.5 / 2)")
for name, x, speed in measured():
    tiles, group = -(-x["seq"] // 128), x["heads"] // x["kv-heads"]
    pairs = x["batch"] * x["kv-heads"]
    blocks = tiles * pairs
    if tiles * x["dim"] >= 1280:
        continue  # on under WG_ORDER_MIN_WORK already: no contrast
    if "first-rule" in name and tiles * x["dim"] * group < 4096:
        continue  # that call's rule left it off: old and new are the same
    rule = tiles >= 8 or 132 < blocks <= 264  # WG_ORDER_GQA_TILES, or one to two waves
    if "landing" in name and not rule:
        continue
    br = 64 if x["dim"] == 128 else 128
    model = [efficiency(x["seq"], pairs, "groups", br, group, e) /
             efficiency(x["seq"], pairs, "before", br, group, e) for e in (0.5, 2.0)]
    print(f"{'on ' if rule else 'off'}  {x['dim']:4d} {tiles:5d} {group:5d} {blocks:6d} "
          f"{blocks / 132:5.2f}  {speed:8.3f}  {model[0]:.3f} / {model[1]:.3f}")
