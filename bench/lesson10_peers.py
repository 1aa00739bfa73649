#!/usr/bin/env python3
"""Lesson 10's draft-token decode against lesson 07's paged decode and cuDNN's paged SDPA, and
over an FP8 cache (its version 2) against itself over the bf16 cache (version 1).

One step of speculative decoding: every sequence has T draft tokens (--tokens, 1 to 16), whose
queries attend to the sequence's seq_kv keys in a paged cache, the last T of them the draft tokens'
own (appended before the step, as a server appends them). 32 query heads (--heads), 8 KV heads
(--kv-heads), head dimensions 128 and 256 (--dims; 64 as well: --dims 128,256,64), bf16, pages of 16 tokens
(--block-size), batch 1, 16, 64 (--batches), seq_kv 4k, 32k, 128k (--kvs), every sequence seq_kv
keys. Masks (--mask, a comma list runs several), as lessons/10_serving_decode/draft.h defines them
(draft token i of n keys and T tokens stands at position n - T + i):
  none     every key of its sequence
  causal   the keys up to its own position (bottom-right, as lesson 07's causal flag) (default)
  tree     the n - T keys before the draft tokens, and draft token j's key when bit j of its tree
           word is set: a binary tree in breadth-first order, token i's parent (i - 1) // 2, each
           token seeing the path from the root to itself (bit i always set), as the lesson's
           program builds it (versions.c)

Values, the same for every implementation of a shape: K and V drawn dense `[batch, seq_kv,
kv_heads, dim]`, then copied into pools `[num_blocks, block_size, kv_heads, dim]` by lesson 07's
make_pools (bench/lesson07_peers.py): the total pages plus a quarter spare, each sequence's pages a
random permutation of the pool (torch.randperm), NaN in every slot no token owns (the spare pages,
the tail of a sequence's last page; table columns past a sequence's last page name a spare page),
so a kernel that read one would print NaN. The dense copies are freed once the pools hold them
(the reference keeps what it needs, see below). One pool per (dim, batch, seq_kv) serves every
mask and token count; Q is drawn per (mask, tokens), packed `[batch * T, heads, dim]` (sequence b's
draft tokens are rows b * T .. b * T + T - 1: q_start[b] = b * T, q_lens[b] = T, seq_lens[b] =
seq_kv). Shapes whose K and V pools pass --max-gb are skipped and said so (the dense copies sit
beside the pools while they are filled: about 1.8 times that at the peak). Version 2's FP8 pools
(below) are made from the bf16 pools once the dense copies are gone (the reference's copies
aside) and add (dim + 4) / (2 dim) of the bf16 pools' size (about 0.52): about 1.5 times the bf16
pools then, below the filling's peak; --max-gb counts the bf16 pools only. A shape whose FP8
pools do not fit is measured without its FP8 rows (a skipped line and CSV rows).

The FP8 cache (l10-v2-fp8, fp8_pools() below): per (dim, batch, seq_kv), e4m3 pools `[num_blocks,
block_size, kv_heads, dim]` uint8 and scales `[num_blocks, kv_heads, block_size]` fp32, K and V,
written once by the library's l10_fp8_append (quantise-on-append: one scale per key row, its amax
/ 448) from the same bf16 pools, viewed as `[num_blocks * block_size, kv_heads, dim]` rows, slot s
= block * block_size + row for row s, so the block table and the lengths serve both caches. Only
the slots a token owns are appended: the NaN slots get slot -1, which the append skips (a NaN
row has no meaningful amax, and the quantiser takes finite values only), and keep what they
are created with, code 0x7f (an e4m3 NaN) and a NaN scale, so that version 2, like version 1 on
the bf16 NaN, prints NaN if it uses an unowned slot as a key or lets a row past a sequence's end
into P V unzeroed. Needs --block-size 16 or more (L10_FP8_MIN_BLOCK), compute capability 8.9 or
more, and a library with version 2; otherwise its rows are skipped and say why. --no-fp8: none.

The figure is the rate of the bf16 K + V bytes the lengths need, 2 * sum(lengths) * kv_heads *
dim * 2 bytes over the median time, the same count for every implementation and token count but
one (the block table, Q and O are not counted), so those rates compare as inverse times; pct_hbm
is that rate over the HBM peak (2 x memory clock x bus width, bench/lesson02_peers.py's
hbm_peak_gbs; --peak-gbs replaces it). The one: l10-v2-fp8 counts the bytes it really reads,
2 * sum(lengths) * kv_heads * (dim + 4) (an e4m3 code per value and one fp32 scale per key row,
K and V), for its TB/s and its pct_hbm alike; its speed against the bf16 cache is vs_bf16, the
median time of l10-v1-draft at the same step over its own (the ratio of tokens per second). The
CSV's bytes column is the count each row's gbs and pct_hbm use, and its what text says which.
vs_one_token is a row's rate over the one-token rate: lesson 10's row at T = 1 of the same (dim,
mask, batch, seq_kv); the lesson's claim is that version 1 reads each sequence's keys once for all
its draft tokens, so its vs_one_token should stay near 1 as T grows, while a kernel that reads
them once per token falls as 1 / T. The one-token row is measured even when
--tokens leaves 1 out (lesson 10 only, then).

Implementations (printed as impl=...; the impl column of the CSV adds the mask: l10-v1-draft-causal,
l10-v2-fp8-causal, l07-v5-balance-causal, cudnn-paged-none, ...; the token count is the seq_q
column, and both are in the what text, with the block size):
  l10-v1-draft    lesson 10's version 1 (l10_draft_d128 / _d64) through ctypes: an l10_step struct
                  (the L10Step class below, field for field) filled with the data_ptr()s of the
                  torch tensors, k_scale and v_scale NULL (the bf16 cache), its workspace
                  (l10_draft_workspace_bytes: the chunks' partial states) allocated once per step
                  shape
  l10-v4-wgmma    lesson 10's version 4 (l10_wg_d128 / _d64 / _d256, sm_90a): version 1's step and
                  check, one warpgroup a unit with wgmma, its workspace l10_wg_workspace_bytes;
                  skipped with the reason elsewhere
  l10-v2-fp8      lesson 10's version 2 (l10_fp8_d128 / _d64): the same step and Q over the FP8
                  pools, k_cache / v_cache their codes and k_scale / v_scale their scales, the
                  workspace sized by l10_draft_workspace_bytes with the scales set. Only the
                  requested token counts (no one-token row of its own); dtype e4m3 in the CSV
  l07-v5-balance  lesson 07's version 5 (l07_paged_balance_d128 / _d64) on the same pools, table
                  and Q: its Q `[batch, seq_q, heads, dim]` is the packed Q when every sequence
                  has T tokens; seq_q = T, causal flag 1 for the causal mask, seq_lens_host NULL
                  (equal lengths). Only T <= 8 (L06_MAX_SEQ_Q), masks none and causal, and head
                  dimensions 64 and 128: a skipped line (and a CSV row saying so) otherwise
  cudnn-paged     cuDNN's paged SDPA graph (the cudnn Python package, nvidia-cudnn-frontend, the
                  graph of lesson07_peers.py with s_q = T): q and o `[batch, heads, T, dim]` views
                  of the packed tensors, the pools `[num_blocks, kv_heads, block_size, dim]`
                  (.permute(0, 2, 1, 3), the same memory), the table `[batch, 1, max_blocks, 1]`,
                  the lengths `[batch, 1, 1, 1]`, padding mask, and for the causal mask its
                  bottom-right diagonal (diagonal_alignment BOTTOM_RIGHT with right bound 0, or
                  use_causal_mask_bottom_right on older frontends; a frontend with neither, or a
                  graph cuDNN refuses, is an error row saying why). cuDNN has no tree mask: no
                  row for --mask tree. When `import cudnn` fails, the wheel in .peers/*.whl is
                  installed into /tmp/cudnnfe (bench/cudnn_peer.py); when that fails too, every
                  cuDNN row is an error row saying why.

Timing, as lesson07_peers.py times: each run alone between CUDA events, the L2 flushed before it
(bench/peer_timing.py reads a buffer twice the L2's size) and then (--busy-us) a sleep kernel, so
that the GPU is still busy while the host enqueues the run: the figure is the GPU's time, not the
host's launch cost (Python, ctypes, cuDNN's execute), which each line prints apart as host_us (the
mean of 10 back-to-back calls); the figure is the median of --iters timed runs. A step's
implementations are first each run once and checked, then timed taking turns: --warmup runs each,
then --rounds rounds (default 5), each running every implementation once untimed and then --iters
/ --rounds times timed, the order rotated from round to round (bench/peer_timing.py,
timings_in_turns), so that the clocks' drift over the step falls on all of them alike.

Check: every implementation's O, NaN-poisoned before its checked run, is compared with an fp32
torch reference computed per sequence on dense copies of K and V with the same mask (explicit
Q K^T, masked softmax, P V in fp32; query head h reads KV head h // (heads / kv_heads)). Where
sum(lengths) * kv_heads * dim <= --ref-max that is every sequence; above it, the first and the last
sequence (when they fit under --ref-max) against fp32, and the whole O against the first
implementation that ran (lesson 10's, the reference for the rest of the shape). A difference of
2e-2 or more, or a NaN anywhere in O, prints MISMATCH and sets exit status 1; so does an error of
a lesson kernel (cuDNN's errors are reported, not failed). The FP8 row is judged apart (check_fp8):
e4m3 rounds each K and V value by up to 2^-4 of itself, so its O is compared by relative L2 error,
||O - ref|| / ||ref||, against the same fp32 reference (and against version 1's O on the rows
fp32 does not cover), printed as `fp8 rel_l2=` with version 1's relative L2 error beside it;
MISMATCH above 5e-2 or for a NaN or inf anywhere in O. Its O is never the reference of another
row.

    python3 bench/lesson10_peers.py [--lib build/lib/libattn_lessons.so] [--iters 20] [--warmup 3]
        [--batches 1,16,64] [--kvs 4096,32768,131072] [--tokens 1,2,4,8,16] [--mask causal]
        [--dims 128,256] [--heads 32] [--kv-heads 8] [--block-size 16] [--max-gb 24]
        [--ref-max 268435456] [--busy-us 100] [--rounds 5] [--peak-gbs G] [--no-fp8]
        [--out DIR]

Prints one line per measurement (`l10 impl=... dim=... batch=... seq_kv=... tokens=... mask=...
us=... tbs=... pct_hbm=... vs_one_token=... host_us=...`; the FP8 row prints vs_bf16= in place of
vs_one_token=, and its tbs and pct_hbm count the FP8 bytes), then a table of TB/s per (dim, mask,
batch, seq_kv, tokens) with lesson 10's % of HBM and vs_one_token, and its rate over lesson 07's
and over cuDNN's, and, with the FP8 rows, version 2's TB/s and % of HBM (FP8 bytes) and its speed
over version 1's. With --out DIR (or $PEERS_OUT) every figure is also a row of
DIR/peers-lesson10.csv in the columns of bench/peer_timing.py (vs_bf16 has no column of its own:
it is in the FP8 row's what text, and is the ratio of the two rows' ms).

The l10_step layout: the library exports no sizeof, so L10Step was checked against the C header
by hand (a C program printing sizeof(l10_step) and offsetof() of every field, built with gcc -I
common -I lessons/06_flash_decoding -I lessons/07_paged_attention -I lessons/10_serving_decode -I
/usr/local/cuda/include on x86-64 Linux: 120 bytes since version 2 appended k_scale and v_scale,
L10_STEP_OFFSETS below). The script compares ctypes' layout with those numbers before it calls
anything, and also asks the library: it hands l10_step_check() (a host function) a valid step and
then that step with one field at a time made bad, and each refusal must name the field it changed
(and, with a library that has version 2, that one of k_scale and v_scale set without the other
is refused, both set accepted); a struct that drifted from the header stops the script (exit 1)
before a kernel reads garbage.

Exit status: 0, 1 (a MISMATCH, a lesson kernel's error, a struct that does not match the library),
2 (a bad option), 77 (cannot run here: no torch, no CUDA GPU, or no lesson 10 in the library; said
in one line, and bench/run.sh reports it as skipped).
"""
import argparse
import ctypes
import math
import os
import sys

SKIPPED = 77          # exit status of a run that cannot happen here (ctest's SKIP_RETURN_CODE)
TOL = 2e-2            # largest |O - reference| that passes
FP8_TOL = 5e-2        # largest relative L2 error of the FP8 row's O that passes (e4m3 rounding)
L10_FP8_MIN_BLOCK = 16  # serving_decode.h: version 2's pages hold at least 16 tokens
HOST_RUNS = 10        # back-to-back calls whose mean is host_us
L10_MAX_DRAFT = 16    # serving_decode.h: the most draft tokens per sequence and step
L07_MAX_SEQ_Q = 8     # L06_MAX_SEQ_Q (flash_decoding.h): lesson 07's launchers take 1..8 queries
MASKS = {"none": 0, "causal": 1, "tree": 2}  # enum l10_mask (draft.h): an int in the struct
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

try:  # torch is optional until main(): without it the script says so and exits 77
    import torch

    from cudnn_peer import cudnn_handle
    from lesson02_peers import hbm_peak_gbs
    from lesson07_peers import load_lib as load_l07_lib
    from lesson07_peers import make_pools
    from peer_timing import (L2Flush, PeerCsv, peers_out_dir, software, turn_plan,
                             turns_and_host_us)
except ImportError:
    torch = None


class L10Step(ctypes.Structure):
    """l10_step (lessons/10_serving_decode/serving_decode.h), field for field: eight device
    pointers, eight ints, the mask (enum l10_mask, an int), the scale (a float), then the FP8
    cache's two scale pointers (version 2; NULL for the bf16 cache). The pointers are declared
    void * here; their C types (const int *, const uint32_t *, const float *) have the same size."""
    _fields_ = [("q", ctypes.c_void_p),            # [total_q, heads, dim] bf16
                ("q_start", ctypes.c_void_p),      # [batch] int32
                ("q_lens", ctypes.c_void_p),       # [batch] int32
                ("tree", ctypes.c_void_p),         # [total_q] uint32 with the tree mask, else NULL
                ("k_cache", ctypes.c_void_p),      # [num_blocks, block_size, kv_heads, dim] bf16
                ("v_cache", ctypes.c_void_p),
                ("block_table", ctypes.c_void_p),  # [batch, max_blocks] int32
                ("seq_lens", ctypes.c_void_p),     # [batch] int32, the draft tokens' keys included
                ("batch", ctypes.c_int),
                ("heads", ctypes.c_int),
                ("kv_heads", ctypes.c_int),
                ("dim", ctypes.c_int),
                ("max_q", ctypes.c_int),
                ("max_seq_kv", ctypes.c_int),
                ("max_blocks", ctypes.c_int),
                ("block_size", ctypes.c_int),
                ("mask", ctypes.c_int),            # l10_mask: NONE 0, CAUSAL 1, TREE 2
                ("scale", ctypes.c_float),
                # version 2's FP8 cache: [num_blocks, kv_heads, block_size] fp32, the scale of each
                # key row of k_cache / v_cache (then e4m3 codes); NULL for the bf16 cache
                ("k_scale", ctypes.c_void_p),
                ("v_scale", ctypes.c_void_p)]


# sizeof(l10_step) and offsetof(l10_step, field), printed by this C program against the header
# (gcc -std=c11 -I common -I lessons/06_flash_decoding -I lessons/07_paged_attention
#  -I lessons/10_serving_decode -I /usr/local/cuda/include, x86-64 Linux, LP64):
#     #include <stdio.h>
#     #include <stddef.h>
#     #include "serving_decode.h"
#     #define F(x) printf("%s %zu\n", #x, offsetof(l10_step, x));
#     int main(void) { printf("sizeof %zu\n", sizeof(l10_step)); F(q) F(q_start) ... F(v_scale) }
# The library exports no sizeof; re-run that program when the header's struct changes, and update
# L10Step and these numbers together. layout_errors() compares ctypes' layout with them and
# probe_layout() asks the library's l10_step_check() which field each value landed in. Version 2
# appended k_scale and v_scale after the float scale (100..103): no padding, 104 and 112, and
# sizeof 120 (104 before); the program above, re-run against the header with them, printed these.
L10_STEP_SIZE = 120
L10_STEP_OFFSETS = {"q": 0, "q_start": 8, "q_lens": 16, "tree": 24, "k_cache": 32, "v_cache": 40,
                    "block_table": 48, "seq_lens": 56, "batch": 64, "heads": 68, "kv_heads": 72,
                    "dim": 76, "max_q": 80, "max_seq_kv": 84, "max_blocks": 88, "block_size": 92,
                    "mask": 96, "scale": 100, "k_scale": 104, "v_scale": 112}


def layout_errors():
    """What differs between L10Step and the C layout recorded above ([] when nothing)."""
    errs = []
    if ctypes.sizeof(L10Step) != L10_STEP_SIZE:
        errs.append(f"sizeof {ctypes.sizeof(L10Step)}, the header's {L10_STEP_SIZE}")
    names = [f[0] for f in L10Step._fields_]
    if names != list(L10_STEP_OFFSETS):
        errs.append(f"fields {names}, the header's {list(L10_STEP_OFFSETS)}")
    for name, off in L10_STEP_OFFSETS.items():
        got = getattr(L10Step, name).offset if hasattr(L10Step, name) else None
        if got != off:
            errs.append(f"offsetof({name}) {got}, the header's {off}")
    return errs


def probe_layout(lib, scales=True):
    """Asks l10_step_check() (host only, it reads no device memory) about a valid step and then
    about that step with one field at a time made bad: each refusal must name the field changed.
    With @p scales (a library with version 2), also the FP8 cache's two pointers: the valid step
    with both set must pass, and with one of them alone must be refused as "k_scale and v_scale:
    both set ... or both NULL" (so the library sees each where L10Step puts it). Returns [] when
    every field is where the library reads it, else what went wrong."""
    def good():  # dummy non-NULL pointers: the check never dereferences them
        return L10Step(q=16, q_start=32, q_lens=48, tree=None, k_cache=64, v_cache=80,
                       block_table=96, seq_lens=112, batch=2, heads=8, kv_heads=2, dim=128,
                       max_q=4, max_seq_kv=100, max_blocks=7, block_size=16,
                       mask=MASKS["causal"], scale=0.125, k_scale=None, v_scale=None)
    bad = [("batch", 0, "batch"), ("heads", 0, "heads"), ("kv_heads", 0, "kv_heads"),
           ("dim", 96, "dim"), ("max_q", 0, "max_q"), ("max_seq_kv", 3, "max_seq_kv"),
           ("block_size", 24, "block_size"), ("max_blocks", 6, "max_blocks"),
           ("mask", 7, "mask"), ("mask", MASKS["tree"], "tree"), ("scale", -1.0, "scale")]
    bad += [(p, None, p) for p in ("q", "q_start", "q_lens", "k_cache", "v_cache",
                                   "block_table", "seq_lens")]
    if scales:  # one scale pointer without the other: the refusal names both, k_scale first
        bad += [("k_scale", 128, "k_scale"), ("v_scale", 144, "k_scale")]
    errs = []
    buf = ctypes.create_string_buffer(256)
    if lib.l10_step_check(ctypes.byref(good()), buf, len(buf)) != 0:
        return [f"a valid step refused: {buf.value.decode(errors='replace')}"]
    if scales:
        s = good()
        s.k_scale, s.v_scale = 128, 144
        if lib.l10_step_check(ctypes.byref(s), buf, len(buf)) != 0:
            return [f"a valid FP8 step (k_scale and v_scale set) refused: "
                    f"{buf.value.decode(errors='replace')}"]
    for field, value, named in bad:
        s = good()
        setattr(s, field, value)
        rc = lib.l10_step_check(ctypes.byref(s), buf, len(buf))
        said = buf.value.decode(errors="replace")
        if rc == 0 or not (said.startswith(named + " ") or said.startswith(named + ":")):
            errs.append(f"{field} = {value}: l10_step_check said {rc} '{said}', expected a "
                        f"refusal naming {named}")
    return errs


def load_lib(path):
    """Lesson 07's launchers (lesson07_peers.load_lib) and lesson 10's, with their C signatures."""
    lib = load_l07_lib(path)
    i, sz, vp = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p
    sp = ctypes.POINTER(L10Step)
    lib.l10_step_check.restype = i
    lib.l10_step_check.argtypes = [sp, ctypes.POINTER(ctypes.c_char), sz]
    lib.l10_draft_workspace_bytes.restype = sz
    lib.l10_draft_workspace_bytes.argtypes = [sp]
    if hasattr(lib, "l10_wg_workspace_bytes"):  # version 4 (a library from before it has none)
        lib.l10_wg_workspace_bytes.restype = sz
        lib.l10_wg_workspace_bytes.argtypes = [sp]
    for dim in (64, 128, 256):
        # (step, o, lse, workspace, workspace_bytes, stream) -> cudaError_t
        f = getattr(lib, f"l10_draft_d{dim}")
        f.restype = i
        f.argtypes = [sp, vp, vp, vp, sz, vp]
    return lib


def fp8_symbols(lib):
    """Declares version 2's entry points (l10_fp8_append, l10_fp8_d64 / _d128); returns None, or
    why the library has none (a build from before version 2: its FP8 rows are skipped, the rest
    runs)."""
    i, sz, vp = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p
    try:
        f = lib.l10_fp8_append
        # (k_new, v_new, slots, n_tokens, kv_heads, dim, block_size, k8, v8, k_scale, v_scale,
        #  stream) -> cudaError_t
        f.restype = i
        f.argtypes = [vp, vp, vp, i, i, i, i, vp, vp, vp, vp, vp]
        for dim in (64, 128, 256):
            f = getattr(lib, f"l10_fp8_d{dim}")  # as l10_draft_d{dim}
            f.restype = i
            f.argtypes = [ctypes.POINTER(L10Step), vp, vp, vp, sz, vp]
    except AttributeError as e:
        return f"the library has no version 2 ({e}; built before the FP8 cache)"
    return None


def wgmma_refusal(lib, dim):
    """Why version 4 cannot run here (not in the library, not built, not sm_90, or a head dimension
    it is not built for), or ''. Its launchers exist in every build; without sm_90a code they
    return cudaErrorNotSupported (801)."""
    if torch.cuda.get_device_capability() != (9, 0):
        return "version 4 is sm_90a code (wgmma): sm_90 GPUs only"
    try:
        f = getattr(lib, f"l10_wg_d{dim}")
    except AttributeError:
        return "the library has no version 4 (built before it)"
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.POINTER(L10Step), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.c_size_t, ctypes.c_void_p]
    if f(None, None, None, None, 0, None) == 801:
        return "not built: sm_90a code, built with lesson 05 (ATTN_ARCHS_HOPPER=90a)"
    return ""


def missing(lib_path):
    """(why this cannot run here or None, the loaded library)."""
    if torch is None:
        return "torch is not installed", None
    if not torch.cuda.is_available():
        return "torch sees no CUDA GPU", None
    if torch.cuda.get_device_capability() < (8, 0):
        return f"{torch.cuda.get_device_name()} is older than sm_80 (no bf16 tensor cores)", None
    if not os.path.exists(lib_path):
        return f"{lib_path} does not exist (build the lessons first)", None
    try:
        return None, load_lib(lib_path)
    except OSError as e:
        return f"cannot load {lib_path}: {e}", None
    except AttributeError as e:  # a symbol is missing: a build from before lesson 10
        return f"{lib_path} has no lesson 10 ({e}); rebuild it", None


def ints(s):
    return [int(x) for x in s.split(",") if x]


def step_refusal(lib, step):
    """l10_step_check()'s reason for refusing the step, or '' when it passes."""
    buf = ctypes.create_string_buffer(256)
    if lib.l10_step_check(ctypes.byref(step), buf, len(buf)) == 0:
        return ""
    return buf.value.decode(errors="replace")


def tree_word(i):
    """Draft token i's tree word: a binary tree in breadth-first order, token i's parent
    (i - 1) // 2, bit t set for every token t on the path from the root to i (versions.c's)."""
    w, t = 0, i
    while True:
        w |= 1 << t
        if t == 0:
            return w
        t = (t - 1) // 2


def visible(mask, tokens, n, words, device):
    """[tokens, n] bool: whether draft token i sees key j (l10_sees() in draft.c) for a sequence
    of n keys whose last `tokens` keys are the draft tokens' own."""
    first = n - tokens  # the first draft token's key
    j = torch.arange(n, device=device)
    i = torch.arange(tokens, device=device)
    if mask == "none":
        return torch.ones(tokens, n, dtype=torch.bool, device=device)
    if mask == "causal":
        return j.unsqueeze(0) <= first + i.unsqueeze(1)
    vis = (j < first).unsqueeze(0).repeat(tokens, 1)  # the keys before the draft tokens
    w = torch.tensor(words, device=device, dtype=torch.int64)
    vis[:, first:] = ((w.unsqueeze(1) >> i.unsqueeze(0)) & 1).bool()  # draft token j: bit j
    return vis


def reference(q, k, v, tokens, seqs, mask, words, scale):
    """O in fp32 for the draft tokens of sequences `seqs`: [len(seqs) * tokens, heads, dim], their
    rows in that order. q: the packed Q [batch * tokens, heads, dim]; k, v: dense
    [len(seqs), n, kv_heads, dim] (row s holds sequence seqs[s]); every sequence n keys, the last
    `tokens` the draft tokens' own. Explicit fp32 products, one sequence at a time."""
    heads, dim = q.shape[1], q.shape[2]
    n, hkv = k.shape[1], k.shape[2]
    group = heads // hkv
    vis = visible(mask, tokens, n, words, q.device)  # broadcasts over [hkv, group, tokens, n]
    out = torch.empty(len(seqs) * tokens, heads, dim, device=q.device, dtype=torch.float32)
    for s, b in enumerate(seqs):
        # [hkv, group, tokens, dim]: query head h = kv_head * group + g reads KV head h // group
        qb = q[b * tokens:(b + 1) * tokens].float().view(tokens, hkv, group, dim)
        qb = qb.permute(1, 2, 0, 3)
        kb = k[s].float().permute(1, 0, 2).unsqueeze(1)  # [hkv, 1, n, dim]
        vb = v[s].float().permute(1, 0, 2).unsqueeze(1)
        sc = torch.matmul(qb, kb.transpose(-1, -2)) * scale  # [hkv, group, tokens, n]
        sc = sc.masked_fill(~vis, float("-inf"))
        ob = torch.matmul(torch.softmax(sc, dim=-1), vb)  # [hkv, group, tokens, dim]
        out[s * tokens:(s + 1) * tokens] = ob.permute(2, 0, 1, 3).reshape(tokens, heads, dim)
        del kb, vb, sc, ob
    return out


def cudnn_paged(fe, handle, q4, k4, v4, o4, seq_q4, seq_kv4, table4, max_len, scale, causal):
    """cuDNN's paged SDPA graph (inference, padding mask from the lengths, bottom-right causal
    when asked) on these torch views; returns (run, a note naming the engine that serves it)."""
    g = fe.pygraph(io_data_type=fe.data_type.BFLOAT16, intermediate_data_type=fe.data_type.FLOAT,
                   compute_data_type=fe.data_type.FLOAT, handle=handle)
    tq, tk, tv = g.tensor_like(q4), g.tensor_like(k4), g.tensor_like(v4)
    tsq, tskv = g.tensor_like(seq_q4), g.tensor_like(seq_kv4)
    ttk, ttv = g.tensor_like(table4), g.tensor_like(table4)
    feeds = {tq: q4, tk: k4, tv: v4, tsq: seq_q4, tskv: seq_kv4, ttk: table4, ttv: table4}
    if not causal:
        diag = dict(use_causal_mask=False)
    elif hasattr(fe, "diagonal_alignment"):
        diag = dict(diagonal_alignment=fe.diagonal_alignment.BOTTOM_RIGHT,
                    diagonal_band_right_bound=0)
    else:
        diag = dict(use_causal_mask_bottom_right=True)
    try:
        to, _ = g.sdpa(name="sdpa", q=tq, k=tk, v=tv, is_inference=True, attn_scale=scale,
                       use_padding_mask=True, seq_len_q=tsq, seq_len_kv=tskv,
                       paged_attention_k_table=ttk, paged_attention_v_table=ttv,
                       paged_attention_max_seq_len_kv=max_len, **diag)
    except TypeError as e:
        if not causal:
            raise
        raise RuntimeError(f"cudnn-frontend {getattr(fe, '__version__', '?')} takes no "
                           f"bottom-right causal mask ({', '.join(diag)}): {e}") from e
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.environ.get("ATTN_LIB") or os.path.join(
        ROOT, "build", "lib", "libattn_lessons.so"),
        help="path to libattn_lessons.so (default: $ATTN_LIB, else build/lib of this checkout)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds in which a step's implementations take turns (--iters runs each "
                         "in all)")
    ap.add_argument("--batches", default="1,16,64")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--kvs", default="4096,32768,131072",
                    help="keys per sequence, the draft tokens' included")
    ap.add_argument("--tokens", default="1,2,4,8,16",
                    help=f"draft tokens per sequence, 1..{L10_MAX_DRAFT}")
    ap.add_argument("--mask", default="causal", help="none, causal or tree (a comma list: each)")
    ap.add_argument("--dims", default="128,256", help="head dimensions: any of 128, 64 and 256")
    ap.add_argument("--block-size", type=int, default=16, help="tokens per page, a power of two")
    ap.add_argument("--max-gb", type=float, default=24.0,
                    help="skip shapes whose K and V pools pass this many GB")
    ap.add_argument("--ref-max", type=float, default=float(1 << 28),
                    help="largest sum(lengths) * kv_heads * dim checked whole against fp32; above "
                         "it the first and last sequence against fp32, the rest against lesson 10")
    ap.add_argument("--busy-us", type=float, default=100.0,
                    help="microseconds of a sleep kernel after each L2 flush, covering the host's "
                         "launch cost (0: none)")
    ap.add_argument("--peak-gbs", type=float, default=0.0,
                    help="HBM peak in GB/s for pct_hbm (default: 2 x memory clock x bus width)")
    ap.add_argument("--out", default=None,
                    help="folder for peers-lesson10.csv (default: $PEERS_OUT; neither: no CSV)")
    ap.add_argument("--fp8", dest="fp8", action="store_true", default=True,
                    help="measure l10-v2-fp8, lesson 10's version 2 over an e4m3 copy of each "
                         f"pool (the default; skipped, and said so, with --block-size below "
                         f"{L10_FP8_MIN_BLOCK}, below compute capability 8.9, or a library "
                         "without version 2)")
    ap.add_argument("--no-fp8", dest="fp8", action="store_false",
                    help="no l10-v2-fp8 rows, and no FP8 pools")
    a = ap.parse_args()

    dims, batches, kvs, tokens = ints(a.dims), ints(a.batches), ints(a.kvs), ints(a.tokens)
    masks = [m for m in a.mask.split(",") if m]
    if not dims or any(d not in (64, 128, 256) for d in dims):
        ap.error(f"--dims takes 64, 128 and 256; got {a.dims}")
    if not tokens or any(not 1 <= t <= L10_MAX_DRAFT for t in tokens):
        ap.error(f"--tokens takes 1..{L10_MAX_DRAFT}; got {a.tokens}")
    if not masks or any(m not in MASKS for m in masks):
        ap.error(f"--mask takes none, causal, tree; got {a.mask}")
    if not batches or min(batches) < 1 or not kvs or min(kvs) < 1:
        ap.error("--batches and --kvs take positive numbers")
    if a.block_size < 1 or a.block_size & (a.block_size - 1):
        ap.error(f"--block-size {a.block_size}: a power of two")
    if a.iters < 1 or a.warmup < 0 or a.rounds < 1:
        ap.error("--iters and --rounds must be positive, --warmup not negative")
    if a.heads < 1 or a.kv_heads < 1 or a.heads % a.kv_heads:
        ap.error(f"--heads {a.heads} must be a multiple of --kv-heads {a.kv_heads}")

    errs = layout_errors()
    if errs:
        print("lesson10_peers: L10Step does not match l10_step's recorded layout: " +
              "; ".join(errs))
        return 1
    why, lib = missing(a.lib)
    if why:
        print(f"lesson10_peers: skipped: {why}")
        return SKIPPED
    errs = probe_layout(lib, scales=fp8_symbols(lib) is None)
    if errs:
        print("lesson10_peers: L10Step does not match the library's l10_step: " + "; ".join(errs))
        return 1
    fp8_why = fp8_symbols(lib)  # None: the library has version 2 (its entry points declared)
    if not a.fp8:
        fp8_why = None
    elif a.block_size < L10_FP8_MIN_BLOCK:
        fp8_why = (f"block size {a.block_size}: version 2 reads 16-key tiles from one page "
                   f"(L10_FP8_MIN_BLOCK {L10_FP8_MIN_BLOCK})")
    elif fp8_why is None and torch.cuda.get_device_capability() < (8, 9):
        fp8_why = (f"{torch.cuda.get_device_name()} is below compute capability 8.9 (no e4m3 "
                   "conversions: l10_fp8_append returns cudaErrorNotSupported)")
    torch.backends.cuda.matmul.allow_tf32 = False  # the reference's products in true fp32

    dev = torch.cuda.get_device_properties(0)
    peak = hbm_peak_gbs(torch.cuda.current_device(), a.peak_gbs)
    print(f"device: {dev.name}, {dev.multi_processor_count} SMs, HBM peak {peak:.0f} GB/s; torch "
          f"{torch.__version__}, cuDNN {torch.backends.cudnn.version()}; bf16; {a.heads} query "
          f"heads, {a.kv_heads} KV heads, block size {a.block_size}; l10_step {L10_STEP_SIZE} "
          f"bytes, layout confirmed by l10_step_check", flush=True)
    if not a.fp8:
        print("FP8 cache (l10-v2-fp8): off (--no-fp8)", flush=True)
    elif fp8_why:
        print(f"FP8 cache (l10-v2-fp8): skipped, a CSV row per step says so: {fp8_why}",
              flush=True)
    else:
        print("FP8 cache (l10-v2-fp8): an e4m3 copy of each pool (l10_fp8_append), its TB/s of "
              "the bytes it reads (2 x sum(lengths) x kv_heads x (dim + 4)), vs_bf16 its speed "
              "over l10-v1-draft's at the same step; checked by relative L2 error (FP8 "
              f"rounding), MISMATCH above {FP8_TOL:g}", flush=True)
    fe, handle, fe_note = cudnn_handle(ROOT)
    print(f"cuDNN peer: {fe_note}" if fe is not None else
          f"cuDNN peer: UNAVAILABLE, its rows are errors: {fe_note}", flush=True)
    if "tree" in masks:
        print("cuDNN peer: no tree mask in cuDNN's SDPA; no cudnn-paged rows for --mask tree")

    flush = L2Flush(a.busy_us)
    rounds, per_round = turn_plan(a.iters, a.rounds)
    print(f"timing: median of {rounds * per_round} runs in {rounds} rounds taking turns at each "
          f"step, {flush.what}", flush=True)

    out = PeerCsv(10, peers_out_dir(a.out))
    out.set_common(iters=rounds * per_round, **software(dev))
    env = argparse.Namespace(a=a, lib=lib, fe=fe, fe_note=fe_note, handle=handle, out=out,
                             flush=flush, peak=peak, status=0, one={}, masks=masks,
                             tokens=tokens, tokens_run=sorted(set(tokens) | {1}),
                             stream=ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                             fp8=a.fp8, fp8_why=fp8_why, ms={})
    table = []
    for dim in dims:
        for batch in batches:
            for skv in kvs:
                where = f"dim={dim} batch={batch} seq_kv={skv}"
                pages = batch * ((skv + a.block_size - 1) // a.block_size)
                num_blocks = pages + max(1, (pages + 3) // 4)  # make_pools' quarter spare
                pool_bytes = 2.0 * num_blocks * a.block_size * a.kv_heads * dim * 2
                if pool_bytes > a.max_gb * 1e9:
                    print(f"l10 {where} skipped: K and V pools {pool_bytes / 1e9:.1f} GB > "
                          f"--max-gb {a.max_gb:g}", flush=True)
                    continue
                try:
                    table += measure_shape(env, dim, batch, skv)
                except torch.cuda.OutOfMemoryError as e:
                    print(f"l10 {where} skipped: out of memory ({str(e).splitlines()[0]})",
                          flush=True)
                torch.cuda.empty_cache()
    out.close()

    fp8 = a.fp8 and not fp8_why  # the FP8 columns
    print("\nTB/s of the bf16 K + V the lengths need (2 x sum(lengths) x kv_heads x dim x 2 "
          "bytes); %hbm and vs1 (rate over the one-token rate) of lesson 10's version 1;\n"
          "l07: lesson 07's version 5 (T <= 8, no tree); cudnn: cuDNN's paged graph (no tree); "
          "ratios: lesson 10 over each" +
          (";\nfp8: lesson 10's version 2 over the e4m3 cache, TB/s and %hbm8 of the bytes it "
           "reads (2 x sum(lengths) x kv_heads x (dim + 4)), fp8/v1 its speed over version 1's "
           "(time of v1 over time of fp8)" if fp8 else ""))
    print(f"{'dim':>4} {'mask':>6} {'batch':>5} {'kv':>7} {'T':>3} {'l10':>6} {'%hbm':>5} "
          f"{'vs1':>5} {'l07':>6} {'cudnn':>6} {'l10/l07':>7} {'l10/cudnn':>9}" +
          (f" {'fp8':>6} {'%hbm8':>5} {'fp8/v1':>6}" if fp8 else ""))

    def cell(x, width, prec=2):
        return f"{x:>{width}.{prec}f}" if x else f"{'-':>{width}}"

    def pct_of(x):
        return 100.0 * x * 1e3 / peak if x and peak == peak else None
    for dim, mask, batch, skv, t, res in table:
        ours, l7, cd = res.get("l10"), res.get("l07"), res.get("cudnn")
        one = env.one.get((dim, mask, batch, skv))
        f8 = res.get("fp8")
        print(f"{dim:>4} {mask:>6} {batch:>5} {skv:>7} {t:>3} {cell(ours, 6)} "
              f"{cell(pct_of(ours), 5, 1)} "
              f"{cell(ours and one and ours / one, 5)} {cell(l7, 6)} {cell(cd, 6)} "
              f"{cell(ours and l7 and ours / l7, 7)} {cell(ours and cd and ours / cd, 9)}" +
              (f" {cell(f8, 6)} {cell(pct_of(f8), 5, 1)} {cell(res.get('fp8x'), 6)}"
               if fp8 else ""))
    return env.status


def measure_shape(env, dim, batch, skv):
    """One pool of K and V for (dim, batch, seq_kv), and its FP8 copy (fp8_pools) unless the FP8
    rows are off or skipped; every mask and token count on it. Returns rows (dim, mask, batch,
    seq_kv, tokens, {"l10" | "l07" | "cudnn" | "fp8": TB/s, "fp8x": version 2's speed over
    version 1})."""
    a, hkv, bs = env.a, env.a.kv_heads, env.a.block_size
    lens = [skv] * batch
    seed = batch * 1000003 + hkv * 1009 + skv + dim
    gen = torch.Generator(device="cuda").manual_seed(seed)
    k = torch.randn(batch, skv, hkv, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    v = torch.randn(batch, skv, hkv, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    pool_k, pool_v, table, max_blocks = make_pools(k, v, lens, bs, seed * 131 + bs)
    # the reference's dense copies: every sequence when cheap, else the first and the last
    full = sum(lens) * hkv * dim <= a.ref_max
    seqs = list(range(batch)) if full else sorted({0, batch - 1})
    if full:
        k_ref, v_ref = k, v
    elif len(seqs) * skv * hkv * dim <= a.ref_max:
        k_ref, v_ref = k[seqs], v[seqs]  # copies (advanced indexing)
    else:
        k_ref = v_ref = None
        seqs = []
    k = v = None  # the dense K and V are freed here unless the reference holds them
    torch.cuda.empty_cache()
    ctx = argparse.Namespace(dim=dim, batch=batch, skv=skv, seed=seed, pool_k=pool_k,
                             pool_v=pool_v, table=table, max_blocks=max_blocks, seqs=seqs,
                             full=full, k_ref=k_ref, v_ref=v_ref,
                             lens_dev=torch.tensor(lens, device="cuda", dtype=torch.int32),
                             bytes=2 * sum(lens) * hkv * dim * 2,
                             fp8_bytes=2 * sum(lens) * hkv * (dim + 4),
                             fp8=None, fp8_skip=None, fp8_err=None)
    if env.fp8 and not env.fp8_why:
        try:
            ctx.fp8 = fp8_pools(env, pool_k, pool_v)
        except torch.cuda.OutOfMemoryError as e:  # before RuntimeError: it is one
            ctx.fp8_skip = f"out of memory for the FP8 pools ({str(e).splitlines()[0]})"
        except RuntimeError as e:  # the append's error code, or scales it left unwritten
            ctx.fp8_err = f"building the FP8 pools: {e}"
        if ctx.fp8_skip or ctx.fp8_err:
            torch.cuda.empty_cache()  # here: the exception (and the frame it holds) is gone
            print(f"l10 impl=l10-v2-fp8 dim={dim} batch={batch} seq_kv={skv} "
                  f"{'skipped: ' + ctx.fp8_skip if ctx.fp8_skip else 'error=' + ctx.fp8_err}",
                  flush=True)
    rows = []
    for mask in env.masks:
        for t in env.tokens_run:
            if t > skv:
                print(f"l10 dim={dim} batch={batch} seq_kv={skv} tokens={t} mask={mask} skipped: "
                      f"more draft tokens than keys", flush=True)
                continue
            rows.append((dim, mask, batch, skv, t, measure_step(env, ctx, mask, t)))
    return rows


def fp8_pools(env, pool_k, pool_v):
    """Version 2's cache: e4m3 copies of the bf16 pools, written by l10_fp8_append as a server's
    quantise-on-append would write them, with k_new / v_new the bf16 pools themselves viewed as
    [num_blocks * block_size, kv_heads, dim] rows and slot s = block * block_size + row for row s:
    the same page, the same place in it, so the block table serves both caches. Only the slots a
    token owns are appended; the others (NaN in the bf16 pools: the spare pages and the tail of
    each sequence's last page) get slot -1, which the append skips, and keep the poison they are
    created with, code 0x7f (an e4m3 NaN) and a NaN scale. A kernel that used one of those slots
    as a key, or multiplied a NaN scale into a row past a sequence's end instead of zero-filling
    it (as it does: rows at or past the end are zero-filled, codes and scales), prints NaN and
    fails the check, as the bf16 pools' NaN catch version 1. (Appended, a NaN row would quantise
    to whatever the append makes of it, today amax 0, since fmaxf drops NaN: scale 0 and codes
    0x7f, NaN on read as well; slot -1 keeps the poison from depending on that, and keeps
    non-finite values away from a quantiser documented for finite ones.) Returns a namespace k8,
    v8 ([num_blocks, block_size, kv_heads, dim] uint8) and k_scale, v_scale ([num_blocks,
    kv_heads, block_size] fp32)."""
    lib, stream = env.lib, env.stream
    nb, bs, hkv, dim = pool_k.shape
    n = nb * bs
    if n > 2**31 - 1:
        raise RuntimeError(f"{n} slots: more than l10_fp8_append's int count")
    owned = ~torch.isnan(pool_k.view(n, hkv * dim)[:, 0])  # make_pools: an unowned slot is all NaN
    slots = torch.arange(n, device="cuda", dtype=torch.int32).masked_fill_(~owned, -1)
    n_owned = int(owned.sum())
    del owned
    k8 = torch.full((nb, bs, hkv, dim), 0x7F, device="cuda", dtype=torch.uint8)
    v8 = torch.full_like(k8, 0x7F)
    k_scale = torch.full((nb, hkv, bs), float("nan"), device="cuda", dtype=torch.float32)
    v_scale = torch.full_like(k_scale, float("nan"))
    # token t of k_new / v_new (the pools as [n, kv_heads, dim]) into slot slots[t]: t or -1
    err = lib.l10_fp8_append(pool_k.data_ptr(), pool_v.data_ptr(), slots.data_ptr(), n, hkv, dim,
                             bs, k8.data_ptr(), v8.data_ptr(), k_scale.data_ptr(),
                             v_scale.data_ptr(), stream)
    if err != 0:
        raise RuntimeError(f"l10_fp8_append returned CUDA error {err}")
    torch.cuda.synchronize()
    # every owned row got a scale above 0 (its values are randn, never all zero), and the
    # unowned kept their NaN (NaN > 0 is false)
    got = int((k_scale > 0).sum()) + int((v_scale > 0).sum())
    if got != 2 * n_owned * hkv:
        raise RuntimeError(f"after l10_fp8_append {got} scales are above 0, expected "
                           f"{2 * n_owned * hkv} (one per owned key row of K and of V)")
    del slots
    return argparse.Namespace(k8=k8, v8=v8, k_scale=k_scale, v_scale=v_scale)


def measure_step(env, ctx, mask, t):
    """Lesson 10 (version 1, and version 2 over the FP8 copy), lesson 07 and cuDNN on one step
    (mask, t draft tokens per sequence) over the shape's pool; returns {"l10" | "l07" | "cudnn" |
    "fp8": TB/s, "fp8x": version 1's time over version 2's} of those that ran."""
    a, lib = env.a, env.lib
    heads, hkv, bs, dim, batch, skv = a.heads, a.kv_heads, a.block_size, ctx.dim, ctx.batch, ctx.skv
    total_q = batch * t
    scale = 1.0 / math.sqrt(dim)
    stream = env.stream
    key = (dim, mask, batch, skv)
    requested = t in env.tokens  # else: only lesson 10's one-token rate
    gen = torch.Generator(device="cuda").manual_seed(ctx.seed * 17 + t * 3 + MASKS[mask])
    q = torch.randn(total_q, heads, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    o = torch.empty_like(q)
    lse = torch.empty(total_q * heads, device="cuda", dtype=torch.float32)
    q_start = torch.arange(batch, device="cuda", dtype=torch.int32) * t
    q_lens = torch.full((batch,), t, device="cuda", dtype=torch.int32)
    words = [tree_word(i) for i in range(t)]
    tree = (torch.tensor(words * batch, device="cuda", dtype=torch.int32)  # < 2^16: as uint32
            if mask == "tree" else None)
    pool_k, pool_v, table, max_blocks = ctx.pool_k, ctx.pool_v, ctx.table, ctx.max_blocks

    shape = dict(dtype="bf16", batch=batch, heads=heads, kv_heads=hkv, seq_q=t, seq_kv=skv,
                 dim=dim, causal=int(mask == "causal"), bytes=int(ctx.bytes))
    where = f"dim={dim} batch={batch} seq_kv={skv} tokens={t} mask={mask}"
    mask_text = {"none": "no mask (every key)", "causal": "causal mask (bottom-right)",
                 "tree": "tree mask (a binary tree, each token its path to the root)"}[mask]
    steps = (f"; {t} draft token{'s' if t > 1 else ''} per sequence, {mask_text}; equal lengths "
             f"(every sequence seq_kv keys, the draft tokens' included)")
    tail = (f"{steps}; TB/s of the bf16 K + V the lengths need (bytes: 2 x sum(lengths) x "
            f"kv_heads x dim x 2)")
    paged = (f"paged draft-token decode, block size {bs}, pages shuffled in a pool with a quarter "
             f"spare, NaN in unowned slots")

    chk = {"ref": None, "rows": None, "full": None, "seqs": ctx.seqs, "rel": {}}
    if ctx.seqs:
        chk["ref"] = reference(q, ctx.k_ref, ctx.v_ref, t, ctx.seqs, mask, words, scale)
        if not ctx.full:
            chk["rows"] = torch.tensor([b * t + i for b in ctx.seqs for i in range(t)],
                                       device="cuda", dtype=torch.long)
    res = {}

    # lesson 10's version 1: the bf16 cache, no scales
    step_kw = dict(q=q.data_ptr(), q_start=q_start.data_ptr(), q_lens=q_lens.data_ptr(),
                   tree=tree.data_ptr() if tree is not None else None,
                   k_cache=pool_k.data_ptr(), v_cache=pool_v.data_ptr(),
                   block_table=table.data_ptr(), seq_lens=ctx.lens_dev.data_ptr(), batch=batch,
                   heads=heads, kv_heads=hkv, dim=dim, max_q=t, max_seq_kv=skv,
                   max_blocks=max_blocks, block_size=bs, mask=MASKS[mask], scale=scale,
                   k_scale=None, v_scale=None)
    step = L10Step(**step_kw)

    def draft_make(st, fname, wg=False):
        """(run, note) of a lesson 10 launcher (l10_draft_d*, l10_fp8_d* or, with wg, version 4's
        l10_wg_d*, whose chunks and workspace are its own) on step st."""
        why = step_refusal(lib, st)
        if why:
            raise RuntimeError(f"l10_step_check refused the step: {why}")
        # after the scales are in the step: the workspace depends on them
        ws_fn = lib.l10_wg_workspace_bytes if wg else lib.l10_draft_workspace_bytes
        ws_bytes = ws_fn(ctypes.byref(st))
        # the chunks' partial states; nothing is kept there between calls
        ws = torch.zeros(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")
        fn, sp = getattr(lib, fname), ctypes.byref(st)

        def run():
            err = fn(sp, o.data_ptr(), lse.data_ptr(), ws.data_ptr(), ws_bytes, stream)
            if err != 0:
                raise RuntimeError(f"{fname} returned CUDA error {err}")
        return run, f"; workspace {ws_bytes} bytes"
    what = f"{paged}, lesson 10's version 1 (draft-tiles){tail}"
    if not requested:
        what = f"{paged}, lesson 10's version 1, the one-token reference rate{tail}"
    entries = [check_impl(env, chk, "l10", "l10-v1-draft", mask, o, what, shape, where, True,
                          lambda: draft_make(step, f"l10_draft_d{dim}"), key, t)]
    if not requested:
        res = time_and_report(env, entries)
        return {n: x for n, x in res.items() if x}

    # lesson 10's version 4: version 1's step on Hopper's warpgroup (sm_90a, dims 64 and 128)
    name = "l10-v4-wgmma"
    what = f"{paged}, lesson 10's version 4 (draft-wgmma){tail}"
    why = wgmma_refusal(lib, dim)
    if why:
        print(f"l10 impl={name} {where} skipped: {why}", flush=True)
        env.out.row(impl=f"{name}-{mask}", what=what, check=f"skipped: {why}", **shape)
    else:
        entries.append(check_impl(env, chk, "wg", name, mask, o, what, shape, where, True,
                                  lambda: draft_make(step, f"l10_wg_d{dim}", wg=True), key, t))

    # lesson 10's version 2: the same step over the e4m3 copy of the pools (fp8_pools), its
    # figure the bytes it reads: codes and one fp32 scale per key row, K and V
    if env.fp8:
        name = "l10-v2-fp8"
        shape8 = dict(shape, dtype="e4m3", bytes=int(ctx.fp8_bytes))
        what = (f"{paged} (the pool's e4m3 copy, written by l10_fp8_append from the same bf16 "
                f"values; unowned slots code 0x7f and scale NaN), lesson 10's version 2 "
                f"(fp8-cache), Q and O bf16{steps}; TB/s of the FP8 K + V it reads (bytes: 2 x "
                f"sum(lengths) x kv_heads x (dim + 4): e4m3 codes and one fp32 scale per key "
                f"row), not the bf16 bytes of the other rows")
        skip = env.fp8_why or ctx.fp8_skip
        if skip:
            print(f"l10 impl={name} {where} skipped: {skip}", flush=True)
            env.out.row(impl=f"{name}-{mask}", what=what, check=f"skipped: {skip}"[:200],
                        **shape8)
        else:
            def fp8_make():
                if ctx.fp8_err:
                    raise RuntimeError(ctx.fp8_err)
                f8 = ctx.fp8
                st = L10Step(**dict(step_kw, k_cache=f8.k8.data_ptr(), v_cache=f8.v8.data_ptr(),
                                    k_scale=f8.k_scale.data_ptr(),
                                    v_scale=f8.v_scale.data_ptr()))
                run, note = draft_make(st, f"l10_fp8_d{dim}")
                run.step = st  # the struct lives as long as the run that points at it
                return run, note
            entries.append(check_impl(env, chk, "fp8", name, mask, o, what, shape8, where, True,
                                      fp8_make, key, t, checker=check_fp8, vs="l10-v1-draft"))

    # lesson 07's version 5: Q [batch, seq_q, heads, dim] is the packed Q for equal counts
    name = "l07-v5-balance"
    what = f"{paged}, lesson 07's version 5 (paged-balance) with seq_q {t}{tail}"
    if mask == "tree" or t > L07_MAX_SEQ_Q or dim not in (64, 128):
        why = ("lesson 07 has no tree mask" if mask == "tree" else
               f"lesson 07 takes at most {L07_MAX_SEQ_Q} query tokens (L06_MAX_SEQ_Q)"
               if t > L07_MAX_SEQ_Q else "lesson 07 is built for head dimensions 64 and 128")
        print(f"l10 impl={name} {where} skipped: {why}", flush=True)
        env.out.row(impl=f"{name}-{mask}", what=what, check=f"skipped: {why}", **shape)
    else:
        def l07_make():
            ws_bytes = lib.l07_paged_workspace_bytes(5, batch, heads, hkv, t, skv, None, dim)
            ws = torch.zeros(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")  # zeroed once
            fn = getattr(lib, f"l07_paged_balance_d{dim}")

            def run():
                err = fn(q.data_ptr(), pool_k.data_ptr(), pool_v.data_ptr(), table.data_ptr(),
                         ctx.lens_dev.data_ptr(), None, o.data_ptr(), lse.data_ptr(),
                         ws.data_ptr(), ws_bytes, batch, heads, hkv, t, skv, max_blocks, bs,
                         int(mask == "causal"), scale, stream)
                if err != 0:
                    raise RuntimeError(f"l07_paged_balance_d{dim} returned CUDA error {err}")
            return run, ""
        entries.append(check_impl(env, chk, "l07", name, mask, o, what, shape, where, True,
                                  l07_make, key, t))

    # cuDNN's paged graph with s_q = t
    if mask != "tree":
        def cudnn_make():
            if env.fe is None:
                raise RuntimeError(f"cuDNN frontend unavailable: {env.fe_note}")
            q4 = q.view(batch, t, heads, dim).transpose(1, 2)  # [batch, heads, t, dim] views
            o4 = o.view(batch, t, heads, dim).transpose(1, 2)
            seq_q4 = torch.full((batch, 1, 1, 1), t, device="cuda", dtype=torch.int32)
            return cudnn_paged(env.fe, env.handle, q4, pool_k.permute(0, 2, 1, 3),
                               pool_v.permute(0, 2, 1, 3), o4, seq_q4,
                               ctx.lens_dev.view(batch, 1, 1, 1),
                               table.view(batch, 1, max_blocks, 1), skv, scale, mask == "causal")
        what = f"{paged}, cuDNN SDPA (paged, s_q {t}){tail}"
        entries.append(check_impl(env, chk, "cudnn", "cudnn-paged", mask, o, what, shape, where,
                                  False, cudnn_make, key, t))
    res = time_and_report(env, entries)
    v1 = env.ms.get(("l10-v1-draft", key, t))
    f8 = env.ms.get(("l10-v2-fp8", key, t))
    res["fp8x"] = v1 / f8 if v1 and f8 else None
    return {n: x for n, x in res.items() if x}


def rel_l2(x, ref):
    """||x - ref|| / ||ref|| over every element, in fp32 (NaN when x holds a NaN)."""
    x = x.float()
    num = torch.linalg.vector_norm(x - ref).item()
    den = torch.linalg.vector_norm(ref).item()
    return num / den if den > 0 else (0.0 if num == 0 else float("inf"))


def check_o(chk, name, o):
    """(check, max_abs or None, text for the line, note for the CSV's what): o against the fp32
    reference (all rows, or the sampled sequences' rows), and against the first implementation's O
    when the fp32 reference does not cover every row (that implementation becomes it when there is
    none yet). The relative L2 error against fp32 is kept in chk["rel"][name] (the FP8 row prints
    version 1's beside its own)."""
    bad, diffs, said, became = False, [], "", False
    finite = bool(torch.isfinite(o).all())
    if not finite:
        bad, said = True, " non-finite O"
    if chk["ref"] is not None:
        got = o if chk["rows"] is None else o.index_select(0, chk["rows"])
        d = (got.float() - chk["ref"]).abs().max().item()
        chk["rel"][name] = rel_l2(got, chk["ref"])
        diffs.append(d)
        said += f" max_abs_vs_fp32={d:.2e}"
        if chk["rows"] is not None:
            said += f" (sequences {','.join(str(b) for b in chk['seqs'])})"
        bad |= not d < TOL  # NaN fails too
    if chk["ref"] is None or chk["rows"] is not None:  # rows no fp32 figure covers
        if chk["full"] is None:
            if finite:
                chk["full"] = (name, o.float())
                became = True
                said += " (the reference for the rest of this step)"
        else:
            d = (o.float() - chk["full"][1]).abs().max().item()
            diffs.append(d)
            said += f" max_abs_vs_{chk['full'][0]}={d:.2e}"
            bad |= not d < TOL
    worst = None
    if diffs:
        worst = float("nan") if any(d != d for d in diffs) else max(diffs)
    if bad:
        return "MISMATCH", worst, said + " MISMATCH", ""
    return ("reference" if became and chk["ref"] is None else "ok"), worst, said, ""


def check_fp8(chk, name, o):
    """check_o() for the FP8 row: e4m3 keeps 3 mantissa bits, so each K and V value is off by up
    to 2^-4 of itself and O by a few percent (about 3-4e-2 relative L2 for N(0, 1) K and V), far
    past the bf16 rows' 2e-2 max-abs. The figure is the relative L2 error of O against the fp32
    reference (the sampled rows), and against the first implementation's O (version 1's) on the
    rows fp32 does not cover; MISMATCH above FP8_TOL, or for a NaN or inf anywhere in O. max_abs
    is reported, not judged. This O never becomes the reference of the other rows."""
    bad, said, note, worst = False, "", "", None
    finite = bool(torch.isfinite(o).all())
    if not finite:
        bad, said = True, " non-finite O"
    v1 = chk["rel"].get("l10-v1-draft-" + name.rsplit("-", 1)[-1])
    if chk["ref"] is not None:
        got = o if chk["rows"] is None else o.index_select(0, chk["rows"])
        r = rel_l2(got, chk["ref"])
        worst = (got.float() - chk["ref"]).abs().max().item()
        bf = f"{v1:.2e}" if v1 is not None else "n/a"
        said += f" fp8 rel_l2={r:.2e} (l10-v1-draft rel_l2={bf}) max_abs_vs_fp32={worst:.2e}"
        if chk["rows"] is not None:
            said += f" (sequences {','.join(str(b) for b in chk['seqs'])})"
        note = (f"; relative L2 error of O against fp32 {r:.2e} (version 1's {bf}), passes at "
                f"{FP8_TOL:g} or below")
        bad |= not r <= FP8_TOL  # NaN fails too
    if chk["ref"] is None or chk["rows"] is not None:
        if chk["full"] is not None:
            r = rel_l2(o, chk["full"][1])
            said += f" rel_l2_vs_{chk['full'][0]}={r:.2e}"
            note += f"; relative L2 error against {chk['full'][0]} on every row {r:.2e}"
            bad |= not r <= FP8_TOL
        else:
            said += " (no reference for the rows fp32 does not cover)"
    if bad:
        return "MISMATCH", worst, said + " MISMATCH", note
    return "ok", worst, said, note


def check_impl(env, chk, slot, impl, mask, o, what, shape, where, ours, make, key, tokens,
                checker=check_o, vs=None):
    """The first half of an implementation's row: builds it (make() -> (run, note)), runs it once
    on a NaN-poisoned O and checks that O (checker: check_o, or check_fp8). Returns the entry that
    time_and_report() times and reports (slot: its key in measure_step's result), or None when it
    failed to build or run, which is then printed and recorded here (CSV impl: impl-mask). A
    mismatch, or an error of a lesson kernel (ours), sets env.status."""
    name = f"{impl}-{mask}"
    try:
        fn, note = make()
        what = what + note
        o.fill_(float("nan"))  # poison: a row the run leaves unwritten shows
        fn()
        torch.cuda.synchronize()
        check, diff, said, check_note = checker(chk, name, o)
        what = what + check_note
        if check == "MISMATCH":
            env.status = 1
        return argparse.Namespace(slot=slot, impl=impl, name=name, fn=fn, note=note, what=what,
                                  shape=shape, where=where, ours=ours, key=key, tokens=tokens,
                                  vs=vs, check=check, diff=diff, said=said)
    except Exception as e:  # a refused graph, a launcher's error code, a missing frontend
        impl_error(env, impl, name, what, shape, where, ours, e)
        return None


def impl_error(env, impl, name, what, shape, where, ours, e):
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    print(f"l10 impl={impl} {where} error={text[:600]}", flush=True)
    env.out.row(impl=name, what=what, check=f"error: {text}"[:200], **shape)
    if ours:
        env.status = 1


def time_and_report(env, entries):
    """The second half: the step's checked implementations (check_impl's entries, None for those
    that failed) timed taking turns (timings_in_turns), then each printed and recorded in the
    entries' order. The line's ratio is vs_one_token, or with an entry's vs (an impl name)
    vs_bf16: that impl's median time at this step over this one's. Returns {slot: TB/s (of the
    entry's shape["bytes"]), or None when it failed}."""
    a = env.a
    live = [e for e in entries if e is not None]
    got = turns_and_host_us({e.name: e.fn for e in live}, env.flush, a.iters, a.warmup, a.rounds,
                            HOST_RUNS)
    res = {}
    for e in live:
        res[e.slot] = None
        if isinstance(got[e.name], Exception):  # an error that only a later run met
            impl_error(env, e.impl, e.name, e.what, e.shape, e.where, e.ours, got[e.name])
            continue
        ms, best, host_us = got[e.name]
        env.ms[(e.impl, e.key, e.tokens)] = ms
        what = e.what
        tbs = e.shape["bytes"] / (ms * 1e-3) / 1e12
        pct = 100.0 * tbs * 1e3 / env.peak if env.peak == env.peak else float("nan")
        if e.impl == "l10-v1-draft" and e.tokens == 1:
            env.one[e.key] = tbs
        if e.vs is None:
            one = env.one.get(e.key)
            ratio = f"vs_one_token={tbs / one:.2f}" if one else "vs_one_token=n/a"
        else:
            other = env.ms.get((e.vs, e.key, e.tokens))
            ratio = f"vs_bf16={other / ms:.2f}" if other else "vs_bf16=n/a"
            if other:
                what += (f"; {other / ms:.2f}x the speed of {e.vs} at this step ({other:.5f} ms "
                         f"against {ms:.5f} ms)")
        print(f"l10 impl={e.impl} {e.where} us={ms * 1e3:.1f} tbs={tbs:.3f} pct_hbm={pct:.1f} "
              f"{ratio} host_us={host_us:.1f}{e.said}{e.note}", flush=True)
        env.out.row(impl=e.name, what=what, ms=f"{ms:.5f}", min_ms=f"{best:.5f}",
                    gbs=f"{tbs * 1e3:.1f}", pct_hbm=f"{pct:.1f}", check=e.check,
                    max_abs=f"{e.diff:.3e}" if e.diff is not None else None,
                    **e.shape)
        res[e.slot] = tbs
    return res


if __name__ == "__main__":
    sys.exit(main())
