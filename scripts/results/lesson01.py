"""Lesson 01's regions: its renderers and the helpers they share."""
from .core import (H200_HBM_DATASHEET_GBS, NO_LOG, NO_PEERS, NO_RUN, SHAPE_KEYS, att, esc, f, pc,
    ratio, rel, shape_words, size_str, source, span, table)


# ---- Lesson 01 ---------------------------------------------------------------------------------

L01 = {"h2d-pageable": 1, "h2d-pinned": 2, "d2h-pageable": 3, "d2h-pinned": 4, "read4": 5,
       "read16": 6, "write16": 7, "copy16": 8, "l2": 9, "row": 10, "stride2": 11, "stride32": 12,
       "pad33": 13, "fma": 14, "naive": 15}
L01_DEFAULT = att(1, 16, 4096, 64)


def l01(a, name):
    return a.one(1, L01[name])


def l01_hbm_peak(a):
    """The harness's HBM figure (clock x bus width), from a probe's GB/s and % of it."""
    r = l01(a, "read16")
    return r["gbs"] / r["pct_bw"] * 100.0 if r and r["pct_bw"] else None


def copy_verdict(a, short=False):
    lesson = l01(a, "copy16")
    reps = [r["gbs"] for r in a.rows(1, L01["copy16"], timed=True)]
    torch = a.peer(1, "torch.copy")
    if lesson is None:
        return "the lesson's copy: " + NO_RUN
    if torch is None:
        return ("PyTorch's copy: " + NO_PEERS + ".") if not short else "peer figures: " + NO_PEERS
    d = rel(lesson["gbs"], torch["gbs"])
    spread = 100.0 * (max(reps) - min(reps)) / min(reps) if len(reps) > 1 else None
    sp = (f"the lesson's copy ran {len(reps)} times in this run and spread by {spread:.2f}%"
          if spread is not None else "the lesson's copy ran once, so no spread is known")
    if short:
        head = f"`copy_` {torch['gbs'] / 1000:.2f} TB/s"
        if d >= 0 and spread is not None and d <= spread:
            return f"{head}: the lesson's copy {d:+.2f}%, within its run-to-run spread ({spread:.2f}%)"
        if d >= 0:
            return f"{head}: the lesson's copy {d:+.2f}%"
        if spread is not None and -d <= spread:
            return f"{head}: a tie ({d:+.2f}%, within the copy's run-to-run spread of {spread:.2f}%)"
        return f"{head}: the lesson's copy {d:+.2f}% behind"
    fig = f"{lesson['gbs']:.1f} against {torch['gbs']:.1f} GB/s ({d:+.2f}%); {sp}"
    if d >= 0 and spread is not None and d <= spread:
        return "met, by no more than the run-to-run spread: " + fig + "."
    if d >= 0:
        return "met, " + fig + "."
    if spread is not None and -d <= spread:
        return "a tie within the run-to-run spread, not strictly met: " + fig + "."
    return "not met: " + fig + "."


H200_PYRAMID = {  # capacity, published or computed figure (datasheet and device properties)
    "registers": ("64 K x 4 B per SM, 33.0 MiB over 132 SMs",
                  "401 TB/s: fp32 peak x 6 B per flop (datasheet)"),
    "shared memory": ("228 KiB x 132 SMs = 29.4 MiB",
                      "33.5 TB/s: 132 SMs x 128 B x 1.98 GHz (computed)"),
    "L2": ("60.0 MiB (as the device reports)", "none published"),
    "HBM3e": ("141 GB (datasheet; the device reports 139.8 GiB)", "4.8 TB/s (H200 datasheet)"),
    "host link (pinned)": ("host RAM", "PCIe Gen5 x16, 128 GB/s both directions (H200 datasheet)"),
}


def r_pyramid(a, ctx):
    fma, smem, l2, hbm, link = (l01(a, n) for n in ("fma", "row", "l2", "read16", "h2d-pinned"))
    back = l01(a, "d2h-pinned")
    levels = [("registers", fma["tflops"] * 6000.0 if fma else None, " (derived)"),
              ("shared memory", smem["gbs"] if smem else None, ""),
              ("L2", l2["gbs"] if l2 else None, ""),
              ("HBM3e" if a.is_h200() else "HBM", hbm["gbs"] if hbm else None, ""),
              ("host link (pinned)", link["gbs"] if link else None, "")]
    rows, steps = [], []
    for i, (name, gbs, note) in enumerate(levels):
        below = levels[i + 1][1] if i + 1 < len(levels) else None
        step = ratio(gbs, below)
        if step is not None:
            steps.append(f"{step:.1f}x")
        cap, pub = H200_PYRAMID[name] if a.is_h200() else ("-", "see the report of `./run`")
        if gbs is None:
            meas = NO_RUN
        elif gbs >= 1000:
            meas = f"{gbs / 1000:.2f} TB/s{note}"
        else:
            meas = f"{gbs:.1f} GB/s{note}"
        rows.append([name, cap, meas, f"{step:.1f}" if step is not None else "-", pub])
    out = [source(a, ["lessons.csv"]), "",
           table(["level", "capacity", "measured", "x below", "published or computed figure"], rows),
           ""]
    s = f"Steps, registers to host: {', '.join(steps[:-1])} and {steps[-1]}." if len(steps) > 1 \
        else ""
    if link and back:
        s += (f" The host link, one direction at a time: {link['gbs']:.1f} GB/s to the device and "
              f"{back['gbs']:.1f} GB/s back")
        if a.is_h200():
            p1, p2 = f"{100 * link['gbs'] / 64.0:.0f}%", f"{100 * back['gbs'] / 64.0:.0f}%"
            s += (f", {p1 + ' each' if p1 == p2 else p1 + ' and ' + p2} of the 64 GB/s per "
                  f"direction that the datasheet's 128 GB/s both ways amounts to")
        s += "."
    out.append(s.strip())
    return "\n".join(out)


def r_host_link(a, ctx):
    rows = []
    for label, pg, pn, impl in (("host to device", "h2d-pageable", "h2d-pinned", "torch.h2d"),
                                ("device to host", "d2h-pageable", "d2h-pinned", "torch.d2h")):
        g, n = l01(a, pg), l01(a, pn)
        tg, tn = a.peer(1, impl, pinned=0), a.peer(1, impl, pinned=1)
        rows.append([label, f(g and g["gbs"]), f(n and n["gbs"]),
                     pc(100 * ratio(g["gbs"], n["gbs"]), 0) if g and n else "-",
                     pc(n and n["pct_bw"]),
                     f(tg and tg["gbs"]) if a.peers else NO_PEERS,
                     f(tn and tn["gbs"]) if a.peers else ""])
    nb = a.peer(1, "torch.h2d", pinned=1)
    size = f", PyTorch on {nb['bytes'] >> 20} MiB" if nb and nb.get("bytes") else ""
    return "\n".join([
        source(a, ["lessons.csv", "peers.csv"]), "",
        f"256 MiB each way{size}; GB/s:", "",
        table(["direction", "pageable", "pinned", "pageable / pinned",
               "pinned, % of the figure measured in setup", "PyTorch pageable", "PyTorch pinned"],
              rows)])


def r_hbm(a, ctx):
    peak = l01_hbm_peak(a)
    h200 = a.is_h200()
    head = ["probe", "GB/s"] + (["% of 4.8 TB/s (datasheet)"] if h200 else []) + \
        [f"% of {peak:.0f} GB/s (clock x bus, the harness's %peak)" if peak else "% of clock x bus"]

    def row(label, gbs):
        r = [label, f(gbs)]
        if h200:
            r.append(pc(100 * gbs / H200_HBM_DATASHEET_GBS) if gbs else "-")
        r.append(pc(100 * gbs / peak) if gbs and peak else "-")
        return r
    rows = []
    for name, label in (("read4", "`hbm-read-4B`"), ("read16", "`hbm-read-16B`"),
                        ("write16", "`hbm-write-16B`"), ("copy16", "`hbm-copy-16B` (read + write)")):
        r = l01(a, name)
        rows.append(row(label, r["gbs"] if r else None))
    cp, sm = a.peer(1, "torch.copy"), a.peer(1, "torch.sum")
    if a.peers:
        if cp:
            rows.append(row(f"PyTorch `dst.copy_(src)`, {cp['bytes']} bytes per buffer", cp["gbs"]))
        if sm:
            rows.append(row(f"PyTorch `x.sum()`, {sm['bytes']} bytes", sm["gbs"]))
    else:
        rows.append(["PyTorch `dst.copy_(src)` and `x.sum()`", NO_PEERS] + [""] * (len(head) - 2))
    sizes = ""
    if a.log and a.log["probe_bytes"]:
        c, r = a.log["probe_bytes"]
        sizes = f"The lesson's sizes in this run: the reads {r} bytes, the copy {c} bytes each way."
    out = [source(a, ["lessons.csv", "peers.csv", "gpu-suite.log"]), ""] + \
        ([sizes, ""] if sizes else []) + [table(head, rows), ""]
    r16, r4 = l01(a, "read16"), l01(a, "read4")
    if r16:
        ref, what = (H200_HBM_DATASHEET_GBS, "4.8 TB/s") if h200 else (peak, "clock x bus width")
        p = 100 * r16["gbs"] / ref
        out.append(f"- Target, the 16-byte read at 90% or more of {what}: "
                   f"{'met' if p >= 90 else 'not met'}, {r16['gbs']:.1f} GB/s = {p:.1f}%.")
    out.append("- Target, the copy at least PyTorch's device copy on the same bytes in the same run: "
               + copy_verdict(a))
    if r16 and r4:
        p = 100 * r4["gbs"] / r16["gbs"]
        out.append(f"- The 4-byte read was expected to fall short of bytes in flight; it reaches "
                   f"{p:.1f}% of the 16-byte read ({r4['gbs']:.1f} against {r16['gbs']:.1f} GB/s): "
                   f"the wider load buys the last {100 - p:.1f}%.")
    return "\n".join(out)


def r_l2(a, ctx):
    l2, r16 = l01(a, "l2"), l01(a, "read16")
    if not (l2 and r16):
        return source(a, ["lessons.csv"]) + "\n\nThe L2 read: " + NO_RUN
    return (source(a, ["lessons.csv"]) + "\n\n" +
            f"The L2 read in this run: {l2['gbs']:.1f} GB/s, {l2['gbs'] / r16['gbs']:.2f}x the "
            f"16-byte HBM read.")


def r_banks(a, ctx):
    row = l01(a, "row")
    if not row:
        return source(a, ["lessons.csv"]) + "\n\nThe shared-memory probes: " + NO_RUN
    peak = row["gbs"] / row["pct_bw"] * 100.0
    rows, devs = [], []
    for name, stride, pred in (("row", 1, 1), ("stride2", 2, 2), ("stride32", 32, 32),
                               ("pad33", 33, 1)):
        r = l01(a, name)
        meas = r["ms"] / row["ms"] if r else None
        if r and name != "row":
            devs.append(abs(meas / pred - 1))
        rows.append([f"`smem-{name}`", stride, pred,
                     "1" if name == "row" else f(meas, 2), f(r and r["gbs"]),
                     pc(r and r["pct_bw"])])
    s32, pad = l01(a, "stride32"), l01(a, "pad33")
    out = [source(a, ["lessons.csv"]), "",
           f"Theoretical {peak / 1000:.1f} TB/s = SMs x 32 banks x 4 B x clock (the harness's "
           f"SMEM peak). \"Measured\" is the version's time over `smem-row`'s for the same loads.",
           "",
           table(["version", "lane stride", "predicted slowdown", "measured", "GB/s",
                  "% of theoretical"], rows), "",
           f"- Target, the conflict-free read at 80% or more of theoretical: "
           f"{'met' if row['pct_bw'] >= 80 else 'not met'}, {row['pct_bw']:.1f}%."]
    if s32:
        m = s32["ms"] / row["ms"]
        out.append(f"- Target, the 32-way conflict within 20% of the predicted 32x: "
                   f"{'met' if abs(m / 32 - 1) <= 0.2 else 'not met'}, {m:.2f}x "
                   f"({100 * abs(m / 32 - 1):.1f}% {'under' if m < 32 else 'over'}).")
    if devs and pad:
        out.append(f"- The bank arithmetic predicts all three slowdowns to within "
                   f"{100 * max(devs):.1f}%, and one padding word per row gives back "
                   f"{100 * pad['gbs'] / row['gbs']:.1f}% of the row read's rate.")
    return "\n".join(out)


def r_fma(a, ctx):
    r = l01(a, "fma")
    if not r:
        return source(a, ["lessons.csv"]) + "\n\n`fma-fp32`: " + NO_RUN
    peak = r["tflops"] / r["pct_flops"] * 100.0 if r["pct_flops"] else None
    s = f"In this run: {r['tflops']:.2f} TFLOP/s"
    if peak:
        s += f", {r['pct_flops']:.1f}% of the datasheet fp32 peak the harness prints, {peak:.1f} TFLOP/s"
        if a.is_h200():
            s += " (256 flops per clock per SM x 132 SMs x 1.98 GHz)"
    return source(a, ["lessons.csv"]) + "\n\n" + s + "."


def l01_kernels(a, shape):
    if not a.log:
        return None
    key = tuple(shape[k] for k in SHAPE_KEYS)
    return a.log["kernels"].get(key)


def r_naive_kernels(a, ctx):
    naive = a.one(1, 15, **L01_DEFAULT)
    ks = l01_kernels(a, L01_DEFAULT)
    rows = []
    if ks:
        for i, name in ((1, "1 S = QK^T"), (2, "2 softmax"), (3, "3 O = PV")):
            k = ks.get(i)
            rows.append([name, f(k and k["ms"], 3), f(k and k["gbs"]), pc(k and k["pct_hbm"]),
                         "-" if i == 2 else f(k and k["tflops"], 2)])
    else:
        rows.append(["kernels 1-3 alone", NO_LOG, "", "", ""])
    rows.append(["all three (`./run 15`)", f(naive and naive["ms"], 3), "", "",
                 f(naive and naive["tflops"], 2)])
    t = a.peer(1, "torch.naive", causal=0, seq_q=4096, dim=64, heads=16, batch=1)
    if a.peers:
        rows.append(["PyTorch, same three steps in fp32 (cuBLAS, TF32 off)", f(t and t["ms"], 3),
                     "", "", f(t and t["tflops"], 2)])
    else:
        rows.append(["PyTorch, same three steps in fp32 (cuBLAS, TF32 off)", NO_PEERS, "", "", ""])
    sw = a.software()
    return "\n".join([
        source(a, ["lessons.csv", "gpu-suite.log", "peers.csv"]), "",
        "Default shape: batch 1, 16 heads, seq 4096, D = 64, full" + (f"; {sw}" if sw else "") + ".",
        "", table(["kernel", "ms", "GB/s (model bytes)", "% of the measured HBM read", "TFLOP/s"],
                  rows)])


def naive_model_bytes(s):
    q = 4.0 * s["batch"] * s["seq_q"] * s["heads"] * s["dim"]
    kv = 4.0 * s["batch"] * s["seq_kv"] * s["kv_heads"] * s["dim"]
    sp = 4.0 * s["batch"] * s["heads"] * s["seq_q"] * s["seq_kv"]
    lse = 4.0 * s["batch"] * s["heads"] * s["seq_q"]
    return (q + kv + sp) + (2 * sp + lse) + (sp + kv + q)


def r_naive_floors(a, ctx):
    naive, hbm = a.one(1, 15, **L01_DEFAULT), l01(a, "read16")
    if not (naive and hbm):
        return source(a, ["lessons.csv"]) + "\n\nThe naive attention: " + NO_RUN
    traffic = naive_model_bytes(L01_DEFAULT)
    floor = traffic / (hbm["gbs"] * 1e9) * 1e3
    parts = []
    ks = l01_kernels(a, L01_DEFAULT)
    if ks and all(i in ks for i in (1, 2, 3)):
        parts.append(f"the softmax kernel takes {ks[2]['ms']:.3f} ms of the version's "
                     f"{naive['ms']:.3f} ms, at {ks[2]['pct_hbm']:.1f}% of the measured HBM read")
    parts.append(f"the memory floor, the model's {traffic / 1e9:.3f} GB over the measured HBM read "
                 f"({hbm['gbs']:.1f} GB/s), is {floor:.3f} ms, and the version takes "
                 f"{naive['ms'] / floor:.1f}x that")
    if ks and all(i in ks for i in (1, 2, 3)):
        pf = sorted((ks[1]["pct_fp32"], ks[3]["pct_fp32"]))
        ph = sorted((ks[1]["pct_hbm"], ks[3]["pct_hbm"]))
        parts.append(f"the two products take {ks[1]['ms'] + ks[3]['ms']:.3f} ms of it, at "
                     f"{span(*pf)}% of the fp32 peak while moving bytes at {span(*ph)}% of the "
                     f"HBM read")
    else:
        parts.append("the per-kernel times are " + NO_LOG)
    t = a.peer(1, "torch.naive", causal=0, seq_q=4096, dim=64, heads=16, batch=1)
    if t:
        parts.append(f"PyTorch's three steps take {t['ms']:.3f} ms, {t['ms'] / floor:.1f}x the "
                     f"memory floor")
    else:
        parts.append("PyTorch's figure is " + NO_PEERS)
    return source(a, ["lessons.csv", "gpu-suite.log", "peers.csv"]) + "\n\nIn this run: " + \
        "; ".join(parts) + "."


def r_naive_causal(a, ctx):
    full, cau = a.one(1, 15, **L01_DEFAULT), a.one(1, 15, **dict(L01_DEFAULT, causal=1))
    if not (full and cau):
        return source(a, ["lessons.csv"]) + "\n\nThe causal run: " + NO_RUN
    s = (f"In this run: {cau['ms']:.3f} ms causal against {full['ms']:.3f} ms without the mask; "
         f"{cau['tflops']:.2f} TFLOP/s of useful flops against {full['tflops']:.2f}.")
    tc = a.peer(1, "torch.naive", causal=1, seq_q=4096, dim=64, heads=16, batch=1)
    tf = a.peer(1, "torch.naive", causal=0, seq_q=4096, dim=64, heads=16, batch=1)
    if tc and tf:
        s += (f" PyTorch's three steps plus a `masked_fill`: {tc['ms']:.3f} ms causal "
              f"({tc['tflops']:.2f} TFLOP/s useful), against {tf['ms']:.3f} ms without the mask.")
    else:
        s += " PyTorch's causal figure: " + NO_PEERS + "."
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\n" + s


def r_naive_shapes(a, ctx):
    seen, rows = [], []
    for r in a.rows(1, 15):
        key = tuple(r[k] for k in SHAPE_KEYS)
        if key in seen:
            continue
        seen.append(key)
        s = dict(zip(SHAPE_KEYS, key))
        sb = 4 * s["batch"] * s["heads"] * s["seq_q"] * s["seq_kv"]
        if r["ms"] is None:
            t = a.one(1, 15, **s)
            if t is None:
                why = r["note"] or r["status"]
                rows.append([shape_words(s, L01_DEFAULT), size_str(sb), esc(f"{r['status']}: {why}"),
                             "", "", "", ""])
                continue
            r = t
        k = l01_kernels(a, s) or {}
        cells = [f(k[i]["ms"], 3) if i in k else "-" for i in (1, 2, 3)]
        if 2 in k:
            cells[1] += f" ({k[2]['gbs']:.1f})"
        rows.append([shape_words(s, L01_DEFAULT), size_str(sb), f(r["ms"], 3), f(r["tflops"], 2)]
                    + cells)
    out = [source(a, ["lessons.csv", "gpu-suite.log"]), ""]
    if not (a.log and a.log["kernels"]):
        out += ["Each kernel alone: " + NO_LOG, ""]
    out.append(table(["shape", "S", "all three, ms", "TFLOP/s (useful)", "S = QK^T, ms",
                      "softmax, ms (GB/s)", "O = PV, ms"], rows))
    return "\n".join(out)


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "pyramid": r_pyramid, "host-link": r_host_link, "hbm": r_hbm, "l2": r_l2, "banks": r_banks,
    "fma": r_fma, "naive-kernels": r_naive_kernels, "naive-floors": r_naive_floors,
    "naive-causal": r_naive_causal, "naive-shapes": r_naive_shapes,
}
