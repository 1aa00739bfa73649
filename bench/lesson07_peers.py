#!/usr/bin/env python3
"""Lesson 07's paged decode against cuDNN's paged SDPA, and both against dense decode (same values).

One query token per sequence (seq_q 1), 32 query heads, 8 KV heads (--kv-heads), head dimension 128
(--dims 128,64 adds 64), bf16, batch 1 to 128, kv length 1k to 128k. Every implementation of a shape
runs in one process on the same values: q, and K and V twice, dense `[batch, seq_kv, kv_heads, dim]`
and paged, in pools `[num_blocks, block_size, kv_heads, dim]` of the total pages plus a quarter
spare, each sequence's pages a random permutation of the pool (torch.randperm), so no two of its
pages need be neighbours, and NaN in every slot no token owns (the spare pages and the tail of a
sequence's last page; table columns past a sequence's last page name a spare page): a kernel that
read one would print NaN. The dense implementations run once per shape, the paged ones once per
block size (--block-sizes). Lengths: every sequence seq_kv keys, and (unless --no-mixed) also the pattern
of one long sequence among short ones: the first sequence seq_kv keys, the others 1024 (batch >= 2,
seq_kv > 1024). The figure is the rate of the K + V bytes the lengths need,
2 * sum(lengths) * kv_heads * dim * 2 bytes over the median time, the same count for every
implementation (the block table's 4 bytes a page are not counted), so the rates compare as inverse
times.

Implementations (the impl column of the CSV; README tables are generated from these names):
  cudnn-paged-bsN       cuDNN's SDPA graph (the cudnn Python package, nvidia-cudnn-frontend) reading
                        the pools through the block table, pages of N tokens
  cudnn-dense           the same graph on the dense K and V with the lengths (padding mask): what
                        paging costs cuDNN
  l06-v5-one-launch     lesson 06's version 5 on the dense K and V (equal lengths only)
  l06-v6-varlen         lesson 06's version 6 on the dense K and V, with the lengths
  v1-paged-row-bsN      lesson 07's versions (--versions 3,4,5 by default; version 1 is slow),
  v2-paged-split-bsN    through the block table, pages of N tokens (versions 3 to 5: N a power of
  v3-paged-pipeline-bsN two)
  v4-paged-overlap-bsN
  v5-paged-balance-bsN
  read-floor            lesson 06's read floor (l06_read_floor): a plain read of as many bytes as
                        the lengths' K + V, 16-byte loads over the whole GPU, L2 flushed before
                        each run: what one launch of those bytes can reach
Rows of the mixed-length pattern carry the same names with "-mixed" appended (cudnn-dense-mixed,
v4-paged-overlap-bs16-mixed, ...); seq_kv is then the longest length and bytes the K + V needed.

The lesson's kernels are called through build/lib/libattn_lessons.so (ctypes: l07_paged_*_d128/_d64,
l06_forward, l06_varlen_d*) on the same torch tensors; cuDNN gets views of them: q and o
`[batch, heads, 1, dim]` (.transpose(1, 2)), the pools `[num_blocks, kv_heads, block_size, dim]`
(.permute(0, 2, 1, 3), the same memory), the table `[batch, 1, max_blocks, 1]`, the lengths
`[batch, 1, 1, 1]`. When `import cudnn` fails, the wheel carried in .peers/*.whl is installed into
/tmp/cudnnfe (pip --no-deps --no-index) and imported from there; when that fails too, every cuDNN
row is an error row saying why. Each run is timed alone with CUDA events, the L2 flushed before it
and then (--busy-us) a sleep kernel, so that the GPU is still busy while the host enqueues the run:
the figure is the GPU's time, not the host's launch cost (Python, ctypes, cuDNN's execute), which
each line prints apart as host_us; --busy-us 0 is lesson 06's method. The figure is the median of
--iters timed runs. A shape's implementations are first each run once and checked, then timed
taking turns: the dense ones (cuDNN's and lesson 06's) together, then each block size's paged ones
(cuDNN's and lesson 07's) together; --warmup runs each, then --rounds rounds (default 5), each
running every implementation of the group once untimed and then --iters / --rounds times timed, the
order rotated from round to round (bench/peer_timing.py, timings_in_turns), so that the clocks'
drift over the group falls on all of them alike. The read floor is timed by lesson 06's own harness,
in a block of its own.
Every implementation's O, NaN-poisoned before its checked run, is compared with fp32 torch SDPA
(math) run per sequence on the dense values, or, for shapes of more than --ref-max K elements
(sum(lengths) * kv_heads * dim), with the first implementation to run (cudnn-dense, else lesson
06's dense kernel); a difference of 2e-2 or more prints MISMATCH and sets exit status 1.

    python3 bench/lesson07_peers.py [--lib build/lib/libattn_lessons.so] [--iters 20] [--warmup 3]
        [--batches 1,8,32,128] [--kv-heads 8] [--kvs 1024,8192,32768,131072] [--dims 128]
        [--block-sizes 16] [--versions 3,4,5] [--no-mixed] [--max-gb 24] [--ref-max 268435456]
        [--busy-us 100] [--rounds 5] [--out DIR]

Shapes whose dense K + V would pass --max-gb are skipped and said so (the pools, 1.25 times the
K + V needed, sit beside them). Prints one line per measurement (`l07 impl=... dim=... kv_heads=...
block_size=... batch=... seq_kv=... lens=... us=... tbs=... host_us=...`), then a table of TB/s per
(dim, KV heads, block size, batch, kv, lengths) with the highest lesson version over cuDNN's paged
graph and over the better of lesson 06's dense kernels. With --out DIR (or $PEERS_OUT) every figure
is also a row of DIR/peers-lesson07.csv in the columns of bench/peer_timing.py (the block size in
the impl name and the what text).
"""
import argparse
import ctypes
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cudnn_peer import cudnn_handle
from peer_timing import L2Flush, PeerCsv, peers_out_dir, software, turn_plan, turns_and_host_us

SHORT = 1024          # the short sequences of the mixed pattern
TOL = 2e-2            # largest |O - reference| that passes
HOST_RUNS = 10        # back-to-back calls whose mean is host_us
PAGED_NAMES = {1: "paged-row", 2: "paged-split", 3: "paged-pipeline", 4: "paged-overlap",
               5: "paged-balance"}
PAGED_FNS = {1: "l07_paged_row_d{}", 2: "l07_paged_split_d{}", 3: "l07_paged_pipeline_d{}",
             4: "l07_paged_overlap_d{}", 5: "l07_paged_balance_d{}"}


class Timing(ctypes.Structure):
    """attn_timing (common/attn_timer.h)."""
    _fields_ = [("median_ms", ctypes.c_double), ("min_ms", ctypes.c_double),
                ("max_ms", ctypes.c_double), ("iters", ctypes.c_int)]


def load_lib(path):
    lib = ctypes.CDLL(path)
    i, sz, fl, vp = ctypes.c_int, ctypes.c_size_t, ctypes.c_float, ctypes.c_void_p
    ip = ctypes.POINTER(ctypes.c_int)  # host lengths: a ctypes int array, or None for NULL
    f = lib.l06_forward
    f.restype = i
    f.argtypes = [i, i] + [vp] * 6 + [sz] + [i] * 6 + [fl, vp]
    lib.l06_version_name.restype = ctypes.c_char_p
    lib.l06_version_name.argtypes = [i]
    lib.l06_workspace_bytes.restype = sz
    lib.l06_workspace_bytes.argtypes = [i] * 7
    lib.l06_varlen_workspace_bytes.restype = sz
    lib.l06_varlen_workspace_bytes.argtypes = [i] * 5 + [ip, i]
    lib.l07_paged_workspace_bytes.restype = sz
    lib.l07_paged_workspace_bytes.argtypes = [i] * 6 + [ip, i]
    lib.l06_read_floor.restype = i
    lib.l06_read_floor.argtypes = [sz, i, i, ctypes.POINTER(Timing),
                                   ctypes.POINTER(ctypes.c_char_p)]
    for dim in (64, 128):
        # q, k, v, o, lse, workspace, bytes, seq_lens, seq_lens_host, batch .. causal, scale, stream
        f = getattr(lib, f"l06_varlen_d{dim}")
        f.restype = i
        f.argtypes = [vp] * 6 + [sz, vp, ip] + [i] * 6 + [fl, vp]
        for name in PAGED_FNS.values():
            # q, k_cache, v_cache, block_table, seq_lens, seq_lens_host, o, lse, workspace, bytes,
            # batch, heads, kv_heads, seq_q, seq_kv, max_blocks, block_size, causal, scale, stream
            f = getattr(lib, name.format(dim))
            f.restype = i
            f.argtypes = [vp] * 5 + [ip] + [vp] * 3 + [sz] + [i] * 8 + [fl, vp]
    return lib


def ints(s):
    return [int(x) for x in s.split(",") if x]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.environ.get("ATTN_LIB") or os.path.join(
        root, "build", "lib", "libattn_lessons.so"),
        help="path to libattn_lessons.so (default: $ATTN_LIB, else build/lib of this checkout)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds in which a group of implementations take turns (--iters runs "
                         "each in all)")
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", default="8")
    ap.add_argument("--kvs", default="1024,8192,32768,131072")
    ap.add_argument("--dims", default="128")
    ap.add_argument("--block-sizes", default="16", help="tokens per page, e.g. 8,16,32,64,128")
    ap.add_argument("--versions", default="3,4,5", help="lesson 07's paged versions (1..5)")
    ap.add_argument("--mixed", action=argparse.BooleanOptionalAction, default=True,
                    help=f"also mixed lengths: the first sequence seq_kv keys, the others {SHORT} "
                         "(default; --no-mixed: equal lengths only)")
    ap.add_argument("--max-gb", type=float, default=24.0,
                    help="skip shapes whose dense K + V pass this many GB")
    ap.add_argument("--ref-max", type=float, default=float(1 << 28),
                    help="largest sum(lengths) * kv_heads * dim checked against fp32 torch SDPA; "
                         "above it the first implementation that runs is the reference")
    ap.add_argument("--busy-us", type=float, default=100.0,
                    help="microseconds of a sleep kernel after each L2 flush, covering the host's "
                         "launch cost (0: lesson 06's method, which counts what the flush leaves)")
    ap.add_argument("--out", default=None,
                    help="folder for peers-lesson07.csv (default: $PEERS_OUT; neither: no CSV)")
    a = ap.parse_args()

    if not torch.cuda.is_available():
        print("lesson07_peers: no CUDA device; nothing measured")
        return 0
    versions = ints(a.versions)
    if not versions or any(v not in PAGED_NAMES for v in versions):
        print(f"lesson07_peers: --versions takes 1 to 5; got {a.versions}")
        return 1
    try:
        lib = load_lib(a.lib)
    except (OSError, AttributeError) as e:
        print(f"lesson07_peers: cannot use {a.lib} ({e}); build the lessons first")
        return 1
    dev = torch.cuda.get_device_properties(0)
    print(f"device: {dev.name}, {dev.multi_processor_count} SMs; torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}; bf16; decode, seq_q 1, {a.heads} query heads")

    fe, handle, fe_note = cudnn_handle(root)
    print(f"cuDNN peer: {fe_note}" if fe is not None else
          f"cuDNN peer: UNAVAILABLE, its rows are errors: {fe_note}", flush=True)

    flush = L2Flush(a.busy_us)
    rounds, per_round = turn_plan(a.iters, a.rounds)
    print(f"timing: median of {rounds * per_round} runs in {rounds} rounds taking turns, "
          f"{flush.what}", flush=True)

    out = PeerCsv(7, peers_out_dir(a.out))
    out.set_common(iters=rounds * per_round, **software(dev))
    env = argparse.Namespace(a=a, lib=lib, fe=fe, fe_note=fe_note, handle=handle, out=out,
                             flush=flush, versions=versions, status=0,
                             stream=ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                             l06_names={v: lib.l06_version_name(v).decode() for v in (5, 6)})
    table = []
    for dim in ints(a.dims):
        for hkv in ints(a.kv_heads):
            for batch in ints(a.batches):
                for skv in ints(a.kvs):
                    for mixed in (False, True) if a.mixed else (False,):
                        where = (f"dim={dim} kv_heads={hkv} batch={batch} seq_kv={skv} "
                                 f"lens={'mixed' if mixed else 'equal'}")
                        dense_bytes = 2.0 * batch * skv * hkv * dim * 2
                        if a.heads % hkv:
                            print(f"l07 {where} skipped: {a.heads} query heads are not a multiple "
                                  f"of {hkv} KV heads")
                            continue
                        if mixed and (batch < 2 or skv <= SHORT):
                            print(f"l07 {where} skipped: the mixed lengths need batch >= 2 and "
                                  f"seq_kv > {SHORT}")
                            continue
                        if dense_bytes > a.max_gb * 1e9:
                            print(f"l07 {where} skipped: dense K + V {dense_bytes / 1e9:.1f} GB > "
                                  f"--max-gb {a.max_gb}")
                            continue
                        try:
                            for bs, res in measure(env, dim, hkv, batch, skv, mixed):
                                table.append((dim, hkv, bs, batch, skv, mixed, res))
                        except torch.cuda.OutOfMemoryError as e:
                            print(f"l07 {where} skipped: out of memory "
                                  f"({str(e).splitlines()[0]})")
                        torch.cuda.empty_cache()
    out.close()

    top = max(versions)
    print("\nTB/s of the K + V the lengths need (2 x sum(lengths) x kv_heads x dim x 2 bytes); "
          "l06: the better of lesson 06's dense versions 5 and 6; floor: a plain read of the "
          "same bytes;\n"
          f"ratios: lesson 07's v{top} over cuDNN's paged graph and over l06")
    print(f"{'dim':>4} {'Hkv':>4} {'bs':>4} {'batch':>5} {'kv':>7} {'lens':>5} {'floor':>6} "
          f"{'c-paged':>7} {'c-dense':>7} {'l06':>6} " +
          " ".join(f"{'v' + str(v):>6}" for v in versions) +
          f" {'v' + str(top) + '/c-paged':>10} {'v' + str(top) + '/l06':>7}")
    for dim, hkv, bs, batch, skv, mixed, res in table:
        cp, cd, l6 = res.get("cudnn-paged", 0.0), res.get("cudnn-dense", 0.0), res.get("l06", 0.0)
        ours = res.get(f"v{top}", 0.0)
        print(f"{dim:>4} {hkv:>4} {bs:>4} {batch:>5} {skv:>7} {'mixed' if mixed else 'equal':>5} "
              f"{res.get('floor', 0.0):>6.2f} {cp:>7.2f} {cd:>7.2f} {l6:>6.2f} " +
              " ".join(f"{res.get('v' + str(v), 0.0):>6.2f}" for v in versions) +
              f" {ours / cp if cp else 0:>10.2f} {ours / l6 if l6 else 0:>7.2f}")
    return env.status


def reference(q, k, v, lens, scale):
    """O in fp32, torch SDPA (math) on each sequence's first lens[b] keys: [batch, 1, heads, dim]"""
    batch, _, heads, dim = q.shape
    group = heads // k.shape[2]
    ref = torch.empty(batch, 1, heads, dim, device="cuda", dtype=torch.float32)
    with sdpa_kernel(SDPBackend.MATH):
        for b, n in enumerate(lens):
            qb = q[b].float().transpose(0, 1).unsqueeze(0)  # [1, heads, 1, dim]
            # [1, heads, n, dim]: query head h reads KV head h / group
            kb = k[b, :n].float().transpose(0, 1).repeat_interleave(group, dim=0).unsqueeze(0)
            vb = v[b, :n].float().transpose(0, 1).repeat_interleave(group, dim=0).unsqueeze(0)
            ref[b] = F.scaled_dot_product_attention(qb, kb, vb, scale=scale)[0].transpose(0, 1)
            del kb, vb
    return ref


def make_pools(k, v, lens, block_size, seed):
    """The pools of K and V, [num_blocks, block_size, kv_heads, dim], holding the first lens[b] rows
    of k[b] and v[b] on pages in random order, a quarter of the pool spare, NaN in every slot no
    token owns; the block table [batch, max_blocks] int32, whose columns past a sequence's last page
    name a spare page. Returns (pool_k, pool_v, table, max_blocks)."""
    batch, _, hkv, dim = k.shape
    pages = [(n + block_size - 1) // block_size for n in lens]
    total = sum(pages)
    num_blocks = total + max(1, (total + 3) // 4)
    max_blocks = max(pages)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    perm = torch.randperm(num_blocks, generator=gen, device="cuda")
    pool_k = torch.full((num_blocks, block_size, hkv, dim), float("nan"), device="cuda",
                        dtype=k.dtype)
    pool_v = torch.full_like(pool_k, float("nan"))
    table = torch.full((batch, max_blocks), int(perm[total]), device="cuda", dtype=torch.int32)
    start = 0
    for b, (n, np_) in enumerate(zip(lens, pages)):
        ids = perm[start:start + np_]
        table[b, :np_] = ids.to(torch.int32)
        full = n // block_size
        if full:
            pool_k[ids[:full]] = k[b, :full * block_size].view(full, block_size, hkv, dim)
            pool_v[ids[:full]] = v[b, :full * block_size].view(full, block_size, hkv, dim)
        if n > full * block_size:  # the last page's first slots; the rest stay NaN
            last = int(ids[full])
            pool_k[last, :n - full * block_size] = k[b, full * block_size:n]
            pool_v[last, :n - full * block_size] = v[b, full * block_size:n]
        start += np_
    return pool_k, pool_v, table, max_blocks


def cudnn_sdpa(fe, handle, q4, k4, v4, o4, seq_q4, seq_kv4, scale, table4=None, max_len=None):
    """cuDNN's SDPA graph (inference, padding mask from the lengths; paged when table4 is given) on
    these torch views; returns (run, a note naming the engine that serves it)."""
    g = fe.pygraph(io_data_type=fe.data_type.BFLOAT16, intermediate_data_type=fe.data_type.FLOAT,
                   compute_data_type=fe.data_type.FLOAT, handle=handle)
    tq, tk, tv = g.tensor_like(q4), g.tensor_like(k4), g.tensor_like(v4)
    tsq, tskv = g.tensor_like(seq_q4), g.tensor_like(seq_kv4)
    feeds = {tq: q4, tk: k4, tv: v4, tsq: seq_q4, tskv: seq_kv4}
    paged = {}
    if table4 is not None:
        ttk, ttv = g.tensor_like(table4), g.tensor_like(table4)
        feeds.update({ttk: table4, ttv: table4})
        paged = dict(paged_attention_k_table=ttk, paged_attention_v_table=ttv,
                     paged_attention_max_seq_len_kv=max_len)
    to, _ = g.sdpa(name="sdpa", q=tq, k=tk, v=tv, is_inference=True, attn_scale=scale,
                   use_causal_mask=False, use_padding_mask=True, seq_len_q=tsq, seq_len_kv=tskv,
                   **paged)
    to.set_output(True).set_dim(list(o4.shape)).set_stride(list(o4.stride()))
    feeds[to] = o4
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([fe.heur_mode.A, fe.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    ws = torch.empty(max(1, g.get_workspace_size()), dtype=torch.uint8, device="cuda")

    def run():
        g.execute(feeds, ws, handle=handle)
    try:  # None: the cuDNN library serves it; else a Python engine of the frontend
        eng = g.selected_engine
        engine = "cuDNN library" if eng is None else f"frontend engine {eng.name}"
    except Exception:
        engine = "engine unknown"
    return run, f"; {engine}, cudnn-frontend {getattr(fe, '__version__', '?')}"


def measure(env, dim, hkv, batch, skv, mixed):
    """Every implementation on one shape, the paged ones once per block size; returns a list of
    (block size, {implementation: TB/s}), the dense figures repeated in each."""
    a, lib, heads = env.a, env.lib, env.a.heads
    lens = [skv] + [SHORT] * (batch - 1) if mixed else [skv] * batch
    need = 2 * sum(lens) * hkv * dim * 2
    suffix = "-mixed" if mixed else ""
    lens_text = (f"mixed lengths (the first sequence seq_kv keys, the others {SHORT})" if mixed else
                 "equal lengths (every sequence seq_kv keys)")
    tail = f"; {lens_text}; TB/s of the K + V the lengths need"
    shape = dict(dtype="bf16", batch=batch, heads=heads, kv_heads=hkv, seq_q=1, seq_kv=skv, dim=dim,
                 causal=0, bytes=int(need))
    pattern = "mixed" if mixed else "equal"
    where = f"dim={dim} kv_heads={hkv} batch={batch} seq_kv={skv} lens={pattern}"
    seed = batch * 1000003 + hkv * 1009 + skv + dim + (7919 if mixed else 0)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(batch, 1, heads, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    k = torch.randn(batch, skv, hkv, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    v = torch.randn(batch, skv, hkv, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    o = torch.empty_like(q)
    lse = torch.empty(batch, heads, 1, device="cuda", dtype=torch.float32)
    lens_dev = torch.tensor(lens, device="cuda", dtype=torch.int32)
    lens_host = (ctypes.c_int * batch)(*lens) if mixed else None  # NULL: every sequence seq_kv
    scale = 1.0 / math.sqrt(dim)  # passed to every launcher: 0 is no default for lesson 07's
    stream = env.stream
    # cuDNN's views: [batch, heads, 1, dim] for q and o, [batch, 1, 1, 1] int32 lengths
    q4, o4 = q.transpose(1, 2), o.transpose(1, 2)
    seq_q4 = torch.ones(batch, 1, 1, 1, device="cuda", dtype=torch.int32)
    seq_kv4 = lens_dev.view(batch, 1, 1, 1)
    chk = {"ref": None, "name": None}
    if sum(lens) * hkv * dim <= a.ref_max:
        chk["ref"], chk["name"] = reference(q, k, v, lens, scale), "fp32"

    def cudnn_make(k4, v4, table4=None, max_len=None):
        def make():
            if env.fe is None:
                raise RuntimeError(f"cuDNN frontend unavailable: {env.fe_note}")
            return cudnn_sdpa(env.fe, env.handle, q4, k4, v4, o4, seq_q4, seq_kv4, scale, table4,
                              max_len)
        return make

    what = f"dense decode on [batch, seq_kv, kv_heads, dim] K and V, cuDNN SDPA, padding mask{tail}"
    entries = [check_impl(env, chk, "cudnn-dense", "cudnn-dense" + suffix, o, what, shape, where,
                          False, cudnn_make(k.transpose(1, 2), v.transpose(1, 2)))]
    for ver in (6,) if mixed else (5, 6):
        if mixed:  # version 6 with the lengths, through its own launcher
            ws_bytes = lib.l06_varlen_workspace_bytes(batch, heads, hkv, 1, skv, lens_host, dim)
        else:
            ws_bytes = lib.l06_workspace_bytes(ver, batch, heads, hkv, 1, skv, dim)
        # zeroed once: versions 5 and 6 keep counters there that every call leaves at 0
        ws = torch.zeros(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")

        def l06_make(ver=ver, ws=ws, ws_bytes=ws_bytes):
            def run():
                if mixed:
                    err = getattr(lib, f"l06_varlen_d{dim}")(
                        q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                        ws.data_ptr(), ws_bytes, lens_dev.data_ptr(), lens_host, batch, heads, hkv,
                        1, skv, 0, scale, stream)
                else:
                    err = lib.l06_forward(ver, dim, q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                          o.data_ptr(), lse.data_ptr(), ws.data_ptr(), ws_bytes,
                                          batch, heads, hkv, 1, skv, 0, scale, stream)
                if err != 0:
                    raise RuntimeError(f"lesson 06's version {ver} returned CUDA error {err}")
            return run, ""
        name = f"l06-v{ver}-{env.l06_names[ver]}"
        what = f"dense decode on [batch, seq_kv, kv_heads, dim] K and V, lesson 06's {name}{tail}"
        entries.append(check_impl(env, chk, f"l06-v{ver}", name + suffix, o, what, shape, where,
                                  True, l06_make))
    dense = time_and_report(env, entries)
    dense["l06"] = max((x for x in (dense.get("l06-v5"), dense.get("l06-v6")) if x), default=None)
    dense["floor"] = read_floor(env, "read-floor" + suffix, shape, where,
                                f"a plain read of the K + V bytes (lesson 06's l06_read_floor){tail}")

    results = []
    for bs in ints(a.block_sizes):
        res = dict(dense)
        pool_k, pool_v, table, max_blocks = make_pools(k, v, lens, bs, seed * 131 + bs)
        at = f"dim={dim} kv_heads={hkv} block_size={bs} batch={batch} seq_kv={skv} lens={pattern}"
        paged = (f"paged decode, block size {bs}, pages shuffled in a pool with a quarter spare, "
                 f"NaN in unowned slots")
        # [num_blocks, kv_heads, block_size, dim] views of the pools, [batch, 1, max_blocks, 1]
        entries = [check_impl(
            env, chk, "cudnn-paged", f"cudnn-paged-bs{bs}" + suffix, o,
            f"{paged}, cuDNN SDPA{tail}", shape, at, False,
            cudnn_make(pool_k.permute(0, 2, 1, 3), pool_v.permute(0, 2, 1, 3),
                       table.view(batch, 1, max_blocks, 1), skv))]
        for ver in env.versions:
            name = f"v{ver}-{PAGED_NAMES[ver]}-bs{bs}" + suffix
            what = f"{paged}, lesson 07's version {ver}{tail}"
            if ver >= 3 and bs & (bs - 1):
                print(f"l07 impl={name} {at} skipped: version {ver} takes block sizes that are "
                      f"powers of two")
                env.out.row(impl=name, what=what, check="skipped: block size not a power of two",
                            **shape)
                continue
            ws_bytes = (lib.l07_paged_workspace_bytes(ver, batch, heads, hkv, 1, skv, lens_host,
                                                      dim) if ver > 1 else 0)
            # zeroed once per shape and version: the kernel keeps counters there, left at 0
            ws = torch.zeros(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")

            def ours_make(ver=ver, ws=ws, ws_bytes=ws_bytes):
                fn = getattr(lib, PAGED_FNS[ver].format(dim))

                def run():
                    err = fn(q.data_ptr(), pool_k.data_ptr(), pool_v.data_ptr(), table.data_ptr(),
                             lens_dev.data_ptr(), lens_host, o.data_ptr(), lse.data_ptr(),
                             ws.data_ptr(), ws_bytes, batch, heads, hkv, 1, skv, max_blocks, bs, 0,
                             scale, stream)
                    if err != 0:
                        raise RuntimeError(f"{fn.__name__} returned CUDA error {err}")
                return run, ""
            entries.append(check_impl(env, chk, f"v{ver}", name, o, what, shape, at, True,
                                      ours_make))
        res.update(time_and_report(env, entries))
        del entries  # the paged runs hold the pools
        results.append((bs, {n: x for n, x in res.items() if x}))
        pool_k = pool_v = table = None  # freed before the next block size's pools
        torch.cuda.empty_cache()
    return results


def read_floor(env, name, shape, where, what):
    """Lesson 06's read floor for the shape's bytes: prints and records it; returns its TB/s, or
    None when it was not measured (said on the line)."""
    t, why = Timing(), ctypes.c_char_p()
    torch.cuda.synchronize()
    err = env.lib.l06_read_floor(shape["bytes"], env.a.warmup, env.a.iters, ctypes.byref(t),
                                 ctypes.byref(why))
    if err != 0 or why.value:
        text = f"CUDA error {err}" if err != 0 else why.value.decode()
        print(f"l07 impl={name} {where} not measured: {text}", flush=True)
        env.out.row(impl=name, what=what, check=f"error: {text}"[:200], **shape)
        return None
    tbs = shape["bytes"] / (t.median_ms * 1e-3) / 1e12
    print(f"l07 impl={name} {where} us={t.median_ms * 1e3:.1f} tbs={tbs:.3f}", flush=True)
    env.out.row(impl=name, what=what, ms=f"{t.median_ms:.5f}", min_ms=f"{t.min_ms:.5f}",
                gbs=f"{tbs * 1e3:.1f}", check="ok", **shape)
    return tbs


def check_impl(env, chk, slot, name, o, what, shape, where, ours, make):
    """The first half of an implementation's row: builds it (make() -> (run, note)) and checks its
    O, NaN-poisoned first, against the reference (the first that runs becomes it when there is
    none). Returns the entry time_and_report() times and reports (slot: its key in the shape's
    results), or None when it failed, which is then printed and recorded here. A mismatch, or an
    error of a lesson kernel (ours), sets env.status."""
    try:
        fn, note = make()
        what = what + note
        o.fill_(float("nan"))  # poison: a row the run leaves unwritten shows
        fn()
        torch.cuda.synchronize()
        check, diff, said = "ok", None, ""
        if chk["ref"] is None:
            if bool(torch.isfinite(o).all()):
                chk["ref"], chk["name"] = o.float(), name
                check, said = "reference", " (the reference for the rest of this shape)"
            else:
                env.status, check, said = 1, "MISMATCH", " non-finite O, no reference: MISMATCH"
        else:
            diff = (o.float() - chk["ref"]).abs().max().item()
            said = f" max_abs_vs_{chk['name']}={diff:.2e}"
            if not diff < TOL:  # NaN fails too
                env.status, check, said = 1, "MISMATCH", said + " MISMATCH"
        return argparse.Namespace(slot=slot, name=name, fn=fn, note=note, what=what, shape=shape,
                                  where=where, ours=ours, check=check, diff=diff, said=said)
    except Exception as e:  # a refused graph, a launcher's error code, a missing frontend
        impl_error(env, name, what, shape, where, ours, e)
        return None


def impl_error(env, name, what, shape, where, ours, e):
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    print(f"l07 impl={name} {where} error={text[:600]}", flush=True)
    env.out.row(impl=name, what=what, check=f"error: {text}"[:200], **shape)
    if ours:
        env.status = 1


def time_and_report(env, entries):
    """The second half: a group's checked implementations (check_impl's entries, None for those
    that failed) timed taking turns (timings_in_turns), then each printed and recorded in the
    entries' order. Returns {slot: TB/s} of those that were timed."""
    a = env.a
    live = [e for e in entries if e is not None]
    got = turns_and_host_us({e.name: e.fn for e in live}, env.flush, a.iters, a.warmup, a.rounds,
                            HOST_RUNS)
    res = {}
    for e in live:
        if isinstance(got[e.name], Exception):  # an error that only a later run met
            impl_error(env, e.name, e.what, e.shape, e.where, e.ours, got[e.name])
            continue
        ms, best, host_us = got[e.name]
        tbs = e.shape["bytes"] / (ms * 1e-3) / 1e12
        print(f"l07 impl={e.name} {e.where} us={ms * 1e3:.1f} tbs={tbs:.3f} host_us={host_us:.1f}"
              f"{e.said}{e.note}", flush=True)
        env.out.row(impl=e.name, what=e.what, ms=f"{ms:.5f}", min_ms=f"{best:.5f}",
                    gbs=f"{tbs * 1e3:.1f}", check=e.check,
                    max_abs=f"{e.diff:.3e}" if e.diff is not None else None, **e.shape)
        res[e.slot] = tbs
    return res


if __name__ == "__main__":
    sys.exit(main())
