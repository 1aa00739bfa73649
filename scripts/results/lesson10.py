"""Lesson 10's regions: its renderers and the helpers they share (the top README's headline reads
l10_peer_rows and l10_peer_ranges)."""
import os
import re
from .core import NO_PEERS, NO_RUN, att, esc, f, pc, ratio, seq_label, source, span, table, \
    xs
from .lesson06 import tbs


# ---- Lesson 10 -----------------------------------------------------------------------------------

def l10(b=1, kvh=8, t=8, skv=32768, d=128, c=0):
    """A shape of lesson 10: t draft tokens per sequence (seq_q), skv keys (seq_kv), 32 heads."""
    return att(b, 32, t, d, c, kvh=kvh, skv=skv)


# The lesson's table by name. Its numbers changed as versions joined: archives from before version
# 2 have 1 draft-tiles, 2 draft-tree, 3 l07-balance; then 3 fp8-cache, 4 l07-balance; from version
# 3 on, 4 cascade, 5 l07-balance, 6 l07-forked. So every lookup goes by name (l10_version(): the
# number this archive's rows carry for it, None when it has none) and nothing here trusts a number.
L10_NAMES = {1: "draft-tiles", 2: "draft-tree", 3: "fp8-cache", 4: "cascade", 5: "l07-balance",
             6: "l07-forked"}  # the newest
L10_TILES, L10_TREE, L10_FP8, L10_L07 = "draft-tiles", "draft-tree", "fp8-cache", "l07-balance"
L10_CASC, L10_L07F = "cascade", "l07-forked"
L10_LATER = (L10_FP8, L10_CASC, L10_L07F)  # names an older archive simply has no rows for
L10_DEFAULT = l10()  # batch 1, 32/8 heads, 8 draft tokens, no mask, kv 32768, dim 128
# The shapes of lessons/10_serving_decode/gpu-runs.txt, in its order after the default run: a
# shape, or a shape with the lengths per sequence (kv_lens, as lessons.csv writes it: 32k -> 32768).
L10_SHAPES = [l10(t=1), l10(t=2), l10(t=4), l10(t=16), l10(c=1),
              l10(b=16, skv=8192, t=1), l10(b=16, skv=8192), l10(b=16, skv=8192, t=16),
              l10(b=64, skv=8192, t=1), l10(b=64, skv=8192),
              l10(skv=131072),
              dict(l10(b=8, c=1), kv_lens="32768,1024x7"),
              l10(d=64), l10(d=64, t=1),
              l10(d=256), l10(d=256, t=1), l10(d=256, t=16),
              l10(kvh=4, t=16)]
L10_L07_MAX_T = 8  # lesson 07's kernels take 1..8 query tokens (L06_MAX_SEQ_Q)
# Version 3's shapes (gpu-runs-cascade.txt, cascade and l07-forked each in a run of its own, and
# gpu-runs.txt's batch 16, kv 8192): sequences forked from one prompt, each keeping its last
# FORK_OWN_KEYS = 1024 keys to itself.
L10_FORK_OWN = 1024
L10_CASCADE_SHAPES = [l10(b=32, skv=33792, t=1), l10(b=32, skv=33792, t=4, c=1),
                      l10(b=32, skv=33792, t=1, d=64), l10(b=32, skv=9216, t=1),
                      l10(b=16, skv=8192)]


def l10_version(a, name):
    """The version number this archive's lesson 10 rows carry for @p name (draft-tiles, ...), or
    None when none of them does (a version the archive predates)."""
    for r in a.lessons:
        if r["lesson"] == 10 and r.get("name") == name:
            return r["version"]
    return None


def l10_row(a, name, shape):
    """The row of the version named @p name at @p shape (its first timed one, else its skipped
    one), or None (also when the archive has no such version)."""
    v = l10_version(a, name)
    if v is None:
        return None
    r = a.one(10, v, **shape)
    if r is None:
        rs = a.rows(10, v, **shape)
        r = rs[0] if rs else None
    return r


def l10_missing(a):
    """No timed draft-tiles row at the default shape."""
    r = l10_row(a, L10_TILES, L10_DEFAULT)
    return r is None or r["ms"] is None


def l10_not_timed(r, t, name=L10_L07):
    """What a cell says for a row without a time: missing, or skipped and why (lesson 07's
    version 5 skips steps of more than 8 tokens)."""
    if r is None:
        return "not in this archive"
    if r["status"] == "skipped" and t > L10_L07_MAX_T and name in (L10_L07, L10_L07F):
        return f"skipped (more than {L10_L07_MAX_T} tokens)"
    return esc(f"{r['status']}: {r['note']}" if r.get("note") else r["status"])


def l10_listed(a):
    """The table's names in this archive's order: by its version numbers, a name it lacks last
    (as "not in this archive"), except the later versions (fp8-cache, cascade, l07-forked), which
    an archive from before them simply has no row for."""
    have = {n: l10_version(a, n) for n in L10_NAMES.values()}
    names = [n for n in L10_NAMES.values() if have[n] is not None or n not in L10_LATER]
    return sorted(names, key=lambda n: (have[n] is None, have[n] or 0)), have


def l10_shape_cells(s):
    """batch, heads, draft tokens, kv (or the lengths), dim, mask."""
    kv = f"lengths {s['kv_lens']}" if s.get("kv_lens") else str(s["seq_kv"])
    return [s["batch"], f"{s['heads']}/{s['kv_heads']}", s["seq_q"], kv, s["dim"],
            "causal" if s["causal"] else "none"]


def r_l10_default(a, ctx):
    src = source(a, ["lessons.csv"])
    if l10_missing(a):
        return src + "\n\nThe lesson's table: " + NO_RUN + "."
    names, have = l10_listed(a)
    rs = {name: l10_row(a, name, L10_DEFAULT) for name in names}
    rows = []
    for name in names:
        r, v = rs[name], have[name] if have[name] is not None else "-"
        if r is None or r["ms"] is None:
            rows.append([v, f"`{name}`", l10_not_timed(r, L10_DEFAULT["seq_q"], name), "-", "-",
                         "-"])
            continue
        rows.append([v, f"`{name}`", esc(r["status"]), f(r["ms"], 4), f(tbs(r), 2),
                     pc(r["pct_bw"])])
    t, y, f8 = rs[L10_TILES], rs.get(L10_L07), rs.get(L10_FP8)
    if y and y["ms"]:
        step = (f"On the same step, `draft-tiles` runs at {y['ms'] / t['ms']:.2f}x the speed of "
                f"lesson 07's version 5 (`l07-balance`: {y['ms']:.4f} ms against {t['ms']:.4f} "
                "ms).")
    else:
        step = "Lesson 07's version 5 on the same step: " + NO_RUN + "."
    if f8 and f8["ms"]:  # only archives with version 2 say anything of it
        step += (f" Over the FP8 cache, `fp8-cache` runs at {t['ms'] / f8['ms']:.2f}x the speed "
                 f"of `draft-tiles` ({f8['ms']:.4f} ms against {t['ms']:.4f} ms); its TB/s and % "
                 "of HBM count K and V as that cache holds them, an e4m3 code per value and a "
                 "4-byte scale per key row.")
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
    fp8 = l10_version(a, L10_FP8) is not None  # its columns only where the archive has it
    rows = []
    for i, s in enumerate([L10_DEFAULT] + L10_SHAPES):
        rs = {name: l10_row(a, name, s) for name in L10_NAMES.values()}
        t, tree, y, f8 = rs[L10_TILES], rs[L10_TREE], rs[L10_L07], rs[L10_FP8]
        cells = l10_shape_cells(s)
        if i == 0:
            cells[0] = f"{cells[0]} (default)"
        if t is None or t["ms"] is None:
            rows.append(cells + [l10_not_timed(t, s["seq_q"], L10_TILES)] +
                        ["-"] * (6 if fp8 else 4))
            continue
        rows.append(cells + [
            f(tbs(t), 2), pc(t["pct_bw"]),
            f(tbs(tree), 2) if tree and tree["ms"] else l10_not_timed(tree, s["seq_q"], L10_TREE)
        ] + ([
            f(tbs(f8), 2) if f8 and f8["ms"] else l10_not_timed(f8, s["seq_q"], L10_FP8),
            xs(ratio(t["ms"], f8 and f8["ms"]), 2)] if fp8 else []) + [
            f(tbs(y), 2) if y and y["ms"] else l10_not_timed(y, s["seq_q"], L10_L07),
            xs(ratio(y and y["ms"], t["ms"]), 2)])
    head = ["batch", "heads", "draft tokens", "kv", "dim", "mask", "draft-tiles", "% of HBM",
            "draft-tree"] + (["fp8-cache", "fp8 / draft-tiles"] if fp8 else []) + \
        ["l07-balance", "draft-tiles / l07"]
    words = ("; `fp8-cache` the same step over the FP8 cache, its TB/s of the bytes that cache "
             "holds (an e4m3 code per value, a 4-byte scale per key row), and its speed over "
             "`draft-tiles` (the inverse ratio of their times)" if fp8 else "")
    return "\n".join([src, "", "The default run and each line of `gpu-runs.txt` (TB/s of the bytes "
                      "the step must move; block size 16; mask: the mask of `draft-tiles` and "
                      "`l07-balance`, `draft-tree` always a binary tree of the same draft tokens; "
                      "the last column is `draft-tiles` over `l07-balance`, the inverse ratio of "
                      f"their times{words}):", "", table(head, rows)])


# ---- The peers: bench/lesson10_peers.py ----------------------------------------------------------
# peers.csv's impl column: l10-v1-draft-<mask>, l07-v5-balance-<mask>, cudnn-paged-<mask>, and in
# newer archives l10-v2-fp8-<mask> (version 2 over the FP8 cache); the token count T is seq_q,
# every sequence seq_kv keys. A skipped row (lesson 07 with T > 8) has no figure and says why in
# its check column. Every row's gbs and pct_hbm count the bytes of its bytes column: the bf16 K + V
# the lengths need (2 x sum(lengths) x kv_heads x dim x 2), except l10-v2-fp8's, which count what
# it reads (2 x sum(lengths) x kv_heads x (dim + 4): e4m3 codes and a 4-byte scale per key row).

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
    graph (cu), and l10's % of HBM (pct). Version 2 over the FP8 cache (fp8_row: its row, timed or
    not, None when the archive has none at this step): fp8, its TB/s of the bytes it reads, fp8_pct
    their % of HBM, fp8x its speed over version 1 (version 1's time over its own), fp8_why what
    its cell says when it has no figure. [] without peers."""
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
        f8 = _peer_any(a, f"l10-v2-fp8-{mask}", seq_q=r["seq_q"], **kv)
        f8_timed = f8 is not None and f8["gbs"] is not None
        w4 = _peer_any(a, f"l10-v4-wgmma-{mask}", seq_q=r["seq_q"], **kv)
        w4_timed = w4 is not None and w4["gbs"] is not None
        out.append(dict(dim=r["dim"], mask=mask, b=r["batch"], skv=r["seq_kv"], t=r["seq_q"],
                        l10=tbs(r), pct=r["pct_hbm"], one=tbs(one), l07=tbs(y), l07_why=why,
                        cu=tbs(cu), fp8_row=f8, fp8=tbs(f8) if f8_timed else None,
                        fp8_pct=f8["pct_hbm"] if f8_timed else None,
                        fp8x=ratio(r["ms"], f8["ms"]) if f8_timed else None,
                        fp8_why=("-" if f8 is None else None if f8_timed else
                                 esc(f8.get("check") or "no figure")),
                        wg_row=w4, wg=tbs(w4) if w4_timed else None,
                        wg_why=("-" if w4 is None else None if w4_timed else
                                esc(w4.get("check") or "no figure"))))
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
    w_lo = l10_peer_ranges([d for d in rows if 2 <= d["t"] <= 8 and d.get("wg")],
                           lambda d: ratio(d["wg"], d["one"]))
    w_hi = l10_peer_ranges([d for d in rows if d["t"] == 16 and d.get("wg")],
                           lambda d: ratio(d["wg"], d["one"]))
    w_cu = l10_peer_ranges([d for d in rows if d["t"] >= 2 and d.get("wg")],
                           lambda d: ratio(d["wg"], d["cu"]))
    if w_lo or w_hi:  # only archives with version 4's rows
        s += (f" Version 4 over version 1's one-token rate: {_rng(w_lo, unit='x')} with 2-8 draft "
              f"tokens, {_rng(w_hi, unit='x')} with 16" +
              (f"; over cuDNN's paged SDPA with 2 to 16: {_rng(w_cu)}x" if w_cu else "") + ".")
    f8 = l10_peer_ranges(rows, lambda d: d["fp8x"])
    if f8:  # only archives with version 2's rows
        f8_big = l10_peer_ranges(big, lambda d: d["fp8x"])
        f8_one = l10_peer_ranges(one, lambda d: d["fp8x"])
        parts = [f"{_rng(f8_big)}x at batch 16 and more" if f8_big else None,
                 f"{_rng(f8_one)}x at batch 1" if f8_one else None]
        rate = l10_peer_ranges(rows, lambda d: d["fp8"])
        pct = l10_peer_ranges(rows, lambda d: d["fp8_pct"])
        s += (f" Version 2 over the FP8 cache, against version 1 on the same step: {_rng(f8)}x "
              "its speed" + (f" ({'; '.join(x for x in parts if x)})" if any(parts) else "") +
              f", at {_rng(rate)} TB/s of the bytes it reads ({_rng(pct, 0)}% of HBM).")
    return s


def l10_dim_summary(data):
    """Version 1 at dim 256 over dim 128 at the same step (mask, batch, kv, tokens), as ranges by
    draft tokens; None unless the archive has both."""
    at128 = {(d["mask"], d["b"], d["skv"], d["t"]): d for d in data if d["dim"] == 128}
    pairs = [(d, at128.get((d["mask"], d["b"], d["skv"], d["t"]))) for d in data if d["dim"] == 256]
    pairs = [(x, y) for x, y in pairs if y is not None]
    if not pairs:
        return None
    parts = []
    for who, keep in (("one token", lambda t: t == 1), ("2-8 draft tokens", lambda t: 2 <= t <= 8),
                      ("16", lambda t: t == 16)):
        rg = l10_peer_ranges([x for x in pairs if keep(x[0]["t"])],
                             lambda xy: ratio(xy[0]["l10"], xy[1]["l10"]))
        if rg:
            parts.append(f"{_rng(rg)}x with {who}")
    big = l10_peer_ranges([x for x in pairs if x[0]["t"] == 16 and x[0]["b"] >= 16],
                          lambda xy: ratio(xy[0]["l10"], xy[1]["l10"]))
    f8 = l10_peer_ranges([x for x in pairs if x[0]["b"] >= 16 and x[0]["t"] == 1],
                         lambda xy: xy[0]["fp8x"])
    return ("Dim 256 against dim 128, version 1's TB/s at the same step: " + "; ".join(parts) +
            (f" ({_rng(big)}x at batch 16 and more)" if big else "") + "." +
            (f" Version 2 at dim 256 with one token, batch 16 and more: {_rng(f8)}x version 1's "
             "speed." if f8 else ""))


def r_l10_peers(a, ctx):
    src = source(a, ["peers.csv", "gpu-suite.log"])
    data = l10_peer_rows(a)
    if not data:
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    out = [src, ""]
    sw = a.software()
    fp8 = any(d["fp8_row"] is not None for d in data)  # its columns only where the archive has it
    wg = any(d["wg_row"] is not None for d in data)  # version 4's, the same
    # dim 128 first (the lesson's), then 256 and 64
    groups = sorted({(d["dim"], d["mask"]) for d in data},
                    key=lambda g: (g[0] != 128, -g[0], g[1]))
    for dim, mask in groups:
        rows, ds = [], sorted([d for d in data if (d["dim"], d["mask"]) == (dim, mask)],
                              key=lambda d: (d["b"], d["skv"], d["t"]))
        for d in ds:
            rows.append([d["b"], seq_label(d["skv"]), d["t"], f(d["l10"], 2), pc(d["pct"]),
                         xs(l10_vs_one(d), 2),
                         f(d["l07"], 2) if d["l07"] is not None else d["l07_why"],
                         f(d["cu"], 2), xs(ratio(d["l10"], d["l07"]), 2),
                         xs(ratio(d["l10"], d["cu"]), 2)] +
                        ([f(d["fp8"], 2) if d["fp8"] is not None else d["fp8_why"],
                          pc(d["fp8_pct"]), xs(d["fp8x"], 2)] if fp8 else []) +
                        ([f(d["wg"], 2) if d["wg"] is not None else d["wg_why"],
                          xs(ratio(d["wg"], d["one"]), 2), xs(ratio(d["wg"], d["cu"]), 2)]
                         if wg else []))
        what = "TB/s of the K + V the lengths need"
        if fp8:
            what = ("TB/s of the bf16 K + V the lengths need; FP8 v2: lesson 10's version 2 over "
                    "an FP8 copy of the same cache, its TB/s and % of HBM of the bytes it reads "
                    "(an e4m3 code per value, a 4-byte scale per key row), and its speed over "
                    "version 1 on the same step (version 1's time over its own)")
        if wg:
            what += ("; v4: lesson 10's version 4 (`wgmma`, sm_90a) on the same step, its TB/s, "
                     "over version 1's one-token rate and over cuDNN's")
        out += [f"Dim {dim}, {mask} mask ({what}, in one process{'; ' + sw if sw else ''}):", "",
                table(["batch", "kv", "draft tokens", "lesson 10 v1", "% of HBM", "vs one token",
                       "lesson 07 v5", "cuDNN paged", "l10 / l07", "l10 / cuDNN"] +
                      (["FP8 v2", "FP8 % of HBM", "FP8 / v1"] if fp8 else []) +
                      (["v4", "v4 vs one token", "v4 / cuDNN"] if wg else []), rows), "",
                l10_peer_summary(ds), ""]
    dims = l10_dim_summary(data)
    if dims:
        out += [dims, ""]
    skips = l10_bench_skips(a)
    tail = f"Measured on the {a.device}, {a.date}."
    if skips:
        tail += " Skipped by the bench, too large for its memory limit: " + "; ".join(skips) + "."
    elif a.log is None:
        tail += (" Shapes the bench skipped: not in this archive (its lines in `gpu-suite.log`, "
                 "from `scripts/gpu-suite.sh bench`).")
    out.append(tail)
    return "\n".join(out)


def r_l10_cascade(a, ctx):
    """Version 3 against lesson 07's version 5 on the same forked cache, at the shapes of
    L10_CASCADE_SHAPES (their rows may come from two runs of the program, one per version)."""
    src = source(a, ["lessons.csv"])
    if l10_version(a, L10_CASC) is None:
        return src + "\n\nVersion 3 (`cascade`): " + NO_RUN + "."
    rows, speed = [], []
    for s in L10_CASCADE_SHAPES:
        c, y = l10_row(a, L10_CASC, s), l10_row(a, L10_L07F, s)
        shared = (s["seq_kv"] - L10_FORK_OWN) // 16 * 16
        kv = f"{shared} shared + {s['seq_kv'] - shared} own"
        cells = [s["batch"], s["seq_q"], kv, s["dim"], "causal" if s["causal"] else "none"]
        if c is None or c["ms"] is None:
            rows.append(cells + [l10_not_timed(c, s["seq_q"], L10_CASC)] + ["-"] * 5)
            continue
        # l07-forked's TB/s counts the pages the step touches (as cascade's); what it reads, each
        # sequence its own way through the shared pages, is (sum of lengths) / (distinct keys) more
        reads = s["batch"] * s["seq_kv"] / (shared + s["batch"] * (s["seq_kv"] - shared))
        ok = y is not None and y["ms"] is not None
        r = ratio(y["ms"], c["ms"]) if ok else None
        if r is not None:
            speed.append(r)
        rows.append(cells + [f(c["ms"], 4), f(tbs(c), 2), pc(c["pct_bw"]),
                             f(y["ms"], 4) if ok else l10_not_timed(y, s["seq_q"], L10_L07F),
                             f(tbs(y) * reads, 2) if ok else "-", xs(r, 2)])
    head = ["batch", "draft tokens", "keys", "dim", "mask", "cascade ms", "TB/s", "% of HBM",
            "l07-forked ms", "l07-forked TB/s read", "cascade / l07-forked"]
    out = [src, "", "Version 3 (`cascade`) and lesson 07's version 5 on the same forked cache "
           "(`l07-forked`): every sequence forked from the first one's prompt and keeping its "
           "last 1024 keys to itself; 32/8 heads, pages of 16. `cascade`'s TB/s and % of HBM count "
           "the pages the step touches, the shared ones once; `l07-forked TB/s read` counts what "
           "lesson 07's kernel reads, every sequence through the shared pages (its L2 serves the "
           "repeats, which is how it passes the HBM's 4.8 TB/s); the last column is the speed of "
           "`cascade` over `l07-forked`, the inverse ratio of their times:", "",
           table(head, rows)]
    if speed:
        out += ["", f"Version 3 runs at {span(min(speed), max(speed), 2)}x lesson 07's version 5 "
                "on the same forked cache at these shapes."]
    return "\n".join(out)


def r_l10_serve(a, ctx):
    """The serving loop as `./run` prints it after the table (serving-loop-run.log: the program's
    default run, kept as it printed it): the plain loop and the served ones, and their ratios."""
    src = source(a, ["serving-loop-run.log"])
    lines = a.program_run("serving-loop") or []
    at = next((i for i, x in enumerate(lines) if x.startswith("serving loop on the GPU (")), None)
    if at is None:
        return src + "\n\nThe serving loop: " + NO_RUN + "."
    head = re.match(r"^serving loop on the GPU \((.*); (\d+) steps; .*\):$", lines[at])
    steps = int(head.group(2)) if head else None
    rows, said, said_wg = [], None, None
    for line in lines[at + 1:]:
        m = re.match(r"^\s+((?:plain|served): .+?)\s{2,}(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+"
                     r"([\d.]+) / ([\d.]+)\s+(PASS|FAIL)", line)
        if m:
            ms = float(m.group(4))
            rows.append([m.group(1), m.group(2), m.group(3), m.group(4),
                         f(1e3 * ms / steps, 0) if steps else "-", f"{int(m.group(5)):,}",
                         f"{m.group(6)} / {m.group(7)}", m.group(8)])
        m = re.match(r"^\s+served over plain: ([\d.]+)x the tokens per second, ([\d.]+)x the "
                     r"memory held \(mean\); ([\d.]+) tokens kept per sequence and step, (\d+) "
                     r"copy-on-write copies", line)
        if m:
            said = m
        m = re.match(r"^\s+version 4's loop over plain: ([\d.]+)x the tokens per second, "
                     r"([\d.]+)x the memory held", line)
        if m:
            said_wg = m
    out = [src, "", f"`./run` at its default step ({head.group(1) if head else 'its workload'}, "
           f"{steps} steps; tokens per second of the decode's GPU time, which includes the wait "
           "for the host to launch it):", "",
           table(["loop", "tokens kept", "rows decoded", "decode ms", "us a step", "tokens/s",
                  "MB held, mean / peak", "check"], rows)]
    if said:
        out += ["", f"The served loop: {said.group(1)}x the plain loop's tokens per second, "
                f"{said.group(2)}x its memory held (mean); {said.group(3)} tokens kept per "
                f"sequence and step, {said.group(4)} copy-on-write copies."]
    if said_wg:
        out += ["", f"The served loop over the bf16 cache on version 4: {said_wg.group(1)}x the "
                f"plain loop's tokens per second, {said_wg.group(2)}x its memory held (mean)."]
    return "\n".join(out)


def l10_bench_lines(a):
    """The measurement lines of bench.log (bench/lesson10_peers.py's output, kept as it printed
    it): {(impl, dim, batch, seq_kv, tokens): (TB/s, vs_one_token or None)}; None without the
    file."""
    path = os.path.join(a.folder, "bench.log")
    if not os.path.exists(path):
        return None
    rows = {}
    with open(path, errors="replace") as fh:
        for line in fh:
            m = re.match(r"^l10 impl=(\S+) dim=(\d+) batch=(\d+) seq_kv=(\d+) tokens=(\d+) "
                         r"mask=\S+ us=[\d.]+ tbs=([\d.]+) ", line)
            if m:
                one = re.search(r" vs_one_token=([\d.]+)", line)
                key = (m.group(1),) + tuple(int(m.group(i)) for i in range(2, 6))
                rows[key] = (float(m.group(6)), float(one.group(1)) if one else None)
    return rows


def r_l10_wgmma(a, ctx):
    """Version 4 beside version 1 on the same steps (bench.log of a development bench run: no
    peers.csv), each over version 1's one-token rate, by head dimension and draft tokens."""
    src = source(a, ["bench.log"])
    rows = l10_bench_lines(a)
    v1, v4 = "l10-v1-draft", "l10-v4-wgmma"
    if not rows or not any(k[0] == v4 for k in rows):
        return src + "\n\nVersion 4 beside version 1: " + NO_PEERS + "."

    def rng(xs, nd=2):
        if not xs:
            return "-"
        lo, hi = f"{min(xs):.{nd}f}", f"{max(xs):.{nd}f}"
        return lo if lo == hi else f"{lo}-{hi}"
    out, dims = [], sorted({k[1] for k in rows if k[0] == v4}, key=lambda d: (d != 128, -d))
    batches = sorted({k[2] for k in rows if k[0] == v4})
    kvs = sorted({k[3] for k in rows if k[0] == v4})
    for d in dims:
        for t in sorted({k[4] for k in rows if k[0] == v4 and k[1] == d}):
            ks = [k for k in rows if k[0] == v4 and k[1] == d and k[4] == t]
            one = [rows[k][1] for k in ks if rows[k][1] is not None]
            big = [rows[k][1] for k in ks if rows[k][1] is not None and k[2] >= 16 and k[3] >= 32768]
            base = [rows[(v1,) + k[1:]][1] for k in ks if (v1,) + k[1:] in rows and
                    rows[(v1,) + k[1:]][1] is not None]
            sp = [rows[k][0] / rows[(v1,) + k[1:]][0] for k in ks if (v1,) + k[1:] in rows]
            out.append([str(d), str(t), rng(base), rng(one), rng(big), rng(sp) + "x"])
    lines = [src, "",
             f"Causal, 32/8 heads, batch {', '.join(str(b) for b in batches)} and "
             f"{', '.join(seq_label(x) for x in kvs)} keys: each figure over version 1's one-token "
             "rate at the same batch and length (the bench's `vs_one_token`); the last column is "
             "version 4's speed over version 1's on the same steps:", "",
             table(["dim", "tokens", "version 1", "version 4",
                    "version 4 at batch 16 and more, 32k keys and more", "version 4 / version 1"],
                   out)]
    d256 = [rows[k][0] / rows[(v4, 128) + k[2:]][0] for k in rows
            if k[0] == v4 and k[1] == 256 and (v4, 128) + k[2:] in rows]
    if d256:
        lines += ["", f"Version 4 at dim 256 over version 4 at dim 128, step by step: {rng(d256)}x."]
    b1 = rows.get((v4, 128, 1, 32768, 8)), rows.get((v1, 128, 1, 32768, 8))
    if b1[0] and b1[1]:
        lines += [f"Batch 1, 32k keys, 8 tokens, dim 128: version 4 {b1[0][0]:.2f} TB/s, version 1 "
                  f"{b1[1][0]:.2f} TB/s."]
    return "\n".join(lines)


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "l10-default": r_l10_default, "l10-runs": r_l10_runs, "l10-peers": r_l10_peers,
    "l10-cascade": r_l10_cascade, "l10-serve": r_l10_serve, "l10-wgmma": r_l10_wgmma,
}
