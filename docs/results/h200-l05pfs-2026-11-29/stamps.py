#!/usr/bin/env python3
"""Version 5's blocks stamped (v5-block-stamps.patch): per block the SM's cycle counter at entry,
Q landed, the loop's end and the store's end, so that a block's fixed part (outside its loop) and the
gap between two blocks on one SM can be read apart. Dim 128, 16 heads, no mask, the grid's rows."""
import ctypes, os, sys, statistics as st
import torch
lib = ctypes.CDLL(sys.argv[1])
lib.l05_forward.restype = ctypes.c_int
lib.l05_forward.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p]
lib.l05_timeline_set.argtypes = [ctypes.c_void_p]
stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
for seq, batch in ((2048, 8), (4096, 4), (8192, 2), (16384, 1)):
    heads, dim = 16, 128
    g = torch.Generator(device="cuda").manual_seed(seq)
    q, k, v = (torch.randn(batch, seq, heads, dim, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    o = torch.empty_like(q); lse = torch.empty(batch, heads, seq, device="cuda", dtype=torch.float32)
    blocks = batch * heads * (seq // 128)
    run = lambda: lib.l05_forward(5, dim, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), batch, heads, heads, seq, seq, 0, 0.0, stream)
    times = {}
    tl = torch.zeros(blocks * 12, dtype=torch.int64, device="cuda")
    for mode in ("plain", "stamped") * 3:
        lib.l05_timeline_set(ctypes.c_void_p(tl.data_ptr() if mode == "stamped" else 0))
        for _ in range(2): run()
        ts = []
        for _ in range(5):
            flush.zero_(); flush.sum(); torch.cuda._sleep(100000)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(); assert run() == 0; e1.record(); e1.synchronize(); ts.append(e0.elapsed_time(e1))
        times.setdefault(mode, []).extend(ts)
    lib.l05_timeline_set(None)
    s = tl.view(blocks, 12).cpu().tolist()
    ms = {m: st.median(x) for m, x in times.items()}
    by_sm = {}
    for i, r in enumerate(s):
        by_sm.setdefault(r[1], []).append((r[0], i))
    span = max(max(max(s[i][6], s[i][7], s[i][8]) for _, i in L) - min(t for t, _ in L) for L in by_sm.values())
    mhz = span / (ms["stamped"] * 1e3)
    pro = [min(r[2], r[3]) - r[0] for r in s]
    loop = [max(r[4], r[5]) - min(r[2], r[3]) for r in s]
    epi = [max(r[6], r[7]) - max(r[4], r[5]) for r in s]
    prod_end = [max(r[6], r[7], r[8]) - max(r[6], r[7]) for r in s]
    gaps, first = [], []
    for L in by_sm.values():
        L.sort()
        first.append(L[0][0])
        for (t0, i0), (t1, i1) in zip(L, L[1:]):
            gaps.append(t1 - max(s[i0][6], s[i0][7], s[i0][8]))
    n = seq // 128
    f = lambda xs: f"{st.median(xs):7.0f} cyc {st.median(xs) / mhz:6.3f} us"
    print(f"seq {seq} batch {batch}: {blocks} blocks on {len(by_sm)} SMs, kernel {ms['plain']:.4f} ms plain, {ms['stamped']:.4f} stamped, clock ~{mhz:.0f} MHz")
    print(f"  entry -> Q landed      {f(pro)}")
    print(f"  loop ({n} tiles)       {f(loop)}   a tile {st.median(loop) / n / mhz:.3f} us")
    print(f"  loop end -> O stored   {f(epi)}")
    print(f"  stored -> last warp    {f(prod_end)}")
    print(f"  exit -> next entry     {f(gaps)}  (same SM; p10 {sorted(gaps)[len(gaps)//10]:.0f}, p90 {sorted(gaps)[9*len(gaps)//10]:.0f})")
    print(f"  blocks per SM: {min(len(L) for L in by_sm.values())}-{max(len(L) for L in by_sm.values())}")
    sys.stdout.flush()
    with open(os.path.join(os.environ.get("OUT", "."), f"stamps-{seq}.csv"), "w") as fh:
        fh.write("block,entry,sm,q_wg0,q_wg1,loop_wg0,loop_wg1,store_wg0,store_wg1,producer\n")
        for i, r in enumerate(s): fh.write(f"{i}," + ",".join(str(x) for x in r[:9]) + "\n")
