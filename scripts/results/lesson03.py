"""Lesson 03's regions: its renderers and the helpers they share."""
from .core import NO_NCU, NO_RUN, att, esc, f, ratio, source, table, xs
from .lesson01 import naive_model_bytes


# ---- Lesson 03 ---------------------------------------------------------------------------------

# Lesson 03's CPU model (./run --cpu --seq N, batch 1, 16 heads, d 64): the HBM bytes Algorithm 1
# requests with the kernel's tiles, for fa1 and for fa1-qgroups (K and V re-read per group). These are
# model counts, not measurements.
L03_MODEL_GB = {4096: (1.028, 1.263), 16384: (15.415, 16.355)}


def standard_paper_bytes(n, d, heads):
    """The paper's count for standard attention, 4Nd + 4N^2 elements per head, fp32."""
    return 4.0 * heads * (4.0 * n * d + 4.0 * n * n)


def gbmb(r, w):
    t = r + w
    u, name = (1e9, "GB") if t >= 1e9 else (1e6, "MB")
    return f"{r / u:.2f} + {w / u:.2f} = {t / u:.2f} {name}"


def l03_dram(a, seq):
    """{'naive': (r, w, per-kernel list), 'fused-row': (r, w), ...} from ncu.txt, for one seq."""
    out = {}
    run = a.ncu_run(1, 15, seq)
    if run:
        ks = []
        for pat in ("l01_qk", "l01_softmax", "l01_pv"):
            r, w = run.metric(pat, "dram__bytes_read.sum"), run.metric(pat, "dram__bytes_write.sum")
            if r is None or w is None:
                ks = None
                break
            ks.append((r, w))
        if ks:
            out["naive"] = (sum(k[0] for k in ks), sum(k[1] for k in ks), ks)
    for v, name, pat in ((1, "fused-row", "fused_row"), (2, "fa1", "fa1"), (3, "fa1-qgroups", "fa1")):
        run = a.ncu_run(3, v, seq)
        if run:
            r, w = run.metric(pat, "dram__bytes_read.sum"), run.metric(pat, "dram__bytes_write.sum")
            if r is not None and w is not None:
                out[name] = (r, w)
    return out


def r_dram(a, ctx):
    model = {n: (L03_MODEL_GB[n][0], L03_MODEL_GB[n][1], standard_paper_bytes(n, 64, 16) / 1e9)
             for n in L03_MODEL_GB}
    src = source(a, ["ncu.txt"])
    data = {n: l03_dram(a, n) for n in L03_MODEL_GB}
    if not a.ncu or not any(data.values()):
        return (src + "\n\nDRAM bytes from Nsight Compute: " + NO_NCU + ". The model, for "
                "comparison (fa1 / fa1-qgroups / standard): " +
                "; ".join(f"{m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f} GB at seq {n}"
                          for n, m in model.items()) + ".")
    rows = []
    for n, d in data.items():
        m = model[n]
        rows.append([n, gbmb(*d["naive"][:2]) if "naive" in d else "not profiled"] +
                    [gbmb(*d[k]) if k in d else "not profiled"
                     for k in ("fused-row", "fa1", "fa1-qgroups")] +
                    [f"{m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f} GB"])
    out = [src, "", table(["seq (batch 1, 16 heads, d 64)", "lesson 1 naive (its 3 kernels)",
                           "fused-row", "fa1", "fa1-qgroups",
                           "model: fa1 / fa1-qgroups / standard"], rows), ""]
    d4 = data.get(4096, {})
    if "naive" in d4:
        ks = d4["naive"][2]
        out.append("(Each cell is read + written; the naive cells add the three kernels' figures: at "
                   f"seq 4096 S = QKᵀ {ks[0][0] / 1e9:.3f} + {ks[0][1] / 1e9:.3f} GB, softmax "
                   f"{ks[1][0] / 1e9:.3f} + {ks[1][1] / 1e9:.3f} GB, PV {ks[2][0] / 1e9:.3f} + "
                   f"{ks[2][1] / 1e9:.3f} GB.)")
        out.append("")
    bullets = []
    nv = [(n, sum(data[n]["naive"][:2]), naive_model_bytes(att(1, 16, n, 64)))
          for n in data if "naive" in data[n]]
    if nv:
        bullets.append("Lesson 1's naive attention: " + "; ".join(
            f"{t / 1e9:.2f} GB against its model's {m / 1e9:.3f} GB at seq {n}" for n, t, m in nv)
            + ".")
    fa = [(n, sum(data[n]["fa1"]), model[n][0]) for n in data if "fa1" in data[n]]
    if fa:
        bullets.append("fa1: " + "; ".join(
            f"{t / 1e9:.3f} GB against the model's {m:.3f} GB at seq {n} (measured / model "
            f"{t / 1e9 / m:.2f})" for n, t, m in fa) + "." + (
            f" At seq 4096 the naive attention moves {sum(d4['naive'][:2]) / sum(d4['fa1']):.0f} "
            f"times as much as fa1 (the model: {model[4096][2] / model[4096][0]:.1f})."
            if "naive" in d4 and "fa1" in d4 else ""))
    qg = [(n, sum(data[n]["fa1-qgroups"]) - sum(data[n]["fa1"]), model[n][1] - model[n][0])
          for n in data if "fa1" in data[n] and "fa1-qgroups" in data[n]]
    if qg:
        bullets.append("fa1-qgroups over fa1: " + "; ".join(
            f"{e / 1e6:+.0f} MB at seq {n} against the model's {m:+.3f} GB" for n, e, m in qg) + ".")
    if "fused-row" in d4:
        r, w = d4["fused-row"]
        o = 4.0 * 16 * 4096 * 64
        bullets.append(f"fused-row at seq 4096: {r / 1e6:.2f} MB read and {w / 1e6:.2f} MB written "
                       f"(O alone is {o / 1e6:.1f} MB).")
    out += [f"- {b}" for b in bullets]
    return "\n".join(out).rstrip()


L03_SEQS = (1024, 2048, 4096, 8192, 16384, 65536)
L03_NAMES = {1: "fused-row", 2: "fa1", 3: "fa1-qgroups"}


def l03_fp32_peak(a):
    for r in a.rows(3, timed=True):
        if r["pct_flops"]:
            return r["tflops"] / r["pct_flops"] * 100.0
    return None


def naive_cell(a, shape):
    r = a.one(1, 15, **shape)
    if r:
        return f(r["ms"], 4), r
    rs = a.rows(1, 15, **shape)
    if rs:
        return esc(f"{rs[0]['status']}: {rs[0]['note'] or 'not timed'}"), None
    return "not run at this shape", None


def r_fa1_seq(a, ctx):
    rows = []
    for n in L03_SEQS:
        s = att(1, 16, n, 64)
        cells = [naive_cell(a, s)[0]]
        rs = {v: a.one(3, v, **s) for v in L03_NAMES}
        if not any(rs.values()) and cells[0] == "not run at this shape":
            rows.append([n, NO_RUN, "", "", "", ""])
            continue
        cells += [f(rs[v] and rs[v]["ms"], 4) if rs[v] else "not run" for v in L03_NAMES]
        q = rs[3]
        cells.append(f"{q['tflops']:.2f} ({f(q['pct_flops'])} %)" if q else "")
        rows.append([n] + cells)
    return source(a, ["lessons.csv"]) + "\n\n" + table(
        ["seq", "lesson 1 naive (ms)", "fused-row (ms)", "fa1 (ms)", "fa1-qgroups (ms)",
         "fa1-qgroups TFLOP/s (% fp32 peak)"], rows)


def r_fa1_ratios(a, ctx):
    rows = []
    for n in L03_SEQS:
        s = att(1, 16, n, 64)
        nv = a.one(1, 15, **s)
        fr, fa, qg = (a.one(3, v, **s) for v in (1, 2, 3))
        if not any((fr, fa, qg)):
            continue

        def x(slow, fast):
            return xs(ratio(slow and slow["ms"], fast and fast["ms"]))
        rows.append([n, x(nv, qg), x(fr, qg), x(fa, qg), x(fr, fa), x(nv, fa), x(nv, fr),
                     f(fr and fr["tflops"], 2), f(qg and qg["tflops"], 2)])
    out = [source(a, ["lessons.csv"]), "",
           "Each ratio: how many times as fast as the other (the other's time over this one's; "
           "below 1 is slower).", "",
           table(["seq", "fa1-qgroups vs naive", "fa1-qgroups vs fused-row", "fa1-qgroups vs fa1",
                  "fa1 vs fused-row", "fa1 vs naive", "fused-row vs naive", "fused-row TFLOP/s",
                  "fa1-qgroups TFLOP/s"], rows)]
    q = a.one(3, 3, **att(1, 16, 4096, 64))
    peak = l03_fp32_peak(a)
    if q and peak:
        floor = 4.0 * 16 * 4096 * 4096 * 64 / (peak * 1e12) * 1e3
        out += ["", f"At seq 4096 the best version, fa1-qgroups, takes {q['ms']:.2f} ms against the "
                f"{floor:.2f} ms floor: {q['tflops']:.2f} TFLOP/s, {f(q['pct_flops'])} % of the fp32 "
                f"CUDA-core peak."]
    return "\n".join(out)


def r_fa1_65536(a, ctx):
    s = att(1, 16, 65536, 64)
    parts = []
    nv = a.rows(1, 15, **s)
    if nv:
        parts.append(f"lesson 1 at this shape: {nv[0]['status']}, \"{nv[0]['note']}\"" if nv[0]["note"]
                     else f"lesson 1 at this shape: {nv[0]['status']}")
    q, q4 = a.one(3, 3, **s), a.one(3, 3, **att(1, 16, 4096, 64))
    if q:
        t = (f"fa1-qgroups ran it in {q['ms']:.1f} ms (check: {q['status']} on sampled rows), at "
             f"{q['tflops']:.2f} TFLOP/s")
        if q4:
            t += (f"; that is {q['ms'] / q4['ms']:.0f} times its seq-4096 time for 256 times the "
                  f"work (seq 4096: {q4['tflops']:.2f} TFLOP/s)")
        parts.append(t)
    else:
        parts.append("fa1-qgroups at seq 65536: " + NO_RUN)
    return source(a, ["lessons.csv"]) + "\n\nIn this run, " + "; ".join(parts) + "."


def r_fa1_shapes(a, ctx):
    shapes = (("16 heads, d 128", att(1, 16, 4096, 128)),
              ("16 heads, d 64, causal", att(1, 16, 4096, 64, 1)),
              ("32 query / 4 KV heads, seq_q 1024, seq_kv 4096, d 128, causal",
               att(1, 32, 1024, 128, 1, kvh=4, skv=4096)))
    rows = []
    for label, s in shapes:
        rows.append([label, naive_cell(a, s)[0]] +
                    [f(a.one(3, v, **s) and a.one(3, v, **s)["ms"], 4) if a.one(3, v, **s) else NO_RUN
                     for v in L03_NAMES])
    out = [source(a, ["lessons.csv"]), "",
           table(["shape", "lesson 1 naive", "fused-row", "fa1", "fa1-qgroups"], rows)]
    d128q, d128n = a.one(3, 3, **att(1, 16, 4096, 128)), a.one(1, 15, **att(1, 16, 4096, 128))
    cq, fq = a.one(3, 3, **att(1, 16, 4096, 64, 1)), a.one(3, 3, **att(1, 16, 4096, 64))
    cn, fn = a.one(1, 15, **att(1, 16, 4096, 64, 1)), a.one(1, 15, **att(1, 16, 4096, 64))
    s = []
    if d128q and d128n:
        s.append(f"At d 128 fa1-qgroups takes {d128q['ms']:.4f} ms against the naive attention's "
                 f"{d128n['ms']:.4f} ms.")
    if cq and fq:
        t = (f"Causal, fa1-qgroups runs {fq['ms'] / cq['ms']:.2f} x as fast as its unmasked run "
             f"({cq['ms']:.4f} against {fq['ms']:.4f} ms)")
        if cn and fn:
            t += f"; the naive attention takes {cn['ms']:.4f} ms against {fn['ms']:.4f} ms"
        s.append(t + ".")
    if s:
        out += ["", " ".join(s)]
    return "\n".join(out)


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "dram": r_dram, "fa1-seq": r_fa1_seq, "fa1-ratios": r_fa1_ratios, "fa1-65536": r_fa1_65536,
    "fa1-shapes": r_fa1_shapes,
}
