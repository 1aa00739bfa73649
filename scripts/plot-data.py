#!/usr/bin/env python3
"""The data behind the figures of `make plots`: which archived run each figure reads, and what it
draws. scripts/plots.sh runs it, then gnuplot on the scripts in scripts/plots/.

    scripts/plot-data.py DIR         write, per figure, DIR/NAME.dat (its data) and DIR/NAME.inc.gp
                                     (title, ranges, reference lines), and DIR/jobs: one line per
                                     figure, "SCRIPT NAME" (scripts/plots/SCRIPT.gp) or
                                     "timeline CSV NAME" (scripts/plot-timeline.sh)
    scripts/plot-data.py --captions  check the lesson READMEs: each shows its figures as
                                     ../../docs/figures/NAME.png (in README.md or NOTES.md), on a
                                     line followed by a caption line that names every folder the
                                     figure reads; exit 1 if not

A lesson's figures read the folder scripts/results-tables.py reads for that lesson's README (the
newest folder under docs/results/ with rows of the lesson), through that script's own functions, so
a figure and the table beside it always come from the same run. Peers (peers.csv) come from the same
folder; where it has none for the lesson, from the folder the README's peers region names in its
marker (`<!-- results:l06-peers FOLDER -->`), and the figure's footer and caption say so. Ceilings
are the harness's: the rate a row reports over its `%` column, the peak lessons.csv's `peak` names.
Standard library only.
"""
import importlib.util
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("results_tables",
                                               os.path.join(HERE, "results-tables.py"))
rt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)

ROOT = rt.ROOT
FIGURES = os.path.join(ROOT, "docs", "figures")

# The colours of the reference lines' labels, as scripts/plots/style.gp draws the lines: the
# harness's ceiling, a peer of peers.csv, another reference of the same run.
STYLE = {"ceiling": "#c0392b", "peer": "#222222", "ref": "#6f6f6f"}

_archives = {}


def archive(folder):
    if folder not in _archives:
        _archives[folder] = rt.Archive(folder)
    return _archives[folder]


def lesson_archive(n):
    """The Archive a lesson README's regions read (results-tables.py's choice)."""
    return archive(rt.newest_folder((n,)))


def readme(n):
    hits = [d for d in sorted(os.listdir(os.path.join(ROOT, "lessons"))) if re.match(rf"0*{n}_", d)]
    return os.path.join(ROOT, "lessons", hits[0], "README.md") if hits else None


def lesson_docs(n):
    """Lesson n's README.md and, where it has one, its NOTES.md (results-tables.py writes the
    regions of both alike): the files that may show a figure or name a peers region's folder."""
    path = readme(n)
    if not path:
        return []
    notes = os.path.join(os.path.dirname(path), "NOTES.md")
    return [path] + ([notes] if os.path.exists(notes) else [])


def peer_archive(n, a):
    """Where lesson n's peers come from: its own folder, else the folder its README's peers region
    names. None when neither has them."""
    if a.peers and any(int(r["lesson"]) == n for r in a.peers):
        return a
    for path in lesson_docs(n):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                m = rt.OPEN.match(line.strip())
                if m and m.group(2) and "peers" in m.group(1):
                    p = archive(os.path.join(rt.RESULTS, m.group(2)))
                    if p.peers and any(int(r["lesson"]) == n for r in p.peers):
                        return p
    return None


def folder_of(a):
    return a.rel + "/"


# ---- The harness's ceilings, from lessons.csv ----------------------------------------------------

def _peak(rows, rate, pct):
    """rate / pct x 100 of the row with the largest pct (its rounding matters least), or None."""
    rs = [r for r in rows if r.get(rate) and r.get(pct)]
    if not rs:
        return None
    r = max(rs, key=lambda r: r[pct])
    return r[rate] / r[pct] * 100.0


def bw_peak(a, lesson, label="HBM"):
    # a label may name its byte model after the level: "HBM 1R+1W" is a % of HBM too
    return _peak([r for r in a.rows(lesson, timed=True)
                  if (r["peak"] or "").split(" ")[0] == label], "gbs", "pct_bw")


def flops_peak(a, lesson, dtype):
    rows = [r for r in a.rows(lesson, timed=True)
            if r["dtype"] == dtype and "fp8" not in (r.get("name") or "")]
    return _peak(rows, "tflops", "pct_flops")


# ---- Text ---------------------------------------------------------------------------------------

def fmt(x, nd):
    return rt.half_up(x, nd)


def rate_text(x):
    """GB/s as the lesson tables round them: no decimals from 100 up."""
    return fmt(x, 0 if x >= 100 else 1)


def shape_text(s):
    kv = f", {s['kv_heads']} KV heads" if s["kv_heads"] != s["heads"] else ""
    seq = (f"seq {s['seq_q']}" if s["seq_q"] == s["seq_kv"] else
           f"{s['seq_q']} query row{'s' if s['seq_q'] != 1 else ''}, kv {s['seq_kv']}")
    return (f"batch {s['batch']}, {s['heads']} heads{kv}, {seq}, dim {s['dim']}"
            f"{', causal' if s['causal'] else ''}")


def gq(s):
    """A gnuplot double-quoted string (a newline in @p s breaks the line there)."""
    s = str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + s + '"'


def sources(*pairs):
    """'data: docs/results/X/ (lessons.csv, peers.csv)', a folder named once with all it gives;
    a second folder's part reads 'from another run: docs/results/Y/ (peers.csv)'."""
    seen = {}
    for a, what in pairs:
        if a is None:
            continue
        seen.setdefault(folder_of(a), [])
        if what not in seen[folder_of(a)]:
            seen[folder_of(a)].append(what)
    parts = [f"{k} ({', '.join(v)})" for k, v in seen.items()]
    return "data: " + parts[0] + "".join(f"; from another run: {x}" for x in parts[1:])


# ---- Figures ------------------------------------------------------------------------------------
# A bar figure (scripts/plots/versions.gp, and each panel of l01-versions.gp) is a dict:
#   bars     [(x, value, class, text)]   classes: names of the bar colours, in order
#   xtics    [(x, label)]
#   refs     [dict(y, text, kind, x0=None, x1=None, place="margin"|"above"|None)]: horizontal
#            lines; x0/x1 None spans the plot, "margin" puts the text right of the plot
#   title, ylabel, log, yrange, xrange, footer, folders (for the captions check)

KINDS = {"ceiling": 1, "peer": 2, "ref": 3}  # the line styles of scripts/plots/style.gp


def bar_inc(fig, dat):
    """The settings of one bar figure (or panel): everything but the bars and lines themselves."""
    lo, hi = fig["yrange"]
    kinds = sorted({KINDS[r["kind"]] for r in fig["refs"]})
    lines = [f"set title {gq(fig['title'])}" if fig.get("title") else "unset title",
             f"set ylabel {gq(fig['ylabel'])}",
             f"set xrange [{fig['xrange'][0]}:{fig['xrange'][1]}]",
             f"set yrange [{lo}:{hi}]",
             "set logscale y" if fig.get("log") else "unset logscale y",
             "set xtics (" + ", ".join(f"{gq(t)} {x}" for x, t in fig["xtics"]) + ")",
             f"array cls[{len(fig['classes'])}] = ["
             + ", ".join(gq(c) for c in fig["classes"]) + "]",
             f"kinds = {gq(' '.join(str(k) for k in kinds))}",
             f"barwidth = {fig.get('barwidth', 0.7)}",
             f"dat = {gq(dat)}"]

    def frac(y):
        if fig.get("log"):
            return math.log(y / lo) / math.log(hi / lo)
        return (y - lo) / (hi - lo)
    margin_refs = [r for r in fig["refs"] if r.get("place", "margin") == "margin"]
    heights = spread([frac(r["y"]) for r in margin_refs],
                     [1 + r["text"].count("\n") for r in margin_refs])
    pos = {id(r): h for r, h in zip(margin_refs, heights)}
    for i, r in enumerate(fig["refs"], start=1):
        colour = STYLE[r["kind"]]
        place = r.get("place", "margin")
        if place == "margin":
            lines.append(f"set label {i} {gq(r['text'])} at graph 1.015, graph {pos[id(r)]:.4f} "
                         f"left font ',8' tc rgb '{colour}'")
        elif place == "above":
            lines.append(f"set label {i} {gq(r['text'])} at first {r['x0']}, first {r['y']} left "
                         f"offset 0.2,0.6 font ',7.5' tc rgb '{colour}' front")
    if fig.get("footer"):
        lines.append(f"set label 99 {gq(fig['footer'])} at screen 0.008, screen 0.025 left "
                     f"font ',7.5' tc rgb '#555555'")
    return "\n".join(lines) + "\n"


def spread(fracs, sizes, gap=0.05, top=0.99):
    """Label heights (graph fractions) near @p fracs, none above @p top, each label @p gap per line
    of its @p sizes clear of the next."""
    order = sorted(range(len(fracs)), key=lambda i: fracs[i])
    pos = [fracs[i] for i in order]
    need = [gap * (sizes[order[k]] + sizes[order[k - 1]]) / 2 for k in range(len(order))]
    for k in range(1, len(pos)):
        pos[k] = max(pos[k], pos[k - 1] + need[k])
    if pos and pos[-1] > top:
        pos[-1] = top
        for k in range(len(pos) - 2, -1, -1):
            pos[k] = min(pos[k], pos[k + 1] - need[k + 1])
    out = [0.0] * len(fracs)
    for k, i in enumerate(order):
        out[i] = pos[k]
    return out


def bar_dat(fig):
    """Block 0: the bars (x, value, class, "text"); block 1: the lines (x0, x1, y, kind)."""
    x0, x1 = fig["xrange"]
    bars = "".join(f"{x} {v!r} {c} {gq(t)}\n" for x, v, c, t in fig["bars"])
    refs = "".join(f"{r['x0'] if r.get('x0') is not None else x0} "
                   f"{r['x1'] if r.get('x1') is not None else x1} {r['y']!r} {KINDS[r['kind']]}\n"
                   for r in fig["refs"])
    return bars + "\n\n" + refs


def versions_fig(n, a, versions, value, cls, classes, ylabel, ceilings, peers, refs=(),
                 extra_src=()):
    """A one-panel figure of a lesson's versions at one shape. @p versions: [(number, name)];
    @p value(row) the bar; @p cls(number) its class; @p ceilings [(y, text)]; @p peers
    [(row, text)] (peers.csv rows); @p refs [(y, text)] other same-run references."""
    shape = rt.default_shape(a, n)
    bars, xtics = [], []
    for i, (v, name) in enumerate(versions, start=1):
        r = a.one(n, v, **shape)
        if r is None:
            continue
        y = value(r)
        bars.append((i, y, cls(v), rate_text(y) if "GB/s" in ylabel else fmt(y, 1)))
        xtics.append((i, f"{v} {name}"))
    lines = [dict(y=y, text=t, kind="ceiling") for y, t in ceilings if y]
    lines += [dict(y=p, text=t, kind="peer") for p, t in peers if p]
    lines += [dict(y=y, text=t, kind="ref") for y, t in refs if y]
    top = max([b[1] for b in bars] + [l["y"] for l in lines])
    return {"title": f"Lesson {n:02d}: the versions at {shape_text(shape)}",
            "ylabel": ylabel, "log": False, "bars": bars, "xtics": xtics, "classes": classes,
            "refs": lines, "xrange": (0.4, len(versions) + 0.6),
            "yrange": (0, nice(top / 0.8)),  # the top fifth kept for the key
            "footer": sources((a, "lessons.csv"), *extra_src)}


def nice(x):
    """@p x rounded up to a round axis end: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of
    ten."""
    e = 10 ** math.floor(math.log10(x))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= x:
            return round(m * e, 6)
    return 10 * e


def peer_row(p, n, impl, **kv):
    return p.peer(n, re.escape(impl), **kv) if p else None


# -- lesson 01

def fig_l01_versions():
    a = lesson_archive(1)
    p = peer_archive(1, a)
    shape = rt.default_shape(a, 1)
    rows = {v: a.one(1, v, **shape) for v in range(1, 16)}
    cls = {1: 1, 2: 1, 3: 1, 4: 1, 5: 2, 6: 2, 7: 2, 8: 2, 9: 3, 10: 4, 11: 4, 12: 4, 13: 4}
    bars, xtics = [], []
    for v in range(1, 14):
        r = rows[v]
        if r:
            bars.append((v, r["gbs"], cls[v], rate_text(r["gbs"])))
            xtics.append((v, f"{v} {r['name']}"))
    refs = []
    for lo, hi, label, text in ((1, 4, "pinned", "pinned, measured in setup"), (5, 9, "HBM", "HBM"),
                                (10, 13, "SMEM", "SMEM")):
        y = bw_peak(a, 1, label)
        if y:
            refs.append(dict(y=y, text=text, kind="ceiling", x0=lo - 0.45, x1=hi + 0.45,
                             place="above"))
    for v, impl, kv in ((1, "torch.h2d", dict(pinned=0)), (2, "torch.h2d", dict(pinned=1)),
                        (3, "torch.d2h", dict(pinned=0)), (4, "torch.d2h", dict(pinned=1)),
                        (5, "torch.sum", {}), (6, "torch.sum", {}), (8, "torch.copy", {})):
        r = peer_row(p, 1, impl, **kv)
        if r and r["gbs"]:
            refs.append(dict(y=r["gbs"], text="", kind="peer", x0=v - 0.45, x1=v + 0.45,
                             place=None))
    left = {"title": None, "ylabel": "GB/s (log scale)", "log": True, "bars": bars, "xtics": xtics,
            "classes": ["host link", "HBM", "L2", "shared memory"], "refs": refs,
            "xrange": (0.4, 13.6), "yrange": (1, 200000),
            "footer": sources((a, "lessons.csv"), (p, "peers.csv"))}
    bars, xtics, refs = [], [], []
    for i, v in enumerate((14, 15), start=1):
        r = rows[v]
        if r:
            bars.append((i, r["tflops"], i, fmt(r["tflops"], 1)))
            xtics.append((i, f"{v} {r['name']}"))
    fp32 = flops_peak(a, 1, "fp32")
    if fp32:
        refs.append(dict(y=fp32, text="fp32 peak", kind="ceiling", x0=0.55, x1=2.45, place="above"))
    t = peer_row(p, 1, "torch.naive", **shape)
    if t and t["tflops"]:
        refs.append(dict(y=t["tflops"], text="", kind="peer", x0=1.55, x1=2.45, place=None))
    right = {"title": None, "ylabel": "TFLOP/s", "log": False, "bars": bars, "xtics": xtics,
             "classes": ["FMA from registers", "attention"], "refs": refs, "xrange": (0.4, 2.6),
             "yrange": (0, nice(max([b[1] for b in bars] + [r["y"] for r in refs]) * 1.12))}
    title = f"Lesson 01: the versions at {shape_text(shape)} (the default run)"
    return {"name": "l01-versions", "lesson": 1, "script": "l01-versions", "panels": [left, right],
            "title": title, "folders": folders(a, p)}


def folders(*archives):
    out = []
    for x in archives:
        if x is not None and folder_of(x) not in out:
            out.append(folder_of(x))
    return out


LEVELS = (("registers", "fma"), ("shared memory", "row"), ("L2", "l2"), ("HBM", "read16"),
               ("host link (pinned)", "h2d-pinned"))


def fig_l01_pyramid():
    a = lesson_archive(1)
    rows = []
    for i, (level, probe) in enumerate(LEVELS):
        r = rt.l01(a, probe)
        if r is None:
            continue
        if probe == "fma":
            # Not a transfer: the operand rate the FMA rate implies, three 4-byte operands per FMA
            # of two flops (6 B per flop), as the README's pyramid derives it.
            gbs = r["tflops"] * 6000.0
            peak = r["tflops"] / r["pct_flops"] * 100.0 * 6000.0 if r["pct_flops"] else None
            text = f"{gbs / 1000:.2f} TB/s, derived:\n{r['name']} x 6 B per flop"
        else:
            gbs = r["gbs"]
            # The L2 probe's % is of HBM: the L2 has no ceiling of its own in lessons.csv.
            peak = gbs / r["pct_bw"] * 100.0 if r["pct_bw"] and probe != "l2" else None
            unit = f"{gbs / 1000:.2f} TB/s" if gbs >= 1000 else f"{gbs:.1f} GB/s"
            text = f"{unit}, {r['name']}"
        rows.append([len(LEVELS) - i, gbs, level, text, peak])
    lines = []
    for k, (y, gbs, level, text, peak) in enumerate(rows):
        below = rows[k + 1][1] if k + 1 < len(rows) else None
        step = f"{gbs / below:.1f}x" if below else ""
        if step and k == 0:
            step += " the level below"
        lines.append(f"{y} {gbs!r} {gq(level)} {gq(text)} {peak if peak else 'NaN'} {gq(step)}\n")
    inc = "\n".join([
        f"set title {gq('Lesson 01: bandwidth of each level, measured by the default run')}",
        "set xrange [10:1e7]",
        f"set yrange [0.4:{len(rows) + 0.6}]",
        f"set label 99 {gq(sources((a, 'lessons.csv')))} at screen 0.008, screen 0.025 left "
        "font ',7.5' tc rgb '#555555'"]) + "\n"
    return {"name": "l01-pyramid", "lesson": 1, "script": "pyramid", "dat": "".join(lines),
            "inc": inc, "folders": folders(a)}


def fig_l01_roofline():
    a = lesson_archive(1)
    a4 = lesson_archive(4)
    naive = a.one(1, 15, **rt.L01_DEFAULT)
    s4 = rt.default_shape(a4, 4)
    best = max((r for r in a4.rows(4, timed=True, **s4) if r["tflops"]), key=lambda r: r["tflops"])
    hbm, read = rt.l01_hbm_peak(a), rt.l01(a, "read16")
    fp32, bf16 = flops_peak(a, 1, "fp32"), flops_peak(a4, 4, "bf16")
    flops = naive["tflops"] * 1e12 * naive["ms"] * 1e-3
    model = rt.naive_model_bytes(rt.L01_DEFAULT)
    x_model, x_csv = flops / model, naive["tflops"] * 1e3 / naive["gbs"]
    x_best = best["tflops"] * 1e3 / best["gbs"]
    points = ((x_model, naive["tflops"],
               "lesson 01 naive: flops / the bytes it moves (traffic model)"),
              (x_csv, naive["tflops"], "the same flops / the bytes that must move"),
              (x_best, best["tflops"], f"lesson 04 v{best['version']} {best['name']} (fused)"))
    dat = "".join(f"{x!r} {y!r} {i} {gq(t)}\n" for i, (x, y, t) in enumerate(points, start=1))
    inc = "\n".join([
        f"set title {gq('Roofline: the naive attention and a fused one, at their default shapes')}",
        f"hbm = {hbm!r}", f"hbmread = {read['gbs']!r}", f"fp32 = {fp32!r}", f"bf16 = {bf16!r}",
        f"set arrow 1 from first {x_model * 1.12!r}, first {naive['tflops']!r} to first "
        f"{x_csv / 1.12!r}, first {naive['tflops']!r} head filled size screen 0.012,20 lw 1.2 "
        "lc rgb '#555555' front",
        f"set label 99 {gq(sources((a, 'lessons.csv'), (a4, 'lessons.csv')))} at screen 0.008, "
        "screen 0.025 left font ',7.5' tc rgb '#555555'"]) + "\n"
    return {"name": "l01-roofline", "lesson": 1, "script": "roofline", "dat": dat, "inc": inc,
            "folders": folders(a, a4)}


# -- lessons 02-07

def fig_l02():
    a = lesson_archive(2)
    p = peer_archive(2, a)
    shape = rt.L02_DEFAULT
    rows_, cols_ = rt.l02_rc(shape)
    versions = list(rt.L02_VERSIONS.items())
    bars, xtics = [], []
    for i, (v, name) in enumerate(versions, start=1):
        r = a.one(2, v, **shape)
        if r is None:
            continue
        g, _ = rt.l02_1r1w(a, r)
        own = rt.l02_own(r, v)
        bars.append((i - 0.19, own, 1, rate_text(own)))
        bars.append((i + 0.19, g, 2, rate_text(g)))
        xtics.append((i, f"{v} {name}"))
    t = p and rt.l02_peer(p, r"torch\.softmax", shape)
    refs = [dict(y=bw_peak(a, 2), text="HBM peak (the harness's)", kind="ceiling")]
    if t:
        refs.append(dict(y=t["gbs"], text=f"torch.softmax {rate_text(t['gbs'])} (1 R + 1 W)",
                         kind="peer"))
    top = max([b[1] for b in bars] + [r["y"] for r in refs])
    fig = {"title": f"Lesson 02: the softmax versions on a {rows_} x {cols_} fp32 matrix "
                    f"(the default run)",
           "ylabel": "GB/s", "log": False, "bars": bars, "xtics": xtics,
           "classes": ["bytes the version requests (its own count; re-reads may hit the L2)",
                       "one read + one write of the matrix"],
           "refs": refs, "xrange": (0.4, len(versions) + 0.6), "yrange": (0, nice(top / 0.8)),
           "footer": sources((a, "lessons.csv"), (p, "peers.csv")), "barwidth": 0.36}
    return {"name": "l02-versions", "lesson": 2, "script": "versions", "fig": fig,
            "folders": folders(a, p)}


def fig_l03():
    a = lesson_archive(3)
    shape = rt.default_shape(a, 3)
    naive = a.one(1, 15, **shape)
    fig = versions_fig(
        3, a, list(rt.L03_NAMES.items()), lambda r: r["tflops"], lambda v: 1,
        ["fp32, CUDA cores"], "TFLOP/s", [(flops_peak(a, 3, "fp32"), "fp32 peak (the harness's)")],
        [], refs=[(naive and naive["tflops"],
                   f"lesson 01 naive (same run) {fmt(naive['tflops'], 1)}"
                   if naive else "")])
    return {"name": "l03-versions", "lesson": 3, "script": "versions", "fig": fig,
            "folders": folders(a)}


def attention_peers(n, a, p, shape, impls):
    out = []
    kv = {k: shape[k] for k in ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "dim", "causal")}
    for impl, label, unit in impls:
        r = peer_row(p, n, impl, **kv)
        if r and r[unit]:
            val = r[unit]
            out.append((val, f"{label} {fmt(val, 1) if unit == 'tflops' else rate_text(val)}"))
    return out


def fig_l04():
    a = lesson_archive(4)
    p = peer_archive(4, a)
    shape = rt.default_shape(a, 4)
    peers = attention_peers(4, a, p, shape, (("sdpa-flash", "SDPA flash", "tflops"),
                                             ("sdpa-cudnn", "SDPA cuDNN", "tflops")))
    g = p and p.peer(4, r"torch\.matmul")
    if g and g["tflops"]:
        peers.append((g["tflops"], f"cuBLAS GEMM {fmt(g['tflops'], 1)}"))
    fig = versions_fig(
        4, a, list(rt.L04_NAMES.items()), lambda r: r["tflops"], lambda v: 1 if v < 3 else 2,
        ["fp32, CUDA cores", "bf16, tensor cores"], "TFLOP/s",
        [(flops_peak(a, 4, "bf16"), "bf16 tensor-core peak (the harness's)"),
         (flops_peak(a, 4, "fp32"), "fp32 peak (the harness's)")], peers,
        extra_src=[(p, "peers.csv")])
    return {"name": "l04-versions", "lesson": 4, "script": "versions", "fig": fig,
            "folders": folders(a, p)}


def fig_l05():
    a = lesson_archive(5)
    p = peer_archive(5, a)
    shape = rt.default_shape(a, 5)
    vs = rt.l05_versions(a)
    last = vs[-1][0]
    # the versions that ran at the shape (versions 8 and 9 are built for dim 64 only)
    vs = [(v, n) for v, n in vs if v == last or rt.l05_t(a, v, **shape) is not None]
    names = dict(vs)

    def cls(v):
        return 3 if v == last else 2 if "fp8" in names[v] else 1
    peers = attention_peers(5, a, p, shape, (("sdpa-flash", "SDPA flash", "tflops"),
                                             ("sdpa-cudnn", "SDPA cuDNN", "tflops")))
    fig = versions_fig(
        5, a, vs, lambda r: r["tflops"], cls,
        ["bf16, wgmma", "FP8 e4m3 (its conversion timed with it)", "lesson 04's version 7"],
        "TFLOP/s", [(flops_peak(a, 5, "bf16"), "bf16 tensor-core peak (the harness's;\n"
                                                "the FP8 rows' % are of twice this)")], peers,
        extra_src=[(p, "peers.csv")])
    return {"name": "l05-versions", "lesson": 5, "script": "versions", "fig": fig,
            "folders": folders(a, p)}


def fig_l05_timeline():
    """The timeline of the newest folder that has one (a lesson-05 run may leave it out: its
    stamps come from a separate build, `-DATTN_L05_TIMELINE=ON`)."""
    a = None
    for d in sorted(os.listdir(rt.RESULTS), key=lambda d: (d[-10:], d), reverse=True):
        if os.path.exists(os.path.join(rt.RESULTS, d, "timeline-d128.csv")):
            a = archive(os.path.join(rt.RESULTS, d))
            break
    if a is None:
        return None
    csv = os.path.join(a.folder, "timeline-d128.csv")
    return {"name": "l05-timeline-d128", "lesson": 5, "script": "timeline",
            "csv": os.path.relpath(csv, ROOT), "folders": folders(a)}


def decode_fig(n, a, p, names, cls, classes, impls):
    shape = rt.default_shape(a, n)
    peers = attention_peers(n, a, p, shape, impls)
    return versions_fig(
        n, a, list(names.items()), lambda r: r["gbs"], cls, classes, "GB/s of K + V",
        [(bw_peak(a, n), "HBM peak (the harness's)")], peers, extra_src=[(p, "peers.csv")])


def fig_l06():
    a = lesson_archive(6)
    p = peer_archive(6, a)
    fig = decode_fig(6, a, p, rt.L06_NAMES, lambda v: 1, ["one decode query per head, bf16"],
                     (("sdpa-flash", "SDPA flash", "gbs"), ("sdpa-cudnn", "SDPA cuDNN", "gbs")))
    return {"name": "l06-versions", "lesson": 6, "script": "versions", "fig": fig,
            "folders": folders(a, p)}


def fig_l07():
    a = lesson_archive(7)
    p = peer_archive(7, a)
    fig = decode_fig(7, a, p, rt.L07_NAMES, lambda v: 1 if v <= rt.L07_PAGED else 2,
                     ["paged K and V, block size 16", "dense K and V (lesson 06's kernels)"],
                     (("cudnn-paged-bs16", "cuDNN paged, block size 16", "gbs"),
                      ("cudnn-dense", "cuDNN dense", "gbs")))
    return {"name": "l07-versions", "lesson": 7, "script": "versions", "fig": fig,
            "folders": folders(a, p)}


BUILDERS = (fig_l01_versions, fig_l01_pyramid, fig_l01_roofline, fig_l02, fig_l03, fig_l04, fig_l05,
            fig_l05_timeline, fig_l06, fig_l07)


def figures():
    return [f for f in (b() for b in BUILDERS) if f]


def write(out):
    os.makedirs(out, exist_ok=True)
    jobs = []
    for f in figures():
        name = f["name"]
        if f["script"] == "timeline":
            jobs.append(f"timeline {f['csv']} {name}")
            continue
        if f["script"] == "versions":
            fig = f["fig"]
            dat = os.path.join(out, name + ".dat")
            with open(dat, "w") as fh:
                fh.write(bar_dat(fig))
            inc = bar_inc(fig, dat)
        elif f["script"] == "l01-versions":
            inc = f"set multiplot title {gq(f['title'])}\n"
            for k, panel in enumerate(f["panels"], start=1):
                dat = os.path.join(out, f"{name}-{k}.dat")
                with open(dat, "w") as fh:
                    fh.write(bar_dat(panel))
                with open(os.path.join(out, f"{name}-{k}.inc.gp"), "w") as fh:
                    fh.write(bar_inc(panel, dat))
        else:
            dat = os.path.join(out, name + ".dat")
            with open(dat, "w") as fh:
                fh.write(f["dat"])
            inc = f["inc"] + f"dat = {gq(dat)}\n"
        with open(os.path.join(out, name + ".inc.gp"), "w") as fh:
            fh.write(inc)
        jobs.append(f"{f['script']} {name}")
    with open(os.path.join(out, "jobs"), "w") as fh:
        fh.write("\n".join(jobs) + "\n")


def check_captions():
    bad = []
    figs = figures()
    names = {f["name"] + ".png" for f in figs}
    have = set(os.listdir(FIGURES)) if os.path.isdir(FIGURES) else set()
    for name in sorted(names - have):
        bad.append(f"docs/figures/{name} is missing: run `make plots` (gnuplot) and commit it")
    for name in sorted(x for x in have - names if x.endswith(".png")):
        bad.append(f"docs/figures/{name} is no figure of scripts/plot-data.py: remove it")
    for f in figs:
        link = f"](../../docs/figures/{f['name']}.png)"
        shown = 0
        for path in lesson_docs(f["lesson"]):
            rel = os.path.relpath(path, ROOT)
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().split("\n")
            hits = [i for i, line in enumerate(lines) if link in line]
            shown += len(hits)
            for i in hits:
                caption = lines[i + 1] if i + 1 < len(lines) else ""
                for folder in f["folders"]:
                    if folder not in caption:
                        bad.append(f"{rel}:{i + 2}: the caption of {f['name']}.png does not name "
                                   f"{folder}, the folder it is drawn from")
        if not shown:
            rel = os.path.relpath(readme(f["lesson"]), ROOT)
            bad.append(f"{rel} (or its NOTES.md): does not show docs/figures/{f['name']}.png")
    for line in bad:
        print(f"plot-data: {line}")
    if not bad:
        print(f"plot-data: every figure is shown with a caption naming its folder")
    return 1 if bad else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--captions":
        return check_captions()
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    write(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
