"""Lesson 06's regions: its renderers and the helpers they share."""
import re
from .core import NO_PEERS, NO_RUN, att, f, pc, ratio, rel, seq_label, source, span, table, xs


# ---- Lesson 06 ------------------------------------------------------------------------------------

L06_DEFAULT = att(1, 32, 1, 128, kvh=8, skv=32768)
L06_NAMES = {1: "one-block", 2: "split-kv", 3: "gqa-group", 4: "pipeline", 5: "one-launch",
             6: "varlen"}
# (label, shape) of the other rows of lessons/06_flash_decoding/gpu-runs.txt
L06_SHAPES = [("kv 8192", att(1, 32, 1, 128, kvh=8, skv=8192)),
              ("kv 131072", att(1, 32, 1, 128, kvh=8, skv=131072)),
              ("32 KV heads, kv 8192", att(1, 32, 1, 128, kvh=32, skv=8192)),
              ("32 KV heads", att(1, 32, 1, 128, kvh=32, skv=32768)),
              ("1 KV head (MQA)", att(1, 32, 1, 128, kvh=1, skv=32768)),
              ("batch 8", att(8, 32, 1, 128, kvh=8, skv=32768)),
              ("batch 32, kv 8192", att(32, 32, 1, 128, kvh=8, skv=8192)),
              ("dim 64", att(1, 32, 1, 64, kvh=8, skv=32768)),
              ("4 query rows, causal", att(1, 32, 4, 128, c=1, kvh=8, skv=32768))]
L06_MIXED = "131072,1024x31"
L06_EQUAL = att(32, 32, 1, 128, kvh=8, skv=5088)


def tbs(r):
    return r["gbs"] / 1000.0 if r and r["gbs"] is not None else None


def us(r):
    return r["ms"] * 1000.0 if r and r["ms"] is not None else None


def l06_missing(a):
    return a.one(6, 1, **L06_DEFAULT) is None


def r_l06_default(a, ctx):
    src = source(a, ["lessons.csv"])
    if l06_missing(a):
        return src + "\n\nThe lesson's table: " + NO_RUN + "."
    v1 = a.one(6, 1, **L06_DEFAULT)
    rows = []
    for v in range(1, 7):
        r = a.one(6, v, **L06_DEFAULT)
        t = us(r)
        rows.append([v, f"`{L06_NAMES[v]}`", "-" if t is None else
                     (f"{t:.0f} us" if t >= 100 else f"{t:.1f} us"), f(r and r["gbs"], 0),
                     pc(r and r["pct_bw"]), xs(ratio(v1["ms"], r and r["ms"]), 1)])
    out = [src, "", "Default shape, batch 1, 32 heads, 8 KV heads, kv 32768, dim 128:", "",
           table(["#", "version", "time", "GB/s", "% of HBM", "over version 1"], rows)]
    again = [a.rows(6, v, timed=True, **L06_DEFAULT) for v in range(1, 7)]
    if all(len(x) > 1 for x in again):
        ts = [us(x[-1]) for x in again]
        out += ["", "The same shape repeated at the end of the run: " +
                ", ".join((f"{t:.0f}" if t >= 100 else f"{t:.1f}") for t in ts[:-1]) +
                f" and {ts[-1]:.1f} us."]
    return "\n".join(out)


def r_l06_speedups(a, ctx):
    src = source(a, ["lessons.csv"])
    if l06_missing(a):
        return src + "\n\nThe speed-ups: " + NO_RUN + "."
    d = L06_DEFAULT
    sh = dict(L06_SHAPES)

    def sp(shape, x, y):  # version y's speed-up over version x at a shape
        return ratio(a.one(6, x, **shape)["ms"], a.one(6, y, **shape)["ms"])

    def gain(shape):  # version 5 over version 4, in percent
        return rel(a.one(6, 4, **shape)["ms"], a.one(6, 5, **shape)["ms"])

    saved = [us(a.one(6, 4, **x)) - us(a.one(6, 5, **x))
             for x in (d, sh["kv 8192"], sh["kv 131072"])]

    return "\n".join([src, "", (
        "The honest speed-up of splitting depends on how far the rows alone are from filling the "
        f"GPU: at batch 1 version 2 is {sp(d, 1, 2):.1f}x version 1 (32 rows for 132 SMs); at batch "
        f"8 (256 rows) {sp(sh['batch 8'], 1, 2):.1f}x; at batch 32 and kv 8192 (1024 rows, one "
        f"chunk) {sp(sh['batch 32, kv 8192'], 1, 2):.2f}x, although one chunk splits nothing and "
        "version 2 adds the combine (its header says what is not explained). "
        f"Grouping is worth {sp(d, 2, 3):.1f}x at 8 KV heads and nothing at 32 "
        f"({tbs(a.one(6, 3, **sh['32 KV heads'])):.2f} against "
        f"{tbs(a.one(6, 2, **sh['32 KV heads'])):.2f} TB/s at kv 32768), where there is nothing "
        f"to share. Dropping the combine's launch (version 5) is worth {gain(d):.1f}% at the "
        f"default shape, {gain(sh['kv 8192']):.1f}% at kv 8192 and {gain(sh['kv 131072']):.1f}% "
        f"at kv 131072, {span(min(saved), max(saved), 1)} us a call. Where one block would merge "
        f"more than 64 KiB of partial states alone (MQA: 16 rows x 64 chunks per unit, 512 KiB; 4 "
        f"causal query rows: 128 KiB), version 5 leaves the merge to the combine kernel and runs as "
        f"version 4 does: {tbs(a.one(6, 5, **sh['1 KV head (MQA)'])):.2f} against "
        f"{tbs(a.one(6, 4, **sh['1 KV head (MQA)'])):.2f} TB/s with MQA, "
        f"{tbs(a.one(6, 5, **sh['4 query rows, causal'])):.2f} against "
        f"{tbs(a.one(6, 4, **sh['4 query rows, causal'])):.2f} with 4 causal rows; version 6, "
        f"which always merges in the kernel, reaches {tbs(a.one(6, 6, **sh['1 KV head (MQA)'])):.2f} "
        "with MQA.")])


def r_l06_shapes(a, ctx):
    src = source(a, ["lessons.csv"])
    if l06_missing(a):
        return src + "\n\nOther shapes: " + NO_RUN + "."
    rows = []
    for label, shape in L06_SHAPES:
        rows.append([label] + [f(tbs(a.one(6, v, **shape)), 2) for v in range(1, 7)])
    return "\n".join([src, "", "Other rows of the same run (TB/s, the lesson's count):", "",
                      table(["shape"] + [f"v{v}" for v in range(1, 7)], rows)])


def r_l06_varlen(a, ctx):
    src = source(a, ["lessons.csv"])
    mixed = a.one(6, 6, kv_lens=L06_MIXED)
    e6, e3 = a.one(6, 6, **L06_EQUAL), a.one(6, 3, **L06_EQUAL)
    if not (mixed and e6 and e3):
        return src + "\n\nLengths per sequence: " + NO_RUN + "."
    return "\n".join([src, "", (
        "Lengths per sequence (version 6 only; the others are skipped with the reason): one "
        "sequence of 131072 keys and 31 of 1024, 8 KV heads, 667 MB of K + V: "
        f"{us(mixed):.0f} us, {tbs(mixed):.2f} TB/s. The same keys in 32 equal sequences of 5088: "
        f"version 6 {tbs(e6):.2f} TB/s, version 3 {tbs(e3):.2f}. The mixed batch runs at "
        f"{100 * tbs(mixed) / tbs(e6):.0f}% of the equal one.")])


L06_PEER_ROWS = [(32, 1, 8192), (32, 1, 32768), (32, 1, 131072), (32, 8, 32768), (32, 32, 8192),
                 (8, 1, 1024), (8, 1, 8192), (8, 1, 32768), (8, 1, 131072), (8, 8, 32768),
                 (8, 8, 131072), (8, 32, 8192), (8, 32, 131072), (8, 128, 32768)]


def r_l06_peers(a, ctx):
    src = source(a, ["peers.csv"])
    if not a.peers or not a.peer(6, "sdpa-cudnn"):
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    # the lesson's versions this bench ran (an older run stops at version 4)
    nv = max(v for v in range(1, 7) if a.peer(6, re.escape(f"v{v}-{L06_NAMES[v]}")))
    names = ["sdpa-flash", "sdpa-cudnn"] + [f"v{v}-{L06_NAMES[v]}" for v in range(1, nv + 1)]

    def rate(impl, **kv):
        r = a.peer(6, re.escape(impl), **kv)
        return tbs(r)
    rows = []
    for hkv, b, skv in L06_PEER_ROWS:
        kv = dict(dim=128, kv_heads=hkv, batch=b, seq_kv=skv)
        rs = [rate(n, **kv) for n in names]
        best = max((x for x in rs[2:] if x is not None), default=None)
        rows.append([b, hkv, seq_label(skv)] + [f(x, 2) for x in rs] + [xs(ratio(best, rs[1]))])
    shapes = sorted({(r["dim"], r["kv_heads"], r["batch"], r["seq_kv"]) for r in a.peers
                     if int(r["lesson"]) == 6 and r["impl"] == "sdpa-cudnn" and r["gbs"]})
    below, best_below, trail, trails = [], 0, 0.0, []
    for dim, hkv, b, skv in shapes:
        kv = dict(dim=dim, kv_heads=hkv, batch=b, seq_kv=skv)
        cu, v4 = rate("sdpa-cudnn", **kv), rate("v4-pipeline", **kv)
        best = max(x for x in (rate(n, **kv) for n in names[2:]) if x is not None)
        if v4 is not None and v4 < cu:
            below.append(1 - v4 / cu)
        if best < cu:
            best_below += 1
            trail = max(trail, 1 - best / cu)
            if best / cu < 0.98:
                trails.append(f"dim {dim}, {hkv} KV heads, batch {b}, kv {seq_label(skv)} "
                              f"({best / cu:.2f}x)")
    out = [src, "", table(["batch", "KV heads", "kv", "SDPA flash", "cuDNN"] +
                          [f"v{v}" for v in range(1, nv + 1)] + ["best / cuDNN"], rows), "",
           f"`peers.csv` holds all {len(shapes)} shapes. Version 4 matches or beats cuDNN on "
           f"{len(shapes) - len(below)} of them; the others trail by "
           f"{100 * min(below):.2f}% to {100 * max(below):.0f}%. The best version trails cuDNN on "
           f"{best_below} shapes, by at most {100 * trail:.1f}%" +
           (f"; by more than 2% on {len(trails)}: {'; '.join(trails)}." if trails else ".")]
    return "\n".join(out)


# The read floor lesson 06's report prints after its table (versions.c, read_floor.cu): a plain
# read of the run's K + V bytes, timed as the versions are; or why it was not measured.
L06_FLOOR_LINE = re.compile(
    r"^read floor: a plain read of the same ([\d.]+) MB of K \+ V \(16-byte loads, (\d+) blocks "
    r"of (\d+) threads\): ([\d.]+) us, (\d+) GB/s \(([\d.]+)% of HBM\); the fastest version "
    r"here, (\d+) (\S+), takes ([\d.]+) us, ([\d.]+)% of the floor's rate\s*$")
L06_FLOOR_SKIP = re.compile(r"^read floor: not measured: (.*?)\s*$")
L06_PROBLEM_LINE = re.compile(r"^problem\s+batch (\d+)\s+heads (\d+)/(\d+)\s+seq (\d+)/(\d+)\s+"
                              r"dim (\d+)\s+(full|causal)\b(.*)$")
# The sizes the targets speak of: (label, MB of K + V, shape), all batch 1 and 8 KV heads.
L06_FLOOR_SIZES = [("kv 8k", 34, att(1, 32, 1, 128, kvh=8, skv=8192)),
                   ("32k", 134, L06_DEFAULT),
                   ("128k", 537, att(1, 32, 1, 128, kvh=8, skv=131072))]


def l06_read_floor(a, shape):
    """The read floor of the first lesson-6 run of @p shape in gpu-suite.log (a section `lesson-6
    ARGS`, told apart by its `problem` line; runs with --kv-lens never match): a dict with us, gbs,
    pct_hbm, or a string saying why there is none."""
    if not a.log:
        return "no `gpu-suite.log` in this archive"
    for title, body in a.log["sections"]:
        if (title.split() or [""])[0] != "lesson-6":
            continue
        prob = next((m for m in map(L06_PROBLEM_LINE.match, body) if m), None)
        if not prob or "kv lens" in prob.group(8):
            continue
        g = [int(x) for x in prob.groups()[:6]]
        if dict(batch=g[0], heads=g[1], kv_heads=g[2], seq_q=g[3], seq_kv=g[4], dim=g[5],
                causal=int(prob.group(7) == "causal")) != shape:
            continue
        for line in body:
            m = L06_FLOOR_LINE.match(line)
            if m:
                return {"mb": float(m.group(1)), "blocks": int(m.group(2)),
                        "threads": int(m.group(3)), "us": float(m.group(4)),
                        "gbs": float(m.group(5)), "pct_hbm": float(m.group(6))}
            m = L06_FLOOR_SKIP.match(line)
            if m:
                return f"not measured: {m.group(1)}"
        return "the run's `lesson-6` block in `gpu-suite.log` predates that line"
    return "no run of this shape in `gpu-suite.log`"


def l06_floor_sentence(a):
    """What one launch can reach at batch 1 and kv 8k, 32k, 128k: the read floor of each size,
    version 5 against it, and whether 90% of HBM is within reach."""
    got, lack = [], []
    for label, mb, shape in L06_FLOOR_SIZES:
        fl = l06_read_floor(a, shape)
        if isinstance(fl, dict):
            got.append((label, mb, fl, a.one(6, 5, **shape)))
        else:
            lack.append((label, fl))
    what = ("The read floor, a plain read of the same K + V bytes timed as the versions are (the "
            "`read floor` line after the table, in `gpu-suite.log`)")
    why = (lack[0][1] if len({w for _, w in lack}) == 1 else
           "; ".join(f"{label}: {w}" for label, w in lack))
    if not got:
        return f"{what}: no read floor in this run ({why})."
    sizes = "; ".join(f"{fl['us']:.1f} us, {fl['gbs'] / 1000:.2f} TB/s ({fl['pct_hbm']:.0f}% of "
                      f"HBM) for the {mb} MB of {label}" for label, mb, fl, _ in got)
    if lack:
        sizes += "; none at " + " and ".join(label for label, _ in lack) + f" ({why})"
    out = f"{what}: {sizes}."
    v5 = [(label, 100.0 * fl["us"] / us(r)) for label, _, fl, r in got if us(r)]
    if v5:
        out += (" Version 5 runs at " + ", ".join(f"{x:.0f}%" for _, x in v5) +
                " of the floor's rate (" + ", ".join(label for label, _ in v5) + ").")
    out_of = [(label, fl) for label, _, fl, _ in got if fl["pct_hbm"] < 90.0]
    within = [(label, fl) for label, _, fl, _ in got if fl["pct_hbm"] >= 90.0]
    parts = []
    if out_of:
        parts.append("beyond any single launch of that size at " +
                     " and ".join(label for label, _ in out_of) + " (the plain read itself reaches " +
                     " and ".join(f"{fl['pct_hbm']:.0f}%" for _, fl in out_of) + ")")
    if within:
        parts.append("within reach at " + " and ".join(label for label, _ in within) + " (" +
                     " and ".join(f"{fl['pct_hbm']:.0f}%" for _, fl in within) + ")")
    return out + " 90% of HBM is " + ", and ".join(parts) + "."


def r_l06_targets(a, ctx):
    src = source(a, ["lessons.csv", "gpu-suite.log"])
    if l06_missing(a):
        return src + "\n\nThe targets: " + NO_RUN + "."
    sh = dict(L06_SHAPES)
    d5, l5 = a.one(6, 5, **L06_DEFAULT), a.one(6, 5, **sh["kv 131072"])
    s5, s8 = a.one(6, 5, **sh["32 KV heads, kv 8192"]), a.one(6, 5, **sh["kv 8192"])
    t8, t32, t128 = (us(a.one(6, 4, **x)) for x in (sh["kv 8192"], L06_DEFAULT, sh["kv 131072"]))
    b32, b128 = 2.0 * 32768 * 128 * 2 * 8 / 1e6, 2.0 * 131072 * 128 * 2 * 8 / 1e6
    slope = (t128 - t32) / (b128 - b32)
    zero = t32 - slope * b32
    miss = abs(zero + slope * b32 / 4 - t8)
    return "\n".join([src, "", (
        f"What is not reached yet, measured: 90% of HBM (4.3 TB/s) at batch 1, 8 KV heads, kv 32k "
        f"({tbs(d5):.2f} TB/s with version 5, {d5['pct_bw']:.0f}%) and 128k ({tbs(l5):.2f}, "
        f"{l5['pct_bw']:.0f}%); 3.5 TB/s at batch 1 and kv 8k is "
        f"{'reached' if tbs(s5) >= 3.5 else 'not reached'} with 32 KV heads ({tbs(s5):.2f}, version "
        f"5) and not with 8 ({tbs(s8):.2f}, where the whole K + V is 34 MB). The gap at small sizes "
        f"is a fixed cost of about {zero:.0f} us per call that does not scale with the keys: "
        f"version 4 takes {t8:.1f} us for 34 MB (kv 8192), {t32:.1f} us for 134 MB and {t128:.1f} "
        f"us for 537 MB (kv 131072); a line through the last two meets zero bytes at {zero:.1f} us "
        f"and passes within {miss:.1f} us of the first."), "", l06_floor_sentence(a)])


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "l06-default": r_l06_default, "l06-speedups": r_l06_speedups, "l06-shapes": r_l06_shapes,
    "l06-varlen": r_l06_varlen, "l06-peers": r_l06_peers, "l06-targets": r_l06_targets,
}
