#!/usr/bin/env python3
"""The conversion of two libraries byte for byte: versions 11 and 12's passes (l05_fp8p_quantize,
l05_fp8q_quantize) on the same inputs, workspaces poisoned alike first."""
import ctypes, sys, torch
libs = [ctypes.CDLL(p) for p in sys.argv[1:3]]; stream = torch.cuda.current_stream().cuda_stream
bad = 0
for (b, h, hk, sq, sk) in [(1, 2, 1, 1, 1), (2, 8, 2, 333, 1000), (1, 4, 4, 130, 130), (2, 6, 3, 517, 2049),
                           (3, 16, 4, 1100, 700), (4, 16, 16, 4096, 4096), (1, 32, 8, 100, 12000)]:
    g = torch.Generator(device="cuda").manual_seed(b * 1000 + sk)
    q = torch.randn(b, sq, h, 128, device="cuda", generator=g).bfloat16()
    k = (torch.randn(b, sk, hk, 128, device="cuda", generator=g) * 3).bfloat16()
    v = (torch.randn(b, sk, hk, 128, device="cuda", generator=g) * torch.linspace(1e-3, 50, sk, device="cuda")[None, :, None, None]).bfloat16()
    for pre in ("l05_fp8p", "l05_fp8q"):
        out = []
        for lib in libs:
            wsb = getattr(lib, pre + "_workspace_bytes"); wsb.restype = ctypes.c_size_t
            n = wsb(b, h, hk, sq, sk, 128); ws = torch.full((n,), 0xA5, device="cuda", dtype=torch.uint8)
            f = getattr(lib, pre + "_quantize"); f.restype = ctypes.c_int
            f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 6 + [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
            assert f(q.data_ptr(), k.data_ptr(), v.data_ptr(), b, h, hk, sq, sk, 128, ws.data_ptr(), n, stream) == 0
            out.append(ws)
        torch.cuda.synchronize()
        same = torch.equal(out[0], out[1]); bad += not same
        print(f"{pre} b{b} h{h}/{hk} sq{sq} sk{sk}: {'identical' if same else 'DIFFERENT: %d bytes' % int((out[0] != out[1]).sum())}", flush=True)
print("conversion bytes:", "all identical" if not bad else f"{bad} differ")
