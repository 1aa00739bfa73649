"""Lesson 08's regions: its renderers and the helpers they share."""
import re
from .core import NO_RUN, SHAPE_KEYS, esc, f, ratio, rel, seq_label, source, span, table, xs


# ---- Lesson 08 ---------------------------------------------------------------------------------
# lessons.csv has no column for the ranks: two runs of the same shape with 2 and 8 ranks give rows
# that differ in nothing else. So the lesson's runs are read from gpu-suite.log, one `lesson-8 ...`
# block per run (the problem, the ranks, each ring version's placement and, for virtual ranks, the
# program's prediction for a GPU per rank), and each block is matched with its rows of lessons.csv
# by shape and order: the k-th block of a shape takes the k-th rows of that shape. The times are
# lessons.csv's; the log gives what the csv cannot.

L08_BLOCK = re.compile(r"^lesson-8(?:\s+(.*))?$")
L08_PROBLEM = re.compile(r"^problem\s+batch (\d+)\s+heads (\d+)/(\d+)\s+seq (\d+)/(\d+)\s+dim (\d+)"
                         r"\s+(full|causal)")
L08_VERSION = re.compile(r"^(\d+) (\S+): (\d+) ranks? on (\d+) GPUs? \(([^)]*)\), (\S+) layout")
L08_PREDICT = re.compile(r"^\s+a GPU per rank \(not run here\): ([\d.]+)x predicted .*?"
                         r"share of the work, ([\d.]+)\)")


def l08_runs(a):
    """Every run of lesson 08 in gpu-suite.log, in the suite's order: {args, shape, ranks, rows
    (version -> its lessons.csv row), ring (version -> {name, gpus, how, layout, predicted,
    share})}. [] without a log."""
    runs, seen = [], {}
    for title, lines in (a.log or {}).get("sections", []):
        m = L08_BLOCK.match(title)
        if not m:
            continue
        run = {"args": (m.group(1) or "").strip(), "shape": None, "ranks": None, "rows": {},
               "ring": {}}
        cur = None
        for line in lines:
            p = L08_PROBLEM.match(line)
            if p and run["shape"] is None:
                g = [int(x) for x in p.groups()[:6]]
                run["shape"] = dict(batch=g[0], heads=g[1], kv_heads=g[2], seq_q=g[3],
                                    seq_kv=g[4], dim=g[5], causal=int(p.group(7) == "causal"))
            r = re.match(r"^ring: (\d+) ranks", line)
            if r and run["ranks"] is None:
                run["ranks"] = int(r.group(1))
            v = L08_VERSION.match(line)
            if v:
                cur = run["ring"].setdefault(int(v.group(1)), {
                    "name": v.group(2), "gpus": int(v.group(4)), "how": v.group(5),
                    "layout": v.group(6), "predicted": None, "share": None})
                continue
            q = L08_PREDICT.match(line)
            if q and cur is not None:
                cur["predicted"], cur["share"] = float(q.group(1)), float(q.group(2))
        if run["shape"] is None:
            continue
        key = tuple(run["shape"][k] for k in SHAPE_KEYS)
        k = seen.get(key, 0)
        seen[key] = k + 1
        for vn in sorted({r["version"] for r in a.rows(8)}):
            rs = a.rows(8, vn, **run["shape"])
            if k < len(rs):
                run["rows"][vn] = rs[k]
        runs.append(run)
    return runs


def l08_names(a):
    names = {}
    for r in a.rows(8):
        names.setdefault(r["version"], r["name"])
    return names


def l08_ms(ms):
    """A time in ms to four significant digits: 6.848, 13.99, 109.4, 904.0."""
    if ms is None:
        return "-"
    return f"{ms:.1f}" if ms >= 100 else f"{ms:.2f}" if ms >= 10 else f"{ms:.3f}"


def l08_where(run):
    """'2 virtual ranks on 1 GPU', or '2 ranks on 2 GPUs (NCCL)', from the ring versions' lines."""
    ring = list(run["ring"].values())
    p = run["ranks"]
    if not ring:
        return f"{p} ranks"
    g = ring[0]
    if g["gpus"] == 1 and p > 1:
        return f"{p} virtual ranks on 1 GPU"
    return f"{p} ranks on {g['gpus']} GPU{'s' if g['gpus'] > 1 else ''} ({g['how']})"


def l08_over(run, v):
    """Version v's time over version 1's in the same run, minus 1, in percent (None if either is
    missing)."""
    one, r = run["rows"].get(1), run["rows"].get(v)
    return rel(r and r["ms"], one and one["ms"])


def l08_gpus(run):
    """The GPUs a run's rings used (1 for virtual ranks), from their lines in the log."""
    return max((g["gpus"] for g in run["ring"].values()), default=1)


def l08_long_speedups(runs, v, causal=None, seq=131072):
    """{GPUs: [version @p v's speed-up over version 1]} over the runs with a GPU per rank of at
    least @p seq tokens (and the given mask, if any), each run's GPU count read from its log."""
    out = {}
    for r in runs:
        g, x, one = l08_gpus(r), r["rows"].get(v), r["rows"].get(1)
        if g < 2 or r["ranks"] != g or r["shape"]["seq_q"] < seq or not (x and x["ms"] and one):
            continue
        if causal is not None and r["shape"]["causal"] != causal:
            continue
        out.setdefault(g, []).append(ratio(one["ms"], x["ms"]))
    return out


def l08_missing(a, what):
    return source(a, ["lessons.csv", "gpu-suite.log"]) + f"\n\n{what}: " + NO_RUN + "."


def r_l08_versions(a, ctx):
    """Each version at the default shape, without and with the causal mask: time, TFLOP/s, its
    speed-up over version 1 in the same run, and the program's prediction for a GPU per rank."""
    runs = [r for r in l08_runs(a) if r["rows"].get(1)]
    if not runs:
        return l08_missing(a, "The lesson's runs")
    d = runs[0]
    shapes = [d] + [r for r in runs[1:] if r["ranks"] == d["ranks"] and r["shape"] ==
                    dict(d["shape"], causal=1 - d["shape"]["causal"])][:1]
    shapes.sort(key=lambda r: r["shape"]["causal"])
    names = l08_names(a)
    head, rows = ["version"], []
    for r in shapes:
        mask = "causal" if r["shape"]["causal"] else "full"
        head += [f"{mask}: time", "TFLOP/s", "over one-gpu", "a GPU per rank (model)"]
    for v in sorted(names):
        row = [f"{v} `{names[v]}`"]
        for r in shapes:
            x, ring = r["rows"].get(v), r["ring"].get(v, {})
            one = r["rows"][1]
            if x is None or x["ms"] is None:
                row += [esc(x["status"]) if x else "-", "-", "-", "-"]
                continue
            row += [f"{l08_ms(x['ms'])} ms", f(x["tflops"]), xs(ratio(one["ms"], x["ms"])),
                    xs(ring.get("predicted")) if v > 1 else "-"]
        rows.append(row)
    s = d["shape"]
    words = (f"batch {s['batch']}, {s['heads']} heads" +
             (f" / {s['kv_heads']} KV heads" if s["kv_heads"] != s["heads"] else "") +
             f", seq {s['seq_q']}, dim {s['dim']}, {l08_where(d)}")
    out = [source(a, ["lessons.csv", "gpu-suite.log"]), "",
           f"The default `./run` ({words}) and the same with `--causal`. TFLOP/s counts the whole "
           "problem's flops for every version (causal: the visible pairs), so the rates compare "
           "directly; \"over one-gpu\" is version 1's time over the version's, in the same run. "
           "The last column of each half is the program's model for a GPU per rank (one-gpu time "
           "over this time times the busiest rank's share of the work), printed only for virtual "
           "ranks: a prediction, not a measurement.", "",
           table(head, rows), ""]
    st = [r["status"] for r in a.rows(8)]
    virt = all(g["gpus"] == 1 for r in runs for g in r["ring"].values())
    tail = (f"{st.count('PASS')} of the lesson's {len(st)} rows in this archive passed their check "
            "(every version's output and log-sum-exp against the fp64 reference on sampled rows; "
            "the rings' also against version 1's, every element).")
    if virt:
        tail += (" Every ring in this archive ran on one GPU: no run had a GPU per rank, so no "
                 "speed-up over one GPU here is a multi-GPU measurement.")
    out.append(tail)
    return "\n".join(out).rstrip()


def r_l08_scaling(a, ctx):
    """One row per run of the lesson (the default `./run` and each line of gpu-runs.txt), by length:
    version 1's time, each ring's speed-up over it in the same run, and the prediction for a GPU
    per rank; then the rings' overhead on one GPU and the prediction at the issue's target."""
    runs = [r for r in l08_runs(a) if r["rows"].get(1)]
    if not runs:
        return l08_missing(a, "The lesson's runs")
    names = l08_names(a)
    rings = [v for v in sorted(names) if v > 1]
    order = sorted(runs, key=lambda r: (r["shape"]["seq_q"], r["ranks"], -r["shape"]["dim"],
                                        r["shape"]["causal"]))
    rows = []
    for r in order:
        s = r["shape"]
        one = r["rows"][1]
        cells = []
        for v in rings:
            x = r["rows"].get(v)
            if x is None or x["ms"] is None:
                cells.append(esc(x["status"]) if x else "-")
                continue
            c = f"{xs(ratio(one['ms'], x['ms']))} ({l08_ms(x['ms'])} ms)"
            g = r["ring"].get(v)
            if g and g["gpus"] > 1:
                c += f", {100 * ratio(one['ms'], x['ms']) / g['gpus']:.0f}% of {g['gpus']} GPUs"
            cells.append(c if x["status"] == "PASS" else c + f" {esc(x['status'])}")
        pred = [r["ring"].get(v, {}).get("predicted") for v in rings]
        heads = f"{s['heads']}" + (f"/{s['kv_heads']}" if s["kv_heads"] != s["heads"] else "")
        rows.append([seq_label(s["seq_q"]), l08_where(r).replace(" on 1 GPU", ""),
                     f"{heads}, {s['dim']}", "yes" if s["causal"] else "no",
                     f"{l08_ms(one['ms'])} ms"] + cells +
                    [" / ".join(xs(p) for p in pred) if any(pred) else "measured"])
    out = [source(a, ["lessons.csv", "gpu-suite.log"]), "",
           "Every run of the lesson in the archive (the default `./run`, then each line of "
           "`gpu-runs.txt`), by length: batch 1, heads (query/KV) and head dimension as given. "
           "The ring columns are version 1's time over the ring's, measured in the same run "
           "(with its median time); the last column is the program's prediction for a GPU per "
           "rank, versions " + " / ".join(str(v) for v in rings) + ".", "",
           table(["tokens", "ranks", "heads, dim", "causal", f"1 `{names.get(1, 'one-gpu')}`"] +
                 [f"{v} `{names[v]}`" for v in rings] + ["a GPU per rank (model)"], rows), ""]
    s = []
    virt = [r for r in runs if all(g["gpus"] == 1 for g in r["ring"].values())]
    over = [(l08_over(r, v), v, r) for r in virt for v in rings if l08_over(r, v) is not None]
    if over:
        lo, hi = min(over, key=lambda t: t[0]), max(over, key=lambda t: t[0])

        def where(t):
            sh = t[2]["shape"]
            return (f"version {t[1]}, {seq_label(sh['seq_q'])} tokens, {t[2]['ranks']} ranks"
                    f"{', causal' if sh['causal'] else ''}")
        s.append(f"On one GPU the rings took {lo[0]:.1f}% ({where(lo)}) to {hi[0]:.1f}% "
                 f"({where(hi)}) longer than version 1.")
    # The target: 2 ranks, 128k tokens and more.
    target = [r for r in runs if r["ranks"] == 2 and r["shape"]["seq_q"] >= 131072]
    long2 = [t[0] for t in over if t[2] in target]
    zz = [x for x in (r["ring"].get(4, {}).get("predicted") for r in target) if x]
    cont = [x for x in (r["ring"].get(3, {}).get("predicted") for r in target
                        if r["shape"]["causal"]) if x]
    if long2 or zz:
        w = []
        if long2:
            w.append(f"the rings took {min(long2):.1f}% to {max(long2):.1f}% longer than version 1")
        if zz:
            w.append(f"the model predicts {span(min(zz), max(zz), 2)}x for version 4 with a GPU "
                     "per rank, causal or not" +
                     (f", and {span(min(cont), max(cont), 2)}x for version 3 under the causal "
                      "mask (contiguous shards)" if cont else ""))
        s.append("With 2 ranks from 128k tokens on, " + "; ".join(w) + ".")
    multi = [r for r in runs if r not in virt]
    if not multi:
        s.append("No run in this archive had a GPU per rank: those figures are predictions, not "
                 "measurements.")
    else:
        got = [ratio(r["rows"][1]["ms"], r["rows"][v]["ms"]) for r in multi for v in rings
               if r["rows"].get(v) and r["rows"][v]["ms"]]
        # version 4 from 128k tokens on, per GPU count (2 ranks on 2 GPUs, 4 on 4, ...)
        at = [f"version 4 with {g} ranks from 128k tokens on, {span(min(x), max(x), 2)}x"
              for g, x in sorted(l08_long_speedups(multi, 4).items())]
        if got:
            n = f"{len(multi)} run{'s' if len(multi) > 1 else ''}"
            s.append(f"Measured with a GPU per rank ({n}): the rings ran at "
                     f"{span(min(got), max(got), 2)}x version 1's speed" +
                     ("; " + "; ".join(at) + "." if at else "."))
    ones = {}
    for r in runs:
        ones.setdefault(tuple(r["shape"][k] for k in SHAPE_KEYS), []).append(r["rows"][1]["ms"])
    twice = {k: v for k, v in ones.items() if len(v) > 1}
    if twice:
        k, v = max(twice.items(), key=lambda kv: (max(kv[1]) - min(kv[1])) / min(kv[1]))
        sh = dict(zip(SHAPE_KEYS, k))
        which = "" if len(twice) == 1 else f" (the widest spread of the {len(twice)} it repeated)"
        times = "twice" if len(v) == 2 else f"{len(v)} times"
        mask = ", causal" if sh["causal"] else ""
        s.append(f"Run-to-run noise: version 1 does not depend on the ranks, and it ran {times} at "
                 f"{seq_label(sh['seq_q'])} tokens{mask}{which}, once per rank count: "
                 f"{', '.join(l08_ms(x) for x in v[:-1])} and {l08_ms(v[-1])} ms, "
                 f"{100 * (max(v) - min(v)) / min(v):.2f}% apart.")
    out.append(" ".join(s))
    return "\n".join(out).rstrip()


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "l08-versions": r_l08_versions, "l08-scaling": r_l08_scaling,
}
