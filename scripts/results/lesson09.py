"""Lesson 09's regions: its renderers and the helpers they share."""
import csv
import os
import re
from .core import (NO_PEERS, NO_RUN, SHAPE_KEYS, _num, esc, f, noise_sentence, ratio, rel,
    seq_label, shape_words, source, span, table, xs)


# ---- Lesson 09 ---------------------------------------------------------------------------------
# bench/lesson09_peers.py writes three files: its timing rows into peers.csv (lesson 09, through
# bench/peer_timing.py's PeerCsv), and accuracy-lesson09.csv and memory-lesson09.csv beside it
# (columns: ACCURACY_COLUMNS and MEMORY_COLUMNS of that script). The regions read a folder named in
# their marker, e.g. <!-- results:l09-peers h200-l09-2026-12-01 -->, or the lesson's newest one.

def no_l09(name):
    return (f"not in this archive (`bench/lesson09_peers.py --out DIR` writes `{name}` into DIR; "
            f"copy it into the run's folder)")


def l09_csv(a, name):
    """The rows of one of lesson 09's own CSVs in the folder (shape columns as ints, the figures
    as floats), or None when it is missing or empty."""
    path = os.path.join(a.folder, name)
    if not os.path.exists(path):
        return None
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in SHAPE_KEYS:
            v = _num(r.get(k))
            r[k] = int(v) if v is not None else None
        for k in ("rel_l2", "max_abs", "ref_max_abs", "flash_rel_l2", "ratio", "bar", "io_bytes",
                  "workspace_bytes", "model_bytes", "peak_bytes", "extra_bytes", "free_bytes"):
            if k in r:
                r[k] = _num(r[k])
    return rows or None


def l09_shape(r):
    """'b1 h8/1 s1024 d128 causal', as the script prints a shape."""
    kv = f"/{r['kv_heads']}" if r["kv_heads"] != r["heads"] else ""
    seq = f"{r['seq_q']}" if r["seq_q"] == r["seq_kv"] else f"{r['seq_q']}/{r['seq_kv']}"
    mask = "causal" if r["causal"] else "full"
    return f"b{r['batch']} h{r['heads']}{kv} s{seq} d{r['dim']} {mask}"


def l09_bytes(n):
    """Decimal units, as bench/lesson09_peers.py prints them."""
    if n is None:
        return "-"
    return f"{n / 1e9:.2f} GB" if abs(n) >= 1e9 else f"{n / 1e6:.1f} MB"


def l09_over_peers(a):
    """The fastest version's TFLOP/s over SDPA flash's and over SDPA cuDNN's backward at each shape
    of the papers' grid from seq 2k: ([over flash], [over cuDNN]); ([], []) without peers."""
    over_fl, over_cu = [], []
    if not a.peers or not a.peer(9, "sdpa-flash"):
        return over_fl, over_cu
    l9 = [r for r in a.peers if int(r["lesson"]) == 9]
    nums = sorted({int(m.group(1)) for r in l9 for m in [re.match(r"v(\d+)-", r["impl"] or "")]
                   if m})
    for dim, c, sq in sorted({(r["dim"], r["causal"], r["seq_q"]) for r in l9 if r["seq_q"]}):
        if sq < 2048:
            continue
        kv = dict(dim=dim, causal=c, seq_q=sq)
        fl, cu = a.peer(9, "sdpa-flash", **kv), a.peer(9, "sdpa-cudnn", **kv)
        ts = [r["tflops"] for r in (a.peer(9, rf"v{v}-.*", **kv) for v in nums)
              if r and r["tflops"]]
        best = max(ts) if ts else None
        b_f, b_c = ratio(best, fl and fl["tflops"]), ratio(best, cu and cu["tflops"])
        over_fl += [b_f] if b_f else []
        over_cu += [b_c] if b_c else []
    return over_fl, over_cu


def r_l09_peers(a, ctx):
    src = source(a, ["peers.csv"])
    if not a.peers or not a.peer(9, "sdpa-flash"):
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    l9 = [r for r in a.peers if int(r["lesson"]) == 9]
    nums = sorted({int(m.group(1)) for r in l9 for m in [re.match(r"v(\d+)-", r["impl"] or "")]
                   if m})
    shapes = sorted({(r["dim"], r["causal"], r["seq_q"]) for r in l9 if r["seq_q"]})
    rows, over_fl, over_cu = [], [], []
    for dim, c, sq in shapes:
        kv = dict(dim=dim, causal=c, seq_q=sq)
        fl, cu = a.peer(9, "sdpa-flash", **kv), a.peer(9, "sdpa-cudnn", **kv)
        vs = {v: a.peer(9, rf"v{v}-.*", **kv) for v in nums}
        ts = [r["tflops"] for r in vs.values() if r and r["tflops"]]
        best = max(ts) if ts else None
        b_f, b_c = ratio(best, fl and fl["tflops"]), ratio(best, cu and cu["tflops"])
        if sq >= 2048:
            over_fl += [b_f] if b_f else []
            over_cu += [b_c] if b_c else []
        rows.append([dim, "yes" if c else "no", seq_label(sq), f(fl and fl["tflops"]),
                     f(cu and cu["tflops"])] + [f(vs[v] and vs[v]["tflops"]) for v in nums] +
                    [f(b_f, 2), f(b_c, 2)])
    sw = a.software()
    out = [src, "", f"Backward TFLOP/s {a.timed_in(9, sw)}, the papers' shapes: 16k tokens "
           "(batch = 16384 / seq), hidden 2048 (heads = 2048 / dim); the backward counted as 2.5x "
           "the forward's flops, causal as the visible pairs. The versions read O and the LSE of "
           "lesson 04's version 7.", "",
           table(["dim", "causal", "seq", "SDPA flash", "SDPA cuDNN"] + [f"v{v}" for v in nums] +
                 ["best / flash", "best / cuDNN"], rows), ""]
    mine = [r for r in l9 if re.match(r"v\d+-", r["impl"] or "")]
    checked = [r for r in mine if r["check"] in ("ok", "MISMATCH")]
    bad = [r for r in checked if r["check"] == "MISMATCH"]
    s = []
    if checked:
        s.append(f"{len(checked) - len(bad)} of the {len(checked)} version rows checked matched "
                 f"flash's dQ, dK and dV (relative L2 under 1e-1, a guard against garbage; the accuracy table is the bar)" +
                 (f"; {len(bad)} did not." if bad else "."))
    skipped = {}
    for r in mine:
        if (r["check"] or "").startswith("skipped"):
            skipped.setdefault(r["impl"], []).append(r["seq_q"])
    for impl, seqs in sorted(skipped.items()):
        s.append(f"`{impl}` was not timed at {len(seqs)} shape{'s' if len(seqs) > 1 else ''} "
                 f"(seq {', '.join(seq_label(x) for x in sorted(set(seqs)))}: its workspace did "
                 "not fit, or one run outlasted the time budget).")
    if over_fl:
        s.append(f"At seq 2k and longer the fastest version runs at "
                 f"{span(min(over_fl), max(over_fl), 2)}x FlashAttention-2's backward" +
                 (f" and {span(min(over_cu), max(over_cu), 2)}x cuDNN's." if over_cu else "."))
    out.append(" ".join(s))
    return "\n".join(out).rstrip()


def r_l09_accuracy(a, ctx):
    name = "accuracy-lesson09.csv"
    src = source(a, [name])
    rs = l09_csv(a, name)
    if not rs:
        return src + "\n\nAccuracy: " + no_l09(name) + "."
    groups = {}  # (shape, impl) -> {grad: row}, in the file's order
    for r in rs:
        groups.setdefault((l09_shape(r), r["impl"]), {})[r["grad"]] = r
    rows, judged, passed, worst = [], 0, 0, None
    for (shape, impl), g in groups.items():
        first = next(iter(g.values()))
        verdict = first["verdict"] or ""
        if first["rel_l2"] is None:  # an error or a skipped version: its reason
            rows.append([shape, f"`{impl}`", "-", "-", "-", "-", esc(verdict)])
            continue
        ratios = [g[x]["ratio"] for x in ("dq", "dk", "dv") if x in g and g[x]["ratio"] is not None]
        top = max(ratios) if ratios else None
        if verdict in ("PASS", "FAIL"):
            judged += 1
            passed += verdict == "PASS"
            if top is not None and (worst is None or top > worst[0]):
                worst = (top, impl, shape)
        rows.append([shape, f"`{impl}`"] +
                     [f"{g[x]['rel_l2']:.2e}" if x in g and g[x]["rel_l2"] is not None else "-"
                      for x in ("dq", "dk", "dv")] + [xs(top), esc(verdict)])
    bar = next((r["bar"] for r in rs if r.get("bar")), None)
    out = [src, "", "The gradients of one backward on bf16 inputs against float64 (the same "
           "inputs), relative L2 error ||got - ref|| / ||ref||; the ratio is the largest over dQ, "
           "dK and dV of an implementation's error over SDPA flash's.", "",
           table(["shape", "implementation", "dQ", "dK", "dV", "worst / flash", "verdict"], rows),
           ""]
    if judged:
        s = (f"{passed} of {judged} version rows pass the lesson's bar (at most "
             f"{bar:g}x flash's error on each gradient)" if bar else
             f"{passed} of {judged} version rows pass")
        if worst:
            s += f"; the largest ratio is {worst[0]:.2f} (`{worst[1]}`, {worst[2]})"
        out.append(s + ".")
    return "\n".join(out).rstrip()


def r_l09_memory(a, ctx):
    name = "memory-lesson09.csv"
    src = source(a, [name])
    rs = l09_csv(a, name)
    if not rs:
        return src + "\n\nMemory: " + no_l09(name) + "."
    impls = list(dict.fromkeys(r["impl"] for r in rs))
    seqs = sorted({r["seq_q"] for r in rs})
    cell = {(r["seq_q"], r["impl"]): r for r in rs}

    def show(r):
        if r is None:
            return "-"
        chk = r["check"] or ""
        if chk.startswith("refused"):
            m = re.search(r"needs ([\d.]+ GB)", chk)
            return f"refused (needs {m.group(1)})" if m else "refused"
        if not chk.startswith("ok"):
            return "error"
        return l09_bytes(r["extra_bytes"])
    rows = []
    for sq in seqs:
        io = next((cell[(sq, i)]["io_bytes"] for i in impls if (sq, i) in cell), None)
        rows.append([seq_label(sq), l09_bytes(io)] + [show(cell.get((sq, i))) for i in impls])
    r0 = rs[0]
    out = [src, "", f"Device memory of one backward beyond its inputs and outputs (the peak of "
           f"`torch.cuda.max_memory_allocated()`, the versions' workspace allocated as a torch "
           f"tensor; GB = 1e9 bytes): batch {r0['batch']}, {r0['heads']} heads, dim {r0['dim']}, "
           f"{'causal' if r0['causal'] else 'full'}.", "",
           table(["seq", "inputs + outputs"] + [f"`{i}`" for i in impls], rows), ""]
    s = []
    for i in impls:
        ok = sorted((r["seq_q"], r["extra_bytes"]) for r in rs
                    if r["impl"] == i and (r["check"] or "").startswith("ok") and r["extra_bytes"])
        if len(ok) >= 2 and re.match(r"v\d+-", i):
            (s0, e0), (s1, e1) = ok[0], ok[-1]
            s.append(f"`{i}` grows from {l09_bytes(e0)} at seq {seq_label(s0)} to {l09_bytes(e1)} "
                     f"at {seq_label(s1)}: {e1 / e0:.0f}x for a {s1 // s0}x longer sequence.")
    out.append(" ".join(s))
    return "\n".join(out).rstrip()


def l09_ms(ms):
    """A time in ms with three or four significant digits: 0.812, 12.34, 812.3, 4012."""
    if ms is None:
        return "-"
    return f"{ms:.0f}" if ms >= 1000 else f"{ms:.1f}" if ms >= 100 else \
        f"{ms:.2f}" if ms >= 10 else f"{ms:.3f}"


def r_l09_versions(a, ctx):
    """Every run of lesson 09 in lessons.csv (the default `./run`, then each line of gpu-runs.txt),
    one row per shape in the order the suite ran them: each version's TFLOP/s and median time, and
    version 5's time against version 4's."""
    src = source(a, ["lessons.csv"])
    rs = a.rows(9)
    if not rs:
        return src + "\n\nThe lesson's runs: " + NO_RUN + "."
    names = {}
    for r in rs:
        names.setdefault(r["version"], r["name"])
    vs = sorted(names)
    shapes = list(dict.fromkeys(tuple(r[k] for k in SHAPE_KEYS) for r in rs))
    default = dict(zip(SHAPE_KEYS, shapes[0]))

    def cell(r):
        if r is None:
            return "-"
        if r["ms"] is None:  # skipped or failed to run: the reason goes below the table
            return esc(r["status"])
        c = f"{f(r['tflops'])} ({l09_ms(r['ms'])} ms)"
        return c if r["status"] == "PASS" else c + f" {esc(r['status'])}"

    rows, det = [], []
    for key in shapes:
        s = dict(zip(SHAPE_KEYS, key))
        got = {}
        for v in vs:
            first = a.rows(9, v, **s)
            got[v] = a.one(9, v, **s) or (first[0] if first else None)
        d = rel(got[5] and got[5]["ms"], got[4] and got[4]["ms"]) if 4 in got and 5 in got else None
        if d is not None:
            det.append((d, s))
        rows.append([f"batch {s['batch']}, {shape_words(s, default)}"] + [cell(got[v]) for v in vs] +
                    ["-" if d is None else f"{d:+.1f}%"])
    out = [src, "", "TFLOP/s (the backward counted as 2.5x the forward's flops, causal as the visible "
           "pairs; median time in ms), one row per shape the suite ran: the default `./run`, then "
           "each line of `gpu-runs.txt`, the first run of a shape where it ran more than once. The "
           "last column is version 5's time over version 4's, minus 1: what the deterministic dQ "
           "costs (+) or saves (-) against the atomics.", "",
           table(["run"] + [f"{v} `{names[v]}`" for v in vs] + ["5 vs 4, time"], rows), ""]
    st = {}
    for r in rs:
        st[r["status"]] = st.get(r["status"], 0) + 1
    s = [f"{st.get('PASS', 0)} of the {len(rs)} rows passed their check (dQ, dK and dV against the "
         "double-precision reference)"]
    said = {"FAIL": "failed it", "unchecked": "were timed without a check (`--no-check`)",
            "error": "hit an error"}
    for k in sorted(x for x in st if x not in ("PASS", "skipped")):
        s.append(f"{st[k]} {said.get(k, k)}")
    s = ["; ".join(s) + "."]
    for r in rs:
        if r["status"] == "skipped":
            s.append(f"Version {r['version']} at batch {r['batch']}, {shape_words(r)}: "
                     f"\"{esc(r['note'] or 'skipped')}\".")
    if det:
        lo, hi = min(det, key=lambda t: t[0]), max(det, key=lambda t: t[0])
        s.append(f"Version 5 against version 4 over the {len(det)} shapes: {lo[0]:+.1f}% "
                 f"(batch {lo[1]['batch']}, {shape_words(lo[1])}) to {hi[0]:+.1f}% (batch "
                 f"{hi[1]['batch']}, {shape_words(hi[1])}) in time.")
    s.append(noise_sentence(a, 9))
    out.append(" ".join(s))
    return "\n".join(out).rstrip()


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "l09-peers": r_l09_peers, "l09-accuracy": r_l09_accuracy, "l09-memory": r_l09_memory,
    "l09-versions": r_l09_versions,
}
