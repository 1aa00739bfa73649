#!/usr/bin/env python3
"""Lesson 09 version 7's tail under the causal mask, modelled before it was measured.

One block per (KV tile, sequence, KV head), one block per SM at a time; the hardware is taken to
hand out blocks in the order of their linear index to the first SM that is free (greedy list
scheduling). KV tile kt of 128 keys visits the Q tiles from the one holding key 128 kt to the end,
each a unit of cost, plus `edge` for the block's start and end and `mask` for its masked tiles
(guesses, in units of one Q tile; the figures print two values of edge). Printed: the work over
(SMs x the time the last block finishes) for

  before   each pair's KV tiles in index order (tile 0, the heaviest, first), pair after pair
  groups   attn_causal_groups() with two waves: pairs cut into even groups of about two waves
           of blocks, longest first inside each group

and their ratio, the predicted speed-up. The papers' grid: 16k tokens (batch = 16384 / seq),
hidden 2048 (heads = 2048 / dim), Q tiles of 64 rows at dim 128 and 128 at dim 64.
"""
import heapq, math


def groups(n_bh, tiles, grid, waves):
    want = max(1, min(n_bh, -(-waves * grid // tiles)))
    n = max(1, n_bh // want)
    return n_bh // n, n_bh - n * (n_bh // n)


def item(i, tiles, grp, big):
    b = big * (grp + 1) * tiles
    if i < b:
        gs = grp + 1; g0 = i // (gs * tiles) * gs
    else:
        gs = grp; g0 = big * (grp + 1) + (i - b) // (gs * tiles) * gs
    j = i - g0 * tiles
    return tiles - 1 - j // gs, g0 + j % gs


def efficiency(seq, n_bh, order, br, bc=128, sms=132, edge=0.5, mask=0.5):
    n = math.ceil(seq / bc)
    cost = lambda kt: (seq - (kt * bc) // br * br) / br + edge + mask * bc / br
    if order == "before":
        q = [i % n for i in range(n * n_bh)]
    else:
        grp, big = groups(n_bh, n, min(sms, n * n_bh), 2)
        q = [n - 1 - item(i, n, grp, big)[0] for i in range(n * n_bh)]
    heap = [0.0] * sms
    for kt in q:
        heapq.heapreplace(heap, heap[0] + cost(kt))
    return sum(cost(kt) for kt in q) / (sms * max(heap))


def row(label, seq, n_bh, br):
    out = [label]
    for edge in (0.5, 2.0):
        a, b = efficiency(seq, n_bh, "before", br, edge=edge), efficiency(seq, n_bh, "groups", br, edge=edge)
        out.append(f"edge {edge}: before {a:.3f} groups {b:.3f} speed-up {b / a:.3f}")
    print("  ".join(out))


for dim in (128, 64):
    br, heads = (64 if dim == 128 else 128), 2048 // dim
    print(f"dim {dim}, {heads} heads")
    for seq in (512, 1024, 2048, 4096, 8192, 16384, 6000, 12000):
        row(f"  seq {seq:5d}, {max(1, 16384 // seq) * heads:4d} pairs", seq, max(1, 16384 // seq) * heads, br)
print("few KV heads, dim 128 (a pair is a sequence and a KV head)")
row("  16/2 heads, batch 4, seq 4096", 4096, 8, 64)
row("  32/4 heads, batch 2, seq 8192", 8192, 8, 64)
row("  32/4 heads, batch 4, seq 6000", 6000, 16, 64)
