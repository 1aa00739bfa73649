"""Per-block timeline of lesson 10's version 4 step (instrumented build: .gpu/tl/tl.patch).
Usage: ATTN_LIB=... python3 .gpu/tl/tl.py [--fn l10_wg_d128] [--cfg b,skv,t,mask ...]"""
import argparse, ctypes, math, os, sys
import numpy as np
import torch
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import lesson10_peers as L
from lesson07_peers import make_pools
from peer_timing import L2Flush

ap = argparse.ArgumentParser()
ap.add_argument("--lib", default=os.environ.get("ATTN_LIB"))
ap.add_argument("--fn", default="l10_wg_d128")
ap.add_argument("--cfg", nargs="*", default=["1,32768,8,causal", "1,32768,1,causal",
                                             "16,32768,8,causal"])
ap.add_argument("--iters", type=int, default=8)
a = ap.parse_args()
lib = L.load_lib(a.lib)
dim = 128
fn = getattr(lib, a.fn)
fn.restype = ctypes.c_int
sp = ctypes.POINTER(L.L10Step)
fn.argtypes = [sp, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
               ctypes.c_void_p]
wsf = lib.l10_wg_workspace_bytes if "wg" in a.fn else lib.l10_draft_workspace_bytes
NM, NG = 32768, 8192
main_host = np.zeros((NM, 6), dtype=np.uint64)
merge_host = np.zeros((NG, 4), dtype=np.uint64)
zm, zg = np.zeros_like(main_host), np.zeros_like(merge_host)
tl_main = getattr(lib, f"l10_tl_main_d{dim}")
tl_merge = getattr(lib, f"l10_tl_merge_d{dim}")
for f in (tl_main, tl_merge):
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p, ctypes.c_int]
flush = L2Flush()
sleep = torch.cuda._sleep
heads, hkv, bs = 32, 8, 16
dev = torch.cuda.get_device_properties(0)
print(dev.name, dev.multi_processor_count, "SMs")


def pct(x, qs=(0, 10, 50, 90, 100)):
    return " ".join(f"{np.percentile(x, q) / 1e3:6.2f}" for q in qs)


for cfg in a.cfg:
    b, skv, t, mask = cfg.split(",")
    b, skv, t = int(b), int(skv), int(t)
    gen = torch.Generator(device="cuda").manual_seed(7)
    k = torch.randn(b, skv, hkv, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    v = torch.randn_like(k)
    pool_k, pool_v, table, max_blocks = make_pools(k, v, [skv] * b, bs, 99)
    del k, v
    q = torch.randn(b * t, heads, dim, device="cuda", dtype=torch.bfloat16)
    o = torch.empty_like(q)
    lse = torch.empty(b * t * heads, device="cuda", dtype=torch.float32)
    q_start = torch.arange(b, device="cuda", dtype=torch.int32) * t
    q_lens = torch.full((b,), t, device="cuda", dtype=torch.int32)
    lens = torch.full((b,), skv, device="cuda", dtype=torch.int32)
    st = L.L10Step(q=q.data_ptr(), q_start=q_start.data_ptr(), q_lens=q_lens.data_ptr(), tree=None,
                   k_cache=pool_k.data_ptr(), v_cache=pool_v.data_ptr(),
                   block_table=table.data_ptr(), seq_lens=lens.data_ptr(), batch=b, heads=heads,
                   kv_heads=hkv, dim=dim, max_q=t, max_seq_kv=skv, max_blocks=max_blocks,
                   block_size=bs, mask=L.MASKS[mask], scale=1 / math.sqrt(dim), k_scale=None,
                   v_scale=None)
    wsb = wsf(ctypes.byref(st))
    ws = torch.zeros(max(wsb, 1), dtype=torch.uint8, device="cuda")
    byts = 2 * b * skv * hkv * dim * 2
    s = torch.cuda.current_stream().cuda_stream

    def run():
        e = fn(ctypes.byref(st), o.data_ptr(), lse.data_ptr(), ws.data_ptr(), wsb, s)
        assert e == 0, e
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    print(f"\n=== {a.fn} batch {b} seq_kv {skv} tokens {t} {mask}: {byts / 1e6:.1f} MB, "
          f"workspace {wsb}")
    ev_ms, rows, persm = [], [], []
    for it in range(a.iters):
        tl_main(zm.ctypes.data, 1)
        tl_merge(zg.ctypes.data, 1)
        torch.cuda.synchronize()
        flush()
        sleep(200000)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        run()
        e1.record()
        e1.synchronize()
        ev_ms.append(e0.elapsed_time(e1))
        tl_main(main_host.ctypes.data, 0)
        tl_merge(merge_host.ctypes.data, 0)
        m = main_host[main_host[:, 0] > 0].astype(np.int64)
        live = m[m[:, 3] > 0]
        g = merge_host[merge_host[:, 0] > 0].astype(np.int64)
        t0 = m[:, 0].min()
        end_main = live[:, 3].max() - t0
        end_all = max(end_main, (g[:, 3].max() - t0) if len(g) else 0)
        rows.append((ev_ms[-1] * 1e3, end_main / 1e3, end_all / 1e3))
        st_sm = np.full(200, np.nan)
        bi = np.nonzero((main_host[:, 0] > 0) & (main_host[:, 3] > 0))[0]
        for x in np.unique(live[:, 4]):
            sel = live[:, 4] == x
            st_sm[x] = np.mean(live[sel, 2] - live[sel, 1])
        persm.append(st_sm)
        if it == 2:
            print("   block idx, smid, stream us (first 40 live):",
                  " ".join(f"{i}:{int(r[4])}:{(r[2] - r[1]) / 1e3:.1f}" for i, r in zip(bi[:40], live[:40])))
        if it in (1, a.iters - 1):
            d = live - np.array([t0, t0, t0, t0, 0, 0])
            print(f" iter {it}: events {ev_ms[-1] * 1e3:.1f} us; blocks {len(m)} live {len(live)}; "
                  f"tiles/block {np.unique(live[:, 5])}; granularity "
                  f"{np.gcd.reduce(np.diff(np.unique(m[:, 0])) if len(np.unique(m[:, 0])) > 1 else [0])} ns")
            print(f"   (us, percentiles 0/10/50/90/100)")
            print(f"   entry        {pct(d[:, 0])}")
            print(f"   first tile   {pct(d[:, 1])}")
            print(f"   loop end     {pct(d[:, 2])}")
            print(f"   block end    {pct(d[:, 3])}")
            print(f"   stream time  {pct(d[:, 2] - d[:, 1])}")
            print(f"   epilogue     {pct(d[:, 3] - d[:, 2])}")
            # aggregate rate: each block's tiles spread evenly over [first tile, loop end]
            per_tile = byts / live[:, 5].sum()
            grid = np.arange(0, end_main + 500, 500)
            cov = np.zeros(len(grid))
            for r in d:
                lo, hi = r[1], r[2]
                if hi > lo:
                    cov += np.clip((np.minimum(grid + 500, hi) - np.maximum(grid, lo)) / (hi - lo),
                                   0, None) * r[5] * per_tile
            print("   TB/s per 0.5 us window: " + " ".join(f"{c / 500 / 1e3:.1f}" for c in cov))
            sms = np.unique(live[:, 4])
            ends = np.array([live[live[:, 4] == x, 3].max() - t0 for x in sms])
            print(f"   SMs used {len(sms)}; SM finish {pct(ends)}")
            if len(g):
                dg = g - t0
                print(f"   merge blocks {len(g)}: entry {pct(dg[:, 0])}")
                print(f"                after wait {pct(dg[:, 1])}")
                print(f"                end        {pct(dg[:, 3])}")
    P = np.array(persm)[:, :132]
    ok = ~np.isnan(P).any(axis=0)
    P = P[:, ok]
    C = np.corrcoef(P)
    print(f" per-SM stream time: correlation between iterations (mean off-diagonal) "
          f"{(C.sum() - len(C)) / (len(C) * (len(C) - 1)):.2f}")
    mean_sm = P.mean(axis=0)
    order = np.argsort(mean_sm)
    ids = np.nonzero(ok)[0]
    print("   SMs fastest->slowest (id:us): " + " ".join(f"{ids[j]}:{mean_sm[j] / 1e3:.1f}" for j in order))
    r = np.array(rows)
    print(f" medians: events {np.median(r[:, 0]):.1f} us, main kernel span {np.median(r[:, 1]):.1f}"
          f", to the merge's end {np.median(r[:, 2]):.1f}; {byts / np.median(r[:, 0]) / 1e6:.2f} "
          f"TB/s by events, {byts / np.median(r[:, 1]) / 1e6:.2f} main span")
    del pool_k, pool_v, ws
    torch.cuda.empty_cache()
