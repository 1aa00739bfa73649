"""Lesson 02's regions: its renderers and the helpers they share."""
from .core import NO_PEERS, NO_RUN, att, f, pc, rel, source, table


# ---- Lesson 02 ---------------------------------------------------------------------------------

L02_DEFAULT = att(1, 16, 1024, 64, skv=4096)          # 16384 x 4096
L02_LONG = att(1, 4, 1024, 64, skv=32768)             # 4096 x 32768
L02_DECODE = att(64, 32, 1, 128, kvh=8, skv=8192)
L02_VERSIONS = {1: "naive (small data)", 2: "safe-thread", 3: "safe-warp", 4: "safe-block",
                5: "online-block", 6: "online-regs", 7: "online-regs+smem"}


def l02_rc(s):
    return s["batch"] * s["heads"] * s["seq_q"], s["seq_kv"]


def l02_peak(a):
    r = a.one(2, 6, **L02_DEFAULT) or a.one(2, 6, **L02_LONG)
    return r["gbs"] / r["pct_bw"] * 100.0 if r and r["pct_bw"] else None


# Reads of the row per version in lesson 02's byte model (versions.c), one write each: the
# traffic a version requests. Re-reads of a row can hit the L2, so this count can run past HBM's
# peak; every % of HBM below is of the bytes that must move (one read, one write).
L02_READS = {1: 2, 2: 3, 3: 3, 4: 3, 5: 2, 6: 1, 7: 1}


def l02_own(r, v):
    rows, cols = l02_rc(r)
    return (L02_READS[v] + 1) * rows * cols * 4 / (r["ms"] * 1e-3) / 1e9


def l02_1r1w(a, r):
    rows, cols = l02_rc(r)
    gbs = 2.0 * rows * cols * 4 / (r["ms"] * 1e-3) / 1e9
    peak = l02_peak(a)
    return gbs, (100 * gbs / peak if peak else None)


def r_softmax_setup(a, ctx):
    peak = l02_peak(a)
    s = f"HBM peak {peak:.0f} GB/s as the report computes it (2 x memory clock x bus width)" \
        if peak else "HBM peak: " + NO_RUN
    sw = a.software()
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\n" + s + (f"; {sw}" if sw else "") + "."


def l02_table(a, shape):
    rows = []
    for v, name in L02_VERSIONS.items():
        r = a.one(2, v, **shape)
        if r is None:
            rows.append([v, name, NO_RUN, "", "", "", ""])
            continue
        g, p = l02_1r1w(a, r)
        rows.append([v, name, f(r["ms"], 4), f(l02_own(r, v), 0), f(g, 0), pc(p)])
    return table(["#", "version", "ms", "own GB/s (requested; re-reads may hit L2)",
                  "1R+1W GB/s (must move)", "% HBM (1R+1W)"], rows)


def r_softmax_default(a, ctx):
    return source(a, ["lessons.csv"]) + "\n\n" + l02_table(a, L02_DEFAULT)


def r_softmax_long(a, ctx):
    return source(a, ["lessons.csv"]) + "\n\n" + l02_table(a, L02_LONG)


def l02_peer(a, impl, shape):
    rows, cols = l02_rc(shape)
    return a.peer(2, impl, rows=rows, cols=cols)


def r_softmax_peers(a, ctx):
    if not a.peers:
        return source(a, ["peers.csv"]) + "\n\nPeer figures: " + NO_PEERS + "."
    rows = []
    for label, impl in (("torch.softmax", r"torch\.softmax"), ("version 5", r"lesson02\.v5-.*"),
                        ("version 6", r"lesson02\.v6-.*"), ("version 7", r"lesson02\.v7-.*")):
        row = [label]
        for shape in (L02_DEFAULT, L02_LONG):
            p = l02_peer(a, impl, shape)
            row += [f(p and p["ms"], 4), f(p and p["gbs"], 0), pc(p and p["pct_hbm"])]
        rows.append(row)
    return source(a, ["peers.csv"]) + "\n\n" + table(
        ["", "16384 x 4096: ms", "GB/s", "% HBM", "4096 x 32768: ms", "GB/s", "% HBM"], rows)


def l02_best(a, shape):
    best = None
    for v in L02_VERSIONS:
        r = a.one(2, v, **shape)
        if r is None:
            continue
        g, p = l02_1r1w(a, r)
        if p is not None and (best is None or p > best[1]):
            best = (v, p, r)
    return best


def r_softmax_targets(a, ctx):
    parts = []
    for shape, label, target in ((L02_DEFAULT, "16384 x 4096", 85), (L02_LONG, "4096 x 32768", 80)):
        b = l02_best(a, shape)
        if b is None:
            parts.append(f"At least {target}% of HBM for the best version on {label}: {NO_RUN}.")
            continue
        v, p, _ = b
        pp = l02_peer(a, rf"lesson02\.v{v}-.*", shape)
        extra = f"; {pp['pct_hbm']:.1f}% in the peer script" if pp and pp["pct_hbm"] else ""
        parts.append(f"At least {target}% of HBM for the best version on {label}: "
                     f"{'met' if p >= target else 'not met'} (version {v}: {p:.1f}% in the lesson's "
                     f"table{extra}).")
    if a.peers:
        figs, ok = [], True
        for shape in (L02_DEFAULT, L02_LONG):
            b = l02_best(a, shape)
            t = l02_peer(a, r"torch\.softmax", shape)
            mine = l02_peer(a, rf"lesson02\.v{b[0]}-.*", shape) if b else None
            if not (t and mine):
                ok = None
                continue
            figs.append((b[0], mine["ms"], t["ms"]))
            ok = ok and mine["ms"] <= t["ms"]
        if figs and ok is not None:
            parts.append("Not slower than `torch.softmax`: " + ("met on both shapes" if ok else
                         "not met on both shapes") + " (in one process " +
                         ", and ".join(f"version {v} {m:.4f} against {t:.4f} ms" for v, m, t in figs)
                         + ": " + " and ".join(f"{t / m:.2f}x" for _, m, t in figs) + ").")
        else:
            parts.append("Not slower than `torch.softmax`: the peer file lacks these shapes.")
    else:
        parts.append("Not slower than `torch.softmax`: peer figures " + NO_PEERS + ".")
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\nTargets. " + " ".join(parts)


def r_softmax_v8(a, ctx):
    d, dec = a.one(2, 8, **L02_DEFAULT), a.one(2, 8, **L02_DECODE)
    parts = []
    if d:
        parts.append(f"Version 8 (attention, default shape 1 x 16 x 1024 x 4096, head dim 64): "
                     f"{d['ms']:.3f} ms, {d['tflops']:.2f} TFLOP/s ({pc(d['pct_flops'])} of the fp32 "
                     f"peak)")
    if dec:
        parts.append(f"decode, 64 sequences x 32 heads (8 KV heads), 8192 keys, head dim 128: "
                     f"{dec['ms']:.3f} ms, {dec['gbs']:.0f} GB/s ({dec['pct_bw']:.1f}% of HBM) on the "
                     f"{dec['gbs'] * dec['ms']:.1f} MB of Q, K, V, O and LSE it has to move")
    if not parts:
        return source(a, ["lessons.csv"]) + "\n\nVersion 8: " + NO_RUN
    return source(a, ["lessons.csv"]) + "\n\n" + "; ".join(parts) + "."


def r_softmax_steps(a, ctx):
    D = {v: a.one(2, v, **L02_DEFAULT) for v in L02_VERSIONS}
    L = {v: a.one(2, v, **L02_LONG) for v in L02_VERSIONS}
    if any(D[v] is None for v in L02_VERSIONS):
        return source(a, ["lessons.csv"]) + "\n\nThe default shape: " + NO_RUN

    def word(x, y):
        return "slower than" if x > y else "faster than" if x < y else "as fast as"
    d21 = rel(D[2]["ms"], D[1]["ms"])
    own = {v: l02_own(D[v], v) for v in (1, 2, 4)}
    peak = l02_peak(a)
    past = (f", more than HBM's {peak:.0f} GB/s can move: its second and third reads of each "
            f"16 KB row come from the L2, so of HBM it is credited only with the bytes that must "
            f"move, {l02_1r1w(a, D[4])[1]:.1f}%") if peak and own[4] > peak else ""
    s = (f"In this run, on 16384 x 4096: versions 1 and 2 request {own[1]:.0f} and "
         f"{own[2]:.0f} GB/s of their own traffic, and version 2 is {abs(d21):.0f}% "
         f"{'slower' if d21 > 0 else 'faster'} than version 1; version 3 is "
         f"{D[2]['ms'] / D[3]['ms']:.1f}x as fast as version 2, "
         f"version 4 another {D[3]['ms'] / D[4]['ms']:.1f}x, and version 4 requests "
         f"{own[4]:.0f} GB/s{past}; version 5 is {word(D[5]['ms'], D[4]['ms'])} version 4 "
         f"({D[5]['ms']:.4f} against {D[4]['ms']:.4f} ms).")
    if L[4] and L[5]:
        s += (f" On 4096 x 32768 version 5 is {word(L[5]['ms'], L[4]['ms'])} version 4 "
              f"({L[5]['ms']:.4f} against {L[4]['ms']:.4f} ms).")
    if L[6] and L[7]:
        g6d, p6d = l02_1r1w(a, D[6])
        g6l, p6l = l02_1r1w(a, L[6])
        w1, w2 = word(D[7]["ms"], D[6]["ms"]), word(L[7]["ms"], L[6]["ms"])
        s += (f" Version 6 reaches {p6d:.1f}% of HBM on 16384 x 4096 and {p6l:.1f}% on "
              f"4096 x 32768 ({D[6]['ms']:.4f} and {L[6]['ms']:.4f} ms, against the floors of 112 "
              f"and 224 us at 4.8 TB/s); version 7 takes {D[7]['ms']:.4f} and {L[7]['ms']:.4f} ms, "
              + (f"{w1} version 6 on both shapes." if w1 == w2 else
                 f"{w1} version 6 on the first shape and {w2} it on the second."))
    t1, t2 = l02_peer(a, r"torch\.softmax", L02_DEFAULT), l02_peer(a, r"torch\.softmax", L02_LONG)
    if t1 and t2:
        s += (f" `torch.softmax` moves the same bytes at {t1['pct_hbm']:.1f}% and "
              f"{t2['pct_hbm']:.1f}% of HBM (peer script).")
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\n" + s


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "softmax-setup": r_softmax_setup, "softmax-default": r_softmax_default,
    "softmax-long": r_softmax_long, "softmax-peers": r_softmax_peers,
    "softmax-targets": r_softmax_targets, "softmax-v8": r_softmax_v8,
    "softmax-steps": r_softmax_steps,
}
