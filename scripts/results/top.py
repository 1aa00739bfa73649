"""The top README's headline region: a row per lesson, each from that lesson's newest archive."""
from .core import NO_PEERS, att, source, span, table
from .lesson01 import copy_verdict, l01, l01_hbm_peak
from .lesson02 import L02_DEFAULT, L02_LONG, l02_1r1w, l02_peer
from .lesson04 import l04, sdpa_rows


# ---- Top README --------------------------------------------------------------------------------

def r_headline(a, ctx):
    st = {}
    for r in a.lessons:
        st[r["status"]] = st.get(r["status"], 0) + 1
    bad = sum(v for k, v in st.items() if k not in ("PASS", "skipped", "unchecked"))
    skipped = f", {st['skipped']} skipped with the reason in their note" if st.get("skipped") else ""
    check = (f"Every version run in this archive passed its check ({st.get('PASS', 0)} rows PASS"
             f"{skipped})." if not bad else
             f"{bad} rows of this archive did not pass their check: see lessons.csv.")
    rows = []
    # 01
    r16, cp, sm, s32 = l01(a, "read16"), l01(a, "copy16"), l01(a, "row"), l01(a, "stride32")
    if r16 and cp and sm and s32:
        peak = l01_hbm_peak(a)
        rows.append(["01", f"HBM read {r16['gbs'] / 1000:.2f} TB/s ({r16['pct_bw']:.1f}% of "
                     f"{peak / 1000:.2f} TB/s, clock x bus width); copy {cp['gbs'] / 1000:.2f} TB/s; "
                     f"shared memory {sm['gbs'] / 1000:.2f} TB/s ({sm['pct_bw']:.1f}% of SMs x 128 B "
                     f"x clock); 32-way bank conflict {s32['ms'] / sm['ms']:.2f}x slower (32x "
                     f"predicted)", copy_verdict(a, short=True)])
    # 02
    d6, l6 = a.one(2, 6, **L02_DEFAULT), a.one(2, 6, **L02_LONG)
    if d6 and l6:
        t, m = l02_peer(a, r"torch\.softmax", L02_DEFAULT), l02_peer(a, r"lesson02\.v6-.*",
                                                                      L02_DEFAULT)
        peer = (f"`torch.softmax` {t['ms']:.3f} ms, version 6 {m['ms']:.3f} ms "
                f"({t['ms'] / m['ms']:.2f}x), 16384 x 4096 in one process" if t and m else
                "peer figures: " + NO_PEERS)
        rows.append(["02", f"one-pass online softmax, row in registers (version 6): "
                     f"{l02_1r1w(a, d6)[1]:.1f}% of HBM on 16384 x 4096 fp32, "
                     f"{l02_1r1w(a, l6)[1]:.1f}% on 4096 x 32768", peer])
    # 03
    q4, n4 = a.one(3, 3, **att(1, 16, 4096, 64)), a.one(1, 15, **att(1, 16, 4096, 64))
    q64 = a.one(3, 3, **att(1, 16, 65536, 64))
    if q4:
        h = "FlashAttention-1, tiled and parallel over Q-tile groups (version 3)"
        if q64:
            h += f": runs seq 65536 ({q64['ms']:.0f} ms; S would need 256 GiB)"
        h += f"; {q4['tflops']:.1f} TFLOP/s fp32 at seq 4096"
        if n4:
            h += f", {n4['ms'] / q4['ms']:.2f}x the naive attention's speed"
        rows.append(["03", h, "-"])
    # 04
    v128, v64 = l04(a, 7, 128, 0), l04(a, 7, 64, 0)
    if v128 and v64:
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
        else:
            peer = "peer figures: " + NO_PEERS
        rows.append(["04", f"FlashAttention-2 with `mma.sync` (version 7): {v128['tflops']:.1f} TFLOP/s "
                     f"at dim 128, {v64['tflops']:.1f} at dim 64 (batch 4, seq 4096)", peer])
    return "\n".join([source(a, ["lessons.csv", "peers.csv"]), "", check, "",
                      table(["lesson", "headline", "against PyTorch"], rows)])


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "headline": r_headline,
}
