#!/usr/bin/env python3
"""Lesson 05's pass over K and V (version 12's, l05_fp8q_quantize) beside floors for its bytes:
read bf16 K and V, write a byte a value. Usage: floor.py LIB FLOOR_SO"""
import ctypes, sys, torch
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings_in_turns
lib = ctypes.CDLL(sys.argv[1]); fl = ctypes.CDLL(sys.argv[2])
P, I, L = ctypes.c_void_p, ctypes.c_int, ctypes.c_long
lib.l05_fp8q_workspace_bytes.restype = ctypes.c_size_t
lib.l05_fp8q_workspace_bytes.argtypes = [I] * 6
lib.l05_fp8q_quantize.restype = I
lib.l05_fp8q_quantize.argtypes = [P, P, P] + [I] * 6 + [P, ctypes.c_size_t, P]
fl.run_contig.argtypes = [P, P, L, P]; fl.run_read.argtypes = [P, P, L, P]
fl.run_tiles.argtypes = [P, P, P, P, I, I, I, I, P]
stream = torch.cuda.current_stream().cuda_stream
flush = L2Flush(busy_us=20.0)
for seq, batch in ((4096, 4), (16384, 1), (8192, 2)):
    H, D = 16, 128
    k = torch.randn(batch, seq, H, D, device="cuda").bfloat16(); v = torch.randn_like(k)
    ws_b = lib.l05_fp8q_workspace_bytes(batch, H, H, seq, seq, D)
    ws = torch.empty(ws_b, dtype=torch.uint8, device="cuda")
    ok = torch.empty(k.numel(), dtype=torch.uint8, device="cuda"); ov = torch.empty_like(ok)
    kv = torch.cat([k.flatten(), v.flatten()]); out = torch.empty(kv.numel(), dtype=torch.uint8, device="cuda")
    sink = torch.zeros(4, dtype=torch.int32, device="cuda"); dst = torch.empty_like(kv)
    n16 = kv.numel() * 2 // 16
    fns = {"pass (tree)": lambda: lib.l05_fp8q_quantize(None, k.data_ptr(), v.data_ptr(), batch, H, H, seq, seq, D, ws.data_ptr(), ws_b, stream),
           "contiguous 2:1": lambda: fl.run_contig(kv.data_ptr(), out.data_ptr(), n16, stream),
           "read only": lambda: fl.run_read(kv.data_ptr(), sink.data_ptr(), n16, stream),
           "copy (torch)": lambda: dst.copy_(kv)}
    for hpb in (1, 2, 4, 16):
        fns[f"tiles, {hpb} head(s) a block"] = (lambda hpb=hpb: fl.run_tiles(k.data_ptr(), v.data_ptr(), ok.data_ptr(), ov.data_ptr(), batch, seq, H, hpb, stream))
    t = timings_in_turns(fns, flush, iters=40, warmup=3, rounds=8)
    mb = kv.numel() * 2 / 1e6
    for name, r in t.items():
        if isinstance(r, Exception): print(f"seq {seq}: {name}: {r}"); continue
        ms = r[0]; moved = mb * (2 if name.startswith("copy") else 1 if name == "read only" else 1.5)
        print(f"seq {seq} batch {batch}: {name:28s} {ms*1e3:8.1f} us  {moved/ms/1e3:6.0f} GB/s of {moved:.0f} MB moved", flush=True)
