#!/usr/bin/env python3
"""Does the order of the timed runs move the rates? Version 5, version 13's kernel alone, cuDNN's FP8
and SDPA's cuDNN bf16 at dim 128, timed in blocks (each 10 runs in a row, as the bench did) and
taking turns (peer_timing.timings_in_turns, 2 runs a visit), alternately, three times each; then
every run's time in the turns, the first and second run of each visit apart."""
import ctypes, os, statistics, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
sys.path.insert(0, "bench")
from peer_timing import L2Flush, timings, timings_in_turns, _timed_run
from cudnn_peer import cudnn_handle, fp8_inputs, fp8_sdpa
lib = ctypes.CDLL(sys.argv[1])
I, P, F_, S = ctypes.c_int, ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t
def fn(name, res, args):
    f = getattr(lib, name); f.restype = res; f.argtypes = args; return f
v5 = fn("l05_overlap_d128", I, [P] * 5 + [I] * 6 + [F_, P])
pre = "l05_fp8x"
ws_b = fn(pre + "_workspace_bytes", S, [I] * 6); quant = fn(pre + "_quantize", I, [P] * 3 + [I] * 6 + [P, S, P])
att = fn(pre + "_attention", I, [P, P, S, P, P] + [I] * 7 + [F_, P])
fe, handle, note = cudnn_handle(os.getcwd()); print(torch.cuda.get_device_name(), note, flush=True)
stream = torch.cuda.current_stream().cuda_stream; flush = L2Flush(); D = 128; H = 16
for seq, causal in [(4096, 0), (16384, 0)]:
    b = 16384 // seq
    g = torch.Generator(device="cuda").manual_seed(seq + causal)
    q, k, v = (torch.randn(b, seq, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    o = torch.empty_like(q); lse = torch.empty(b, H, seq, device="cuda")
    flops = 4.0 * b * H * seq * seq * D / (2 if causal else 1)
    ws = torch.empty(ws_b(b, H, H, seq, seq, D), device="cuda", dtype=torch.uint8)
    assert quant(q.data_ptr(), k.data_ptr(), v.data_ptr(), b, H, H, seq, seq, D, ws.data_ptr(), ws.numel(), stream) == 0
    (q8, k8, v8), desc = fp8_inputs(q, k, v)
    cud8, _, _ = fp8_sdpa(fe, handle, q8, k8, v8, desc, v.abs().max().item(), causal, D ** -0.5)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    def cud16():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal))
    def run5(): assert v5(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, causal, D ** -0.5, stream) == 0
    def alone(): assert att(q.data_ptr(), ws.data_ptr(), ws.numel(), o.data_ptr(), lse.data_ptr(), b, H, H, seq, seq, D, causal, D ** -0.5, stream) == 0
    impls = {"sdpa-cudnn": cud16, "v5": run5, "v13-alone": alone, "cudnn-fp8": cud8}
    print(f"seq {seq} causal {causal} batch {b} heads {H} (TFLOP/s, medians)", flush=True)
    for rep in range(3):
        blk = {n: flops / timings(f, flush, 10, 3)[0] / 1e9 for n, f in impls.items()}
        trn = {n: flops / t[0] / 1e9 for n, t in timings_in_turns(impls, flush, 10, 3, 5).items()}
        print(f"  blocks: " + "  ".join(f"{n} {x:.1f}" for n, x in blk.items()), flush=True)
        print(f"  turns:  " + "  ".join(f"{n} {x:.1f}" for n, x in trn.items()), flush=True)
    # each run in turns, the visit's first and second runs apart
    start = torch.cuda.Event(enable_timing=True); stop = torch.cuda.Event(enable_timing=True)
    first, second = {n: [] for n in impls}, {n: [] for n in impls}
    names = list(impls)
    for r in range(12):
        kk = r % len(names)
        for n in names[kk:] + names[:kk]:
            first[n].append(flops / _timed_run(impls[n], flush, start, stop) / 1e9)
            second[n].append(flops / _timed_run(impls[n], flush, start, stop) / 1e9)
    for n in names:
        print(f"  {n:>10}: first of a visit median {statistics.median(first[n]):.1f}, second {statistics.median(second[n]):.1f}", flush=True)
