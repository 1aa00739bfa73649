"""Lesson 10's regions: its renderers and the helpers they share (the top README's headline reads
l10_peer_rows and l10_peer_ranges)."""
import re
from .core import NO_PEERS, NO_RUN, att, esc, f, pc, ratio, seq_label, source, span, table, \
    xs
from .lesson06 import tbs


# ---- Lesson 10 -----------------------------------------------------------------------------------

def l10(b=1, kvh=8, t=8, skv=32768, d=128, c=0):
    """A shape of lesson 10: t draft tokens per sequence (seq_q), skv keys (seq_kv), 32 heads."""
    return att(b, 32, t, d, c, kvh=kvh, skv=skv)


L10_NAMES = {1: "draft-tiles", 2: "draft-tree", 3: "l07-balance"}
L10_TILES, L10_TREE, L10_L07 = 1, 2, 3
L10_DEFAULT = l10()  # batch 1, 32/8 heads, 8 draft tokens, no mask, kv 32768, dim 128
# The shapes of lessons/10_serving_decode/gpu-runs.txt, in its order after the default run: a
# shape, or a shape with the lengths per sequence (kv_lens, as lessons.csv writes it: 32k -> 32768).
L10_SHAPES = [l10(t=1), l10(t=2), l10(t=4), l10(t=16), l10(c=1),
              l10(b=16, skv=8192, t=1), l10(b=16, skv=8192), l10(b=16, skv=8192, t=16),
              l10(b=64, skv=8192, t=1), l10(b=64, skv=8192),
              l10(skv=131072),
              dict(l10(b=8, c=1), kv_lens="32768,1024x7"),
              l10(d=64), l10(d=64, t=1),
              l10(kvh=4, t=16)]
L10_L07_MAX_T = 8  # lesson 07's kernels take 1..8 query tokens (L06_MAX_SEQ_Q)


def l10_row(a, v, shape):
    """The row of version @p v at @p shape (its first timed one, else its skipped one), or None."""
    r = a.one(10, v, **shape)
    if r is None:
        rs = a.rows(10, v, **shape)
        r = rs[0] if rs else None
    return r


def l10_missing(a):
    return a.one(10, L10_TILES, **L10_DEFAULT) is None


def l10_not_timed(r, t):
    """What a cell says for a row without a time: missing, or skipped and why."""
    if r is None:
        return "not in this archive"
    if r["status"] == "skipped" and t > L10_L07_MAX_T:
        return f"skipped (more than {L10_L07_MAX_T} tokens)"
    return esc(f"{r['status']}: {r['note']}" if r.get("note") else r["status"])


def l10_shape_cells(s):
    """batch, heads, draft tokens, kv (or the lengths), dim, mask."""
    kv = f"lengths {s['kv_lens']}" if s.get("kv_lens") else str(s["seq_kv"])
    return [s["batch"], f"{s['heads']}/{s['kv_heads']}", s["seq_q"], kv, s["dim"],
            "causal" if s["causal"] else "none"]


def r_l10_default(a, ctx):
    src = source(a, ["lessons.csv"])
    if l10_missing(a):
        return src + "\n\nThe lesson's table: " + NO_RUN + "."
    rs = {v: l10_row(a, v, L10_DEFAULT) for v in L10_NAMES}
    rows = []
    for v, name in L10_NAMES.items():
        r = rs[v]
        if r is None or r["ms"] is None:
            rows.append([v, f"`{name}`", l10_not_timed(r, L10_DEFAULT["seq_q"]), "-", "-", "-"])
            continue
        rows.append([v, f"`{name}`", esc(r["status"]), f(r["ms"], 4), f(tbs(r), 2),
                     pc(r["pct_bw"])])
    t, y = rs[L10_TILES], rs[L10_L07]
    if y and y["ms"]:
        step = (f"On the same step, `draft-tiles` runs at {y['ms'] / t['ms']:.2f}x the speed of "
                f"lesson 07's version 5 (`l07-balance`: {y['ms']:.4f} ms against {t['ms']:.4f} "
                "ms).")
    else:
        step = "Lesson 07's version 5 on the same step: " + NO_RUN + "."
    s = L10_DEFAULT
    return "\n".join([src, "", f"Default shape: batch {s['batch']}, {s['heads']} heads, "
                      f"{s['kv_heads']} KV heads, {s['seq_q']} draft tokens with no mask among "
                      f"them, kv {s['seq_kv']}, dim {s['dim']}, block size 16. TB/s and % of HBM "
                      "count the bytes the step must move (K and V once, Q read, O written) over "
                      "the median time:", "",
                      table(["#", "version", "check", "ms", "TB/s", "% of HBM"], rows), "", step])


def r_l10_runs(a, ctx):
    src = source(a, ["lessons.csv"])
    if l10_missing(a):
        return src + "\n\nOther shapes: " + NO_RUN + "."
    rows = []
    for i, s in enumerate([L10_DEFAULT] + L10_SHAPES):
        rs = {v: l10_row(a, v, s) for v in L10_NAMES}
        t, tree, y = rs[L10_TILES], rs[L10_TREE], rs[L10_L07]
        cells = l10_shape_cells(s)
        if i == 0:
            cells[0] = f"{cells[0]} (default)"
        if t is None or t["ms"] is None:
            rows.append(cells + [l10_not_timed(t, s["seq_q"])] + ["-"] * 4)
            continue
        rows.append(cells + [
            f(tbs(t), 2), pc(t["pct_bw"]),
            f(tbs(tree), 2) if tree and tree["ms"] else l10_not_timed(tree, s["seq_q"]),
            f(tbs(y), 2) if y and y["ms"] else l10_not_timed(y, s["seq_q"]),
            xs(ratio(y and y["ms"], t["ms"]), 2)])
    return "\n".join([src, "", "The default run and each line of `gpu-runs.txt` (TB/s of the bytes "
                      "the step must move; block size 16; mask: the mask of `draft-tiles` and "
                      "`l07-balance`, `draft-tree` always a binary tree of the same draft tokens; "
                      "the last column is `draft-tiles` over `l07-balance`, the inverse ratio of "
                      "their times):", "",
                      table(["batch", "heads", "draft tokens", "kv", "dim", "mask",
                             "draft-tiles", "% of HBM", "draft-tree", "l07-balance",
                             "draft-tiles / l07"], rows)])


# ---- The peers: bench/lesson10_peers.py ----------------------------------------------------------
# peers.csv's impl column: l10-v1-draft-<mask>, l07-v5-balance-<mask>, cudnn-paged-<mask>; the
# token count T is seq_q, every sequence seq_kv keys. A skipped row (lesson 07 with T > 8) has no
# figure and says why in its check column.

def _peer_any(a, impl, **kv):
    """The first peers.csv row of lesson 10 with @p impl (exact) at @p kv, timed or not."""
    for r in a.peers or []:
        if int(r["lesson"]) == 10 and r["impl"] == impl and all(r.get(k) == v
                                                                  for k, v in kv.items()):
            return r
    return None


def l10_peer_rows(a):
    """One dict per shape of peers.csv's lesson 10 grid: dim, mask, b, skv, t, and the rates in TB/s
    of lesson 10's version 1 (l10), of its one-token row at the same (dim, mask, batch, seq_kv)
    (one), of lesson 07's version 5 (l07, or None; l07_why: why it has none) and of cuDNN's paged
    graph (cu), and l10's % of HBM (pct). [] without peers."""
    out = []
    for r in a.peers or []:
        m = re.fullmatch(r"l10-v1-draft-(\w+)", r["impl"] or "")
        if int(r["lesson"]) != 10 or not m or r["gbs"] is None:
            continue
        mask = m.group(1)
        kv = dict(dim=r["dim"], batch=r["batch"], seq_kv=r["seq_kv"], kv_heads=r["kv_heads"])
        one = a.peer(10, re.escape(r["impl"]), seq_q=1, **kv)
        y = _peer_any(a, f"l07-v5-balance-{mask}", seq_q=r["seq_q"], **kv)
        cu = a.peer(10, re.escape(f"cudnn-paged-{mask}"), seq_q=r["seq_q"], **kv)
        why = None
        if y is None:
            why = "-"
        elif y["gbs"] is None:
            why = (f"skipped (more than {L10_L07_MAX_T} tokens)"
                   if r["seq_q"] > L10_L07_MAX_T else esc(y.get("check") or "skipped"))
        out.append(dict(dim=r["dim"], mask=mask, b=r["batch"], skv=r["seq_kv"], t=r["seq_q"],
                        l10=tbs(r), pct=r["pct_hbm"], one=tbs(one), l07=tbs(y), l07_why=why,
                        cu=tbs(cu)))
    return out


def l10_vs_one(d):
    return ratio(d["l10"], d["one"])


def l10_peer_ranges(rows, pick):
    """(min, max) of pick(row) over @p rows where it is not None, or None."""
    xs_ = [x for x in (pick(d) for d in rows) if x is not None]
    return (min(xs_), max(xs_)) if xs_ else None


def _rng(r, nd=2, unit=""):
    return "-" if r is None else span(r[0], r[1], nd) + unit


def l10_bench_skips(a):
    """The shapes bench/lesson10_peers.py skipped whole (too large for --max-gb), from its lines in
    gpu-suite.log: 'batch 64, kv 128k (K and V pools 42.9 GB > --max-gb 24)'."""
    out = []
    for title, lines in (a.log or {}).get("sections", []):
        if "lesson10_peers.py" not in title:
            continue
        for line in lines:
            m = re.match(r"^l10 dim=(\d+) batch=(\d+) seq_kv=(\d+) skipped: (.*)$", line)
            if m:
                out.append(f"dim {m.group(1)}, batch {m.group(2)}, kv {seq_label(int(m.group(3)))} "
                           f"({m.group(4).strip()})")
    return out


def l10_peer_summary(rows):
    """The sentence under one (dim, mask) table: lesson 10's rate over its one-token rate, and over
    cuDNN's, as ranges."""
    big, one = [d for d in rows if d["b"] >= 16], [d for d in rows if d["b"] == 1]
    words = []
    for who, rs in (("at batch 16 and more", big), ("at batch 1", one)):
        if not rs:
            continue
        lo = l10_peer_ranges([d for d in rs if 2 <= d["t"] <= 8], l10_vs_one)
        hi = l10_peer_ranges([d for d in rs if d["t"] == 16], l10_vs_one)
        words.append(f"{who} {_rng(lo, unit='x')} with 2-8 draft tokens and {_rng(hi, unit='x')} "
                     "with 16")
    s = ("Version 1 over its own one-token rate on the same keys (the keys read once for all the "
         "draft tokens keep it near 1; a kernel reading them once per token would fall as 1 / T): "
         + "; ".join(words) + ".")
    cu_all = l10_peer_ranges([d for d in rows if d["t"] >= 2], lambda d: ratio(d["l10"], d["cu"]))
    cu_big = l10_peer_ranges([d for d in big if d["t"] >= 2], lambda d: ratio(d["l10"], d["cu"]))
    cu_one = l10_peer_ranges([d for d in big if d["t"] == 1], lambda d: ratio(d["l10"], d["cu"]))
    if cu_all:
        s += (f" Over cuDNN's paged SDPA with the same 2 to 16 draft tokens: {_rng(cu_all)}x"
              + (f" ({_rng(cu_big)}x at batch 16 and more, against {_rng(cu_one)}x with one token)"
                 if cu_big and cu_one else "") + ".")
    y = l10_peer_ranges([d for d in rows if 2 <= d["t"] <= 8], lambda d: ratio(d["l10"], d["l07"]))
    if y:
        s += f" Over lesson 07's version 5 with 2-8 draft tokens: {_rng(y)}x."
    return s


def r_l10_peers(a, ctx):
    src = source(a, ["peers.csv", "gpu-suite.log"])
    data = l10_peer_rows(a)
    if not data:
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    out = [src, ""]
    sw = a.software()
    groups = sorted({(d["dim"], d["mask"]) for d in data}, key=lambda g: (-g[0], g[1]))
    for dim, mask in groups:
        rows, ds = [], sorted([d for d in data if (d["dim"], d["mask"]) == (dim, mask)],
                              key=lambda d: (d["b"], d["skv"], d["t"]))
        for d in ds:
            rows.append([d["b"], seq_label(d["skv"]), d["t"], f(d["l10"], 2), pc(d["pct"]),
                         xs(l10_vs_one(d), 2),
                         f(d["l07"], 2) if d["l07"] is not None else d["l07_why"],
                         f(d["cu"], 2), xs(ratio(d["l10"], d["l07"]), 2),
                         xs(ratio(d["l10"], d["cu"]), 2)])
        out += [f"Dim {dim}, {mask} mask (TB/s of the K + V the lengths need, in one process"
                f"{'; ' + sw if sw else ''}):", "",
                table(["batch", "kv", "draft tokens", "lesson 10 v1", "% of HBM", "vs one token",
                       "lesson 07 v5", "cuDNN paged", "l10 / l07", "l10 / cuDNN"], rows), "",
                l10_peer_summary(ds), ""]
    skips = l10_bench_skips(a)
    tail = f"Measured on the {a.device}, {a.date}."
    if skips:
        tail += " Skipped by the bench, too large for its memory limit: " + "; ".join(skips) + "."
    elif a.log is None:
        tail += (" Shapes the bench skipped: not in this archive (its lines in `gpu-suite.log`, "
                 "from `scripts/gpu-suite.sh bench`).")
    out.append(tail)
    return "\n".join(out)


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "l10-default": r_l10_default, "l10-runs": r_l10_runs, "l10-peers": r_l10_peers,
}
