#!/usr/bin/env python3
"""The persistent grid's tail under the causal mask, modelled before it was measured.

A block takes the next item from a counter when it is free (greedy list scheduling, as version
11's atomicAdd does). An item is one Q tile of 128 rows; under the mask Q tile m visits
ceil((m + 1) * 128 / 256) KV tiles of 256 keys, plus `mask` for its masked tile's extra work and
`edge` for its start and end (both in units of an unmasked tile; the figures below use 0.6 and
0.5, guesses: the ranking of the orders does not change between 0 and 1 for either). Printed:
the work over (blocks x the time the last block finishes), 1.0 meaning no block idles at the end.

  tree        each (sequence, head) pair's Q tiles heaviest first, pair after pair (the order
              versions 9 and 11 had)
  groups f=W  attn_causal_groups() with W waves: pairs cut into even groups of about W waves of
              items, longest first inside each group
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

def efficiency(seq, n_bh, order, sms=132, br=128, bc=256, mask=0.6, edge=0.5):
    tiles = math.ceil(seq / br)
    cost = lambda m: math.ceil((m + 1) * br / bc) + mask + edge
    if order == "tree":
        q = [tiles - 1 - i % tiles for i in range(tiles * n_bh)]
    else:
        grp, big = groups(n_bh, tiles, min(sms, tiles * n_bh), order)
        q = [item(i, tiles, grp, big)[0] for i in range(tiles * n_bh)]
    heap = [0.0] * sms
    for m in q:
        heapq.heapreplace(heap, heap[0] + cost(m))
    return sum(cost(m) for m in q) / (sms * max(heap))

print("seq   pairs  tree   f=1    f=2    f=4")
for seq, n_bh in [(1024, 256), (2048, 128), (4096, 64), (8192, 32), (16384, 16), (3000, 64),
                  (6000, 32), (12000, 16), (4096, 128), (8192, 64)]:
    print(f"{seq:<5} {n_bh:<6}", " ".join(f"{efficiency(seq, n_bh, o):.3f}" for o in ("tree", 1, 2, 4)))

print("\nversion 9's tiles (192 rows, 128 keys; dim 64, 32 heads)")
print("seq   pairs  tree   f=2")
for seq, n_bh in [(1024, 512), (2048, 256), (4096, 128), (8192, 64), (16384, 32), (3000, 128),
                  (6000, 64)]:
    print(f"{seq:<5} {n_bh:<6}", " ".join(f"{efficiency(seq, n_bh, o, br=192, bc=128):.3f}" for o in ("tree", 2)))
