"""The top README's headline region: a row per lesson present in lessons/, each from that lesson's
newest archive holding its headline's figures (_newest_archive: a partial run without them is
passed over), naming its folder; then one
line per folder read: its device and date, and whether every version in it passed its check."""
import os
import re

from .core import NO_PEERS, ROOT, Archive, att, folders_newest_first, lesson_dirs, ratio, \
    seq_label, source, span, table
from .lesson01 import copy_verdict, l01, l01_hbm_peak
from .lesson02 import L02_DEFAULT, L02_LONG, l02_1r1w, l02_peer
from .lesson04 import l04, l04_shape, sdpa_rows
from .lesson05 import l05_over_cudnn, l05_versions
from .lesson06 import L06_DEFAULT, L06_NAMES, tbs
from .lesson07 import L07_DEFAULT, L07_NAMES, L07_PAGED, l07_dense, l07_peer_rows, l07_peer_summary
from .lesson08 import l08_gpus, l08_long_speedups, l08_names, l08_runs
from .lesson09 import l09_over_peers
from .lesson10 import L10_TILES, l10_peer_ranges, l10_peer_rows, l10_version, l10_vs_one

NO_ARCHIVE = "no archived run yet (docs/results/ has no folder with rows of this lesson)"


def no_peer(a, n):
    """What the peer column says when the run has no peer figure of lesson @p n."""
    if not os.path.exists(os.path.join(ROOT, "bench", f"lesson{n:02d}_peers.py")):
        return "none: the lesson has no `bench/` peer script"
    return "peer figures: " + NO_PEERS


# ---- One function per lesson: (headline, against the best peer of the same run), or None when
# the run lacks the lesson's headline figures.

def h01(a):
    r16, cp, sm, s32 = l01(a, "read16"), l01(a, "copy16"), l01(a, "row"), l01(a, "stride32")
    if not (r16 and cp and sm and s32):
        return None
    peak = l01_hbm_peak(a)
    return (f"HBM read {r16['gbs'] / 1000:.2f} TB/s ({r16['pct_bw']:.1f}% of {peak / 1000:.2f} "
            f"TB/s, clock x bus width); copy {cp['gbs'] / 1000:.2f} TB/s; shared memory "
            f"{sm['gbs'] / 1000:.2f} TB/s ({sm['pct_bw']:.1f}% of SMs x 128 B x clock); 32-way bank "
            f"conflict {s32['ms'] / sm['ms']:.2f}x slower (32x predicted)",
            copy_verdict(a, short=True))


def h02(a):
    d6, l6 = a.one(2, 6, **L02_DEFAULT), a.one(2, 6, **L02_LONG)
    if not (d6 and l6):
        return None
    t, m = l02_peer(a, r"torch\.softmax", L02_DEFAULT), l02_peer(a, r"lesson02\.v6-.*", L02_DEFAULT)
    peer = (f"`torch.softmax` {t['ms']:.3f} ms, version 6 {m['ms']:.3f} ms "
            f"({t['ms'] / m['ms']:.2f}x), 16384 x 4096 in one process" if t and m else no_peer(a, 2))
    return (f"one-pass online softmax, row in registers (version 6): {l02_1r1w(a, d6)[1]:.1f}% of "
            f"HBM on 16384 x 4096 fp32, {l02_1r1w(a, l6)[1]:.1f}% on 4096 x 32768", peer)


def h03(a):
    q4, n4 = a.one(3, 3, **att(1, 16, 4096, 64)), a.one(1, 15, **att(1, 16, 4096, 64))
    q64 = a.one(3, 3, **att(1, 16, 65536, 64))
    if not q4:
        return None
    h = "FlashAttention-1, tiled and parallel over Q-tile groups (version 3)"
    if q64:
        h += f": runs seq 65536 ({q64['ms']:.0f} ms; S would need 256 GiB)"
    h += f"; {q4['tflops']:.1f} TFLOP/s fp32 at seq 4096"
    if n4:
        h += f", {n4['ms'] / q4['ms']:.2f}x the naive attention's speed"
    return h, no_peer(a, 3)


def h04(a):
    v128, v64 = l04(a, 7, 128, 0), l04(a, 7, 64, 0)
    if not (v128 and v64):
        return None
    peer = no_peer(a, 4)
    if a.peers and a.peer(4, "sdpa-flash"):
        bf, bc = [], []
        for dim, c, s, fl, cu, vs in sdpa_rows(a):
            ts = [v["tflops"] for v in vs.values() if v and v["tflops"]]
            if s >= 2048 and ts and fl and cu:
                bf.append(max(ts) / fl["tflops"])
                bc.append(cu["tflops"] / max(ts))
        peer = (f"{span(min(bf), max(bf), 2)}x SDPA's FlashAttention-2 backend at seq 2k-16k, "
                f"dim 64 and 128, causal and not; cuDNN (wgmma) reaches "
                f"{span(min(bc), max(bc), 1)}x the best version's rate: lesson 05") if bf \
            else "peer figures: none at seq 2k-16k"
    return (f"FlashAttention-2 with `mma.sync` (version 7): {v128['tflops']:.1f} TFLOP/s at dim "
            f"128, {v64['tflops']:.1f} at dim 64 (batch 4, seq 4096)", peer)


def h05(a):
    vs = l05_versions(a)
    if not vs:
        return None
    yard = vs[-1][0]  # the yardstick, lesson 04's version 7, is the table's last row
    bf16 = [(v, n) for v, n in vs if v != yard and "fp8" not in n]
    best = {}
    for dim in (128, 64):
        rs = [a.one(5, v, **l04_shape(dim, 0)) for v, _ in bf16]
        rs = [r for r in rs if r and r["tflops"]]
        if rs:
            best[dim] = max(rs, key=lambda r: r["tflops"])
    if 128 not in best:
        return None
    b = best[128]
    h = (f"FlashAttention-3 on Hopper, the fastest bf16 version (version {b['version']} "
         f"`{b['name']}`): {b['tflops']:.1f} TFLOP/s at dim 128 ({b['pct_flops']:.0f}% of the "
         "dense bf16 peak)")
    if 64 in best:
        b64 = best[64]
        h += f", {b64['tflops']:.1f} at dim 64" + (
            f" (version {b64['version']})" if b64["version"] != b["version"] else "")
    h += " (batch 4, seq 4096, not causal)"
    # the fastest FP8 version at that shape, its conversion counted
    fp8 = [(v, n, r) for v, n in vs if "fp8" in n
           for r in [a.one(5, v, **l04_shape(128, 0))] if r and r["tflops"]]
    if fp8:
        v8, n8, r8 = max(fp8, key=lambda t: t[2]["tflops"])
        h += (f"; FP8 (version {v8} `{n8}`) {r8['tflops'] / b['tflops']:.2f}x "
              f"version {b['version']}'s rate, its conversion counted")
    targets = l05_over_cudnn(a)
    if targets:
        words = [f"dim {dim}{' causal' if c else ''} {span(min(rs), max(rs), 2)}x"
                 for (dim, c), rs in sorted(targets.items(), key=lambda kv: (-kv[0][0], kv[0][1]))]
        seqs = [r["seq_q"] for r in a.peers if int(r["lesson"]) == 5 and r["impl"] == "sdpa-cudnn"
                and (r["seq_q"] or 0) >= 4096]
        peer = (f"the fastest bf16 version over SDPA cuDNN on the papers' grid (seq "
                f"{seq_label(min(seqs))}-{seq_label(max(seqs))}): " + "; ".join(words))
    else:
        peer = no_peer(a, 5)
    return h, peer


def h06(a):
    rs = [a.one(6, v, **L06_DEFAULT) for v in sorted(L06_NAMES)]
    rs = [r for r in rs if r and r["gbs"]]
    if not rs:
        return None
    b = max(rs, key=lambda r: r["gbs"])
    s = L06_DEFAULT
    h = (f"Flash-decoding, the fastest version at batch 1 ({s['heads']} heads, {s['kv_heads']} KV "
         f"heads, kv {seq_label(s['seq_kv'])}, dim {s['dim']}): version {b['version']} "
         f"`{b['name']}`, {tbs(b):.2f} TB/s, {b['pct_bw']:.1f}% of HBM")
    if not (a.peers and a.peer(6, "sdpa-cudnn")):
        return h, no_peer(a, 6)
    names = [f"v{v}-{n}" for v, n in sorted(L06_NAMES.items())]

    def best_at(**kv):
        xs = [tbs(a.peer(6, re.escape(n), **kv)) for n in names]
        xs = [x for x in xs if x is not None]
        return max(xs) if xs else None
    at = dict(dim=s["dim"], kv_heads=s["kv_heads"], batch=s["batch"], seq_kv=s["seq_kv"])
    cu = tbs(a.peer(6, "sdpa-cudnn", **at))
    shapes = sorted({(r["dim"], r["kv_heads"], r["batch"], r["seq_kv"]) for r in a.peers
                     if int(r["lesson"]) == 6 and r["impl"] == "sdpa-cudnn" and r["gbs"]})
    over = []
    for dim, hkv, bt, skv in shapes:
        kv = dict(dim=dim, kv_heads=hkv, batch=bt, seq_kv=skv)
        x, c = best_at(**kv), tbs(a.peer(6, "sdpa-cudnn", **kv))
        if x and c:
            over.append(x / c)
    mine = best_at(**at)
    peer = []
    if cu and mine:
        peer.append(f"{mine / cu:.2f}x SDPA cuDNN's decode at that shape (cuDNN {cu:.2f} TB/s, "
                    f"the fastest version {mine:.2f} TB/s in the same process)")
    if over:
        peer.append(f"the fastest version over cuDNN's on all {len(over)} shapes of the bench: "
                    f"{span(min(over), max(over), 2)}x")
    return h, "; ".join(peer) or no_peer(a, 6)


def h07(a):
    r = a.one(7, L07_PAGED, **L07_DEFAULT)
    if not (r and r["gbs"]):
        return None
    dense = l07_dense([a.one(7, v, **L07_DEFAULT) for v in L07_NAMES])
    h = (f"Paged decode, version {L07_PAGED} `{L07_NAMES[L07_PAGED]}`: {tbs(r):.2f} TB/s, "
         f"{r['pct_bw']:.1f}% of HBM at batch 1, kv {seq_label(L07_DEFAULT['seq_kv'])}, block size "
         "16, pages shuffled")
    if dense and dense["ms"]:
        h += (f"; {100 * dense['ms'] / r['ms']:.1f}% of the speed of lesson 06's dense kernel "
              f"(`{dense['name']}`) in the same run")
    rows, ours = l07_peer_rows(a)
    if not rows:
        return h, no_peer(a, 7)
    top = ours[-1]
    wins, n, worst, dense_r = l07_peer_summary(a, rows, top)
    peer = (f"version {top} matches or beats cuDNN's paged decode on {wins} of {n} shapes (lowest "
            f"ratio {worst:.3f}x)")
    if dense_r:
        peer += (f"; {100 * min(dense_r):.0f}-{100 * max(dense_r):.0f}% of lesson 06's dense "
                 "kernel on the same values")
    return h, peer


def h08(a):
    runs = [r for r in l08_runs(a) if r["rows"].get(1)]
    if not runs:
        return None
    names = l08_names(a)
    rings = [v for v in sorted(names) if v > 1]
    multi = [r for r in runs if l08_gpus(r) > 1]
    parts = []
    for g in sorted({l08_gpus(r) for r in multi}):
        on = [r for r in multi if l08_gpus(r) == g]
        how = next(iter(on[0]["ring"].values()))["how"]
        masks = []
        for causal in (0, 1):
            best = None
            for v in rings:
                x = l08_long_speedups(on, v, causal).get(g)
                if x and (best is None or min(x) > min(best[1])):
                    best = (v, x)
            if best:
                v, x = best
                masks.append(f"version {v} `{names[v]}` {span(min(x), max(x), 2)}x "
                             f"{'with the causal mask' if causal else 'without the mask'}")
        seqs = sorted({r["shape"]["seq_q"] for r in on if r["shape"]["seq_q"] >= 131072})
        if masks:
            parts.append(f"{g} ranks on {g} GPUs ({how}), {seq_label(seqs[0])}-"
                         f"{seq_label(seqs[-1])} tokens: " + ", ".join(masks))
    if parts:
        h = "Ring attention, speed-up over one GPU (version 1) in the same run: " + "; ".join(parts)
    else:
        h = ("Ring attention: every ring in this run used virtual ranks on one GPU, so no "
             "speed-up over one GPU was measured")
    virt = sorted({r["ranks"] for r in runs if l08_gpus(r) == 1 and r["ranks"] > 1})
    if virt:
        h += (f"; {' and '.join(str(p) for p in virt)} ranks checked as virtual ranks on one GPU")
    return h, no_peer(a, 8) + f" (the yardstick is version 1 `{names.get(1, 'one-gpu')}`)"


def h09(a):
    rs = [r for r in a.rows(9, timed=True, batch=4, heads=16, seq_q=4096, dim=128, causal=0)
          if r["tflops"]]
    if not rs:
        return None
    b = max(rs, key=lambda r: r["tflops"])
    h = (f"Backward pass, the fastest version at batch 4, seq 4096, dim 128: version "
         f"{b['version']} `{b['name']}`, {b['tflops']:.1f} TFLOP/s ({b['pct_flops']:.0f}% of the "
         "dense bf16 peak, the backward counted as 2.5x the forward's flops)")
    fl, cu = l09_over_peers(a)
    if not fl:
        return h, no_peer(a, 9)
    seqs = [r["seq_q"] for r in a.peers if int(r["lesson"]) == 9 and r["impl"] == "sdpa-flash"
            and (r["seq_q"] or 0) >= 2048]
    peer = (f"the fastest version at seq {seq_label(min(seqs))}-{seq_label(max(seqs))} of the "
            f"papers' grid: {span(min(fl), max(fl), 2)}x SDPA flash's backward (FlashAttention-2)")
    if cu:
        peer += f", {span(min(cu), max(cu), 2)}x SDPA cuDNN's"
    return h, peer


def _on_gpu(a):
    """'on an H100', 'on an H200', ... from the device's name, else 'on the <name>'."""
    m = re.search(r"\b([A-Z]\d{2,3})\b", a.device)
    if not m:
        return f"on the {a.device}"
    return f"on {'an' if m.group(1)[0] in 'AEFHILMNORSX' else 'a'} {m.group(1)}"


def _kv_span(xs):
    lo, hi = seq_label(min(xs)), seq_label(max(xs))
    return lo if lo == hi else f"{lo}-{hi}"


def h10(a):
    """Lesson 10's draft tokens at the bench's large steps (batch 16 and more, 32k keys and more):
    version 1's rate over its one-token rate, and over cuDNN's paged SDPA with the same tokens;
    without the bench, the same from the lesson's own runs at batch 16 and more."""
    rows = [d for d in l10_peer_rows(a) if d["b"] >= 16 and d["skv"] >= 32768]
    if rows:
        masks = sorted({(d["dim"], d["mask"]) for d in rows},  # dim 128 (the lesson's) first
                       key=lambda g: (g[0] != 128, -g[0], g[1] != "causal"))
        dim, mask = masks[0]
        rows = [d for d in rows if (d["dim"], d["mask"]) == (dim, mask)]
        lo = l10_peer_ranges([d for d in rows if 2 <= d["t"] <= 8], l10_vs_one)
        hi = l10_peer_ranges([d for d in rows if d["t"] == 16], l10_vs_one)
        rate = l10_peer_ranges([d for d in rows if 2 <= d["t"] <= 8], lambda d: d["l10"])
        pct = l10_peer_ranges([d for d in rows if 2 <= d["t"] <= 8], lambda d: d["pct"])
        if lo is None:
            return None
        bs = sorted({d["b"] for d in rows})
        h = (f"Draft tokens over a paged cache, version 1 `draft-tiles`, at batch "
             f"{bs[0] if bs[0] == bs[-1] else f'{bs[0]}-{bs[-1]}'} with "
             f"{_kv_span([d['skv'] for d in rows])} keys ({mask} mask, dim {dim}): 2-8 draft "
             f"tokens at {span(lo[0], lo[1], 2)}x the one-token rate "
             f"({span(rate[0], rate[1], 2)} TB/s, {span(pct[0], pct[1], 0)}% of HBM)")
        if hi:
            h += f", 16 at {span(hi[0], hi[1], 2)}x"
        h += f", {_on_gpu(a)}"
        cu = l10_peer_ranges([d for d in rows if d["t"] >= 2], lambda d: ratio(d["l10"], d["cu"]))
        y = l10_peer_ranges([d for d in rows if 2 <= d["t"] <= 8],
                            lambda d: ratio(d["l10"], d["l07"]))
        ts = sorted({d["t"] for d in rows if d["t"] >= 2 and d["cu"]})
        peer = []
        if cu:
            peer.append(f"{span(cu[0], cu[1], 2)}x cuDNN's paged SDPA with the same "
                        f"{ts[0]}-{ts[-1]} draft tokens")
        if y:
            peer.append(f"{span(y[0], y[1], 2)}x lesson 07's version 5 with 2-8")
        return h, "; ".join(peer) or no_peer(a, 10)
    # no bench: the lesson's own runs at batch 16 and more, T draft tokens over one
    over, pairs = {}, []
    tiles = l10_version(a, L10_TILES)  # by name: the archives number the table differently
    for r in (a.rows(10, tiles, timed=True) if tiles is not None else []):
        if r["batch"] >= 16 and r["seq_q"] > 1 and r["gbs"]:
            one = a.one(10, tiles, **dict({k: r[k] for k in ("batch", "heads", "kv_heads",
                                                              "seq_kv", "dim", "causal")},
                                          seq_q=1))
            if one and one["gbs"]:
                over.setdefault(r["seq_q"], []).append(r["gbs"] / one["gbs"])
                pairs.append(r)
    if not over:
        return None
    bs = sorted({r["batch"] for r in pairs})
    words = ", ".join(f"{t} draft tokens at {span(min(v), max(v), 2)}x"
                      for t, v in sorted(over.items()))
    return (f"Draft tokens over a paged cache, version 1 `draft-tiles`, at batch "
            f"{bs[0] if bs[0] == bs[-1] else f'{bs[0]}-{bs[-1]}'} with "
            f"{_kv_span([r['seq_kv'] for r in pairs])} keys: {words} the one-token rate, "
            f"{_on_gpu(a)}", no_peer(a, 10))


HEADLINES = {1: h01, 2: h02, 3: h03, 4: h04, 5: h05, 6: h06, 7: h07, 8: h08, 9: h09, 10: h10}


def check_sentence(a):
    st = {}
    for r in a.lessons:
        st[r["status"]] = st.get(r["status"], 0) + 1
    bad = sum(v for k, v in st.items() if k not in ("PASS", "skipped", "unchecked"))
    skipped = f", {st['skipped']} skipped with the reason in their note" if st.get("skipped") else ""
    unchecked = (f", {st['unchecked']} timed without a check" if st.get("unchecked") else "")
    return (f"Every version run in this archive passed its check ({st.get('PASS', 0)} rows PASS"
            f"{skipped}{unchecked})." if not bad else
            f"{bad} rows of this archive did not pass their check: see lessons.csv.")


def r_headline(a, ctx):
    """A row per lesson folder; ctx["archive_for"](n) gives lesson n's Archive (None: no run)."""
    archive_for = ctx.get("archive_for") or _newest_archive
    rows, used = [], {}
    for n, d in lesson_dirs():
        src = archive_for(n)
        if src is None:
            rows.append([f"{n:02d}", "-", NO_ARCHIVE, "-"])
            continue
        used.setdefault(src.rel, (src, []))[1].append(n)
        fn = HEADLINES.get(n)
        got = fn(src) if fn else None
        if got is None:
            why = ("no headline is written for this lesson yet (scripts/results/top.py)" if not fn
                   else f"its headline figures are not in this archive: {src.rel}/")
            rows.append([f"{n:02d}", f"`{os.path.basename(src.rel)}`", why, "-"])
            continue
        rows.append([f"{n:02d}", f"`{os.path.basename(src.rel)}`", got[0], got[1]])
    out = ["Each lesson's row reads the newest run archived with that lesson's headline figures, "
           "named in the row; the runs:", ""]
    for rel, (src, ns) in sorted(used.items(), key=lambda kv: min(kv[1][1])):
        out.append(f"- {source(src, ['lessons.csv', 'peers.csv'])} Lesson"
                   f"{'s' if len(ns) > 1 else ''} {', '.join(f'{n:02d}' for n in ns)}. "
                   f"{check_sentence(src)}")
    return "\n".join(out + ["", table(["lesson", "run", "headline",
                                        "against the best peer in the same run"], rows)])


_archives = {}


def headline_archive(n, load):
    """Lesson n's newest folder that holds its headline's figures, as load(folder) reads it (a
    partial run, e.g. lesson 10's cascade shapes alone, leaves the headline on the run before it);
    the newest folder with rows of the lesson where none does, so that the row says what is
    missing; None where no folder has rows of it."""
    folders = folders_newest_first((n,))
    for folder in folders:
        if n not in HEADLINES or HEADLINES[n](load(folder)) is not None:
            return load(folder)
    return load(folders[0]) if folders else None


def _newest_archive(n):
    def load(folder):
        if folder not in _archives:
            _archives[folder] = Archive(folder)
        return _archives[folder]
    return headline_archive(n, load)


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "headline": r_headline,
}
