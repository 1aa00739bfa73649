#!/usr/bin/env python3
"""Lesson 09's backward pass against PyTorch SDPA's flash (FlashAttention-2) and cuDNN backwards.

Three parts, in one process on one GPU (each can run alone: --timing-only, --accuracy-only,
--memory-only):

1. Timing, on the FlashAttention papers' grid: 16k tokens in total (batch = 16384 / seq), hidden
   2048 (heads = 2048 / dim), seq 512 to 16k, dim 64 and 128, causal and not, bf16. Only the
   backward is timed. The peers: one SDPA forward builds the autograd graph, then each timed run
   is `torch.autograd.grad(out, (q, k, v), dO, retain_graph=True)`, which runs the backend's
   backward kernel(s) again on the same saved O and log-sum-exp. The lesson's versions:
   l09_backward_flat through ctypes, on O and the LSE written once by lesson 04's forward
   (l04_forward, version 7): the lesson stays self-contained, the backward differentiating the
   lesson's own forward. Each run is timed alone with CUDA events, the L2 flushed before it and
   then a sleep kernel (--busy-us) so that the host's launch cost (autograd, ctypes) is not in the
   figure; the figure is the median. A shape's implementations take turns: --rounds rounds
   (default 5), each running every implementation once untimed and then --iters / --rounds times
   timed, the order rotated from round to round (bench/peer_timing.py, timings_in_turns), so that
   the clocks' drift over the shape falls on all of them alike; one too slow for that inside
   --budget-s is timed in a block of its own. Every version's dQ, dK, dV (NaN-poisoned before its checked
   run) are compared with flash's (relative L2 over 1e-1: MISMATCH, exit status 1): a guard
   against garbage, not the accuracy bar (part 2 is that). Flash's own dQ is off by up to 4e-2 at
   seq 16384 on these inputs, so a version more exact than flash (version 1) differs from it by that.
   FLOPs: the backward does five matrix products per tile (S = Q K^T again, dV = P^T dO,
   dP = dO V^T, dQ = dS K, dK = dS^T Q) where the forward does two, so it is counted as 2.5 times
   the forward's 4 * dim flops per visible (query, key) pair; causal counts the exact visible
   pairs (seq (seq + 1) / 2 per head), as the C harness does (attn_visible_pairs, common/types.c),
   not quite half. --group G times GQA beside the grid: heads / G KV heads, each shared by G query
   heads (dK and dV summed over the group; the flops count per query head, as without it). Seqs
   off the grid (not dividing 16384) keep batch = 16384 // seq.
   A version whose workspace does not fit in free memory (version 1 keeps two fp32 seq x seq
   matrices per (batch, head): 8 * batch * heads * seq^2 bytes) is skipped with a line saying how
   much it needs; one whose single run takes longer than --budget-s is checked but not timed, and
   a slow one gets fewer timed runs (the iters column says how many).

2. Accuracy, on moderate shapes (batch 1, 4 to 16 heads, seq 1k to 4k, dim 64 and 128, causal and
   not, GQA 8:1): the exact gradients in float64 on the GPU from the same bf16 inputs (the explicit
   formulas of lessons/09_backward/reference_bwd.h, one (batch, head) at a time, first checked
   against torch autograd in float64 on small shapes), then per gradient the relative L2 error
   ||got - ref|| / ||ref|| and the largest |got - ref| of SDPA flash, SDPA cuDNN and every
   version. The lesson's bar: each version's relative L2 error at most --bar (2.0) times flash's,
   on each of dQ, dK, dV; a row over it prints FAIL and the exit status is 1 (--bar 0: report
   only). With GQA, a backend that refuses enable_gqa gets K and V expanded (repeat_interleave,
   whose backward sums the group's gradients), and its row says so.

3. Memory: the peak device memory of one backward beyond its inputs and outputs, at batch 1,
   heads 16, dim 128 (--mem-batch, --mem-heads, --mem-dim), seq 1k to 64k: versions 1 (naive,
   O(N^2)) and 4 (recomputing, O(N): D, and an fp32 dQ accumulator) (--mem-versions), SDPA flash
   and cuDNN. torch.cuda.max_memory_allocated() after reset_peak_memory_stats(); the lesson's
   workspace is a torch tensor so that it is counted (the launchers allocate nothing else). For a
   peer the baseline holds the autograd graph (the forward's O and LSE) and dO, and its returned
   dQ, dK, dV are subtracted; for a version it holds Q, K, V, O, LSE, dO, dQ, dK, dV. Version 1 is
   refused where its workspace does not fit: "refused: needs X GB, Y GB free". Beside the measured
   figure: the workspace l09_workspace_bytes() asks for and the lesson's model of it.

    python3 bench/lesson09_peers.py [--lib build/lib/libattn_lessons.so] [--iters 10]
        [--warmup 3] [--rounds 5] [--seqs 512,1024,2048,4096,8192,16384] [--dims 64,128]
        [--causal 0,1] [--versions 1,2,3,4,5,6,7] [--group 1] [--csv FILE] [--out DIR] [--quick]
        [--timing-only | --accuracy-only | --memory-only] [--bar 2.0] [--budget-s 10]
        [--busy-us 100] [--max-gb G] [--accuracy-csv FILE] [--memory-csv FILE]
        [--mem-seqs 1024,...,65536] [--mem-batch 1] [--mem-heads 16] [--mem-dim 128]
        [--mem-causal 0] [--mem-versions 1,4] [--seed 9]

Prints one line per measurement (`l09 impl=... dim=... causal=... seq=... ms=... tflops=...`,
`l09-acc ...`, `l09-mem ...`), then a table per part. --quick is a small grid for a smoke test
(seq 1024, three timed runs, the seq-1k accuracy shapes, memory at 1k and 4k); an option given
beside it wins.

CSV: with --out DIR (or $PEERS_OUT) the timing figures are rows of DIR/peers-lesson09.csv in the
columns of bench/peer_timing.py (impl sdpa-flash, sdpa-cudnn, v1-<name> ... v5-<name>; check: ok,
MISMATCH, skipped: why, error: why; max_abs: the largest difference from flash's gradients over
dQ, dK and dV), and the other two parts go to DIR/accuracy-lesson09.csv and
DIR/memory-lesson09.csv (columns: ACCURACY_COLUMNS and MEMORY_COLUMNS below), unless
--accuracy-csv / --memory-csv name other files. --csv FILE keeps lesson 04's short timing format
(impl,dim,causal,seq,batch,heads,ms,tflops) with iters and check appended.

Without torch, a CUDA GPU of sm_80 or newer, or a library with lesson 09 in it: one line saying
which, exit 77 (skipped, not passed).
"""
import argparse
import collections
import csv
import ctypes
import math
import os
import sys

SKIPPED = 77  # the exit status of a run that could not happen here (as ctest's SKIP_RETURN_CODE)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

try:  # torch is optional until main(): without it the script says so and exits 77
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from peer_timing import (L2Flush, PeerCsv, peers_out_dir, software, timings,
                             timings_in_turns, turn_plan)
except ImportError:
    torch = None

TOKENS, HIDDEN = 16384, 2048  # the papers' grid: batch = TOKENS / seq, heads = HIDDEN / dim
L04_VERSION = 7               # lesson 04's version that writes O and the LSE the backward reads
L09_VERSIONS = 7              # backward.h
BWD_OVER_FWD = 2.5            # five matrix products per tile against the forward's two
CHECK_REL_L2 = 1e-1           # timing part: a version this far from flash's gradients is a MISMATCH
HEADROOM = 1 << 30            # bytes kept free beside a workspace (torch's needs, fragmentation)
GB, MB = 1e9, 1e6             # sizes are printed in decimal units

# Defaults of the whole run and of --quick (an option given on the command line wins over both).
FULL = dict(seqs="512,1024,2048,4096,8192,16384", dims="64,128", causal="0,1", iters=10,
            warmup=3, mem_seqs="1024,2048,4096,8192,16384,32768,65536", acc_quick=False)
QUICK = dict(seqs="1024", dims="64,128", causal="0,1", iters=3, warmup=1,
             mem_seqs="1024,4096", acc_quick=True)

# The accuracy part's shapes: (batch, heads, kv_heads, seq, dim, causal); seq_q = seq_kv, so that
# SDPA's is_causal (top-left) is the lessons' bottom-right mask. The quick run keeps those marked.
ACC_SHAPES = [  # (quick?, shape)
    (True, (1, 8, 8, 1024, 64, 0)),
    (True, (1, 8, 8, 1024, 64, 1)),
    (True, (1, 8, 8, 1024, 128, 0)),
    (True, (1, 8, 8, 1024, 128, 1)),
    (False, (1, 4, 4, 4096, 64, 0)),
    (False, (1, 4, 4, 4096, 64, 1)),
    (False, (1, 4, 4, 4096, 128, 0)),
    (False, (1, 4, 4, 4096, 128, 1)),
    (True, (1, 8, 1, 1024, 128, 1)),    # GQA 8:1
    (False, (1, 16, 2, 2048, 64, 0)),   # GQA 8:1
]
GRADS = ("dq", "dk", "dv")

# The columns of accuracy-lesson09.csv: one row per shape, implementation and gradient.
#   impl            sdpa-flash, sdpa-cudnn, v1-<name> ... (the timing CSV's names)
#   grad            dq, dk or dv
#   rel_l2, max_abs ||got - ref|| / ||ref|| and max |got - ref| against the float64 reference
#   ref_max_abs     max |ref|, the scale max_abs is read against
#   flash_rel_l2    flash's rel_l2 on the same shape and gradient
#   ratio           rel_l2 / flash_rel_l2
#   bar             the largest ratio a version may have (--bar; 0: not judged)
#   verdict         a version: PASS or FAIL (not judged with --bar 0; no flash figure when
#                   flash failed); flash, cuDNN: peer; either: error: why, skipped: why
#   note            e.g. "K, V expanded to every query head" for a backend without enable_gqa
ACCURACY_COLUMNS = ["lesson", "impl", "dtype", "batch", "heads", "kv_heads", "seq_q", "seq_kv",
                    "dim", "causal", "grad", "rel_l2", "max_abs", "ref_max_abs", "flash_rel_l2",
                    "ratio", "bar", "verdict", "note", "device", "torch", "cuda", "cudnn"]
# The columns of memory-lesson09.csv: one row per seq and implementation; bytes.
#   io_bytes        Q, K, V, O, LSE, dO, dQ, dK, dV: what any backward reads and writes
#   workspace_bytes l09_workspace_bytes() (a version; empty for a peer)
#   model_bytes     the lesson's count of that workspace: version 1 two fp32 seq_q x seq_kv
#                   matrices per (batch, head) and D; 2-4 D and an fp32 dQ; 5 D (empty: a peer)
#   peak_bytes      max_memory_allocated() during the backward, above the baseline
#   extra_bytes     peak_bytes less what the backward returns (a version: returns nothing)
#   free_bytes      torch.cuda.mem_get_info()'s free bytes before it
#   check           ok, refused: needs X GB, Y GB free, error: why
MEMORY_COLUMNS = ["lesson", "impl", "dtype", "batch", "heads", "kv_heads", "seq_q", "seq_kv",
                  "dim", "causal", "io_bytes", "workspace_bytes", "model_bytes", "peak_bytes",
                  "extra_bytes", "free_bytes", "check", "device", "torch", "cuda", "cudnn"]


# ---- Shapes and counts -------------------------------------------------------------------------

class Shape(collections.namedtuple("Shape", "batch heads kv_heads seq_q seq_kv dim causal")):
    """An attention problem, named as the CSV columns name it."""

    def label(self):
        kv = f"/{self.kv_heads}" if self.kv_heads != self.heads else ""
        seq = f"{self.seq_q}" if self.seq_q == self.seq_kv else f"{self.seq_q}/{self.seq_kv}"
        return (f"b{self.batch} h{self.heads}{kv} s{seq} d{self.dim} "
                f"{'causal' if self.causal else 'full'}")

    def columns(self):
        return dict(dtype="bf16", **self._asdict())


def visible_pairs(s):
    """(query, key) pairs the mask lets through, as attn_visible_pairs() counts them: row i of a
    sequence sees keys j <= i + seq_kv - seq_q under the bottom-right causal mask."""
    if not s.causal:
        per_seq = s.seq_q * s.seq_kv
    else:
        shift = s.seq_kv - s.seq_q
        per_seq = sum(min(max(i + shift + 1, 0), s.seq_kv) for i in range(s.seq_q))
    return per_seq * s.batch * s.heads


def backward_flops(s):
    """2.5 times the forward's 4 * dim flops per visible pair (module docstring)."""
    return BWD_OVER_FWD * 4.0 * s.dim * visible_pairs(s)


def model_workspace(version, s):
    """The lesson's count of the scratch a version needs (backward.h, l09_workspace_bytes)."""
    d_term = 4 * s.batch * s.heads * s.seq_q                    # D = rowsum(dO o O), fp32
    if version == 1:                                            # P and dS, fp32, in HBM
        return 2 * 4 * s.batch * s.heads * s.seq_q * s.seq_kv + d_term
    if version in (2, 3, 4, 6, 7):                              # + the fp32 dQ for the atomics
        return d_term + 4 * s.batch * s.seq_q * s.heads * s.dim
    return d_term                                               # version 5: dQ in registers


def human(nbytes):
    if nbytes is None:
        return "-"
    return f"{nbytes / GB:.2f} GB" if nbytes >= GB else f"{nbytes / MB:.1f} MB"


def ints(text):
    return [int(x) for x in text.split(",") if x]


def one_line(e):
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:200]


# ---- The library ---------------------------------------------------------------------------------

def missing(lib_path):
    """(why this cannot run here or None, the loaded library)."""
    if torch is None:
        return "torch is not installed", None
    if not torch.cuda.is_available():
        return "torch sees no CUDA GPU", None
    if torch.cuda.get_device_capability() < (8, 0):
        return f"{torch.cuda.get_device_name()} is older than sm_80 (no bf16 tensor cores)", None
    if not os.path.exists(lib_path):
        return f"{lib_path} does not exist (`make lesson-9` builds it)", None
    try:
        return None, load_lib(lib_path)
    except OSError as e:
        return f"cannot load {lib_path}: {e}", None
    except AttributeError as e:  # a symbol is missing: a build from before lesson 09
        return f"{lib_path} has no lesson 09 ({e}); rebuild it", None


def load_lib(path):
    """The launchers this script calls, with their C signatures (backward.h, fa2_warps.h)."""
    lib = ctypes.CDLL(path)
    f = lib.l04_forward  # (version, dim, q, k, v, o, lse, batch, heads, kv_heads, seq_q, seq_kv,
    f.restype = ctypes.c_int  # causal, scale, stream)
    f.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [
        ctypes.c_float, ctypes.c_void_p]
    # (version, dim, q, k, v, o, d_o, lse, dq, dk, dv, workspace, workspace_bytes, batch, heads,
    #  kv_heads, seq_q, seq_kv, causal, scale, stream)
    f = lib.l09_backward_flat
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 10 + [ctypes.c_size_t] + [
        ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p]
    f = lib.l09_workspace_bytes  # (version, batch, heads, kv_heads, seq_q, seq_kv, dim)
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_int] * 7
    for f in (lib.l04_version_name, lib.l09_version_name):
        f.restype = ctypes.c_char_p
        f.argtypes = [ctypes.c_int]
    return lib


class Case:
    """One problem's tensors in the lessons' BSHD layout ([batch, seq, heads, dim], contiguous):
    Q, K, V and dO drawn as the C harness draws its inputs (uniform in [-0.75, 1.25), not centred
    on zero, rounded to bf16), the forward's O and LSE, and the lesson's dQ, dK, dV."""

    def __init__(self, s, seed):
        self.s = s
        gen = torch.Generator(device="cuda").manual_seed(seed)

        def draw(seq, heads):
            x = torch.rand(s.batch, seq, heads, s.dim, device="cuda", generator=gen)
            return x.mul_(2.0).sub_(0.75).to(torch.bfloat16)
        self.q, self.k, self.v = draw(s.seq_q, s.heads), draw(s.seq_kv, s.kv_heads), draw(
            s.seq_kv, s.kv_heads)
        self.d_o = draw(s.seq_q, s.heads)
        self.o = torch.empty_like(self.q)
        self.lse = torch.empty(s.batch, s.heads, s.seq_q, device="cuda", dtype=torch.float32)
        self.dq, self.dk, self.dv = (torch.empty_like(x) for x in (self.q, self.k, self.v))

    def io_bytes(self):
        ts = (self.q, self.k, self.v, self.o, self.lse, self.d_o, self.dq, self.dk, self.dv)
        return sum(t.numel() * t.element_size() for t in ts)


class Lesson:
    """Lesson 04's forward and lesson 09's backward, called on a Case's tensors."""

    def __init__(self, lib):
        self.lib = lib
        self.stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def name(self, version):
        n = self.lib.l09_version_name(version)
        return f"v{version}-{n.decode()}" if n else None

    def workspace_bytes(self, version, s):
        return int(self.lib.l09_workspace_bytes(version, s.batch, s.heads, s.kv_heads, s.seq_q,
                                                s.seq_kv, s.dim))

    def forward(self, c):
        """O and the natural-log LSE [batch, heads, seq_q] of lesson 04's version 7."""
        s = c.s
        err = self.lib.l04_forward(L04_VERSION, s.dim, c.q.data_ptr(), c.k.data_ptr(),
                                   c.v.data_ptr(), c.o.data_ptr(), c.lse.data_ptr(), s.batch,
                                   s.heads, s.kv_heads, s.seq_q, s.seq_kv, s.causal, 0.0,
                                   self.stream)
        if err != 0:
            raise RuntimeError(f"l04_forward({L04_VERSION}) returned CUDA error {err}")

    def backward(self, version, c, ws):
        """dQ, dK, dV of version @p version into c.dq, c.dk, c.dv; @p ws a uint8 tensor of
        workspace_bytes() bytes (or None for none)."""
        s = c.s
        nbytes = ws.numel() if ws is not None else 0
        err = self.lib.l09_backward_flat(
            version, s.dim, c.q.data_ptr(), c.k.data_ptr(), c.v.data_ptr(), c.o.data_ptr(),
            c.d_o.data_ptr(), c.lse.data_ptr(), c.dq.data_ptr(), c.dk.data_ptr(), c.dv.data_ptr(),
            ws.data_ptr() if nbytes else None, nbytes, s.batch, s.heads, s.kv_heads, s.seq_q,
            s.seq_kv, s.causal, 0.0, self.stream)
        if err != 0:
            raise RuntimeError(f"l09_backward_flat({version}) returned CUDA error {err}")

    def poison(self, c):
        for t in (c.dq, c.dk, c.dv):
            t.fill_(float("nan"))


def free_bytes():
    """Free device memory once torch's cache of unused blocks is given back."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return torch.cuda.mem_get_info()[0]


def workspace(lesson, version, s, limit):
    """(a uint8 workspace tensor or None, its bytes, None), or (None, bytes, why it cannot be
    had)."""
    need = lesson.workspace_bytes(version, s)
    if need == 0:
        return None, 0, None
    free = free_bytes()
    room = min(free - HEADROOM, limit) if limit else free - HEADROOM
    if need > room:
        cap = f", --max-gb {limit / GB:g}" if limit and limit < free - HEADROOM else ""
        return None, need, f"needs {need / GB:.1f} GB, {free / GB:.1f} GB free{cap}"
    return torch.empty(need, dtype=torch.uint8, device="cuda"), need, None


# ---- The peers -----------------------------------------------------------------------------------

PEERS = (("sdpa-flash", "FLASH_ATTENTION"), ("sdpa-cudnn", "CUDNN_ATTENTION"))


def sdpa_peer(backend, c):
    """Build one SDPA forward's autograd graph on the Case's tensors and return (run, note): run()
    runs the backend's backward once more and returns (dQ, dK, dV) as BSHD views.

    The leaves are .transpose(1, 2) views of the BSHD tensors, the [batch, heads, seq, dim] that
    SDPA takes, so the backward reads the same memory as the lesson's and nothing is copied. With
    GQA, enable_gqa=True where the backend takes it, else K and V expanded to every query head
    (their gradients summed back by repeat_interleave's backward, inside the timed run)."""
    s = c.s
    qt, kt, vt = (x.transpose(1, 2).detach().requires_grad_() for x in (c.q, c.k, c.v))
    dot = c.d_o.transpose(1, 2)
    group = s.heads // s.kv_heads

    def forward(expand):
        k_, v_ = kt, vt
        kw = {}
        if group > 1 and expand:
            k_, v_ = kt.repeat_interleave(group, dim=1), vt.repeat_interleave(group, dim=1)
        elif group > 1:
            kw["enable_gqa"] = True
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(qt, k_, v_, is_causal=bool(s.causal), **kw)
    note = ""
    try:
        out = forward(expand=False)
        torch.cuda.synchronize()
    except (RuntimeError, TypeError):  # TypeError: a torch without enable_gqa
        if group == 1:
            raise
        out = forward(expand=True)
        note = "K, V expanded to every query head"
    leaves = (qt, kt, vt)

    def run():
        g = torch.autograd.grad(out, leaves, dot, retain_graph=True)
        return tuple(x.transpose(1, 2) for x in g)
    return run, note


def backend_of(name):
    return getattr(SDPBackend, dict(PEERS)[name])


# ---- Timing --------------------------------------------------------------------------------------

def event_ms(fn):
    """(fn()'s result, its time in ms): one run between two CUDA events."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    r = fn()
    stop.record()
    stop.synchronize()
    return r, start.elapsed_time(stop)


def timed(fn, first_ms, a, flush):
    """(median ms, fastest ms, timed runs), or None when one run (first_ms, the checked run) is
    over --budget-s. As many runs as the budget holds: --warmup and --iters when they fit, else
    the timed runs first (at least one; the checked run has already warmed the kernel up), then
    the warm-ups that still fit."""
    budget_ms = a.budget_s * 1e3
    if first_ms > budget_ms:
        return None
    fit = int(budget_ms / max(first_ms, 1e-3))
    iters = max(1, min(a.iters, fit))
    warmup = max(0, min(a.warmup, fit - iters))
    ms, best = timings(fn, flush, iters, warmup)
    return ms, best, iters


def grad_diff(got, ref):
    """(largest relative L2 over dQ, dK, dV, largest |got - ref|), in fp32; NaN when a gradient
    holds a NaN (max() alone could pass over one)."""
    rels, maxs = [], []
    for g, r in zip(got, ref):
        d = g.float() - r.float()
        rels.append((d.norm() / r.float().norm().clamp_min(1e-30)).item())
        maxs.append(d.abs().max().item())
    if any(math.isnan(x) for x in rels + maxs):
        return float("nan"), float("nan")
    return max(rels), max(maxs)


def timing_part(a, lesson, versions, flush, out, short_csv):
    """Part 1; returns (table rows, status)."""
    rows, status = [], 0
    what = ("attention backward: dQ, dK, dV from Q, K, V, O, LSE, dO; flops 2.5x the forward's, "
            "causal: visible pairs")
    gqa = f", {a.group} query heads per KV head" if a.group > 1 else ""
    print(f"\nPart 1, timing: tokens {TOKENS}, hidden {HIDDEN}{gqa}, bf16; the backward alone, "
          f"median of --iters {a.iters} in {a.rounds} rounds taking turns (fewer where a run is "
          f"slow: the iters column), budget {a.budget_s:g} s per implementation and shape",
          flush=True)
    for dim in ints(a.dims):
        for causal in ints(a.causal):
            for seq in ints(a.seqs):
                heads = HIDDEN // dim
                s = Shape(TOKENS // seq, heads, heads // a.group, seq, seq, dim, causal)
                if s.batch < 1 or s.heads < 1:
                    print(f"l09 dim={dim} seq={seq} skipped: batch {TOKENS} / seq < 1")
                    continue
                res, st = time_shape(a, lesson, versions, flush, out, short_csv, s, what)
                status |= st
                rows.append((s, res))
                torch.cuda.empty_cache()
    return rows, status


def time_shape(a, lesson, versions, flush, out, short_csv, s, what):
    """Every implementation on one shape: ({impl: TFLOP/s}, status)."""
    c = Case(s, a.seed + 1000 * s.seq_q + s.dim + s.causal)
    flops = backward_flops(s)
    where = f"dim={s.dim} causal={s.causal} seq={s.seq_q} batch={s.batch} heads={s.heads}"
    if s.kv_heads != s.heads:
        where += f" kv_heads={s.kv_heads}"
    res, ref, status = {}, None, 0

    def record(name, ms, best, iters, check="", diff=None, rel=None):
        res[name] = flops / (ms * 1e-3) / 1e12
        note = "" if rel is None else f" rel_l2_vs_flash={rel:.2e} max_abs_vs_flash={diff:.2e}"
        print(f"l09 impl={name} {where} ms={ms:.4f} tflops={res[name]:.1f} iters={iters}{note}"
              f"{' ' + check if check not in ('', 'ok') else ''}", flush=True)
        out.row(impl=name, what=what, iters=iters, ms=f"{ms:.5f}", min_ms=f"{best:.5f}",
                tflops=f"{res[name]:.2f}", check=check,
                max_abs=f"{diff:.3e}" if diff is not None else None, **s.columns())
        short_csv.append(f"{name},{s.dim},{s.causal},{s.seq_q},{s.batch},{s.heads},{ms:.5f},"
                         f"{res[name]:.2f},{iters},{check}")

    def not_timed(name, check):
        print(f"l09 impl={name} {where} {check}", flush=True)
        out.row(impl=name, what=what, check=check, **s.columns())
        short_csv.append(f"{name},{s.dim},{s.causal},{s.seq_q},{s.batch},{s.heads},,,,{check}")

    # Each implementation runs once and is checked; those whose runs fit the budget are then timed
    # taking turns (peer_timing.timings_in_turns), the others in a block of as many runs as fit.
    entries = []  # (name, run, first_ms, record's keywords), in the table's order
    keep = []  # the peers' graphs and the versions' workspaces, alive until the shape is timed
    for name, _ in PEERS:
        try:
            run, note = sdpa_peer(backend_of(name), c)
            grads, first_ms = event_ms(run)
            if ref is None:  # flash's gradients check the versions (cuDNN's if flash failed)
                ref = tuple(g.contiguous() for g in grads)
            del grads
            entries.append((name, run, first_ms, dict(check=note)))
        except Exception as e:  # a backend that refuses the shape: report, go on
            not_timed(name, "error: " + one_line(e))
    try:
        lesson.forward(c)
    except RuntimeError as e:
        for v in versions:
            not_timed(lesson.name(v), "error: " + one_line(e))
        return res, 1
    for v in versions:
        name = lesson.name(v)
        ws, need, why = workspace(lesson, v, s, a.max_gb * GB)
        if why:
            not_timed(name, f"skipped: workspace {why}")
            continue
        try:
            lesson.poison(c)
            _, first_ms = event_ms(lambda: lesson.backward(v, c, ws))
            check, rel, diff = "unchecked: no peer gradients", None, None
            if ref is not None:
                rel, diff = grad_diff((c.dq, c.dk, c.dv), ref)
                check = "ok" if rel <= CHECK_REL_L2 else "MISMATCH"
                status |= check != "ok"
            entries.append((name, lambda v=v, ws=ws: lesson.backward(v, c, ws), first_ms,
                            dict(check=check, diff=diff, rel=rel)))
            keep.append(ws)
        except Exception as e:
            status = 1
            not_timed(name, "error: " + one_line(e))
    budget_ms = a.budget_s * 1e3
    rounds, per_turn = turn_plan(a.iters, a.rounds)
    turns = {name: run for name, run, first_ms, _ in entries
             if first_ms * (a.warmup + rounds * (per_turn + 1)) <= budget_ms}
    timed_in_turns = timings_in_turns(turns, flush, a.iters, a.warmup, a.rounds) if turns else {}
    for name, run, first_ms, kw in entries:
        try:
            if name in timed_in_turns:
                t = timed_in_turns[name]
                if isinstance(t, Exception):
                    raise t
                record(name, t[0], t[1], rounds * per_turn, **kw)
                continue
            t = timed(run, first_ms, a, flush)
            if t is None:
                why = f"skipped: one run took {first_ms / 1e3:.1f} s > --budget-s"
                if name.startswith("sdpa"):
                    not_timed(name, why)
                else:
                    not_timed(name, f"{why} ({kw['check']} against flash)")
            else:
                record(name, *t, **kw)
        except Exception as e:
            if not name.startswith("sdpa"):  # a peer that refuses is reported, not a failure
                status = 1
            not_timed(name, "error: " + one_line(e))
    del keep, entries, turns
    torch.cuda.empty_cache()
    return res, status


def print_timing_table(rows, names):
    print("\nBackward TFLOP/s (2.5x the forward's flops; causal: visible pairs); ratios: the "
          "fastest version over the peer")
    vs = list(names)
    print(f"{'dim':>4} {'causal':>6} {'seq':>6} {'flash':>7} {'cudnn':>7} " +
          " ".join(f"{n.split('-')[0]:>6}" for n in vs) + f" {'best/flash':>10} {'best/cudnn':>10}")
    for s, res in rows:
        best = max((res.get(n, 0.0) for n in vs), default=0.0)
        fl, cu = res.get("sdpa-flash", 0.0), res.get("sdpa-cudnn", 0.0)
        print(f"{s.dim:>4} {s.causal:>6} {s.seq_q:>6} {fl:>7.1f} {cu:>7.1f} " +
              " ".join(f"{res[n]:>6.1f}" if n in res else f"{'-':>6}" for n in vs) +
              f" {best / fl if fl else 0:>10.2f} {best / cu if cu else 0:>10.2f}")


# ---- Accuracy ------------------------------------------------------------------------------------

def visible_mask(seq_q, seq_kv, causal, device="cuda"):
    """[seq_q, seq_kv] bool: the bottom-right causal mask (row i sees key j <= i + seq_kv - seq_q),
    or every pair."""
    r = torch.arange(seq_q, device=device)[:, None]
    c = torch.arange(seq_kv, device=device)[None, :]
    if not causal:
        return torch.ones(seq_q, seq_kv, dtype=torch.bool, device=device)
    return c <= r + (seq_kv - seq_q)


def reference_grads(q, k, v, d_o, causal, scale=None):
    """The exact dQ, dK, dV in float64, one (batch, head) at a time, by the formulas of
    reference_bwd.h; q, d_o [batch, seq_q, heads, dim], k, v [batch, seq_kv, kv_heads, dim].

        s = scale Q K^T (masked: -inf),  P = exp(s - lse),  O = P V,  D = rowsum(dO o O)
        dV += P^T dO,  dP = dO V^T,  dS = P o (dP - D),  dQ = scale dS K,  dK += scale dS^T Q

    A row that sees no key has P = 0, so it adds nothing and its dQ is 0."""
    batch, seq_q, heads, dim = q.shape
    seq_kv, kv_heads = k.shape[1], k.shape[2]
    group = heads // kv_heads
    scale = dim ** -0.5 if scale is None else scale
    f64 = torch.float64
    dq = torch.zeros(q.shape, dtype=f64, device=q.device)
    dk = torch.zeros(k.shape, dtype=f64, device=q.device)
    dv = torch.zeros(v.shape, dtype=f64, device=q.device)
    seen = visible_mask(seq_q, seq_kv, causal, q.device)
    for b in range(batch):
        for h in range(heads):
            g = h // group  # GQA: the KV head of query head h
            qh, doh = q[b, :, h].to(f64), d_o[b, :, h].to(f64)
            kh, vh = k[b, :, g].to(f64), v[b, :, g].to(f64)
            s = (scale * (qh @ kh.T)).masked_fill(~seen, float("-inf"))
            lse = torch.logsumexp(s, dim=1, keepdim=True)  # -inf for a row that sees no key
            p = torch.where(torch.isneginf(lse), 0.0, torch.exp(s - lse))
            o = p @ vh
            dv[b, :, g] += p.T @ doh
            dp = doh @ vh.T
            ds = p * (dp - (doh * o).sum(dim=1, keepdim=True))
            dq[b, :, h] = scale * (ds @ kh)
            dk[b, :, g] += scale * (ds.T @ qh)
    return dq, dk, dv


def autograd_grads(q, k, v, d_o, causal):
    """The same gradients by torch autograd through softmax attention in float64 (for shapes
    where every row sees a key): the check of reference_grads()."""
    heads, kv_heads, dim = q.shape[2], k.shape[2], q.shape[3]
    qf, kf, vf = (x.to(torch.float64).requires_grad_() for x in (q, k, v))
    ke, ve = (x.repeat_interleave(heads // kv_heads, dim=2) for x in (kf, vf))
    s = torch.einsum("bihd,bjhd->bhij", qf, ke) * dim ** -0.5
    s = s.masked_fill(~visible_mask(q.shape[1], k.shape[1], causal, q.device), float("-inf"))
    o = torch.einsum("bhij,bjhd->bihd", torch.softmax(s, dim=-1), ve)
    return torch.autograd.grad(o, (qf, kf, vf), d_o.to(torch.float64))


def reference_self_check(seed):
    """reference_grads() against autograd on small shapes (GQA, seq_q != seq_kv, causal and not):
    the largest relative difference."""
    worst = 0.0
    for causal in (0, 1):
        s = Shape(2, 4, 2, 100, 160, 64, causal)
        c = Case(s, seed + causal)
        ref = reference_grads(c.q, c.k, c.v, c.d_o, causal)
        auto = autograd_grads(c.q, c.k, c.v, c.d_o, causal)
        for r, x in zip(ref, auto):
            worst = max(worst, ((r - x).norm() / x.norm()).item())
    return worst


def errors(got, ref):
    """(relative L2, max abs) of one gradient against the float64 reference; NaN when got holds
    a non-finite value."""
    d = got.to(torch.float64) - ref
    if not torch.isfinite(got).all():
        return float("nan"), float("nan")
    return (d.norm() / ref.norm()).item(), d.abs().max().item()


def accuracy_part(a, lesson, versions, csv_out):
    """Part 2; returns status."""
    status = 0
    shapes = [Shape(b, h, hkv, n, n, d, c) for quick, (b, h, hkv, n, d, c) in ACC_SHAPES
              if quick or not a.acc_quick]
    print(f"\nPart 2, accuracy against float64 on the same bf16 inputs; the bar: each version's "
          f"relative L2 error at most {a.bar:g}x SDPA flash's on dQ, dK and dV"
          + (" (--bar 0: not judged)" if a.bar <= 0 else ""), flush=True)
    worst = reference_self_check(a.seed)
    ok = worst < 1e-9
    status |= not ok
    print(f"l09-acc the float64 reference against torch autograd (GQA 2:1, seq 100/160, causal and "
          f"not): largest relative difference {worst:.1e} {'ok' if ok else 'FAIL'}", flush=True)
    head = (f"{'shape':<27} {'impl':<20} {'rel L2 dQ':>9} {'dK':>8} {'dV':>8}   {'max abs dQ':>10} "
            f"{'dK':>8} {'dV':>8}   {'/ flash dQ':>10} {'dK':>5} {'dV':>5}  verdict")
    lines = []
    for s in shapes:
        c = Case(s, a.seed + 7 * s.seq_q + s.dim + s.causal + s.kv_heads)
        ref = reference_grads(c.q, c.k, c.v, c.d_o, s.causal)
        ref_max = [r.abs().max().item() for r in ref]
        results = {}  # impl -> ([(rel, max_abs)] per gradient, note) or error text
        for name, _ in PEERS:
            run = None
            try:
                run, note = sdpa_peer(backend_of(name), c)
                results[name] = ([errors(g, r) for g, r in zip(run(), ref)], note)
            except Exception as e:
                results[name] = "error: " + one_line(e)
            finally:
                del run
        try:
            lesson.forward(c)
            forward_error = None
        except RuntimeError as e:
            forward_error = "error: " + one_line(e)
        for v in versions:
            name = lesson.name(v)
            if forward_error:
                results[name] = forward_error
                continue
            ws, _, why = workspace(lesson, v, s, a.max_gb * GB)
            if why:
                results[name] = f"skipped: workspace {why}"
                continue
            try:
                lesson.poison(c)
                lesson.backward(v, c, ws)
                torch.cuda.synchronize()
                results[name] = ([errors(g, r) for g, r in zip((c.dq, c.dk, c.dv), ref)], "")
            except Exception as e:
                results[name] = "error: " + one_line(e)
            finally:
                del ws
        flash = results.get("sdpa-flash")
        flash_rel = [e[0] for e in flash[0]] if isinstance(flash, tuple) else [None] * 3
        for name, r in results.items():
            ours = not name.startswith("sdpa-")
            if isinstance(r, str):  # error or skipped
                status |= ours and r.startswith("error")
                lines.append(f"{s.label():<27} {name:<20} {r}")
                print(f"l09-acc {s.label()} impl={name} {r}", flush=True)
                for g in GRADS:
                    csv_out.row(impl=name, grad=g, verdict=r, bar=a.bar, **s.columns())
                continue
            errs, note = r
            ratios = [e[0] / f if f else None for e, f in zip(errs, flash_rel)]
            if not ours:
                verdict = "peer"
            elif a.bar <= 0:
                verdict = "not judged"
            elif any(x is None for x in ratios):
                verdict = "no flash figure"
            else:  # NaN compares false: a non-finite gradient fails
                verdict = "PASS" if all(x <= a.bar for x in ratios) else "FAIL"
            status |= verdict == "FAIL"
            rel = " ".join(f"{e[0]:>{w}.2e}" for e, w in zip(errs, (9, 8, 8)))
            mx = " ".join(f"{e[1]:>{w}.2e}" for e, w in zip(errs, (10, 8, 8)))
            rt = " ".join("-".rjust(w) if x is None else f"{x:>{w}.2f}"
                          for x, w in zip(ratios, (10, 5, 5)))
            line = (f"{s.label():<27} {name:<20} {rel}   {mx}   {rt}  {verdict}"
                    + (f" ({note})" if note else ""))
            lines.append(line)
            print("l09-acc " + line, flush=True)
            for g, e, f, x, rmax in zip(GRADS, errs, flash_rel, ratios, ref_max):
                csv_out.row(impl=name, grad=g, rel_l2=f"{e[0]:.4e}", max_abs=f"{e[1]:.4e}",
                            ref_max_abs=f"{rmax:.4e}",
                            flash_rel_l2=f"{f:.4e}" if f is not None else None,
                            ratio=f"{x:.3f}" if x is not None else None, bar=a.bar,
                            verdict=verdict, note=note, **s.columns())
        del c, ref
        torch.cuda.empty_cache()
    print("\nAccuracy against float64 (rel L2 = ||got - ref|| / ||ref||; / flash: a version's "
          "rel L2 over flash's)")
    print(head)
    for line in lines:
        print(line)
    return status


# ---- Memory --------------------------------------------------------------------------------------

def memory_part(a, lesson, csv_out):
    """Part 3; returns status."""
    status, table = 0, []
    versions = ints(a.mem_versions)
    print(f"\nPart 3, memory of one backward beyond its inputs and outputs: batch {a.mem_batch}, "
          f"heads {a.mem_heads}, dim {a.mem_dim}, {'causal' if a.mem_causal else 'full'}; "
          f"torch.cuda.max_memory_allocated(); GB = 1e9 bytes", flush=True)
    for seq in ints(a.mem_seqs):
        s = Shape(a.mem_batch, a.mem_heads, a.mem_heads, seq, seq, a.mem_dim, a.mem_causal)
        for name, _ in PEERS:
            st, row = memory_peer(name, s, a.seed)
            status |= st
            table.append(row)
            csv_out.row(**row)
        for v in versions:
            st, row = memory_version(lesson, v, s, a)
            status |= st
            table.append(row)
            csv_out.row(**row)
    print(f"\n{'seq':>6}  {'impl':<20} {'inputs+outputs':>14} {'workspace':>10} {'model':>10} "
          f"{'measured extra':>14}  check")
    for r in table:
        print(f"{r['seq_q']:>6}  {r['impl']:<20} {human(r['io_bytes']):>14} "
              f"{human(r.get('workspace_bytes')):>10} {human(r.get('model_bytes')):>10} "
              f"{human(r.get('extra_bytes')):>14}  {r['check']}")
    return status


def memory_peer(name, s, seed):
    """(status, CSV row) of one SDPA backend's backward."""
    c = Case(s, seed + s.seq_q)
    row = dict(impl=name, io_bytes=c.io_bytes(), **s.columns())  # its own O, LSE, dQ... alike
    run = None
    try:
        run, note = sdpa_peer(backend_of(name), c)  # the graph: forward's O and LSE saved
        del c.o, c.lse, c.dq, c.dk, c.dv  # the lesson's buffers: not the peer's business
        free = free_bytes()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        grads = run()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        returned = sum(g.numel() * g.element_size() for g in grads)
        del grads
        row.update(peak_bytes=peak, extra_bytes=peak - returned, free_bytes=free,
                   check="ok" + (f" ({note})" if note else ""))
    except Exception as e:
        row.update(check="error: " + one_line(e))
    finally:
        del run, c
        torch.cuda.empty_cache()
    print(f"l09-mem impl={name} seq={s.seq_q} extra={human(row.get('extra_bytes'))} "
          f"{row['check']}", flush=True)
    return 0, row


def memory_version(lesson, v, s, a):
    """(status, CSV row) of one lesson version's backward, its workspace a torch tensor."""
    name = lesson.name(v) or f"v{v}"
    c = Case(s, a.seed + s.seq_q)
    need = lesson.workspace_bytes(v, s)
    row = dict(impl=name, io_bytes=c.io_bytes(), workspace_bytes=need,
               model_bytes=model_workspace(v, s), **s.columns())
    status = 0
    try:
        lesson.forward(c)
        free = free_bytes()
        row["free_bytes"] = free
        limit = a.max_gb * GB if a.max_gb else None
        if need > free - HEADROOM or (limit and need > limit):
            row["check"] = f"refused: needs {need / GB:.1f} GB, {free / GB:.1f} GB free" + (
                f", --max-gb {a.max_gb:g}" if limit and need <= free - HEADROOM else "")
        else:
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            ws = torch.empty(need, dtype=torch.uint8, device="cuda") if need else None
            lesson.backward(v, c, ws)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
            del ws
            row.update(peak_bytes=peak, extra_bytes=peak, check="ok")
    except Exception as e:
        status = 1
        row["check"] = "error: " + one_line(e)
    finally:
        del c
        torch.cuda.empty_cache()
    print(f"l09-mem impl={name} seq={s.seq_q} workspace={human(need)} "
          f"model={human(row['model_bytes'])} extra={human(row.get('extra_bytes'))} "
          f"{row['check']}", flush=True)
    return status, row


# ---- CSV files -----------------------------------------------------------------------------------

class TableCsv:
    """A CSV of fixed columns (nothing when path is None); every row carries the device's and the
    software's columns and lesson 09."""

    def __init__(self, path, columns, common):
        self.columns, self.common, self.file = columns, dict(common, lesson="09"), None
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self.file = open(path, "w", newline="")
            self.writer = csv.DictWriter(self.file, fieldnames=columns, extrasaction="ignore")
            self.writer.writeheader()

    def row(self, **kv):
        if self.file is None:
            return
        r = {c: "" for c in self.columns}
        r.update(self.common)
        r.update({k: v for k, v in kv.items() if v is not None})
        self.writer.writerow(r)
        self.file.flush()

    def close(self):
        if self.file is not None:
            self.file.close()
            self.file = None


# ---- main ----------------------------------------------------------------------------------------

def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.environ.get("ATTN_LIB") or os.path.join(
        ROOT, "build", "lib", "libattn_lessons.so"),
        help="path to libattn_lessons.so (default: $ATTN_LIB, else build/lib of this checkout)")
    ap.add_argument("--iters", type=int, default=None, help="timed runs (default 10; quick 3)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up runs (default 3; quick 1)")
    ap.add_argument("--seqs", default=None, help="default 512,1024,2048,4096,8192,16384")
    ap.add_argument("--dims", default=None, help="default 64,128")
    ap.add_argument("--causal", default=None, help="default 0,1")
    ap.add_argument("--versions", default=None,
                    help=f"lesson 09 versions (default: 1..{L09_VERSIONS})")
    ap.add_argument("--group", type=int, default=1,
                    help="timing: query heads per KV head (GQA), dividing 2048 / dim (default 1)")
    ap.add_argument("--csv", default=None, help="the timing table in lesson 04's short format")
    ap.add_argument("--out", default=None, help="folder for peers-lesson09.csv, "
                    "accuracy-lesson09.csv and memory-lesson09.csv (default: $PEERS_OUT; "
                    "neither: no CSV)")
    ap.add_argument("--accuracy-csv", default=None, help="the accuracy CSV (default: in --out)")
    ap.add_argument("--memory-csv", default=None, help="the memory CSV (default: in --out)")
    ap.add_argument("--quick", action="store_true", help="a small grid, for a smoke test")
    only = ap.add_mutually_exclusive_group()
    only.add_argument("--timing-only", action="store_true")
    only.add_argument("--accuracy-only", action="store_true")
    only.add_argument("--memory-only", action="store_true")
    ap.add_argument("--bar", type=float, default=2.0,
                    help="largest rel L2 error of a version over flash's (0: report only)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds in which a shape's implementations take turns (--iters runs "
                         "each in all)")
    ap.add_argument("--budget-s", type=float, default=10.0,
                    help="seconds of runs per implementation and shape in the timing part")
    ap.add_argument("--busy-us", type=float, default=100.0,
                    help="microseconds of a sleep kernel after each L2 flush, covering the host's "
                         "launch cost (0: none)")
    ap.add_argument("--max-gb", type=float, default=0.0,
                    help="largest workspace a version may get, GB (default 0: free memory)")
    ap.add_argument("--mem-seqs", default=None, help="default 1024,...,65536 (quick: 1024,4096)")
    ap.add_argument("--mem-batch", type=int, default=1)
    ap.add_argument("--mem-heads", type=int, default=16)
    ap.add_argument("--mem-dim", type=int, default=128)
    ap.add_argument("--mem-causal", type=int, default=0)
    ap.add_argument("--mem-versions", default="1,4")
    ap.add_argument("--seed", type=int, default=9)
    a = ap.parse_args(argv)
    for k, v in (QUICK if a.quick else FULL).items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    try:  # bad values stop here, with one line and exit status 2 (argparse's)
        lists = [ints(x) for x in (a.seqs, a.dims, a.causal, a.versions or "1", a.mem_seqs,
                                   a.mem_versions)]
    except ValueError as e:
        ap.error(f"a list of integers is expected: {e}")
    if any(d not in (64, 128) for d in lists[1] + [a.mem_dim]):
        ap.error("--dims and --mem-dim take 64 and 128 (the lesson's builds)")
    if any(c not in (0, 1) for c in lists[2] + [a.mem_causal]):
        ap.error("--causal and --mem-causal take 0 and 1")
    if any(v < 1 or v > L09_VERSIONS for v in lists[3] + lists[5]):
        ap.error(f"versions are 1 to {L09_VERSIONS}")
    if any(n < 1 for n in lists[0] + lists[4]) or a.iters < 1 or a.warmup < 0 or a.rounds < 1:
        ap.error("seqs, --iters and --rounds must be positive, --warmup not negative")
    if a.group < 1 or any((HIDDEN // d) % a.group for d in lists[1]):
        ap.error(f"--group {a.group}: it must divide every dim's heads ("
                 + ", ".join(f"{HIDDEN // d} at dim {d}" for d in lists[1]) + ")")
    return a


def main(argv=None):
    a = parse(argv)
    why, lib = missing(a.lib)
    if why:
        print(f"lesson09_peers: skipped: {why}")
        return SKIPPED
    lesson = Lesson(lib)
    versions = ints(a.versions) if a.versions else list(range(1, L09_VERSIONS + 1))
    for v in versions + ints(a.mem_versions):
        if lesson.name(v) is None:
            print(f"lesson09_peers: the library names no version {v} "
                  f"(l09_version_name({v}) is NULL)")
            return 2
    names = [lesson.name(v) for v in versions]
    dev = torch.cuda.get_device_properties(0)
    print(f"device: {dev.name}, {dev.multi_processor_count} SMs; torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}; lesson 09 versions "
          f"{', '.join(names)}; O and LSE from lesson 04's version {L04_VERSION}", flush=True)

    flush = L2Flush(a.busy_us)

    out_dir = peers_out_dir(a.out)
    common = software(dev)
    status = 0
    run_timing = not (a.accuracy_only or a.memory_only)
    run_accuracy = not (a.timing_only or a.memory_only)
    run_memory = not (a.timing_only or a.accuracy_only)

    if run_timing:
        out = PeerCsv(9, out_dir)
        out.set_common(iters=a.iters, **common)
        short_csv = []
        rows, st = timing_part(a, lesson, versions, flush, out, short_csv)
        status |= st
        out.close()
        if a.csv:
            with open(a.csv, "w") as f:
                f.write("impl,dim,causal,seq,batch,heads,ms,tflops,iters,check\n" +
                        "\n".join(short_csv) + "\n")
        print_timing_table(rows, names)
    if run_accuracy:
        path = a.accuracy_csv or (os.path.join(out_dir, "accuracy-lesson09.csv") if out_dir
                                  else None)
        acc = TableCsv(path, ACCURACY_COLUMNS, common)
        status |= accuracy_part(a, lesson, versions, acc)
        acc.close()
    if run_memory:
        path = a.memory_csv or (os.path.join(out_dir, "memory-lesson09.csv") if out_dir else None)
        mem = TableCsv(path, MEMORY_COLUMNS, common)
        status |= memory_part(a, lesson, mem)
        mem.close()
    print(f"\nlesson09_peers: {'every check passed' if status == 0 else 'a check FAILED'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
