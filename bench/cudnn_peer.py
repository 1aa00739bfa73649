"""cuDNN through its Python frontend (nvidia-cudnn-frontend), for the peer scripts.

import_cudnn() and cudnn_handle(): the cudnn module, installed or from the wheel carried in .peers/
(installed into /tmp/cudnnfe with pip --no-deps --no-index), and a handle on torch's stream.

Lesson 05's FP8 peer: cuDNN's FP8 attention forward on the same e4m3 values as the lesson's version
6. That version quantises with one scale per tensor: x * 448 / amax(|x|) for Q, K and V, and P
(which lies in [0, 1]) unscaled. fp8_inputs() makes the same e4m3 tensors with torch, so cuDNN's
graph reads the values the lesson's kernel reads; its descale inputs are amax / 448, its scale for
P is 1 as the lesson's. On Hopper cuDNN writes O in e4m3 as well, with the scale given for O
(448 / amax(|V|), since every row of O is a convex combination of V's rows); the check dequantises
it, so cuDNN's error includes that last rounding, which the lesson's bf16 O does not have.

fp64_rows() is the reference on sampled rows: the original bf16 Q, K and V in float64, the causal
mask bottom-right. row_errors() compares any output with it (max |diff| and relative L2).
"""
import glob
import importlib
import os
import subprocess
import sys

import torch

E4M3_MAX = 448.0
FE_TARGET = "/tmp/cudnnfe"


def import_cudnn(root):
    """The cudnn module (installed, else the wheel in .peers/) or None, and a line saying which."""
    try:
        fe = importlib.import_module("cudnn")
        return fe, f"cudnn-frontend {getattr(fe, '__version__', '?')} (installed)"
    except Exception as e:  # ImportError, or a failure inside the package's own import
        first = f"{type(e).__name__}: {e}"
    for m in [m for m in sys.modules if m == "cudnn" or m.startswith("cudnn.")]:
        del sys.modules[m]  # a half-imported package must not shadow the wheel's
    wheels = sorted(glob.glob(os.path.join(root, ".peers", "*.whl")))
    if not wheels:
        return None, f"import cudnn failed ({first}) and .peers/ holds no wheel"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                        "--target", FE_TARGET, *wheels], capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().replace("\n", " ")[-300:]
        return None, f"import cudnn failed ({first}); pip install of .peers/ failed: {tail}"
    sys.path.insert(0, FE_TARGET)
    importlib.invalidate_caches()
    try:
        fe = importlib.import_module("cudnn")
    except Exception as e:
        return None, (f"import cudnn failed ({first}), and again after installing "
                      f"{os.path.basename(wheels[0])} into {FE_TARGET}: {type(e).__name__}: {e}")
    return fe, (f"cudnn-frontend {getattr(fe, '__version__', '?')} "
                f"(from {os.path.basename(wheels[0])}, installed into {FE_TARGET})")


def cudnn_handle(root):
    """(cudnn module, handle on torch's current stream, a line saying which) or (None, None, why)."""
    fe, note = import_cudnn(root)
    if fe is None:
        return None, None, note
    try:
        handle = fe.create_handle()
        fe.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
        return fe, handle, note + f", cuDNN library {fe.backend_version()}"
    except Exception as e:
        return None, None, f"{note}; but no cuDNN handle: {type(e).__name__}: {e}"


def fp8_inputs(q, k, v):
    """e4m3 copies of bf16 Q, K, V ([batch, seq, heads, dim]) with one scale per tensor, as lesson
    05 makes them, and their descales (amax / 448) as float32 [1, 1, 1, 1] tensors."""
    out, descale = [], []
    for x in (q, k, v):
        amax = x.abs().max().float()
        f = torch.where(amax > 0, E4M3_MAX / amax, torch.ones_like(amax))
        out.append((x.float() * f).to(torch.float8_e4m3fn))
        descale.append((1.0 / f).reshape(1, 1, 1, 1).contiguous())
    return out, descale


def fp8_sdpa(fe, handle, q8, k8, v8, descales, vmax, causal, attn_scale):
    """cuDNN's FP8 SDPA graph on e4m3 Q, K, V stored [batch, seq, heads, dim] (passed to cuDNN as
    [batch, heads, seq, dim] views). Returns (run, o_dequantised, note): run() executes the graph
    alone, o_dequantised() reads its e4m3 O back as float32 [batch, seq, heads, dim]."""
    e4m3, f32 = fe.data_type.FP8_E4M3, fe.data_type.FLOAT
    g = fe.pygraph(io_data_type=e4m3, intermediate_data_type=f32, compute_data_type=f32,
                   handle=handle)

    def tensor(name, x):
        return g.tensor(name=name, dim=list(x.shape), stride=list(x.stride()), data_type=e4m3)

    qv, kv, vv = (x.transpose(1, 2) for x in (q8, k8, v8))
    tq, tk, tv = tensor("q", qv), tensor("k", kv), tensor("v", vv)
    one = dict(dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=f32)
    scalars = {n: g.tensor(name=n, **one) for n in
               ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")}
    scale_o = E4M3_MAX / vmax if vmax > 0 else 1.0
    dev = q8.device
    values = {"descale_q": descales[0], "descale_k": descales[1], "descale_v": descales[2],
              "descale_s": torch.ones(1, 1, 1, 1, device=dev),  # P in [0, 1], unscaled
              "scale_s": torch.ones(1, 1, 1, 1, device=dev),
              "scale_o": torch.full((1, 1, 1, 1), scale_o, device=dev)}
    kwargs = dict(attn_scale=attn_scale, use_causal_mask=bool(causal))
    try:
        outs = g.sdpa_fp8(q=tq, k=tk, v=tv, **{n: scalars[n] for n in scalars}, is_inference=True,
                          **kwargs)
    except TypeError:  # frontends that name it generate_stats
        outs = g.sdpa_fp8(q=tq, k=tk, v=tv, **{n: scalars[n] for n in scalars},
                          generate_stats=False, **kwargs)
    to, _, amax_s, amax_o = outs
    o8 = torch.empty_like(q8)
    ov = o8.transpose(1, 2)
    to.set_output(True).set_dim(list(ov.shape)).set_stride(list(ov.stride())).set_data_type(e4m3)
    amax = {}
    for name, t in (("amax_s", amax_s), ("amax_o", amax_o)):
        amax[name] = torch.zeros(1, 1, 1, 1, device=dev)
        t.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(f32)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([fe.heur_mode.A, fe.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    ws = torch.empty(max(1, g.get_workspace_size()), dtype=torch.uint8, device=dev)
    feeds = {tq: qv, tk: kv, tv: vv, to: ov, amax_s: amax["amax_s"], amax_o: amax["amax_o"]}
    feeds.update({scalars[n]: values[n] for n in scalars})

    def run():
        g.execute(feeds, ws, handle=handle)

    def o_dequantised():
        return o8.float() / scale_o
    return run, o_dequantised, f"cuDNN FP8 SDPA, O in e4m3 (scale {scale_o:.4g})"


def sample_rows(seq, n=32):
    """n rows spread over [0, seq), the last one included."""
    rows = sorted({min(seq - 1, (i * seq) // n) for i in range(n)} | {seq - 1})
    return rows


def fp64_rows(q, k, v, causal, scale, picks):
    """The reference O in float64 for each (batch, head, rows) of picks, from the bf16 inputs
    ([batch, seq, heads, dim]; GQA: head h reads KV head h // (heads / kv_heads))."""
    heads, kv_heads = q.shape[2], k.shape[2]
    seq_q, seq_kv = q.shape[1], k.shape[1]
    out = []
    for b, h, rows in picks:
        hk = h // (heads // kv_heads)
        qr = q[b, rows, h, :].double()
        kk, vv = k[b, :, hk, :].double(), v[b, :, hk, :].double()
        s = (qr @ kk.T) * scale
        if causal:
            j = torch.arange(seq_kv, device=q.device)
            i = torch.tensor(rows, device=q.device).unsqueeze(1)
            s = s.masked_fill(j.unsqueeze(0) > i + (seq_kv - seq_q), float("-inf"))
        out.append(torch.softmax(s, dim=1) @ vv)
    return out


def default_picks(batch, heads, seq):
    """(batch, head, rows) to check: the first and last of each, 33 rows spread over the sequence."""
    rows = sample_rows(seq)
    return [(b, h, rows) for b in sorted({0, batch - 1}) for h in sorted({0, heads - 1})]


def row_errors(o, picks, ref):
    """Max |o - ref| and the relative L2 error over the picked rows of o ([batch, seq, heads, dim],
    any float type)."""
    num = den = 0.0
    worst = 0.0
    for (b, h, rows), r in zip(picks, ref):
        d = o[b, rows, h, :].double() - r
        worst = max(worst, d.abs().max().item())
        num += (d * d).sum().item()
        den += (r * r).sum().item()
    return worst, (num / den) ** 0.5 if den > 0 else float("nan")
