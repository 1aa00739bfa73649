"""Lesson 07's regions: its renderers and the helpers they share."""
import re
from .core import NO_LOG, NO_PEERS, NO_RUN, att, f, pc, ratio, seq_label, source, table, xs
from .lesson06 import tbs, us


# ---- Lesson 07 ------------------------------------------------------------------------------------

L07_DEFAULT = att(1, 32, 1, 128, kvh=8, skv=32768)
L07_NAMES = {1: "paged-row", 2: "paged-split", 3: "paged-pipeline", 4: "paged-overlap",
             5: "paged-balance", 6: "dense-one-launch", 7: "dense-varlen"}
L07_PAGED = 5  # versions 1..5 are paged, 6 and 7 the dense yardsticks
# The runs at the default shape, in the order of the default run and of
# lessons/07_paged_attention/gpu-runs.txt (lessons.csv has no block-size column: the n-th row of a
# version at the default shape is the n-th of these runs).
L07_BLOCK_SIZES = [16, 8, 32, 64, 128]
# (label, shape or kv_lens) of the other rows of gpu-runs.txt
L07_SHAPES = [("kv 131072", att(1, 32, 1, 128, kvh=8, skv=131072)),
              ("batch 8", att(8, 32, 1, 128, kvh=8, skv=32768)),
              ("batch 32, kv 8192", att(32, 32, 1, 128, kvh=8, skv=8192)),
              ("batch 128, kv 1024", att(128, 32, 1, 128, kvh=8, skv=1024)),
              ("batch 128, kv 8192", att(128, 32, 1, 128, kvh=8, skv=8192)),
              ("one of 131072 keys, 31 of 1024", {"kv_lens": "131072,1024x31"}),
              ("one of 131072 keys, 7 of 1024", {"kv_lens": "131072,1024x7"}),
              ("the same, the long one fourth", {"kv_lens": "1024x3,131072,1024x4"}),
              ("one of 32768 keys, 7 of 1024", {"kv_lens": "32768,1024x7"}),
              ("32k, 8k, 2k, 4 x 512, 17, 1; 2 rows, causal", {"kv_lens": "32768,8192,2048,512x4,17,1"}),
              ("dim 64", att(1, 32, 1, 64, kvh=8, skv=32768)),
              ("32 KV heads, kv 8192", att(1, 32, 1, 128, kvh=32, skv=8192))]


def l07_missing(a):
    return a.one(7, L07_PAGED, **L07_DEFAULT) is None


def l07_dense(rows):
    """The faster dense yardstick of a run (versions 6 and 7 of its rows)."""
    ts = [r for r in rows if r and r["version"] in (L07_PAGED + 1, L07_PAGED + 2) and r["ms"]]
    return min(ts, key=lambda r: r["ms"]) if ts else None


def r_l07_default(a, ctx):
    src = source(a, ["lessons.csv"])
    if l07_missing(a):
        return src + "\n\nThe lesson's table: " + NO_RUN + "."
    rs = {v: a.one(7, v, **L07_DEFAULT) for v in L07_NAMES}
    best = l07_dense(rs.values())
    rows = []
    for v in L07_NAMES:
        r, t = rs[v], us(rs[v])
        rows.append([v, f"`{L07_NAMES[v]}`", "-" if t is None else
                     (f"{t:.0f} us" if t >= 100 else f"{t:.1f} us"), f(r and r["gbs"], 0),
                     pc(r and r["pct_bw"]),
                     pc(100.0 * best["ms"] / r["ms"] if r and r["ms"] and best else None)])
    return "\n".join([src, "", "Default shape: batch 1, 32 heads, 8 KV heads, kv 32768, dim 128, "
                      "block size 16, pages in a shuffled order:", "",
                      table(["#", "version", "time", "GB/s", "% of HBM",
                             "% of the faster dense speed"], rows)])


def r_l07_block_sizes(a, ctx):
    src = source(a, ["lessons.csv"])
    runs = {v: a.rows(7, v, timed=True, **L07_DEFAULT) for v in L07_NAMES}
    paged = list(range(2, L07_PAGED + 1))
    if any(len(runs[v]) < len(L07_BLOCK_SIZES) for v in paged + [L07_PAGED + 1, L07_PAGED + 2]):
        return src + "\n\nBlock sizes: " + NO_RUN + "."
    rows = []
    for i, bs in enumerate(L07_BLOCK_SIZES):
        best = l07_dense([runs[L07_PAGED + 1][i], runs[L07_PAGED + 2][i]])
        rows.append([bs] + [f(tbs(runs[v][i]), 2) for v in paged] + [f(tbs(best), 2)] +
                    [pc(100.0 * best["ms"] / runs[v][i]["ms"]) for v in paged])
    rows.sort(key=lambda r: r[0])
    return "\n".join([src, "", "The default shape at each block size (TB/s of K + V; the dense "
                      "yardstick ran beside each):", "",
                      table(["block size"] + [f"v{v}" for v in paged] + ["dense"] +
                            [f"v{v} / dense" for v in paged], rows)])


def r_l07_shapes(a, ctx):
    src = source(a, ["lessons.csv"])
    if l07_missing(a):
        return src + "\n\nOther shapes: " + NO_RUN + "."
    rows = []
    last, prev = L07_PAGED, L07_PAGED - 1
    for label, shape in L07_SHAPES:
        rs = {v: a.one(7, v, **shape) for v in L07_NAMES}
        if rs[last] is None:
            rows.append([label] + ["-"] * (L07_PAGED + 3))
            continue
        best = l07_dense(rs.values())
        rows.append([label] + [f(tbs(rs[v]), 2) for v in range(1, L07_PAGED + 1)] + [
            f(tbs(best), 2),
            pc(100.0 * best["ms"] / rs[prev]["ms"] if best and rs[prev] else None),
            pc(100.0 * best["ms"] / rs[last]["ms"] if best else None)])
    return "\n".join([src, "", "Other rows of the same run (TB/s; block size 16):", "",
                      table(["shape"] + [f"v{v}" for v in range(1, L07_PAGED + 1)] +
                            ["dense", f"v{prev} / dense", f"v{last} / dense"], rows)])


def r_l07_loop(a, ctx):
    src = source(a, ["gpu-suite.log"])
    lines = []
    for title, body in (a.log or {}).get("sections", []):
        if title.startswith("lesson-7") and title.strip() == "lesson-7":
            lines = body
            break
    text = " ".join(x.strip() for x in lines)
    m = re.search(r"decode loop on the GPU \((\S+), block size (\d+), pool of (\d+) blocks\): "
                  r"(\d+) steps, (\d+) rows decoded, (\d+) sequences started and (\d+) finished, "
                  r"(\d+) copy-on-write copies; .*?checked against fp64 \((\d+) rows\): max \|diff\| "
                  r"(\S+), (PASS|FAIL); free blocks at the end (\d+) of (\d+): (PASS|FAIL) "
                  r"the decode kernels: ([\d.]+) us per step, (\d+) rows/s, (\d+) GB/s", text)
    if not m:
        return src + "\n\nThe decode loop on the GPU: " + NO_LOG + "."
    g = m.groups()
    return "\n".join([src, "", (
        f"`./run` at the default shape: {g[3]} steps of up to 16 live sequences (prompts of 16 to "
        f"2048 tokens, 8 to 128 generated, a fork every 8 steps), {g[4]} rows decoded by "
        f"`{g[0]}` at block size {g[1]}, {g[5]} sequences started and {g[6]} finished, {g[7]} "
        f"copy-on-write copies. {g[8]} query rows checked against fp64: max |diff| {g[9]}, "
        f"{g[10]}; free blocks at the end {g[11]} of {g[12]}: {g[13]}. The decode kernels took "
        f"{g[14]} us per step on average: {int(g[15]):,} rows/s and {g[16]} GB/s of K + V, small "
        f"batches of short sequences, where a decode is mostly its fixed cost (no L2 flush).")])


def l07_peer_rows(a):
    """Version 5 (the newest paged version measured) against its peers, one dict per row of
    peers.csv's grid (equal lengths, then mixed): b, skv, mixed, fl (the read floor), cp (cuDNN
    paged), cd (cuDNN dense), l06 (lesson 06's faster dense kernel), vs (version -> TB/s), all in
    TB/s; and the versions shown (the two newest paged ones). ([], []) without peers."""
    if not a.peers or not a.peer(7, "cudnn-paged-bs16"):
        return [], []
    shapes = sorted({(r["batch"], r["seq_kv"]) for r in a.peers
                     if int(r["lesson"]) == 7 and r["impl"] == "cudnn-paged-bs16" and r["gbs"]})
    # the two newest paged versions the run measured
    ours = [v for v in range(1, L07_PAGED + 1)
            if a.peer(7, f"v{v}-{L07_NAMES[v]}-bs16(-mixed)?")][-2:]
    out = []
    for mixed in ("", "-mixed"):
        for b, skv in shapes:
            kv = dict(dim=128, kv_heads=8, batch=b, seq_kv=skv)

            def rate(impl):
                return tbs(a.peer(7, re.escape(impl + mixed), **kv))
            cp, cd, fl = (rate(x) for x in ("cudnn-paged-bs16", "cudnn-dense", "read-floor"))
            vs = {v: rate(f"v{v}-{L07_NAMES[v]}-bs16") for v in ours}
            l06 = max([x for x in (rate("l06-v5-one-launch"), rate("l06-v6-varlen")) if x],
                      default=None)
            if cp is None or vs[ours[-1]] is None:
                continue
            out.append(dict(b=b, skv=skv, mixed=mixed, fl=fl, cp=cp, cd=cd, l06=l06, vs=vs))
    return out, ours


def l07_peer_summary(a, rows, top):
    """(rows where version @p top matches or beats cuDNN's paged graph, rows, its lowest ratio to
    it, [its ratios to lesson 06's dense kernel])."""
    wins = sum(r["vs"][top] >= r["cp"] for r in rows)
    worst = min(r["vs"][top] / r["cp"] for r in rows) if rows else None
    dense = [r["vs"][top] / r["l06"] for r in rows if r["l06"]]
    return wins, len(rows), worst, dense


def r_l07_peers(a, ctx):
    src = source(a, ["peers.csv"])
    if not a.peers or not a.peer(7, "cudnn-paged-bs16"):
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    data, ours = l07_peer_rows(a)
    top = ours[-1]
    rows = []
    for d in data:
        vt, cp, fl, l06 = d["vs"][top], d["cp"], d["fl"], d["l06"]
        rows.append([d["b"], seq_label(d["skv"]), "mixed" if d["mixed"] else "equal", f(fl, 2),
                     f(cp, 2), f(d["cd"], 2), f(l06, 2)] + [f(d["vs"][v], 2) for v in ours] +
                    [xs(ratio(vt, cp), 3), pc(100 * vt / l06 if l06 else None),
                     pc(100 * vt / fl if fl else None)])
    wins, n, worst, dense_low = l07_peer_summary(a, data, top)
    return "\n".join([src, "", table(["batch", "kv", "lengths", "read floor", "cuDNN paged",
                                      "cuDNN dense", "lesson 06"] + [f"v{v}" for v in ours] +
                                     [f"v{top} / cuDNN paged", f"v{top} % of lesson 06",
                                      f"v{top} % of the floor"], rows), "",
                      f"Version {top} matches or beats cuDNN's paged graph on {wins} of these {n} "
                      f"rows; its lowest ratio is {worst:.3f}. Against lesson 06's faster dense "
                      f"kernel on the same values it runs at {100 * min(dense_low):.0f}% to "
                      f"{100 * max(dense_low):.0f}%."])


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "l07-default": r_l07_default, "l07-block-sizes": r_l07_block_sizes, "l07-shapes": r_l07_shapes,
    "l07-loop": r_l07_loop, "l07-peers": r_l07_peers,
}
