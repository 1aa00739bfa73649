#!/usr/bin/env python3
"""One launch each of version 11's conversion (Q, K, V) and version 12's (K, V) at seq 4k, for ncu."""
import ctypes, sys, torch
lib = ctypes.CDLL(sys.argv[1]); stream = torch.cuda.current_stream().cuda_stream
b, h, hk, s, d = (4, 16, 16, 4096, 128) if len(sys.argv) < 3 else (1, 4, 2, 1000, 128)
q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for pre in ("l05_fp8p", "l05_fp8q"):
    wsb = getattr(lib, pre + "_workspace_bytes"); wsb.restype = ctypes.c_size_t
    n = wsb(b, h, hk, s, s, d); ws = torch.empty(n, device="cuda", dtype=torch.uint8)
    f = getattr(lib, pre + "_quantize"); f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 6 + [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    assert f(q.data_ptr(), k.data_ptr(), v.data_ptr(), b, h, hk, s, s, d, ws.data_ptr(), n, stream) == 0
torch.cuda.synchronize(); print("done")
