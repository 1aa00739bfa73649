"""Lesson 05's regions: its renderers and the helpers they share."""
import re
from .core import (NO_PEERS, NO_RUN, att, f, noise_sentence, pc, ratio, seq_label, source, span,
    table, xs)
from .lesson04 import l04_shape


# ---- Lesson 05 ------------------------------------------------------------------------------------

L05_COLS = ((128, 0), (128, 1), (64, 0), (64, 1))
# Each FP8 version's rows of peers.csv beside its end-to-end row: (version name, its kernel alone,
# its conversion alone, None where it is another version's); an archive holds the versions its
# library had.
L05_FP8_ROWS = (("fp8-e4m3", "fp8-kernel-only", "fp8-convert"),
                ("fp8-tiles", "fp8t-kernel-only", "fp8t-convert"),
                ("fp8-wide", "fp8w-kernel-only", None),
                ("fp8-persistent", "fp8p-kernel-only", None),
                ("fp8-q-in-kernel", "fp8q-kernel-only", "fp8q-convert"),
                ("fp8-exp-fma", "fp8x-kernel-only", None),
                ("fp8-half-tile", "fp8h-kernel-only", None))
# The version each version is built on, as versions.c's kBuiltOn (the "bought" column's base).
L05_BUILT_ON = {2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 6, 8: 5, 9: 8, 10: 7, 11: 10, 12: 11, 13: 12, 14: 13,
                15: 5}
# (label, shape) of the rows of lessons/05_fa3_hopper/gpu-runs.txt past the four table shapes
L05_SHAPES = [("batch 1, seq 16384, 16 heads, dim 128", att(1, 16, 16384, 128)),
              ("batch 16, seq 1024, 16 heads, dim 128", att(16, 16, 1024, 128)),
              ("batch 4, seq 4096, 32 heads, 4 KV heads (GQA 8:1), dim 128",
               att(4, 32, 4096, 128, kvh=4)),
              ("batch 4, seq 1024 against kv 8192, 16 heads, dim 128, causal",
               att(4, 16, 1024, 128, 1, skv=8192))]


def l05_versions(a):
    """(number, name) of every row lesson 5's table printed, in order (the yardstick last)."""
    seen = {}
    for r in a.rows(5):
        seen.setdefault(r["version"], r["name"])
    return sorted(seen.items())


def l05_t(a, v, **shape):
    r = a.one(5, v, **shape)
    return r["tflops"] if r else None


def r_l05_table(a, ctx):
    src = source(a, ["lessons.csv"])
    vs = l05_versions(a)
    if not vs:
        return src + "\n\nThe lesson's table: " + NO_RUN + "."
    last = vs[-1][0]  # the yardstick: lesson 04's version 7
    names = dict(vs)
    rows = []
    for v, name in vs:
        cells = []
        for dim, c in L05_COLS:
            r = l05_t(a, v, **l04_shape(dim, c))
            cells.append(f(r))
        shape = l04_shape(128, 0)
        r = a.one(5, v, **shape)
        pct = pc(r and r["pct_flops"], 0)
        if v == last:
            bought = "-"
        else:
            # over the version it is built on where that ran at the shape (L05_BUILT_ON: version
            # 8 over 5, 10 over 7, 15 over 5), else over the version before of the same kind (bf16
            # or FP8) that ran there
            def before(sh):
                b = L05_BUILT_ON.get(v)
                if b and l05_t(a, b, **sh) is not None:
                    return b
                fp8 = "fp8" in names[v]
                ps = [p for p in range(v - 1, 0, -1) if l05_t(a, p, **sh) is not None]
                same = [p for p in ps if ("fp8" in names[p]) == fp8]
                return (same or ps or [None])[0]
            sh64 = l04_shape(64, 0)
            p128, p64 = before(shape), before(sh64)
            prev = ratio(l05_t(a, v, **shape), l05_t(a, p128, **shape)) if p128 else None
            prev64 = ratio(l05_t(a, v, **sh64), l05_t(a, p64, **sh64)) if p64 else None
            y = ratio(l05_t(a, v, **shape), l05_t(a, last, **shape))
            y_dim = ""
            if y is None:  # a version built for dim 64 only: over lesson 04 there
                y, y_dim = ratio(l05_t(a, v, **sh64), l05_t(a, last, **sh64)), " (dim 64)"
            note = (f" (over {p64})" if p64 and p64 != v - 1 and prev64 is not None else "")
            bought = (f"{xs(prev)} / {xs(prev64)}{note}" if v > 1 else "-") + f"; {xs(y)}{y_dim}"
        label = f"`{name}`" + (" (lesson 04)" if v == last else "")
        rows.append([v if v != last else "-", label] + cells + [pct, bought])
    rs = [r for dim, c in L05_COLS for r in a.rows(5, **l04_shape(dim, c))]
    ran = [r for r in rs if r["status"] != "skipped"]
    bad = [r for r in ran if r["status"] != "PASS"]
    mx = [r["max_abs"] for r in ran if r["max_abs"] is not None and "fp8" not in r["name"]]
    m8 = [r for r in ran if r["max_abs"] is not None and "fp8" in r["name"]]
    s = ("Every run of these shapes passed its check" if not bad else
         f"{len(bad)} of {len(ran)} runs did not pass their check")
    if mx:
        s += (f" (bf16 max-abs error at most {max(mx):.1e} against the double-precision "
              "reference")
        if m8:
            s += (f"; FP8 at most {max(r['max_abs'] for r in m8):.1e}, relative L2 at most "
                  f"{max(r['rel_l2'] for r in m8):.1e}, against its own tolerances")
        s += ")"
    if len(ran) < len(rs):
        s += (f"; {len(rs) - len(ran)} runs were skipped with their reason (the FP8 versions at dim "
              "64" + (", versions 8 and 9 at dim 128" if any(n == "persistent-bf16" for _, n in vs) else
                     ", version 8 at dim 128" if any(n == "three-bf16" for _, n in vs) else "") +
              ": not built)")
    gpu = re.sub(r"^NVIDIA ", "", a.device).split()[0] if a.device else "GPU"
    return "\n".join([src, "", "TFLOP/s, batch 4, seq 4096 (causal counted as half the pairs); % of "
                      f"the {gpu}'s dense bf16 peak at dim 128 not causal; bought: over the version "
                      "before (dim 128 / dim 64, not causal); over lesson 04's version 7 (dim 128).",
                      "", table(["#", "version", "dim 128 (16 heads)", "causal",
                                 "dim 64 (32 heads)", "causal", "% of peak",
                                 "bought; over lesson 04"], rows), "", s + ". " +
                      noise_sentence(a, 5)])


def r_l05_shapes(a, ctx):
    src = source(a, ["lessons.csv"])
    vs = l05_versions(a)
    rows = []
    for label, shape in L05_SHAPES:
        ts = [l05_t(a, v, **shape) for v, _ in vs]
        if all(t is None for t in ts):
            continue
        rows.append([label] + [f(t) for t in ts])
    if not rows:
        return src + "\n\nOther shapes: " + NO_RUN + "."
    return "\n".join([src, "", "TFLOP/s of each version at the other shapes of `gpu-runs.txt`:", "",
                      table(["shape"] + [f"{v} `{n}`" for v, n in vs], rows)])


def l05_peer_grid(a):
    """The papers' grid of peers.csv, one dict per (dim, causal, seq) in the table's order: the
    peers' rows (fl: SDPA flash, cu: SDPA cuDNN, l4: lesson 04's version 7, fk: the FP8 kernel
    alone, cf: cuDNN's FP8 attention, None where the archive lacks it), vs (version -> its row), ts (version -> TFLOP/s), best (the fastest bf16 version's
    TFLOP/s) and fp8v (the FP8 versions). Also the versions measured: (nums, shapes)."""
    nums = sorted({int(m.group(1)) for r in a.peers if int(r["lesson"]) == 5
                   for m in [re.match(r"v(\d+)-", r["impl"] or "")] if m})
    out = []
    for dim in (64, 128):
        for c in (0, 1):
            seqs = sorted({r["seq_q"] for r in a.peers if int(r["lesson"]) == 5 and
                           r["dim"] == dim and r["causal"] == c and r["seq_q"]})
            for sq in seqs:
                kv = dict(dim=dim, causal=c, seq_q=sq)
                vs = {v: a.peer(5, rf"v{v}-.*", **kv) for v in nums}
                ts = {v: r["tflops"] for v, r in vs.items() if r and r["tflops"]}
                bf = [t for v, t in ts.items() if "fp8" not in vs[v]["impl"]]
                out.append(dict(dim=dim, c=c, sq=sq, fl=a.peer(5, "sdpa-flash", **kv),
                                cu=a.peer(5, "sdpa-cudnn", **kv), l4=a.peer(5, r"l04-.*", **kv),
                                fk=a.peer(5, "fp8-kernel-only", **kv),
                                kern={kn: a.peer(5, kn, **kv) for _, kn, _ in L05_FP8_ROWS},
                                conv={cn: a.peer(5, cn, **kv) for _, _, cn in L05_FP8_ROWS if cn},
                                cf=a.peer(5, "cudnn-fp8", **kv), vs=vs, ts=ts,
                                best=max(bf) if bf else None,
                                fp8v=[v for v, r in vs.items() if r and "fp8" in r["impl"]]))
    return nums, out


def l05_over_cudnn(a):
    """{(dim, causal): [the best bf16 version's TFLOP/s over SDPA cuDNN's at each seq from 4k]}
    of the papers' grid ({} without peers)."""
    targets = {}
    if not a.peers or not a.peer(5, "sdpa-cudnn"):
        return targets
    for g in l05_peer_grid(a)[1]:
        b_c = ratio(g["best"], g["cu"] and g["cu"]["tflops"])
        if g["sq"] >= 4096 and b_c:
            targets.setdefault((g["dim"], g["c"]), []).append(b_c)
    return targets


def r_l05_peers(a, ctx):
    src = source(a, ["peers.csv"])
    if not a.peers or not a.peer(5, "sdpa-cudnn"):
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    nums, grid = l05_peer_grid(a)
    rows, fp8_cudnn = [], {}
    targets = l05_over_cudnn(a)
    # cuDNN's FP8 (bench/cudnn_peer.py) and version 7's kernel alone have a column only in an
    # archive that measured them
    with_cf = any(g["cf"] for g in grid)
    number = {r["impl"].split("-", 1)[1]: v for g in grid for v, r in g["vs"].items() if r}
    # the later FP8 versions' kernels alone (7, 10, 11): a column each where the archive has them
    later = [(vn, kn) for vn, kn, _ in L05_FP8_ROWS[1:] if any(g["kern"].get(kn) for g in grid)]
    # per FP8 version, per causal: (kernel alone / version 5, end to end / version 5) from 4k
    fp8_over, conv = {}, {}
    for g in grid:
        dim, c, sq, fl, cu, l4, fk = (g[k] for k in ("dim", "c", "sq", "fl", "cu", "l4", "fk"))
        cf = g["cf"]
        if cf and cf["tflops"] and sq >= 4096:
            # each FP8 version's kernel alone over cuDNN's FP8, and cuDNN's FP8 over its bf16
            ks = {vn: ratio(k["tflops"], cf["tflops"]) for vn, kn, _ in L05_FP8_ROWS
                  for k in [g["kern"].get(kn)] if k and k["tflops"]}
            if ks:
                fp8_cudnn.setdefault(c, []).append((ks, ratio(cf["tflops"], cu and cu["tflops"])))
        ts, best, fp8v = g["ts"], g["best"], g["fp8v"]
        bf16 = [v for v in ts if v not in fp8v]
        base = ts.get(5) if 5 in bf16 else None  # the FP8 goals are over version 5
        for v in fp8v:
            name = g["vs"][v]["impl"].split("-", 1)[1]
            k = next((g["kern"][kn] for vn, kn, _ in L05_FP8_ROWS if vn == name), None)
            if sq >= 4096 and base:
                fp8_over.setdefault((v, c), []).append(
                    (ratio(k and k["tflops"], base), ratio(ts.get(v), base)))
        for vn, _, cn in L05_FP8_ROWS:
            r = g["conv"].get(cn) if cn else None
            if r and r["gbs"]:
                conv.setdefault(vn, []).append((r["gbs"], r.get("pct_hbm")))
        b_c = ratio(best, cu and cu["tflops"])
        rows.append([dim, "yes" if c else "no", seq_label(sq), f(fl and fl["tflops"]),
                     f(cu and cu["tflops"]), f(l4 and l4["tflops"])] +
                    [f(ts.get(v)) for v in nums] + [f(fk and fk["tflops"])] +
                    [f(g["kern"].get(kn) and g["kern"][kn]["tflops"]) for _, kn in later] +
                    ([f(cf and cf["tflops"])] if with_cf else []) +
                    [f(ratio(best, fl and fl["tflops"]), 2), f(b_c, 2),
                     f(ratio(best, l4 and l4["tflops"]), 2)])
    sw = a.software()
    kcols = (["v6 kernel alone"] if later else ["FP8 kernel alone"]) + [
        f"v{number.get(vn, '?')} kernel alone" for vn, _ in later]
    out = [src, "", f"TFLOP/s {a.timed_in(5, sw)}, the papers' shapes: 16k tokens (batch = "
           "16384 / seq), hidden 2048 (heads = 2048 / dim); causal counted as half the pairs.", "",
           table(["dim", "causal", "seq", "SDPA flash", "SDPA cuDNN", "lesson 04 v7"] +
                 [f"v{v}" for v in nums] + kcols +
                 (["cuDNN FP8"] if with_cf else []) + ["best / flash", "best / cuDNN",
                                                      "best / l04"], rows),
           "", "Best: the fastest bf16 version. The FP8 versions' columns count their conversion "
           "of Q, K and V (as the lesson's program times it); \"kernel alone\" times a kernel "
           "on tensors converted before the timing (dim 128 only)" +
           ("; \"cuDNN FP8\" is cuDNN's FP8 attention on version 6's e4m3 values and "
            "per-tensor scales, timed the same way." if with_cf else "."), ""]
    words = []
    for (dim, c), rs in sorted(targets.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
        words.append(f"dim {dim}{' causal' if c else ''} {span(min(rs), max(rs), 2)}x")
    if words:
        out.append("Best bf16 version over cuDNN at seq 4k-16k: " + "; ".join(words) + ".")
    for c in (0, 1):
        parts = []
        for (v, cc), rs in sorted(fp8_over.items()):
            if cc != c:
                continue
            k = [x for x, _ in rs if x]
            e = [y for _, y in rs if y]
            if k or e:
                parts.append(f"version {v}" + (f" {span(min(k), max(k), 2)}x alone" if k else "") +
                             (f", {span(min(e), max(e), 2)}x counting its conversion" if e
                              else ""))
        if parts:
            out.append(f"FP8 at dim 128{' causal' if c else ''}, seq 4k-16k, over version 5: "
                       + "; ".join(parts) + ".")
    for c, rs in sorted(fp8_cudnn.items()):
        parts = []
        for vn, _, _ in L05_FP8_ROWS:
            k = [ks[vn] for ks, _ in rs if ks.get(vn)]
            if k:
                parts.append(f"version {number.get(vn, '?')}'s kernel alone "
                             f"{span(min(k), max(k), 2)}x it")
        b = [y for _, y in rs if y]
        out.append(f"Against cuDNN's FP8 at dim 128{' causal' if c else ''}, seq 4k-16k: " +
                   ", ".join(parts) +
                   (f"; cuDNN's FP8 {span(min(b), max(b), 2)}x cuDNN's bf16." if b else "."))
    words = []
    for vn, rs in conv.items():
        v = number.get(vn, "?")
        gb = [x for x, _ in rs]
        pb = [y for _, y in rs if y]
        words.append(f"version {v}'s at {span(min(gb), max(gb), 0)} GB/s" +
                     (f" ({span(min(pb), max(pb), 0)}% of HBM)" if pb else ""))
    if words:
        kv = (f"; version {number.get('fp8-q-in-kernel', '?')}'s over K and V alone, its kernel "
              "converting Q" if "fp8-q-in-kernel" in conv else "")
        out.append("The conversions alone, counting the 3 bytes a value any conversion moves (bf16 "
                   f"read once, e4m3 written once{kv}), seq 512-16k: " + "; ".join(words) + ".")
    return "\n".join(out).rstrip()


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "l05-table": r_l05_table, "l05-shapes": r_l05_shapes, "l05-peers": r_l05_peers,
}
