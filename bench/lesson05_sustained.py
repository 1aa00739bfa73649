#!/usr/bin/env python3
"""Lesson 05 under sustained load: TFLOP/s beside the SM clock and the board's power.

The peer table times each kernel a few times after an L2 flush, on a GPU that starts cool. Run back
to back for seconds, a kernel heats the board up to its power limit, and the driver then lowers the
SM clock until the power holds (NVML's throttle reason 0x4, the software power cap). Kernels that
burn less energy per cycle keep a higher clock. This script shows that: for each implementation it
runs six windows of about 0.4 s each (after a second of rest) and prints, per window, the TFLOP/s
and the SM clock and power NVML reads at its end.

    python3 bench/lesson05_sustained.py [--lib build/lib/libattn_lessons.so]

Implementations: SDPA cuDNN, lesson 05's versions 4 and 5, and the FP8 kernel alone (on tensors
converted once before the timing); cuDNN and version 5 run a second time at the end of each shape
to show the order does not decide the result. Shapes: dim 128, not causal, seq 4096; batch 4 with
16 heads (the papers' shape) and batch 1 with 132 heads (32 full waves of 128-row tiles).
"""
import argparse
import ctypes
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from lesson05_peers import load_lib


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.environ.get("ATTN_LIB") or os.path.join(
        root, "build", "lib", "libattn_lessons.so"))
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("lesson05_sustained: no CUDA device; nothing measured")
        return 0
    dev = torch.cuda.get_device_properties(0)
    if (dev.major, dev.minor) != (9, 0):
        print(f"lesson05_sustained: lesson 05 needs sm_90; {dev.name} is "
              f"sm_{dev.major}{dev.minor}; nothing measured")
        return 0
    try:
        import pynvml
    except ImportError:
        print("lesson05_sustained: needs pynvml (nvidia-ml-py); nothing measured")
        return 0
    pynvml.nvmlInit()
    nvml = pynvml.nvmlDeviceGetHandleByIndex(0)
    lib = load_lib(a.lib)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    print(f"device: {dev.name}; each cell: TFLOP/s@SM clock/board power at the window's end")
    d = 128
    for (b, heads, s) in [(4, 16, 4096), (1, 132, 4096)]:
        q, k, v = (torch.randn(b, s, heads, d, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty(b, heads, s, device="cuda", dtype=torch.float32)
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        flops = 4.0 * b * heads * s * s * d
        nbytes = lib.l05_fp8_workspace_bytes(b, heads, heads, s, s, d)
        ws = torch.empty(nbytes, device="cuda", dtype=torch.uint8)
        if lib.l05_fp8_quantize(q.data_ptr(), k.data_ptr(), v.data_ptr(), b, heads, heads, s, s,
                                d, ws.data_ptr(), nbytes, stream) != 0:
            raise RuntimeError("l05_fp8_quantize failed")

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                F.scaled_dot_product_attention(qt, kt, vt)

        def lesson(ver):
            def run():
                if lib.l05_forward(ver, d, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                                   lse.data_ptr(), b, heads, heads, s, s, 0, 0.0, stream) != 0:
                    raise RuntimeError(f"l05_forward({ver}) failed")
            return run

        def fp8_kernel():
            if lib.l05_fp8_attention(ws.data_ptr(), nbytes, o.data_ptr(), lse.data_ptr(), b,
                                     heads, heads, s, s, d, 0, d ** -0.5, stream) != 0:
                raise RuntimeError("l05_fp8_attention failed")

        order = [("cudnn", cudnn), ("v5", lesson(5)), ("v4", lesson(4)),
                 ("fp8-kernel", fp8_kernel), ("cudnn", cudnn), ("v5", lesson(5))]
        for name, fn in order:
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            time.sleep(1.0)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            cells = []
            for _ in range(6):
                n = 0
                start.record()
                t0 = time.time()
                while time.time() - t0 < 0.4:
                    for _ in range(5):
                        fn()
                        n += 1
                    torch.cuda.synchronize()
                end.record()
                torch.cuda.synchronize()
                ms = start.elapsed_time(end) / n
                clock = pynvml.nvmlDeviceGetClockInfo(nvml, pynvml.NVML_CLOCK_SM)
                watts = pynvml.nvmlDeviceGetPowerUsage(nvml) / 1000
                cells.append(f"{flops / ms / 1e9:.0f}@{clock}MHz/{watts:.0f}W")
            reasons = pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(nvml)
            print(f"b{b} h{heads} s{s} {name:10s} " + " ".join(cells) +
                  f" throttle=0x{reasons:x}", flush=True)
        del q, k, v, o, lse, qt, kt, vt, ws
    return 0


if __name__ == "__main__":
    sys.exit(main())
