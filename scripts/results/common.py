"""What every lesson's README shows alike: the transcript of `./run` (region `transcript`) and
the versions table with its measured column (region `versions`)."""
import os
import re
from .core import NO_RUN, ROOT, default_shape, esc, half_up, shape_words, source, table


# ---- Every lesson: what `./run` prints, and the versions table ----------------------------------

TRANSCRIPT_CPU_LINES = 10  # the most lines of a CPU part a transcript keeps


def default_run(a, lesson):
    """The lines the lesson's default run printed: the `lesson-N` section of gpu-suite.log (no
    arguments after the name; the first such section), or None."""
    for title, lines in (a.log or {}).get("sections", []):
        if title == f"lesson-{lesson}":
            return lines
    return None


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def trim_cpu_part(lines, k=TRANSCRIPT_CPU_LINES):
    """The first lines of a CPU part: all of it when it has at most @p k lines; otherwise it is cut
    after at most k lines, at the last blank line there is within them, or failing that before the
    last line that starts a new item (indented no deeper than the part's first indentation below
    its left margin, so a table or a wrapped line is not split), or failing that after k lines.
    Blank lines before the part are kept. Returns (lines, whether any were left out)."""
    lead = 0
    while lead < len(lines) and not lines[lead].strip():
        lead += 1
    body = list(lines[lead:])
    while body and not body[-1].strip():
        body.pop()
    if len(body) <= k:
        return list(lines[:lead]) + body, False
    depths = sorted({_indent(x) for x in body if x.strip()})
    item = depths[1] if len(depths) > 1 else depths[0]
    blank = [n for n in range(1, k + 1) if not body[n].strip()]
    clean = [n for n in range(1, k + 1) if _indent(body[n]) <= item]
    n = blank[-1] if blank else (clean[-1] if clean else k)
    kept = body[:n]
    while kept and not kept[-1].strip():
        kept.pop()
    return list(lines[:lead]) + kept, True


def transcript(lines):
    """A default run's output, trimmed for a README: the lines up to the `problem` line, the CPU part
    (trim_cpu_part), the device header (`device` up to the table), the table of versions, and the
    closing line; `...` stands where lines were left out (the rest of the CPU part, the report after
    the table). Output laid out otherwise: its first TRANSCRIPT_CPU_LINES lines and its last."""
    body = list(lines)
    while body and not body[-1].strip():
        body.pop()
    p = next((i for i, x in enumerate(body) if x.startswith("problem ")), None)
    d = next((i for i, x in enumerate(body) if re.match(r"device\s", x)), None)
    t = next((i for i, x in enumerate(body) if re.match(r"\s*#\s+version\s", x)), None)
    if None in (p, d, t) or not p < d < t:
        k = TRANSCRIPT_CPU_LINES
        return body if len(body) <= k + 1 else body[:k] + ["..."] + body[-1:]
    e = t
    while e < len(body) and body[e].strip():
        e += 1
    cpu, cut = trim_cpu_part(body[p + 1:d])
    out = body[:p + 1] + cpu + (["..."] if cut else [])
    head = body[d:t]
    while head and not head[-1].strip():
        head.pop()
    out += head + [""] + body[t:e]
    if e < len(body):
        report = [x for x in body[e:-1] if x.strip()]
        out += [""] + (["...", ""] if report else []) + body[-1:]
    return out


def r_transcript(a, ctx):
    n = ctx["lesson"]
    lines = default_run(a, n)
    if lines is None:
        return (source(a, ["gpu-suite.log"]) + f"\n\nWhat `./run` prints: not in this archive (the "
                f"`lesson-{n}` block of `gpu-suite.log`, from `scripts/gpu-suite.sh lessons`).")
    return "\n".join([source(a, ["gpu-suite.log"]), "",
                      f"`./run` with no arguments (its `lesson-{n}` block in `gpu-suite.log`); "
                      "`...` marks lines left out.", "", "```text"] + transcript(lines) + ["```"])


# Each lesson's versions table as its README words it; r_versions adds the measured column. The
# `#` cell is a version or a range of them (`1-4`), and tests/test_readme_versions.py compares the
# `version` or `name` column with the program's own list.
VERSIONS = {
    1: (["#", "version", "what it measures", "its check", '"% of"'], [
        ["1-4", "`h2d-pageable`, `h2d-pinned`, `d2h-pageable`, `d2h-pinned`",
         "256 MiB over the host link, from/to `malloc` or `cudaMallocHost` memory",
         "every element against the pattern", "pinned, measured in setup"],
        ["5", "`hbm-read-4B`", "a 4 GiB read, one float per load", "each block's exact sum",
         "HBM (clock x bus)"],
        ["6", "`hbm-read-16B`", "the same read, one `float4` per load", "each block's exact sum",
         "HBM"],
        ["7", "`hbm-write-16B`", "a 2 GiB write, `float4` stores", "every element", "HBM"],
        ["8", "`hbm-copy-16B`", "1 GiB copied into another 1 GiB, one `float4` per thread",
         "every element", "HBM"],
        ["9", "`l2-read-16B`", "version 6 on a third of the L2, many passes",
         "each block's exact sum", "HBM (so it reads as a multiple)"],
        ["10-13", "`smem-row`, `smem-stride2`, `smem-stride32`, `smem-pad33`",
         "shared-memory loads, four access patterns", "every thread's exact sum",
         "SMs x 32 banks x 4 B x clock"],
        ["14", "`fma-fp32`", "fp32 FMAs from registers",
         "64 threads replayed on the host, bit for bit", "fp32 datasheet peak"],
        ["15", "`naive`", "attention as three kernels, S and P in HBM",
         "against the double-precision reference", "fp32 peak, and traffic in the report"],
    ]),
    2: (["#", "version", "what changes", "reads + writes", "MB moved, 16384 x 4096"], [
        ["1", "`v1_naive.cu` `naive (\\|x\\|<4 data)`",
         "one thread per row; exp / sum / divide, no max", "2 R + 1 W", "805.3"],
        ["2", "`v2_safe_thread.cu` safe-thread",
         "subtract the max: three passes (max, sum, normalise)", "3 R + 1 W", "1073.7"],
        ["3", "`v3_safe_warp.cu` safe-warp",
         "one warp per row: coalesced loads, shuffle reductions", "3 R + 1 W", "1073.7"],
        ["4", "`v4_safe_block.cu` safe-block",
         "one block (256 threads) per row: warp, then shared memory", "3 R + 1 W", "1073.7"],
        ["5", "`v5_online_block.cu` online-block",
         "running (m, l) in one pass, merged across the block", "2 R + 1 W", "805.3"],
        ["6", "`v6_online_regs.cu` online-regs",
         "the row held in registers, 16-byte loads, one (m, l) merge", "1 R + 1 W", "536.9"],
        ["7", "`v7_regs_smem.cu` online-regs+smem",
         "half of each thread's share in shared memory via cp.async", "1 R + 1 W", "536.9"],
        ["8", "`v8_decode_split.cu` attn-split-warps",
         "attention: keys split over 8 warps, (m, l, O) merged", "Q, K, V, O once", "harness"],
    ]),
    3: (["#", "name", "what it does", "memory beyond Q, K, V, O"], [
        ["1", "`fused-row`", "fused, not tiled: one thread per query row walks every visible key "
         "with lesson 2's online update", "none"],
        ["2", "`fa1`", "Algorithm 1 as published: key/value tiles outside, query tiles inside, one "
         "block per (batch, head)", "m, l: 2 floats per row"],
        ["3", "`fa1-qgroups`", "the same kernel with several blocks per (batch, head), each taking "
         "every G-th query tile (not in the paper)", "m, l"],
    ]),
    4: (["#", "file", "name", "what changed", "dtype"], [
        ["1", "`v1_splitk.cu`", "splitk-f32", "Q-outer grid; warps split each KV tile (split-K), "
         "max exchanged through shared memory", "fp32"],
        ["2", "`v2_splitq.cu`", "splitq-f32",
         "warps split the Q tile (split-Q): shuffles, no barrier in the softmax", "fp32"],
        ["3", "`v3_mma.cu`", "mma-bf16",
         "`mma.sync` m16n8k16 + `ldmatrix`; S and P in registers; Br 128, Bc 64", "bf16"],
        ["4", "`v4_swizzle.cu`", "swizzle-bf16", "XOR-swizzled shared memory (one function changes)",
         "bf16"],
        ["5", "`v5_cpasync.cu`", "cpasync-bf16", "`cp.async` double buffering of K and V", "bf16"],
        ["6", "`v6_causal.cu`", "causal-bf16",
         "causal tile skip, diagonal-only mask, heavy Q tiles first", "bf16"],
        ["7", "`v7_tiles.cu`", "tiles-bf16", "dim 64: Bc 128 and Q read from shared memory", "bf16"],
    ]),
    5: (["#", "file", "name", "what changed", "threads"], [
        ["1", "`v1_wgmma.cu`", "wgmma-bf16", "`wgmma.mma_async` m64n128k16 per warpgroup: Q, K, V "
         "from 128-byte-swizzled shared memory through descriptors, P from registers; `cp.async` "
         "loads", "256"],
        ["2", "`v2_tma.cu`", "tma-bf16", "TMA tiles (tensor maps, 128-byte swizzle) into a "
         "two-stage ring, waits on mbarrier phases", "256"],
        ["3", "`v3_warpspec.cu`", "warpspec-bf16", "a producer warpgroup issues TMA, two "
         "consumers compute; full/empty barriers per stage; `setmaxnreg` 24/240", "384"],
        ["4", "`v4_pingpong.cu`", "pingpong-bf16", "the consumers take turns at the tensor cores "
         "(named barriers): S_j and P_{j-1} V_{j-1} in one turn, the softmax under the other's",
         "384"],
        ["5", "`v5_overlap.cu`", "overlap-bf16", "inside a turn, the softmax of S_j under the "
         "warpgroup's own P_{j-1} V_{j-1} (two commit groups, `wait_group 1`); at dim 128 O "
         "stored through the Q tile by TMA", "384"],
        ["6", "`v6_fp8.cu`", "fp8-e4m3", "version 5 on e4m3 Q, K and V^T (keys permuted to the "
         "order a thread holds P), one scale per tensor, dim 128; the conversion is timed with it",
         "384"],
        ["7", "`v7_fp8_tiles.cu`", "fp8-tiles", "a power-of-two scale per tile of 128 rows of Q, "
         "K and V: the conversion in one pass (`fp8_quant_tiles.cu`), the descales applied tile by "
         "tile; the conversion is timed with it", "384"],
        ["8", "`v8_three.cu`", "three-bf16", "version 5 with three consumer warpgroups: blocks of "
         "192 query rows, turns round a ring of three named barriers, `setmaxnreg` 24/160; dim 64 "
         "only", "512"],
        ["9", "`v9_persistent.cu`", "persistent-bf16", "version 8 with one block per SM taking its "
         "Q tiles from an atomic counter: the next tile's Q and first K and V load under this one's "
         "last; dim 64 only", "512"],
        ["10", "`v10_fp8_wide.cu`", "fp8-wide", "version 7's workspace with tiles of 256 keys: "
         "no turns at the GEMMs, S and P V waited at once, the warpgroups taking turns at the "
         "exponentials (a named barrier); the conversion is timed with it", "384"],
        ["11", "`v11_fp8_persistent.cu`", "fp8-persistent", "version 10 with version 9's "
         "scheduler: one block per SM taking its Q tiles from an atomic counter, the next tile's Q "
         "and first K and V loading under this one's last; O stored through shared memory by TMA; "
         "the conversion is timed with it", "384"],
        ["12", "`v12_fp8_q_in_kernel.cu`", "fp8-q-in-kernel", "version 11 reading Q in bf16: each "
         "consumer warp converts its 16 rows to e4m3 in shared memory before the item's first S, "
         "so the pass before the kernel converts K and V only; both are timed with it", "384"],
        ["13", "`v13_fp8_exp_fma.cu`", "fp8-exp-fma", "version 12 with half its exponentials on "
         "the FMA pipes: the even keys' 2^x as a straight line between powers of two (a clamp and "
         "one integer multiply-add after the multiply-add), the odd keys' on the special function "
         "unit; version 12's pass", "384"],
        ["14", "`v14_fp8_half_tile.cu`", "fp8-half-tile", "version 13 running an item's last KV "
         "tile over its first 128 keys (S m64n128k32, 64 exponentials a thread, P V over one V^T "
         "panel) where the other 128 are masked for every row: the causal diagonal of even Q "
         "tiles; version 12's pass", "384"],
        ["15", "`v15_persistent_pairs.cu`", "pairs-bf16", "version 5 in persistent blocks, one per "
         "SM, each walking a list of items fixed before the launch (under the mask a head's Q "
         "tiles in pairs, i with n - 1 - i, so every pair sees n + 1 KV tiles); the KV ring, the "
         "turns and a second Q buffer carried from item to item", "384"],
        ["16", "(yardstick)", "l04-tiles", "lesson 04's version 7 (`mma.sync`) on the same inputs",
         "128"],
    ]),
}


def measured(a, lesson, version, shape):
    """'ms, rate (% of peak)' of one version at one shape: TFLOP/s against the dtype's compute peak
    where the version counts flops, else GB/s against the peak the program names (lessons.csv's
    `peak`), each a digit or two shorter than the program's table prints it."""
    r = a.one(lesson, version, **shape)
    if r is None:
        rs = a.rows(lesson, version, **shape)
        if not rs:
            return "not in this archive"
        return esc(f"{rs[0]['status']}: {rs[0]['note']}" if rs[0].get("note") else rs[0]["status"])
    s = f"{half_up(r['ms'], 3)} ms"
    if r["tflops"]:
        peak = ("fp32" if r["dtype"] == "fp32" else
                "fp8 tensor" if "fp8" in (r.get("name") or "") else f"{r['dtype']} tensor")
        s += f", {half_up(r['tflops'], 1)} TFLOP/s ({half_up(r['pct_flops'], 0)}% of {peak})"
    elif r["gbs"]:
        s += (f", {half_up(r['gbs'], 0 if r['gbs'] >= 100 else 1)} GB/s "
              f"({half_up(r['pct_bw'], 0)}% of {r['peak']})")
    if r["status"] != "PASS":
        s += f" ({r['status']})"
    return esc(s)


def r_versions(a, ctx):
    n = ctx["lesson"]
    if n not in VERSIONS:
        raise ValueError(f"{os.path.relpath(ctx['path'], ROOT)}: no versions table for lesson {n} "
                         f"(VERSIONS has {', '.join(str(k) for k in sorted(VERSIONS))})")
    head, rows = VERSIONS[n]
    shape = default_shape(a, n)
    out = []
    for row in rows:
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", row[0])
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        # a number the archive gave another version (one added later moves the yardstick down)
        # is not this row's: "not in this archive" unless its name is the row's
        got = shape and lo == hi and a.one(n, lo, **shape)
        other = got and got.get("name") and got["name"] not in " ".join(row).replace("\\|", "|")
        cell = "; ".join(measured(a, n, v, shape) for v in range(lo, hi + 1)) if shape and \
            not other else "not in this archive"
        out.append(row + [cell])
    words = (f"batch {shape['batch']}, {shape_words(shape)}" if shape else
             "not in this archive: " + NO_RUN)
    lead = (f"The last column is the default `./run` ({words}): the median time, then TFLOP/s "
            "where the version counts flops and GB/s where it counts only bytes, each with its % "
            "of the peak the program names, rounded from lessons.csv.")
    return "\n".join([source(a, ["lessons.csv"]), "", lead, "",
                      table(head + ["measured (default shape)"], out)])


# The regions this module writes: NAME of `<!-- results:NAME -->` -> its renderer.
RENDERERS = {
    "transcript": r_transcript, "versions": r_versions,
}
