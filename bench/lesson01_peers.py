#!/usr/bin/env python3
"""Lesson 01's peers: PyTorch moving the same bytes the lesson's probes move, and PyTorch's own
three-kernel attention on the lesson's naive shape, timed the way the lesson times.

    python3 bench/lesson01_peers.py                            # every figure, default sizes
    python3 bench/lesson01_peers.py --copy-bytes 1073741824    # the copy with the lesson's exact size
    python3 bench/lesson01_peers.py --seq 2048 --causal        # another attention shape
    python3 bench/lesson01_peers.py --out DIR                  # also DIR/peers-lesson01.csv

Method, as in common/attn_timer.h: warm-up runs, then --iters runs each between two CUDA events with
the L2 flushed before each by a read of twice its size (bench/peer_timing.py, the harness's method);
the median is reported.

Figures (one line each, `key=value` pairs):
  peer=torch.copy    dst.copy_(src) of --copy-bytes per buffer; GB/s counts read + write, as the
                     lesson's hbm-copy-16B row does. Default size: the lesson's default, half of
                     max(2 GiB, 8 x L2) rounded down to whole rounds of SMs x 8 blocks x 16 KiB (the
                     lesson's report prints the exact figure; pass it with --copy-bytes).
  peer=torch.sum     a read of --read-bytes (default: the lesson's hbm-read-16B size, 4 GiB rounded)
  peer=torch.h2d / torch.d2h, pinned=0|1   --link-bytes (default 256 MiB), as the host-link probes
  peer=torch.naive   S = Q K^T * scale, (masked_fill), softmax, P V in fp32 with TF32 off: the
                     framework's version of the lesson's naive attention (cuBLAS SGEMM for the two
                     products). Tensors are [batch, heads, seq, dim] (contiguous for matmul).

With --out DIR (or $PEERS_OUT) every figure is also a row of DIR/peers-lesson01.csv, in the columns
of bench/peer_timing.py (bytes: per buffer for the copy, moved one way for the read and the link).
"""
import argparse
import math
import sys

import torch

from peer_timing import L2Flush, PeerCsv, peers_out_dir, software, timings


def line(**kv):
    print("lesson01 " + " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def lesson_default_bytes(props, touched, buffers):
    """Bytes per buffer of the lesson's default: touched bytes (at least 8 x L2, at most half the free
    memory) over the buffers, rounded down to whole rounds of SMs x 8 blocks x 256 threads x 4 x 16 B
    (the lesson's grid on H100/H200, where these kernels fit 8 blocks per SM)."""
    l2 = getattr(props, "L2_cache_size", 0) or (50 << 20)
    free, _ = torch.cuda.mem_get_info()
    touched = min(max(touched, 8 * l2), free // 2)
    unit = props.multi_processor_count * 8 * 256 * 4 * 16
    per_buffer = touched // buffers
    return max(unit, per_buffer // unit * unit)


def naive_attention(q, k, v, scale, causal):
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if causal:
        sq, skv = s.shape[-2], s.shape[-1]
        i = torch.arange(sq, device=s.device).view(-1, 1)
        j = torch.arange(skv, device=s.device).view(1, -1)
        s = s.masked_fill(j > i + (skv - sq), float("-inf"))
    p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copy-bytes", type=int, default=0, help="bytes per copy buffer")
    ap.add_argument("--read-bytes", type=int, default=0, help="bytes the read (torch.sum) reads")
    ap.add_argument("--link-bytes", type=int, default=256 << 20)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--causal", action="store_true", help="only the causal attention")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default=None,
                    help="folder for peers-lesson01.csv (default: $PEERS_OUT; neither: no CSV)")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        print("lesson01 skipped: no CUDA device visible to torch")
        return 0
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    l2 = getattr(props, "L2_cache_size", 0) or (50 << 20)
    flush = L2Flush()
    line(device=f"\"{props.name}\"", sms=props.multi_processor_count, l2_bytes=l2,
         torch=torch.__version__, cuda=torch.version.cuda)
    out = PeerCsv(1, peers_out_dir(args.out))
    out.set_common(iters=args.iters, **software(props))

    def time_it(fn):
        return timings(fn, flush, args.iters, args.warmup)

    # Device copy and read, the lesson's HBM probes' bytes.
    nbytes = args.copy_bytes or lesson_default_bytes(props, 2 << 30, 2)
    n = nbytes // 4
    src = torch.rand(n, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    ms, best = time_it(lambda: dst.copy_(src))
    ok = bool(torch.equal(dst, src))
    gbs = 2 * 4 * n / (ms * 1e-3) / 1e9
    line(peer="torch.copy", bytes_per_buffer=4 * n, median_ms=f"{ms:.4f}", gbs=f"{gbs:.1f}",
         check="ok" if ok else "BAD")
    out.row(impl="torch.copy", what="device copy dst.copy_(src), read + write counted",
            dtype="fp32", bytes=4 * n, ms=f"{ms:.5f}", min_ms=f"{best:.5f}", gbs=f"{gbs:.2f}",
            check="ok" if ok else "BAD")
    del dst, src
    torch.cuda.empty_cache()
    rbytes = args.read_bytes or lesson_default_bytes(props, 4 << 30, 1)
    big = torch.rand(rbytes // 4, device=dev, dtype=torch.float32)
    ms, best = time_it(lambda: big.sum())
    gbs = 4 * big.numel() / (ms * 1e-3) / 1e9
    line(peer="torch.sum", bytes=4 * big.numel(), median_ms=f"{ms:.4f}", gbs=f"{gbs:.1f}")
    out.row(impl="torch.sum", what="device read x.sum()", dtype="fp32", bytes=4 * big.numel(),
            ms=f"{ms:.5f}", min_ms=f"{best:.5f}", gbs=f"{gbs:.2f}")
    del big
    torch.cuda.empty_cache()

    # Host link, both directions, pageable and pinned.
    m = args.link_bytes // 4
    d = torch.empty(m, device=dev, dtype=torch.float32)
    for pinned in (0, 1):
        h = torch.rand(m, dtype=torch.float32)
        if pinned:
            h = h.pin_memory()
        for peer, what, fn in (
                ("torch.h2d", "host to device copy", lambda: d.copy_(h, non_blocking=bool(pinned))),
                ("torch.d2h", "device to host copy", lambda: h.copy_(d, non_blocking=bool(pinned)))):
            ms, best = time_it(fn)
            gbs = 4 * m / (ms * 1e-3) / 1e9
            line(peer=peer, pinned=pinned, bytes=4 * m, median_ms=f"{ms:.4f}", gbs=f"{gbs:.1f}")
            out.row(impl=peer, what=what, dtype="fp32", bytes=4 * m, pinned=pinned,
                    ms=f"{ms:.5f}", min_ms=f"{best:.5f}", gbs=f"{gbs:.2f}")
    del d
    torch.cuda.empty_cache()

    # The framework's naive attention, fp32.
    b, hh, s, dim = args.batch, args.heads, args.seq, args.dim
    scale = 1.0 / math.sqrt(dim)
    q = torch.rand(b, hh, s, dim, device=dev) * 2 - 0.75
    k = torch.rand(b, hh, s, dim, device=dev) * 2 - 0.75
    v = torch.rand(b, hh, s, dim, device=dev) * 2 - 0.75
    shape = dict(batch=b, heads=hh, kv_heads=hh, seq_q=s, seq_kv=s, dim=dim)
    what = "naive attention: matmul, (masked_fill), softmax, matmul; TF32 off"
    for causal in ((True,) if args.causal else (False, True)):
        try:
            ms, best = time_it(lambda: naive_attention(q, k, v, scale, causal))
        except torch.cuda.OutOfMemoryError:
            line(peer="torch.naive", causal=int(causal), skipped="\"out of memory\"")
            out.row(impl="torch.naive", what=what, dtype="fp32", causal=int(causal),
                    check="skipped: out of memory", **shape)
            continue
        pairs = b * hh * (s * (s + 1) / 2 if causal else s * s)
        tflops = 4 * dim * pairs / (ms * 1e-3) / 1e12
        line(peer="torch.naive", batch=b, heads=hh, seq=s, dim=dim, causal=int(causal),
             median_ms=f"{ms:.4f}", tflops_useful=f"{tflops:.2f}")
        out.row(impl="torch.naive", what=what, dtype="fp32", causal=int(causal), ms=f"{ms:.5f}",
                min_ms=f"{best:.5f}", tflops=f"{tflops:.3f}", **shape)
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
