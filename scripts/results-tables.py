#!/usr/bin/env python3
"""Rewrite the measured figures in the READMEs from archived GPU runs.

    scripts/results-tables.py [FOLDER]           rewrite every results region in place
    scripts/results-tables.py --check [FOLDER]   compare instead; print a unified diff of any drift
                                                 and exit 1 (0 when every region is in sync)

FOLDER is one run's folder under docs/results/, as scripts/gpu-suite.sh writes it. Without it, each
README reads the newest folder (by the date its name ends with, then its name) that holds rows of
its lessons: a lesson README its own lesson's, the top README lessons 01-04's; so a partial run
(gpu-suite.sh with LESSONS=6) serves its lessons and leaves the others on the last whole run.
Layout (docs/results/README.md describes it): lessons.csv (required), peers.csv, ncu.txt, gpu-suite.log, nvidia-smi.txt,
accuracy-lesson09.csv and memory-lesson09.csv (bench/lesson09_peers.py's other two tables). A figure
whose file is missing is written as a placeholder that says which suite phase produces it.

A region is every line between two markers in README.md or lessons/*/README.md:

    <!-- results:NAME -->
    ...generated...
    <!-- /results:NAME -->

NAME picks the function that writes it (RENDERERS below). The opening marker may name a folder of
docs/results/ after NAME (`<!-- results:NAME FOLDER -->`); that region then reads that folder.
Each region opens with a line naming the folder, device and date it comes from. Standard library
only: CI runs --check (ctest results-tables-in-sync).
"""
import argparse
import csv
import decimal
import difflib
import glob
import io
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "results")

NO_PEERS = "not in this archive (run `scripts/gpu-suite.sh bench`)"
NO_NCU = "not in this archive (run `scripts/gpu-suite.sh ncu`)"
NO_LOG = ("not in this archive (the report printed after the table, in `gpu-suite.log` of "
          "`scripts/gpu-suite.sh lessons`)")
NO_RUN = "not in this archive (`gpu-runs.txt` lists it: run `scripts/gpu-suite.sh lessons`)"

H200_HBM_DATASHEET_GBS = 4800.0

SHAPE_KEYS = ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "dim", "causal")


# ---- Reading one archive -------------------------------------------------------------------------

def _num(s):
    s = (s or "").strip()
    if s == "":
        return None
    try:
        return float(s)
    except ValueError:
        return None


UNIT_SCALE = {  # to bytes, seconds, or 1
    "": 1.0, "byte": 1.0, "bytes": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024.0, "mib": 1024.0 ** 2,
    "gib": 1024.0 ** 3, "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0,
}


class NcuRun:
    """One line of an ncu-runs.txt: where it came from, what it ran, and its metric rows."""

    def __init__(self, header):
        m = re.match(r"#### ncu (\S+?):(\d+): (.*)$", header)
        self.file, self.line, self.args = (m.group(1), int(m.group(2)), m.group(3)) if m else (
            "", 0, header[len("#### ncu "):])
        self.lesson = self.version = self.seq = None
        words = self.args.split()
        for i, w in enumerate(words):
            p = re.match(r"(?:\./)?lesson-(\d+)$", w)
            if p:
                self.lesson = int(p.group(1))
                rest = words[i + 1:]
                if rest and rest[0].isdigit():
                    self.version = int(rest[0])
                for j, r in enumerate(rest[:-1]):
                    if r == "--seq":
                        self.seq = int(rest[j + 1])
                break
        self.records = []  # dicts: id, kernel, metric, value (base units)

    def add_csv(self, lines):
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
        if not rows:
            return
        head = rows[0]

        def col(*names):
            for n in names:
                if n in head:
                    return head.index(n)
            return None
        c_id, c_k = col("ID"), col("Kernel Name", "Function Name")
        c_m, c_u, c_v = col("Metric Name"), col("Metric Unit"), col("Metric Value")
        if None in (c_k, c_m, c_v):
            return
        for r in rows[1:]:
            if len(r) <= max(c for c in (c_id, c_k, c_m, c_u, c_v) if c is not None):
                continue
            raw = r[c_v].replace(",", "").strip()
            try:
                v = float(raw)
            except ValueError:
                continue
            unit = (r[c_u].strip().lower() if c_u is not None else "")
            v *= UNIT_SCALE.get(unit, 1.0)
            self.records.append({"id": r[c_id] if c_id is not None else "", "kernel": r[c_k],
                                 "metric": r[c_m], "value": v})

    def kernels(self, pattern):
        """The launch ids (in order) whose kernel name matches the regex."""
        seen = []
        for rec in self.records:
            if re.search(pattern, rec["kernel"]) and rec["id"] not in seen:
                seen.append(rec["id"])
        return seen

    def metric(self, pattern, name):
        """The metric of the first launch of a kernel matching @p pattern, or None."""
        ids = self.kernels(pattern)
        if not ids:
            return None
        for rec in self.records:
            if rec["id"] == ids[0] and rec["metric"] == name:
                return rec["value"]
        return None


class Archive:
    def __init__(self, folder):
        self.folder = os.path.abspath(folder)
        self.rel = os.path.relpath(self.folder, ROOT)
        name = os.path.basename(self.folder.rstrip("/"))
        m = re.match(r"^(.*)-(\d{4}-\d{2}-\d{2})$", name)
        self.date = m.group(2) if m else "undated"
        path = os.path.join(self.folder, "lessons.csv")
        if not os.path.exists(path):
            raise SystemExit(f"results-tables: {self.rel}/lessons.csv is missing")
        self.lessons = []
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                row = dict(r)
                for k in ("lesson", "version") + SHAPE_KEYS:
                    row[k] = int(row[k])
                for k in ("max_abs", "rel_l2", "ms", "tflops", "pct_flops", "gbs", "pct_bw"):
                    row[k] = _num(row.get(k))
                self.lessons.append(row)
        self.peers = self._read_peers()
        self.ncu = self._read_ncu()
        self.log = self._read_log()
        self.smi = self._read_smi()
        names = [r["device"] for r in self.lessons if r.get("device")]
        self.device = (names[0] if names else None) or (self.smi or {}).get("product") or \
            (self.peers[0]["device"] if self.peers else "unknown device")

    # -- files
    def _read_peers(self):
        paths = [os.path.join(self.folder, "peers.csv")]
        if not os.path.exists(paths[0]):
            paths = sorted(glob.glob(os.path.join(self.folder, "peers-lesson*.csv")))
        rows = []
        for p in paths:
            if not os.path.exists(p):
                continue
            with open(p, newline="") as f:
                for r in csv.DictReader(f):
                    row = dict(r)
                    for k in ("lesson", "batch", "heads", "kv_heads", "seq_q", "seq_kv", "dim",
                              "causal", "rows", "cols", "bytes", "pinned"):
                        v = _num(row.get(k))
                        row[k] = int(v) if v is not None else None
                    for k in ("ms", "min_ms", "tflops", "gbs", "pct_hbm", "max_abs"):
                        row[k] = _num(row.get(k))
                    rows.append(row)
        return rows or None

    def _read_ncu(self):
        path = os.path.join(self.folder, "ncu.txt")
        if not os.path.exists(path):
            return None
        runs, cur, lines = [], None, []
        with open(path) as f:
            for line in f.read().splitlines():
                if line.startswith("#### ncu "):
                    if cur is not None:
                        cur.add_csv(lines)
                    cur, lines = NcuRun(line), []
                    runs.append(cur)
                elif cur is not None and line.startswith('"'):
                    lines.append(line)
        if cur is not None:
            cur.add_csv(lines)
        return runs or None

    def _read_log(self):
        path = os.path.join(self.folder, "gpu-suite.log")
        if not os.path.exists(path):
            return None
        sections, title, body = [], None, []
        with open(path, errors="replace") as f:
            for line in f.read().splitlines():
                m = re.match(r"^==== (.*) ====$", line)
                if m:
                    if title is not None:
                        sections.append((title, body))
                    title, body = m.group(1).strip(), []
                elif title is not None:
                    body.append(line)
        if title is not None:
            sections.append((title, body))
        log = {"sections": sections, "kernels": {}, "sms": None, "clock_mhz": None,
               "runtime": None, "probe_bytes": None}
        step = re.compile(r"^\s+(1 S = QK\^T|2 softmax|3 O = PV)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                          r"\s+([\d.]+)\s+([\d.]+)\s*$")
        for t, lines in sections:
            shape = None
            for line in lines:
                m = re.match(r"^device\s+.*?, sm_\d+, (\d+) SMs, SM clock (\d+) MHz", line)
                if m and log["sms"] is None:
                    log["sms"], log["clock_mhz"] = int(m.group(1)), int(m.group(2))
                m = re.match(r"^software\s+driver (\S+), runtime ([\d.]+)", line)
                if m and log["runtime"] is None:
                    log["runtime"] = m.group(2)
                m = re.match(r"^Copy probe: (\d+) bytes read .*read probe: (\d+) bytes", line)
                if m and log["probe_bytes"] is None:
                    log["probe_bytes"] = (int(m.group(1)), int(m.group(2)))
                m = re.match(r"^Naive attention on the roofline \(batch (\d+)\s+heads (\d+)/(\d+)\s+"
                             r"seq (\d+)/(\d+)\s+dim (\d+)\s+(full|causal)", line)
                if m:
                    g = [int(x) for x in m.groups()[:6]]
                    shape = tuple(g) + (1 if m.group(7) == "causal" else 0,)
                m = step.match(line)
                if m and shape is not None:
                    k = log["kernels"].setdefault(shape, {})
                    idx = int(m.group(1)[0])
                    if idx not in k:
                        k[idx] = {"ms": float(m.group(2)), "gbs": float(m.group(3)),
                                  "pct_hbm": float(m.group(4)), "tflops": float(m.group(5)),
                                  "pct_fp32": float(m.group(6))}
        return log

    def _read_smi(self):
        path = os.path.join(self.folder, "nvidia-smi.txt")
        if not os.path.exists(path):
            return None
        info = {}
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"^\s*(Product Name|Driver Version|CUDA Version)\s*:\s*(.+?)\s*$", line)
                if m and m.group(1) not in info:
                    info[m.group(1)] = m.group(2)
                m = re.search(r"release ([\d.]+), V([\d.]+)", line)
                if m and "nvcc" not in info:
                    info["nvcc"] = m.group(2)
        return {"product": info.get("Product Name"), "driver": info.get("Driver Version"),
                "cuda": info.get("CUDA Version"), "nvcc": info.get("nvcc")}

    # -- lookups
    def rows(self, lesson, version=None, timed=False, **shape):
        out = []
        for r in self.lessons:
            if r["lesson"] != lesson or (version is not None and r["version"] != version):
                continue
            if any(r.get(k) != v for k, v in shape.items()):
                continue
            if r.get("kv_lens") and "kv_lens" not in shape:
                continue  # a run with a length per sequence matches only when asked for
            if timed and r["ms"] is None:
                continue
            out.append(r)
        return out

    def one(self, lesson, version=None, **shape):
        """The first timed row of a version and shape (a shape that ran twice: its first run)."""
        rs = self.rows(lesson, version, timed=True, **shape)
        return rs[0] if rs else None

    def peer(self, lesson, impl, **kv):
        if not self.peers:
            return None
        for r in self.peers:
            if int(r["lesson"]) != lesson or not re.fullmatch(impl, r["impl"] or ""):
                continue
            if any(r.get(k) != v for k, v in kv.items()):
                continue
            if r["ms"] is None and r["tflops"] is None and r["gbs"] is None:
                continue
            return r
        return None

    def ncu_run(self, lesson, version=None, seq=None):
        for run in self.ncu or []:
            if run.lesson == lesson and run.version == version and \
                    (seq is None or run.seq == seq) and run.records:
                return run
        return None

    def repeats(self, lesson):
        """(version, shape, n, spread) for every timed version and shape that ran more than once;
        spread = (slowest - fastest) / fastest."""
        groups = {}
        for r in self.rows(lesson, timed=True):
            key = (r["version"],) + tuple(r[k] for k in SHAPE_KEYS)
            groups.setdefault(key, []).append(r["ms"])
        out = []
        for key, ms in groups.items():
            if len(ms) > 1:
                out.append((key[0], dict(zip(SHAPE_KEYS, key[1:])), len(ms),
                            (max(ms) - min(ms)) / min(ms)))
        return out

    # -- words
    def device_desc(self):
        parts = []
        if self.log and self.log["sms"]:
            parts.append(f"{self.log['sms']} SMs, {self.log['clock_mhz']} MHz")
        if self.smi:
            if self.smi.get("driver"):
                parts.append(f"driver {self.smi['driver']}")
            if self.smi.get("cuda"):
                parts.append(f"CUDA {self.smi['cuda']}")
            if self.smi.get("nvcc"):
                parts.append(f"nvcc {self.smi['nvcc']}")
        return self.device + (f" ({', '.join(parts)})" if parts else "")

    def software(self):
        """'PyTorch X, cuDNN Y' from the peers, or None."""
        if not self.peers:
            return None
        r = self.peers[0]
        s = f"PyTorch {r['torch']}" if r.get("torch") else ""
        if r.get("cudnn"):
            c = r["cudnn"]
            if c.isdigit() and len(c) >= 4:  # 91900 -> 9.19.0
                c = f"{int(c) // 10000}.{int(c) // 100 % 100}.{int(c) % 100}"
            s += f", cuDNN {c}"
        return s or None

    def is_h200(self):
        return "H200" in self.device


# ---- Formatting ------------------------------------------------------------------------------------

def f(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def pc(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}%"


def xs(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}x"


def esc(s):
    return str(s).replace("|", "\\|")


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def source(a, files):
    """The line each region opens with: the folder, the files read, the device and the date."""
    have = [x for x in files if os.path.exists(os.path.join(a.folder, x)) or
            (x == "peers.csv" and a.peers)]
    lack = [x for x in files if x not in have]
    what = ", ".join(have) + ("; " if have and lack else "") + \
        (f"no {' or '.join(lack)}" if lack else "")
    return (f"*Generated by `scripts/results-tables.py` from `{a.rel}/` ({what}): "
            f"{a.device_desc()}, {a.date}.*")


def size_str(nbytes):
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):.0f} GiB"
    return f"{nbytes / (1 << 20):.0f} MiB"


def seq_label(s):
    return f"{s // 1024}k" if s >= 1024 and s % 1024 == 0 else str(s)


def span(lo, hi, nd=0):
    """'27-28', or '13' when both round alike."""
    a, b = f"{lo:.{nd}f}", f"{hi:.{nd}f}"
    return a if a == b else f"{a}-{b}"


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def rel(a, b):
    """(a - b) / b in percent."""
    return 100.0 * (a - b) / b if a is not None and b not in (None, 0) else None


def att(b, h, s, d, c=0, kvh=None, skv=None):
    return dict(batch=b, heads=h, kv_heads=kvh if kvh else h, seq_q=s, seq_kv=skv if skv else s,
                dim=d, causal=c)


def noise_sentence(a, lesson):
    reps = a.repeats(lesson)
    if not reps:
        return ("Run-to-run noise: no version and shape ran twice in this archive, so none is "
                "quoted.")
    worst = max(reps, key=lambda t: t[3])
    shapes = {tuple(sorted(s.items())) for _, s, _, _ in reps}
    v, s, _, sp = worst
    where = f"version {v}, dim {s['dim']}{', causal' if s['causal'] else ''}"
    med = statistics.median(t[3] for t in reps)
    return (f"Run-to-run noise: {len(shapes)} shape{'s' if len(shapes) > 1 else ''} of this lesson "
            f"ran more than once in the suite ({len(reps)} version and shape pairs); the same "
            f"version's times differed by at most {100 * sp:.2f}% ({where}), median "
            f"{100 * med:.2f}%.")


# ---- Lesson 01 ---------------------------------------------------------------------------------

L01 = {"h2d-pageable": 1, "h2d-pinned": 2, "d2h-pageable": 3, "d2h-pinned": 4, "read4": 5,
       "read16": 6, "write16": 7, "copy16": 8, "l2": 9, "row": 10, "stride2": 11, "stride32": 12,
       "pad33": 13, "fma": 14, "naive": 15}
L01_DEFAULT = att(1, 16, 4096, 64)


def l01(a, name):
    return a.one(1, L01[name])


def l01_hbm_peak(a):
    """The harness's HBM figure (clock x bus width), from a probe's GB/s and % of it."""
    r = l01(a, "read16")
    return r["gbs"] / r["pct_bw"] * 100.0 if r and r["pct_bw"] else None


def copy_verdict(a, short=False):
    lesson = l01(a, "copy16")
    reps = [r["gbs"] for r in a.rows(1, L01["copy16"], timed=True)]
    torch = a.peer(1, "torch.copy")
    if lesson is None:
        return "the lesson's copy: " + NO_RUN
    if torch is None:
        return ("PyTorch's copy: " + NO_PEERS + ".") if not short else "peer figures: " + NO_PEERS
    d = rel(lesson["gbs"], torch["gbs"])
    spread = 100.0 * (max(reps) - min(reps)) / min(reps) if len(reps) > 1 else None
    sp = (f"the lesson's copy ran {len(reps)} times in this run and spread by {spread:.2f}%"
          if spread is not None else "the lesson's copy ran once, so no spread is known")
    if short:
        head = f"`copy_` {torch['gbs'] / 1000:.2f} TB/s"
        if d >= 0 and spread is not None and d <= spread:
            return f"{head}: the lesson's copy {d:+.2f}%, within its run-to-run spread ({spread:.2f}%)"
        if d >= 0:
            return f"{head}: the lesson's copy {d:+.2f}%"
        if spread is not None and -d <= spread:
            return f"{head}: a tie ({d:+.2f}%, within the copy's run-to-run spread of {spread:.2f}%)"
        return f"{head}: the lesson's copy {d:+.2f}% behind"
    fig = f"{lesson['gbs']:.1f} against {torch['gbs']:.1f} GB/s ({d:+.2f}%); {sp}"
    if d >= 0 and spread is not None and d <= spread:
        return "met, by no more than the run-to-run spread: " + fig + "."
    if d >= 0:
        return "met, " + fig + "."
    if spread is not None and -d <= spread:
        return "a tie within the run-to-run spread, not strictly met: " + fig + "."
    return "not met: " + fig + "."


H200_PYRAMID = {  # capacity, published or computed figure (datasheet and device properties)
    "registers": ("64 K x 4 B per SM, 33.0 MiB over 132 SMs",
                  "401 TB/s: fp32 peak x 6 B per flop (datasheet)"),
    "shared memory": ("228 KiB x 132 SMs = 29.4 MiB",
                      "33.5 TB/s: 132 SMs x 128 B x 1.98 GHz (computed)"),
    "L2": ("60.0 MiB (as the device reports)", "none published"),
    "HBM3e": ("141 GB (datasheet; the device reports 139.8 GiB)", "4.8 TB/s (H200 datasheet)"),
    "host link (pinned)": ("host RAM", "PCIe Gen5 x16, 128 GB/s both directions (H200 datasheet)"),
}


def r_pyramid(a, ctx):
    fma, smem, l2, hbm, link = (l01(a, n) for n in ("fma", "row", "l2", "read16", "h2d-pinned"))
    back = l01(a, "d2h-pinned")
    levels = [("registers", fma["tflops"] * 6000.0 if fma else None, " (derived)"),
              ("shared memory", smem["gbs"] if smem else None, ""),
              ("L2", l2["gbs"] if l2 else None, ""),
              ("HBM3e" if a.is_h200() else "HBM", hbm["gbs"] if hbm else None, ""),
              ("host link (pinned)", link["gbs"] if link else None, "")]
    rows, steps = [], []
    for i, (name, gbs, note) in enumerate(levels):
        below = levels[i + 1][1] if i + 1 < len(levels) else None
        step = ratio(gbs, below)
        if step is not None:
            steps.append(f"{step:.1f}x")
        cap, pub = H200_PYRAMID[name] if a.is_h200() else ("-", "see the report of `./run`")
        if gbs is None:
            meas = NO_RUN
        elif gbs >= 1000:
            meas = f"{gbs / 1000:.2f} TB/s{note}"
        else:
            meas = f"{gbs:.1f} GB/s{note}"
        rows.append([name, cap, meas, f"{step:.1f}" if step is not None else "-", pub])
    out = [source(a, ["lessons.csv"]), "",
           table(["level", "capacity", "measured", "x below", "published or computed figure"], rows),
           ""]
    s = f"Steps, registers to host: {', '.join(steps[:-1])} and {steps[-1]}." if len(steps) > 1 \
        else ""
    if link and back:
        s += (f" The host link, one direction at a time: {link['gbs']:.1f} GB/s to the device and "
              f"{back['gbs']:.1f} GB/s back")
        if a.is_h200():
            p1, p2 = f"{100 * link['gbs'] / 64.0:.0f}%", f"{100 * back['gbs'] / 64.0:.0f}%"
            s += (f", {p1 + ' each' if p1 == p2 else p1 + ' and ' + p2} of the 64 GB/s per "
                  f"direction that the datasheet's 128 GB/s both ways amounts to")
        s += "."
    out.append(s.strip())
    return "\n".join(out)


def r_host_link(a, ctx):
    rows = []
    for label, pg, pn, impl in (("host to device", "h2d-pageable", "h2d-pinned", "torch.h2d"),
                                ("device to host", "d2h-pageable", "d2h-pinned", "torch.d2h")):
        g, n = l01(a, pg), l01(a, pn)
        tg, tn = a.peer(1, impl, pinned=0), a.peer(1, impl, pinned=1)
        rows.append([label, f(g and g["gbs"]), f(n and n["gbs"]),
                     pc(100 * ratio(g["gbs"], n["gbs"]), 0) if g and n else "-",
                     pc(n and n["pct_bw"]),
                     f(tg and tg["gbs"]) if a.peers else NO_PEERS,
                     f(tn and tn["gbs"]) if a.peers else ""])
    nb = a.peer(1, "torch.h2d", pinned=1)
    size = f", PyTorch on {nb['bytes'] >> 20} MiB" if nb and nb.get("bytes") else ""
    return "\n".join([
        source(a, ["lessons.csv", "peers.csv"]), "",
        f"256 MiB each way{size}; GB/s:", "",
        table(["direction", "pageable", "pinned", "pageable / pinned",
               "pinned, % of the figure measured in setup", "PyTorch pageable", "PyTorch pinned"],
              rows)])


def r_hbm(a, ctx):
    peak = l01_hbm_peak(a)
    h200 = a.is_h200()
    head = ["probe", "GB/s"] + (["% of 4.8 TB/s (datasheet)"] if h200 else []) + \
        [f"% of {peak:.0f} GB/s (clock x bus, the harness's %peak)" if peak else "% of clock x bus"]

    def row(label, gbs):
        r = [label, f(gbs)]
        if h200:
            r.append(pc(100 * gbs / H200_HBM_DATASHEET_GBS) if gbs else "-")
        r.append(pc(100 * gbs / peak) if gbs and peak else "-")
        return r
    rows = []
    for name, label in (("read4", "`hbm-read-4B`"), ("read16", "`hbm-read-16B`"),
                        ("write16", "`hbm-write-16B`"), ("copy16", "`hbm-copy-16B` (read + write)")):
        r = l01(a, name)
        rows.append(row(label, r["gbs"] if r else None))
    cp, sm = a.peer(1, "torch.copy"), a.peer(1, "torch.sum")
    if a.peers:
        if cp:
            rows.append(row(f"PyTorch `dst.copy_(src)`, {cp['bytes']} bytes per buffer", cp["gbs"]))
        if sm:
            rows.append(row(f"PyTorch `x.sum()`, {sm['bytes']} bytes", sm["gbs"]))
    else:
        rows.append(["PyTorch `dst.copy_(src)` and `x.sum()`", NO_PEERS] + [""] * (len(head) - 2))
    sizes = ""
    if a.log and a.log["probe_bytes"]:
        c, r = a.log["probe_bytes"]
        sizes = f"The lesson's sizes in this run: the reads {r} bytes, the copy {c} bytes each way."
    out = [source(a, ["lessons.csv", "peers.csv", "gpu-suite.log"]), ""] + \
        ([sizes, ""] if sizes else []) + [table(head, rows), ""]
    r16, r4 = l01(a, "read16"), l01(a, "read4")
    if r16:
        ref, what = (H200_HBM_DATASHEET_GBS, "4.8 TB/s") if h200 else (peak, "clock x bus width")
        p = 100 * r16["gbs"] / ref
        out.append(f"- Target, the 16-byte read at 90% or more of {what}: "
                   f"{'met' if p >= 90 else 'not met'}, {r16['gbs']:.1f} GB/s = {p:.1f}%.")
    out.append("- Target, the copy at least PyTorch's device copy on the same bytes in the same run: "
               + copy_verdict(a))
    if r16 and r4:
        p = 100 * r4["gbs"] / r16["gbs"]
        out.append(f"- The 4-byte read was expected to fall short of bytes in flight; it reaches "
                   f"{p:.1f}% of the 16-byte read ({r4['gbs']:.1f} against {r16['gbs']:.1f} GB/s): "
                   f"the wider load buys the last {100 - p:.1f}%.")
    return "\n".join(out)


def r_l2(a, ctx):
    l2, r16 = l01(a, "l2"), l01(a, "read16")
    if not (l2 and r16):
        return source(a, ["lessons.csv"]) + "\n\nThe L2 read: " + NO_RUN
    return (source(a, ["lessons.csv"]) + "\n\n" +
            f"The L2 read in this run: {l2['gbs']:.1f} GB/s, {l2['gbs'] / r16['gbs']:.2f}x the "
            f"16-byte HBM read.")


def r_banks(a, ctx):
    row = l01(a, "row")
    if not row:
        return source(a, ["lessons.csv"]) + "\n\nThe shared-memory probes: " + NO_RUN
    peak = row["gbs"] / row["pct_bw"] * 100.0
    rows, devs = [], []
    for name, stride, pred in (("row", 1, 1), ("stride2", 2, 2), ("stride32", 32, 32),
                               ("pad33", 33, 1)):
        r = l01(a, name)
        meas = r["ms"] / row["ms"] if r else None
        if r and name != "row":
            devs.append(abs(meas / pred - 1))
        rows.append([f"`smem-{name}`", stride, pred,
                     "1" if name == "row" else f(meas, 2), f(r and r["gbs"]),
                     pc(r and r["pct_bw"])])
    s32, pad = l01(a, "stride32"), l01(a, "pad33")
    out = [source(a, ["lessons.csv"]), "",
           f"Theoretical {peak / 1000:.1f} TB/s = SMs x 32 banks x 4 B x clock (the harness's "
           f"SMEM peak). \"Measured\" is the version's time over `smem-row`'s for the same loads.",
           "",
           table(["version", "lane stride", "predicted slowdown", "measured", "GB/s",
                  "% of theoretical"], rows), "",
           f"- Target, the conflict-free read at 80% or more of theoretical: "
           f"{'met' if row['pct_bw'] >= 80 else 'not met'}, {row['pct_bw']:.1f}%."]
    if s32:
        m = s32["ms"] / row["ms"]
        out.append(f"- Target, the 32-way conflict within 20% of the predicted 32x: "
                   f"{'met' if abs(m / 32 - 1) <= 0.2 else 'not met'}, {m:.2f}x "
                   f"({100 * abs(m / 32 - 1):.1f}% {'under' if m < 32 else 'over'}).")
    if devs and pad:
        out.append(f"- The bank arithmetic predicts all three slowdowns to within "
                   f"{100 * max(devs):.1f}%, and one padding word per row gives back "
                   f"{100 * pad['gbs'] / row['gbs']:.1f}% of the row read's rate.")
    return "\n".join(out)


def r_fma(a, ctx):
    r = l01(a, "fma")
    if not r:
        return source(a, ["lessons.csv"]) + "\n\n`fma-fp32`: " + NO_RUN
    peak = r["tflops"] / r["pct_flops"] * 100.0 if r["pct_flops"] else None
    s = f"In this run: {r['tflops']:.2f} TFLOP/s"
    if peak:
        s += f", {r['pct_flops']:.1f}% of the datasheet fp32 peak the harness prints, {peak:.1f} TFLOP/s"
        if a.is_h200():
            s += " (256 flops per clock per SM x 132 SMs x 1.98 GHz)"
    return source(a, ["lessons.csv"]) + "\n\n" + s + "."


def l01_kernels(a, shape):
    if not a.log:
        return None
    key = tuple(shape[k] for k in SHAPE_KEYS)
    return a.log["kernels"].get(key)


def r_naive_kernels(a, ctx):
    naive = a.one(1, 15, **L01_DEFAULT)
    ks = l01_kernels(a, L01_DEFAULT)
    rows = []
    if ks:
        for i, name in ((1, "1 S = QK^T"), (2, "2 softmax"), (3, "3 O = PV")):
            k = ks.get(i)
            rows.append([name, f(k and k["ms"], 3), f(k and k["gbs"]), pc(k and k["pct_hbm"]),
                         "-" if i == 2 else f(k and k["tflops"], 2)])
    else:
        rows.append(["kernels 1-3 alone", NO_LOG, "", "", ""])
    rows.append(["all three (`./run 15`)", f(naive and naive["ms"], 3), "", "",
                 f(naive and naive["tflops"], 2)])
    t = a.peer(1, "torch.naive", causal=0, seq_q=4096, dim=64, heads=16, batch=1)
    if a.peers:
        rows.append(["PyTorch, same three steps in fp32 (cuBLAS, TF32 off)", f(t and t["ms"], 3),
                     "", "", f(t and t["tflops"], 2)])
    else:
        rows.append(["PyTorch, same three steps in fp32 (cuBLAS, TF32 off)", NO_PEERS, "", "", ""])
    sw = a.software()
    return "\n".join([
        source(a, ["lessons.csv", "gpu-suite.log", "peers.csv"]), "",
        "Default shape: batch 1, 16 heads, seq 4096, D = 64, full" + (f"; {sw}" if sw else "") + ".",
        "", table(["kernel", "ms", "GB/s (model bytes)", "% of the measured HBM read", "TFLOP/s"],
                  rows)])


def naive_model_bytes(s):
    q = 4.0 * s["batch"] * s["seq_q"] * s["heads"] * s["dim"]
    kv = 4.0 * s["batch"] * s["seq_kv"] * s["kv_heads"] * s["dim"]
    sp = 4.0 * s["batch"] * s["heads"] * s["seq_q"] * s["seq_kv"]
    lse = 4.0 * s["batch"] * s["heads"] * s["seq_q"]
    return (q + kv + sp) + (2 * sp + lse) + (sp + kv + q)


def r_naive_floors(a, ctx):
    naive, hbm = a.one(1, 15, **L01_DEFAULT), l01(a, "read16")
    if not (naive and hbm):
        return source(a, ["lessons.csv"]) + "\n\nThe naive attention: " + NO_RUN
    traffic = naive_model_bytes(L01_DEFAULT)
    floor = traffic / (hbm["gbs"] * 1e9) * 1e3
    parts = []
    ks = l01_kernels(a, L01_DEFAULT)
    if ks and all(i in ks for i in (1, 2, 3)):
        parts.append(f"the softmax kernel takes {ks[2]['ms']:.3f} ms of the version's "
                     f"{naive['ms']:.3f} ms, at {ks[2]['pct_hbm']:.1f}% of the measured HBM read")
    parts.append(f"the memory floor, the model's {traffic / 1e9:.3f} GB over the measured HBM read "
                 f"({hbm['gbs']:.1f} GB/s), is {floor:.3f} ms, and the version takes "
                 f"{naive['ms'] / floor:.1f}x that")
    if ks and all(i in ks for i in (1, 2, 3)):
        pf = sorted((ks[1]["pct_fp32"], ks[3]["pct_fp32"]))
        ph = sorted((ks[1]["pct_hbm"], ks[3]["pct_hbm"]))
        parts.append(f"the two products take {ks[1]['ms'] + ks[3]['ms']:.3f} ms of it, at "
                     f"{span(*pf)}% of the fp32 peak while moving bytes at {span(*ph)}% of the "
                     f"HBM read")
    else:
        parts.append("the per-kernel times are " + NO_LOG)
    t = a.peer(1, "torch.naive", causal=0, seq_q=4096, dim=64, heads=16, batch=1)
    if t:
        parts.append(f"PyTorch's three steps take {t['ms']:.3f} ms, {t['ms'] / floor:.1f}x the "
                     f"memory floor")
    else:
        parts.append("PyTorch's figure is " + NO_PEERS)
    return source(a, ["lessons.csv", "gpu-suite.log", "peers.csv"]) + "\n\nIn this run: " + \
        "; ".join(parts) + "."


def r_naive_causal(a, ctx):
    full, cau = a.one(1, 15, **L01_DEFAULT), a.one(1, 15, **dict(L01_DEFAULT, causal=1))
    if not (full and cau):
        return source(a, ["lessons.csv"]) + "\n\nThe causal run: " + NO_RUN
    s = (f"In this run: {cau['ms']:.3f} ms causal against {full['ms']:.3f} ms without the mask; "
         f"{cau['tflops']:.2f} TFLOP/s of useful flops against {full['tflops']:.2f}.")
    tc = a.peer(1, "torch.naive", causal=1, seq_q=4096, dim=64, heads=16, batch=1)
    tf = a.peer(1, "torch.naive", causal=0, seq_q=4096, dim=64, heads=16, batch=1)
    if tc and tf:
        s += (f" PyTorch's three steps plus a `masked_fill`: {tc['ms']:.3f} ms causal "
              f"({tc['tflops']:.2f} TFLOP/s useful), against {tf['ms']:.3f} ms without the mask.")
    else:
        s += " PyTorch's causal figure: " + NO_PEERS + "."
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\n" + s


def shape_words(s, default=None):
    w = f"{s['heads']} heads" if s["kv_heads"] == s["heads"] else \
        f"{s['heads']} heads / {s['kv_heads']} KV heads"
    w += f", seq {s['seq_q']}" if s["seq_q"] == s["seq_kv"] else \
        f", seq_q {s['seq_q']}, seq_kv {s['seq_kv']}"
    w += f", D {s['dim']}"
    if s["causal"]:
        w += ", causal"
    if default is not None and all(s[k] == default[k] for k in SHAPE_KEYS):
        w += " (default)"
    return w


def r_naive_shapes(a, ctx):
    seen, rows = [], []
    for r in a.rows(1, 15):
        key = tuple(r[k] for k in SHAPE_KEYS)
        if key in seen:
            continue
        seen.append(key)
        s = dict(zip(SHAPE_KEYS, key))
        sb = 4 * s["batch"] * s["heads"] * s["seq_q"] * s["seq_kv"]
        if r["ms"] is None:
            t = a.one(1, 15, **s)
            if t is None:
                why = r["note"] or r["status"]
                rows.append([shape_words(s, L01_DEFAULT), size_str(sb), esc(f"{r['status']}: {why}"),
                             "", "", "", ""])
                continue
            r = t
        k = l01_kernels(a, s) or {}
        cells = [f(k[i]["ms"], 3) if i in k else "-" for i in (1, 2, 3)]
        if 2 in k:
            cells[1] += f" ({k[2]['gbs']:.1f})"
        rows.append([shape_words(s, L01_DEFAULT), size_str(sb), f(r["ms"], 3), f(r["tflops"], 2)]
                    + cells)
    out = [source(a, ["lessons.csv", "gpu-suite.log"]), ""]
    if not (a.log and a.log["kernels"]):
        out += ["Each kernel alone: " + NO_LOG, ""]
    out.append(table(["shape", "S", "all three, ms", "TFLOP/s (useful)", "S = QK^T, ms",
                      "softmax, ms (GB/s)", "O = PV, ms"], rows))
    return "\n".join(out)


# ---- Lesson 02 ---------------------------------------------------------------------------------

L02_DEFAULT = att(1, 16, 1024, 64, skv=4096)          # 16384 x 4096
L02_LONG = att(1, 4, 1024, 64, skv=32768)             # 4096 x 32768
L02_DECODE = att(64, 32, 1, 128, kvh=8, skv=8192)
L02_VERSIONS = {1: "naive (small data)", 2: "safe-thread", 3: "safe-warp", 4: "safe-block",
                5: "online-block", 6: "online-regs", 7: "online-regs+smem"}


def l02_rc(s):
    return s["batch"] * s["heads"] * s["seq_q"], s["seq_kv"]


def l02_peak(a):
    r = a.one(2, 6, **L02_DEFAULT) or a.one(2, 6, **L02_LONG)
    return r["gbs"] / r["pct_bw"] * 100.0 if r and r["pct_bw"] else None


# Reads of the row per version in lesson 02's byte model (versions.c), one write each: the
# traffic a version requests. Re-reads of a row can hit the L2, so this count can run past HBM's
# peak; every % of HBM below is of the bytes that must move (one read, one write).
L02_READS = {1: 2, 2: 3, 3: 3, 4: 3, 5: 2, 6: 1, 7: 1}


def l02_own(r, v):
    rows, cols = l02_rc(r)
    return (L02_READS[v] + 1) * rows * cols * 4 / (r["ms"] * 1e-3) / 1e9


def l02_1r1w(a, r):
    rows, cols = l02_rc(r)
    gbs = 2.0 * rows * cols * 4 / (r["ms"] * 1e-3) / 1e9
    peak = l02_peak(a)
    return gbs, (100 * gbs / peak if peak else None)


def r_softmax_setup(a, ctx):
    peak = l02_peak(a)
    s = f"HBM peak {peak:.0f} GB/s as the report computes it (2 x memory clock x bus width)" \
        if peak else "HBM peak: " + NO_RUN
    sw = a.software()
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\n" + s + (f"; {sw}" if sw else "") + "."


def l02_table(a, shape):
    rows = []
    for v, name in L02_VERSIONS.items():
        r = a.one(2, v, **shape)
        if r is None:
            rows.append([v, name, NO_RUN, "", "", "", ""])
            continue
        g, p = l02_1r1w(a, r)
        rows.append([v, name, f(r["ms"], 4), f(l02_own(r, v), 0), f(g, 0), pc(p)])
    return table(["#", "version", "ms", "own GB/s (requested; re-reads may hit L2)",
                  "1R+1W GB/s (must move)", "% HBM (1R+1W)"], rows)


def r_l04_triton(a, ctx):
    """lessons/04_fa2_warps/triton_fa2.py's timing table, as its log in the folder holds it."""
    path = os.path.join(a.folder, "triton-fa2.log")
    head = (f"*Generated by `scripts/results-tables.py` from `{a.rel}/` (triton-fa2.log): "
            f"{a.device_desc()}, {a.date}.*")
    if not os.path.exists(path):
        return head + "\n\nThe Triton timing: not in this archive (`triton_fa2.py`'s output, "
        "saved as `triton-fa2.log`)."
    text = open(path, errors="replace").read()
    res = {}
    for m in re.finditer(r"^\s*(64|128)\s+([01])\s+(\S+)\s+[\d.]+\s+([\d.]+)\s", text, re.M):
        res.setdefault((int(m.group(1)), int(m.group(2))), {})[m.group(3)] = float(m.group(4))
    setup = re.search(r"^(.*); batch (\d+), heads (\d+), seq (\d+); median of (\d+)", text, re.M)
    rows = []
    for (dim, causal), r in sorted(res.items()):
        tri, v7 = r.get("triton"), r.get("l04-v7-tiles-bf16")
        rows.append([dim, "yes" if causal else "no", f(r.get("sdpa-flash")),
                     f(r.get("sdpa-cudnn")), f(tri), f(v7),
                     f(tri / v7, 2) if tri and v7 else "-"])
    what = (f"{setup.group(1)}; batch {setup.group(2)}, {setup.group(3)} heads, seq "
            f"{setup.group(4)}, median of {setup.group(5)}; TFLOP/s, causal counted as half the "
            "pairs.") if setup else "TFLOP/s."
    return head + "\n\n" + what + "\n\n" + table(
        ["dim", "causal", "SDPA flash", "SDPA cuDNN", "Triton", "version 7",
         "Triton / version 7"], rows)


def r_softmax_default(a, ctx):
    return source(a, ["lessons.csv"]) + "\n\n" + l02_table(a, L02_DEFAULT)


def r_softmax_long(a, ctx):
    return source(a, ["lessons.csv"]) + "\n\n" + l02_table(a, L02_LONG)


def l02_peer(a, impl, shape):
    rows, cols = l02_rc(shape)
    return a.peer(2, impl, rows=rows, cols=cols)


def r_softmax_peers(a, ctx):
    if not a.peers:
        return source(a, ["peers.csv"]) + "\n\nPeer figures: " + NO_PEERS + "."
    rows = []
    for label, impl in (("torch.softmax", r"torch\.softmax"), ("version 5", r"lesson02\.v5-.*"),
                        ("version 6", r"lesson02\.v6-.*"), ("version 7", r"lesson02\.v7-.*")):
        row = [label]
        for shape in (L02_DEFAULT, L02_LONG):
            p = l02_peer(a, impl, shape)
            row += [f(p and p["ms"], 4), f(p and p["gbs"], 0), pc(p and p["pct_hbm"])]
        rows.append(row)
    return source(a, ["peers.csv"]) + "\n\n" + table(
        ["", "16384 x 4096: ms", "GB/s", "% HBM", "4096 x 32768: ms", "GB/s", "% HBM"], rows)


def l02_best(a, shape):
    best = None
    for v in L02_VERSIONS:
        r = a.one(2, v, **shape)
        if r is None:
            continue
        g, p = l02_1r1w(a, r)
        if p is not None and (best is None or p > best[1]):
            best = (v, p, r)
    return best


def r_softmax_targets(a, ctx):
    parts = []
    for shape, label, target in ((L02_DEFAULT, "16384 x 4096", 85), (L02_LONG, "4096 x 32768", 80)):
        b = l02_best(a, shape)
        if b is None:
            parts.append(f"At least {target}% of HBM for the best version on {label}: {NO_RUN}.")
            continue
        v, p, _ = b
        pp = l02_peer(a, rf"lesson02\.v{v}-.*", shape)
        extra = f"; {pp['pct_hbm']:.1f}% in the peer script" if pp and pp["pct_hbm"] else ""
        parts.append(f"At least {target}% of HBM for the best version on {label}: "
                     f"{'met' if p >= target else 'not met'} (version {v}: {p:.1f}% in the lesson's "
                     f"table{extra}).")
    if a.peers:
        figs, ok = [], True
        for shape in (L02_DEFAULT, L02_LONG):
            b = l02_best(a, shape)
            t = l02_peer(a, r"torch\.softmax", shape)
            mine = l02_peer(a, rf"lesson02\.v{b[0]}-.*", shape) if b else None
            if not (t and mine):
                ok = None
                continue
            figs.append((b[0], mine["ms"], t["ms"]))
            ok = ok and mine["ms"] <= t["ms"]
        if figs and ok is not None:
            parts.append("Not slower than `torch.softmax`: " + ("met on both shapes" if ok else
                         "not met on both shapes") + " (in one process " +
                         ", and ".join(f"version {v} {m:.4f} against {t:.4f} ms" for v, m, t in figs)
                         + ": " + " and ".join(f"{t / m:.2f}x" for _, m, t in figs) + ").")
        else:
            parts.append("Not slower than `torch.softmax`: the peer file lacks these shapes.")
    else:
        parts.append("Not slower than `torch.softmax`: peer figures " + NO_PEERS + ".")
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\nTargets. " + " ".join(parts)


def r_softmax_v8(a, ctx):
    d, dec = a.one(2, 8, **L02_DEFAULT), a.one(2, 8, **L02_DECODE)
    parts = []
    if d:
        parts.append(f"Version 8 (attention, default shape 1 x 16 x 1024 x 4096, head dim 64): "
                     f"{d['ms']:.3f} ms, {d['tflops']:.2f} TFLOP/s ({pc(d['pct_flops'])} of the fp32 "
                     f"peak)")
    if dec:
        parts.append(f"decode, 64 sequences x 32 heads (8 KV heads), 8192 keys, head dim 128: "
                     f"{dec['ms']:.3f} ms, {dec['gbs']:.0f} GB/s ({dec['pct_bw']:.1f}% of HBM) on the "
                     f"{dec['gbs'] * dec['ms']:.1f} MB of Q, K, V, O and LSE it has to move")
    if not parts:
        return source(a, ["lessons.csv"]) + "\n\nVersion 8: " + NO_RUN
    return source(a, ["lessons.csv"]) + "\n\n" + "; ".join(parts) + "."


def r_softmax_steps(a, ctx):
    D = {v: a.one(2, v, **L02_DEFAULT) for v in L02_VERSIONS}
    L = {v: a.one(2, v, **L02_LONG) for v in L02_VERSIONS}
    if any(D[v] is None for v in L02_VERSIONS):
        return source(a, ["lessons.csv"]) + "\n\nThe default shape: " + NO_RUN

    def word(x, y):
        return "slower than" if x > y else "faster than" if x < y else "as fast as"
    d21 = rel(D[2]["ms"], D[1]["ms"])
    own = {v: l02_own(D[v], v) for v in (1, 2, 4)}
    peak = l02_peak(a)
    past = (f", more than HBM's {peak:.0f} GB/s can move: its second and third reads of each "
            f"16 KB row come from the L2, so of HBM it is credited only with the bytes that must "
            f"move, {l02_1r1w(a, D[4])[1]:.1f}%") if peak and own[4] > peak else ""
    s = (f"In this run, on 16384 x 4096: versions 1 and 2 request {own[1]:.0f} and "
         f"{own[2]:.0f} GB/s of their own traffic, and version 2 is {abs(d21):.0f}% "
         f"{'slower' if d21 > 0 else 'faster'} than version 1; version 3 is "
         f"{D[2]['ms'] / D[3]['ms']:.1f}x as fast as version 2, "
         f"version 4 another {D[3]['ms'] / D[4]['ms']:.1f}x, and version 4 requests "
         f"{own[4]:.0f} GB/s{past}; version 5 is {word(D[5]['ms'], D[4]['ms'])} version 4 "
         f"({D[5]['ms']:.4f} against {D[4]['ms']:.4f} ms).")
    if L[4] and L[5]:
        s += (f" On 4096 x 32768 version 5 is {word(L[5]['ms'], L[4]['ms'])} version 4 "
              f"({L[5]['ms']:.4f} against {L[4]['ms']:.4f} ms).")
    if L[6] and L[7]:
        g6d, p6d = l02_1r1w(a, D[6])
        g6l, p6l = l02_1r1w(a, L[6])
        w1, w2 = word(D[7]["ms"], D[6]["ms"]), word(L[7]["ms"], L[6]["ms"])
        s += (f" Version 6 reaches {p6d:.1f}% of HBM on 16384 x 4096 and {p6l:.1f}% on "
              f"4096 x 32768 ({D[6]['ms']:.4f} and {L[6]['ms']:.4f} ms, against the floors of 112 "
              f"and 224 us at 4.8 TB/s); version 7 takes {D[7]['ms']:.4f} and {L[7]['ms']:.4f} ms, "
              + (f"{w1} version 6 on both shapes." if w1 == w2 else
                 f"{w1} version 6 on the first shape and {w2} it on the second."))
    t1, t2 = l02_peer(a, r"torch\.softmax", L02_DEFAULT), l02_peer(a, r"torch\.softmax", L02_LONG)
    if t1 and t2:
        s += (f" `torch.softmax` moves the same bytes at {t1['pct_hbm']:.1f}% and "
              f"{t2['pct_hbm']:.1f}% of HBM (peer script).")
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\n" + s


# ---- Lesson 03 ---------------------------------------------------------------------------------

# Lesson 03's CPU model (./run --cpu --seq N, batch 1, 16 heads, d 64): the HBM bytes Algorithm 1
# requests with the kernel's tiles, for fa1 and for fa1-qgroups (K and V re-read per group). These are
# model counts, not measurements.
L03_MODEL_GB = {4096: (1.028, 1.263), 16384: (15.415, 16.355)}


def standard_paper_bytes(n, d, heads):
    """The paper's count for standard attention, 4Nd + 4N^2 elements per head, fp32."""
    return 4.0 * heads * (4.0 * n * d + 4.0 * n * n)


def gbmb(r, w):
    t = r + w
    u, name = (1e9, "GB") if t >= 1e9 else (1e6, "MB")
    return f"{r / u:.2f} + {w / u:.2f} = {t / u:.2f} {name}"


def l03_dram(a, seq):
    """{'naive': (r, w, per-kernel list), 'fused-row': (r, w), ...} from ncu.txt, for one seq."""
    out = {}
    run = a.ncu_run(1, 15, seq)
    if run:
        ks = []
        for pat in ("l01_qk", "l01_softmax", "l01_pv"):
            r, w = run.metric(pat, "dram__bytes_read.sum"), run.metric(pat, "dram__bytes_write.sum")
            if r is None or w is None:
                ks = None
                break
            ks.append((r, w))
        if ks:
            out["naive"] = (sum(k[0] for k in ks), sum(k[1] for k in ks), ks)
    for v, name, pat in ((1, "fused-row", "fused_row"), (2, "fa1", "fa1"), (3, "fa1-qgroups", "fa1")):
        run = a.ncu_run(3, v, seq)
        if run:
            r, w = run.metric(pat, "dram__bytes_read.sum"), run.metric(pat, "dram__bytes_write.sum")
            if r is not None and w is not None:
                out[name] = (r, w)
    return out


def r_dram(a, ctx):
    model = {n: (L03_MODEL_GB[n][0], L03_MODEL_GB[n][1], standard_paper_bytes(n, 64, 16) / 1e9)
             for n in L03_MODEL_GB}
    src = source(a, ["ncu.txt"])
    data = {n: l03_dram(a, n) for n in L03_MODEL_GB}
    if not a.ncu or not any(data.values()):
        return (src + "\n\nDRAM bytes from Nsight Compute: " + NO_NCU + ". The model, for "
                "comparison (fa1 / fa1-qgroups / standard): " +
                "; ".join(f"{m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f} GB at seq {n}"
                          for n, m in model.items()) + ".")
    rows = []
    for n, d in data.items():
        m = model[n]
        rows.append([n, gbmb(*d["naive"][:2]) if "naive" in d else "not profiled"] +
                    [gbmb(*d[k]) if k in d else "not profiled"
                     for k in ("fused-row", "fa1", "fa1-qgroups")] +
                    [f"{m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f} GB"])
    out = [src, "", table(["seq (batch 1, 16 heads, d 64)", "lesson 1 naive (its 3 kernels)",
                           "fused-row", "fa1", "fa1-qgroups",
                           "model: fa1 / fa1-qgroups / standard"], rows), ""]
    d4 = data.get(4096, {})
    if "naive" in d4:
        ks = d4["naive"][2]
        out.append("(Each cell is read + written; the naive cells add the three kernels' figures: at "
                   f"seq 4096 S = QKᵀ {ks[0][0] / 1e9:.3f} + {ks[0][1] / 1e9:.3f} GB, softmax "
                   f"{ks[1][0] / 1e9:.3f} + {ks[1][1] / 1e9:.3f} GB, PV {ks[2][0] / 1e9:.3f} + "
                   f"{ks[2][1] / 1e9:.3f} GB.)")
        out.append("")
    bullets = []
    nv = [(n, sum(data[n]["naive"][:2]), naive_model_bytes(att(1, 16, n, 64)))
          for n in data if "naive" in data[n]]
    if nv:
        bullets.append("Lesson 1's naive attention: " + "; ".join(
            f"{t / 1e9:.2f} GB against its model's {m / 1e9:.3f} GB at seq {n}" for n, t, m in nv)
            + ".")
    fa = [(n, sum(data[n]["fa1"]), model[n][0]) for n in data if "fa1" in data[n]]
    if fa:
        bullets.append("fa1: " + "; ".join(
            f"{t / 1e9:.3f} GB against the model's {m:.3f} GB at seq {n} (measured / model "
            f"{t / 1e9 / m:.2f})" for n, t, m in fa) + "." + (
            f" At seq 4096 the naive attention moves {sum(d4['naive'][:2]) / sum(d4['fa1']):.0f} "
            f"times as much as fa1 (the model: {model[4096][2] / model[4096][0]:.1f})."
            if "naive" in d4 and "fa1" in d4 else ""))
    qg = [(n, sum(data[n]["fa1-qgroups"]) - sum(data[n]["fa1"]), model[n][1] - model[n][0])
          for n in data if "fa1" in data[n] and "fa1-qgroups" in data[n]]
    if qg:
        bullets.append("fa1-qgroups over fa1: " + "; ".join(
            f"{e / 1e6:+.0f} MB at seq {n} against the model's {m:+.3f} GB" for n, e, m in qg) + ".")
    if "fused-row" in d4:
        r, w = d4["fused-row"]
        o = 4.0 * 16 * 4096 * 64
        bullets.append(f"fused-row at seq 4096: {r / 1e6:.2f} MB read and {w / 1e6:.2f} MB written "
                       f"(O alone is {o / 1e6:.1f} MB).")
    out += [f"- {b}" for b in bullets]
    return "\n".join(out).rstrip()


L03_SEQS = (1024, 2048, 4096, 8192, 16384, 65536)
L03_NAMES = {1: "fused-row", 2: "fa1", 3: "fa1-qgroups"}


def l03_fp32_peak(a):
    for r in a.rows(3, timed=True):
        if r["pct_flops"]:
            return r["tflops"] / r["pct_flops"] * 100.0
    return None


def naive_cell(a, shape):
    r = a.one(1, 15, **shape)
    if r:
        return f(r["ms"], 4), r
    rs = a.rows(1, 15, **shape)
    if rs:
        return esc(f"{rs[0]['status']}: {rs[0]['note'] or 'not timed'}"), None
    return "not run at this shape", None


def r_fa1_seq(a, ctx):
    rows = []
    for n in L03_SEQS:
        s = att(1, 16, n, 64)
        cells = [naive_cell(a, s)[0]]
        rs = {v: a.one(3, v, **s) for v in L03_NAMES}
        if not any(rs.values()) and cells[0] == "not run at this shape":
            rows.append([n, NO_RUN, "", "", "", ""])
            continue
        cells += [f(rs[v] and rs[v]["ms"], 4) if rs[v] else "not run" for v in L03_NAMES]
        q = rs[3]
        cells.append(f"{q['tflops']:.2f} ({f(q['pct_flops'])} %)" if q else "")
        rows.append([n] + cells)
    return source(a, ["lessons.csv"]) + "\n\n" + table(
        ["seq", "lesson 1 naive (ms)", "fused-row (ms)", "fa1 (ms)", "fa1-qgroups (ms)",
         "fa1-qgroups TFLOP/s (% fp32 peak)"], rows)


def r_fa1_ratios(a, ctx):
    rows = []
    for n in L03_SEQS:
        s = att(1, 16, n, 64)
        nv = a.one(1, 15, **s)
        fr, fa, qg = (a.one(3, v, **s) for v in (1, 2, 3))
        if not any((fr, fa, qg)):
            continue

        def x(slow, fast):
            return xs(ratio(slow and slow["ms"], fast and fast["ms"]))
        rows.append([n, x(nv, qg), x(fr, qg), x(fa, qg), x(fr, fa), x(nv, fa), x(nv, fr),
                     f(fr and fr["tflops"], 2), f(qg and qg["tflops"], 2)])
    out = [source(a, ["lessons.csv"]), "",
           "Each ratio: how many times as fast as the other (the other's time over this one's; "
           "below 1 is slower).", "",
           table(["seq", "fa1-qgroups vs naive", "fa1-qgroups vs fused-row", "fa1-qgroups vs fa1",
                  "fa1 vs fused-row", "fa1 vs naive", "fused-row vs naive", "fused-row TFLOP/s",
                  "fa1-qgroups TFLOP/s"], rows)]
    q = a.one(3, 3, **att(1, 16, 4096, 64))
    peak = l03_fp32_peak(a)
    if q and peak:
        floor = 4.0 * 16 * 4096 * 4096 * 64 / (peak * 1e12) * 1e3
        out += ["", f"At seq 4096 the best version, fa1-qgroups, takes {q['ms']:.2f} ms against the "
                f"{floor:.2f} ms floor: {q['tflops']:.2f} TFLOP/s, {f(q['pct_flops'])} % of the fp32 "
                f"CUDA-core peak."]
    return "\n".join(out)


def r_fa1_65536(a, ctx):
    s = att(1, 16, 65536, 64)
    parts = []
    nv = a.rows(1, 15, **s)
    if nv:
        parts.append(f"lesson 1 at this shape: {nv[0]['status']}, \"{nv[0]['note']}\"" if nv[0]["note"]
                     else f"lesson 1 at this shape: {nv[0]['status']}")
    q, q4 = a.one(3, 3, **s), a.one(3, 3, **att(1, 16, 4096, 64))
    if q:
        t = (f"fa1-qgroups ran it in {q['ms']:.1f} ms (check: {q['status']} on sampled rows), at "
             f"{q['tflops']:.2f} TFLOP/s")
        if q4:
            t += (f"; that is {q['ms'] / q4['ms']:.0f} times its seq-4096 time for 256 times the "
                  f"work (seq 4096: {q4['tflops']:.2f} TFLOP/s)")
        parts.append(t)
    else:
        parts.append("fa1-qgroups at seq 65536: " + NO_RUN)
    return source(a, ["lessons.csv"]) + "\n\nIn this run, " + "; ".join(parts) + "."


def r_fa1_shapes(a, ctx):
    shapes = (("16 heads, d 128", att(1, 16, 4096, 128)),
              ("16 heads, d 64, causal", att(1, 16, 4096, 64, 1)),
              ("32 query / 4 KV heads, seq_q 1024, seq_kv 4096, d 128, causal",
               att(1, 32, 1024, 128, 1, kvh=4, skv=4096)))
    rows = []
    for label, s in shapes:
        rows.append([label, naive_cell(a, s)[0]] +
                    [f(a.one(3, v, **s) and a.one(3, v, **s)["ms"], 4) if a.one(3, v, **s) else NO_RUN
                     for v in L03_NAMES])
    out = [source(a, ["lessons.csv"]), "",
           table(["shape", "lesson 1 naive", "fused-row", "fa1", "fa1-qgroups"], rows)]
    d128q, d128n = a.one(3, 3, **att(1, 16, 4096, 128)), a.one(1, 15, **att(1, 16, 4096, 128))
    cq, fq = a.one(3, 3, **att(1, 16, 4096, 64, 1)), a.one(3, 3, **att(1, 16, 4096, 64))
    cn, fn = a.one(1, 15, **att(1, 16, 4096, 64, 1)), a.one(1, 15, **att(1, 16, 4096, 64))
    s = []
    if d128q and d128n:
        s.append(f"At d 128 fa1-qgroups takes {d128q['ms']:.4f} ms against the naive attention's "
                 f"{d128n['ms']:.4f} ms.")
    if cq and fq:
        t = (f"Causal, fa1-qgroups runs {fq['ms'] / cq['ms']:.2f} x as fast as its unmasked run "
             f"({cq['ms']:.4f} against {fq['ms']:.4f} ms)")
        if cn and fn:
            t += f"; the naive attention takes {cn['ms']:.4f} ms against {fn['ms']:.4f} ms"
        s.append(t + ".")
    if s:
        out += ["", " ".join(s)]
    return "\n".join(out)


# ---- Lesson 04 ---------------------------------------------------------------------------------

L04_NAMES = {1: "splitk-f32", 2: "splitq-f32", 3: "mma-bf16", 4: "swizzle-bf16", 5: "cpasync-bf16",
             6: "causal-bf16", 7: "tiles-bf16"}


def l04_shape(dim, causal):
    return att(4, 16 if dim == 128 else 32, 4096, dim, causal)


def l04(a, v, dim, causal):
    return a.one(4, v, **l04_shape(dim, causal))


def l04_t(a, v, dim, causal):
    r = l04(a, v, dim, causal)
    return r["tflops"] if r else None


def r_l04_setup(a, ctx):
    sw = a.software()
    s = ("Numbers from `lesson-4` (lessons.csv) and `bench/lesson04_peers.py` (peers.csv" +
         (f": {sw}). " if sw else f"). Peer figures: {NO_PEERS}. ") +
         "Each table's figure is the first run of its shape in the archive. " +
         noise_sentence(a, 4))
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\n" + s


def r_l04_table(a, ctx):
    cols = ((128, 0), (128, 1), (64, 0), (64, 1))
    rows = []
    for v, name in L04_NAMES.items():
        cells = []
        for dim, c in cols:
            r = l04(a, v, dim, c)
            if r is None:
                cells.append("-")
                continue
            t = f"{r['tflops']:.1f}"
            if c == 0 and (v in (1, 2) and dim == 128 or v == 7) and r["pct_flops"] is not None:
                t += f" ({r['pct_flops']:.0f}%{' fp32' if v < 3 else ''})"
            cells.append(f"**{t}**" if v == 7 else t)
        bought = ""
        if v > 1:
            b1 = ratio(l04_t(a, v, 128, 0), l04_t(a, v - 1, 128, 0))
            b2 = ratio(l04_t(a, v, 64, 0), l04_t(a, v - 1, 64, 0))
            bought = f"{xs(b1)} / {xs(b2)}"
            if v == 6:
                c1 = ratio(l04_t(a, 6, 128, 1), l04_t(a, 5, 128, 1))
                c2 = ratio(l04_t(a, 6, 64, 1), l04_t(a, 5, 64, 1))
                bought += f" (causal {xs(c1)} / {xs(c2)})"
        rows.append([v, name] + cells + [bought])
    out = [source(a, ["lessons.csv"]), "",
           table(["#", "version", "dim 128 (16 heads)", "causal", "dim 64 (32 heads)", "causal",
                  "bought (dim 128 / 64, not causal)"], rows), ""]
    rs = [r for dim, c in cols for r in a.rows(4, **l04_shape(dim, c))]
    bad = [r for r in rs if r["status"] != "PASS"]
    bf = [r for r in rs if r["dtype"] == "bf16" and r["max_abs"] is not None]
    fp = [r["max_abs"] for r in rs if r["dtype"] == "fp32" and r["max_abs"] is not None]
    if rs:
        s = ("Every version passes its check" if not bad else
             f"{len(bad)} of {len(rs)} runs did not pass their check ("
             + ", ".join(f"version {r['version']}: {r['status']}" for r in bad[:4]) + ")")
        if bf and fp:
            s += (f": bf16 max-abs error {max(r['max_abs'] for r in bf if not r['causal']):.1e} "
                  f"({max(r['max_abs'] for r in bf if r['causal']):.1e} causal) against a "
                  f"double-precision reference, fp32 {min(fp):.1e} to {max(fp):.1e}")
        out.append(s + ".")
    return "\n".join(out)


def r_l04_predicted(a, ctx):
    def r(v, w, c=0):
        return ratio(l04_t(a, v, 128, c), l04_t(a, w, 128, c)), \
            ratio(l04_t(a, v, 64, c), l04_t(a, w, 64, c))

    def pct2(p):
        return " / ".join("-" if x is None else f"{100 * (x - 1):.0f}%" for x in p)

    def x2(p):
        return " / ".join("-" if x is None else f"{x:.2f}x" for x in p)
    c65 = r(6, 5, 1)
    f76 = r(7, 6)
    as_pred_c = all(x is not None and 1.8 <= x <= 2.05 for x in c65)
    as_pred_7 = f76[0] is not None and f76[1] is not None and abs(f76[0] - 1) <= 0.01 and \
        0.02 <= f76[1] - 1 <= 0.06
    rows = [
        ["2 vs 1", "0-10%", pct2(r(2, 1)), "split-K's per-warp partial O rows: 239 registers per "
         "thread at dim 128 vs 128, half the resident blocks"],
        ["3 vs 2", "5-10x", x2(r(3, 2)), "8-way bank conflicts on every ldmatrix, synchronous loads"],
        ["4 vs 3", "10-30%", x2(r(4, 3)), "the conflicts were the bottleneck, not a side cost"],
        ["5 vs 4", "20-40%", x2(r(5, 4)), "two blocks per SM were not enough to hide version 4's "
         "load stalls"],
        ["6 vs 5, causal", "1.8-2x", x2(c65), "as predicted" if as_pred_c else
         "outside the predicted range"],
        ["6 vs 5, full", "a few %", pct2(r(6, 5)), "version 5 compared every score with the mask "
         "even when nothing is masked"],
        ["7 vs 6", "dim 64 3-5%, dim 128 0", pct2(f76), "as predicted" if as_pred_7 else
         "outside the predicted range"],
    ]
    return source(a, ["lessons.csv"]) + "\n\n" + table(
        ["version", "predicted", "measured (dim 128 / dim 64)", "why it differed"], rows)


L04_KERNELS = ((3, "3 mma (unswizzled)", "mma_kernel"), (4, "4 swizzle", "swizzle_kernel"),
               (5, "5 cpasync", "cpasync_kernel"), (6, "6 causal", "causal_kernel"),
               (7, "7 tiles", "tiles_kernel"))
M_CONF = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
M_WAVE = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
M_LDSM = "smsp__inst_executed_op_ldsm.sum"


def r_l04_banks(a, ctx):
    run = a.ncu_run(4, None, 2048)
    src = source(a, ["ncu.txt"])
    if run is None:
        return src + "\n\nBank-conflict counters: " + NO_NCU + "."

    def n(x):
        return "-" if x is None else f"{x:,.0f}"
    rows, vals = [], {}
    for v, label, pat in L04_KERNELS:
        c, w, l = run.metric(pat, M_CONF), run.metric(pat, M_WAVE), run.metric(pat, M_LDSM)
        vals[v] = (c, w, l)
        rows.append([label, n(c), n(w), n(l)])
    out = [src, "", table(["kernel", f"`{M_CONF}`", "shared-load wavefronts", "ldmatrix instructions"],
                          rows)]
    l = vals[4][2] or vals[3][2]
    if l:
        floor = 4 * l
        sw = [vals[v][1] / floor for v in (4, 5, 6, 7) if vals[v][1]]
        s = f"The floor: {l:,.0f} x 4 = {floor / 1e6:.2f} M wavefronts."
        if sw:
            s += f" The swizzled kernels take {min(sw):.3f}-{max(sw):.3f} x the floor"
        if vals[3][1]:
            s += f"; version 3 takes {vals[3][1] / floor:.2f} x it"
        out += ["", s + "."]
    return "\n".join(out)


SDPA_VERSIONS = (3, 4, 5, 6, 7)


def sdpa_rows(a):
    out = []
    for dim in (64, 128):
        for c in (0, 1):
            seqs = sorted({r["seq_q"] for r in a.peers if int(r["lesson"]) == 4 and
                           r["dim"] == dim and r["causal"] == c and r["seq_q"]})
            for s in seqs:
                kv = dict(dim=dim, causal=c, seq_q=s)
                fl = a.peer(4, "sdpa-flash", **kv)
                cu = a.peer(4, "sdpa-cudnn", **kv)
                vs = {v: a.peer(4, rf"v{v}-.*", **kv) for v in SDPA_VERSIONS}
                out.append((dim, c, s, fl, cu, vs))
    return out


def r_sdpa(a, ctx):
    src = source(a, ["peers.csv"])
    if not a.peers or not a.peer(4, "sdpa-flash"):
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    rows, bf, bc, mx = [], [], [], []
    for dim, c, s, fl, cu, vs in sdpa_rows(a):
        ts = [v["tflops"] for v in vs.values() if v and v["tflops"]]
        best = max(ts) if ts else None
        mx += [v["max_abs"] for v in vs.values() if v and v["max_abs"] is not None]
        b_f = ratio(best, fl and fl["tflops"])
        b_c = ratio(best, cu and cu["tflops"])
        if s >= 2048:
            if b_f:
                bf.append(b_f)
            if b_c:
                bc.append(1 / b_c)
        rows.append([dim, "yes" if c else "no", seq_label(s), f(fl and fl["tflops"]),
                     f(cu and cu["tflops"])] + [f(vs[v] and vs[v]["tflops"]) for v in SDPA_VERSIONS]
                    + [f(b_f, 2), f(b_c, 2)])
    out = [src, "", table(["dim", "causal", "seq", "flash", "cuDNN"] +
                          [f"v{v}" for v in SDPA_VERSIONS] + ["best / flash", "best / cuDNN"], rows),
           ""]
    s = []
    if mx:
        s.append(f"Every output of versions 3-7 matched flash's within {max(mx):.1e} max-abs.")
    if bf:
        s.append(f"From seq 2k to 16k the best version is {span(min(bf), max(bf), 2)}x "
                 f"FlashAttention-2 at both head dimensions, causal and not.")
    if bc:
        s.append(f"cuDNN's rate there is {span(min(bc), max(bc), 1)}x the best version's.")
    out.append(" ".join(s))
    return "\n".join(out).rstrip()


def r_floors(a, ctx):
    v7 = l04(a, 7, 128, 0)
    g = a.peer(4, r"torch\.matmul")
    flops = 4.0 * 4 * 16 * 4096 * 4096 * 128
    parts = []
    if g:
        parts.append(f"At the {g['tflops']:.0f} TFLOP/s that cuBLAS reaches on a {g['rows']}³ bf16 "
                     f"GEMM in this run (`torch.matmul`) the flops take "
                     f"{flops / (g['tflops'] * 1e12) * 1e3:.2f} ms.")
    else:
        parts.append("The cuBLAS GEMM rate: " + NO_PEERS + ".")
    if v7:
        t = f"Version 7 takes {v7['ms']:.2f} ms ({v7['tflops']:.0f} TFLOP/s)"
        if g:
            t += f", {100 * v7['tflops'] / g['tflops']:.0f}% of the GEMM rate,"
        t += f" and moves bytes at {v7['pct_bw']:.1f}% of HBM."
        parts.append(t)
    else:
        parts.append("Version 7: " + NO_RUN + ".")
    return source(a, ["lessons.csv", "peers.csv"]) + "\n\n" + " ".join(parts)


def r_q_outer(a, ctx):
    probs = (("128 query rows × 16384 keys, 1 head", att(1, 1, 128, 128, skv=16384)),
             ("16384 rows × 16384 keys, 1 head", att(1, 1, 16384, 128)),
             ("16384 rows × 16384 keys, 16 heads", att(1, 16, 16384, 128)))
    rows = []
    for label, s in probs:
        r = a.one(4, 7, **s)
        blocks = s["batch"] * s["heads"] * -(-s["seq_q"] // 128)
        if r is None:
            rows.append([label, blocks, NO_RUN])
            continue
        t = f"{r['ms']:.3f} ms"
        if s["heads"] > 1:
            t += f" ({r['tflops']:.0f} TFLOP/s)"
        rows.append([label, blocks, t])
    return source(a, ["lessons.csv"]) + "\n\n" + table(["problem", "blocks", "time"], rows)


def r_causal_measured(a, ctx):
    c = (ratio(l04_t(a, 6, 128, 1), l04_t(a, 5, 128, 1)), ratio(l04_t(a, 6, 64, 1), l04_t(a, 5, 64, 1)))
    n = (ratio(l04_t(a, 6, 128, 0), l04_t(a, 5, 128, 0)), ratio(l04_t(a, 6, 64, 0), l04_t(a, 5, 64, 0)))
    if None in c or None in n:
        return source(a, ["lessons.csv"]) + "\n\nVersions 5 and 6 at batch 4, seq 4096: " + NO_RUN
    return (source(a, ["lessons.csv"]) + "\n\n" +
            f"Measured at batch 4, seq 4096: causal, version 6 is {c[0]:.2f}x (dim 128) and "
            f"{c[1]:.2f}x (dim 64) version 5's rate; not causal, where nothing is skipped, "
            f"{100 * (n[0] - 1):.0f}% and {100 * (n[1] - 1):.0f}% faster: the cost of version 5's "
            f"element-wise mask.")


def r_causal_queue(a, ctx):
    rows = []
    for heads in (1, 16):
        s = att(1, heads, 16384, 128)
        full, cau = a.one(4, 6, **s), a.one(4, 6, **dict(s, causal=1))
        blocks = heads * 16384 // 128
        if not (full and cau):
            rows.append([f"{heads} head{'s' if heads > 1 else ''}", blocks, NO_RUN, "", ""])
            continue
        rows.append([f"{heads} head{'s' if heads > 1 else ''}", blocks, f"{full['ms']:.3f}",
                     f"{cau['ms']:.3f}", xs(full["ms"] / cau["ms"])])
    return source(a, ["lessons.csv"]) + "\n\n" + table(
        ["version 6, dim 128, batch 1, seq 16384", "blocks", "not causal, ms", "causal, ms",
         "not causal / causal"], rows)


def r_sanitizers(a, ctx):
    binary = f"test_lesson{ctx['lesson']:02d}_gpu"
    if not a.log:
        return (source(a, ["gpu-suite.log"]) + "\n\ncompute-sanitizer on `" + binary + "`: not in "
                "this archive (run `scripts/gpu-suite.sh sanitize`).")
    found = []
    for title, lines in a.log["sections"]:
        m = re.match(r"compute-sanitizer --tool (\w+) (\S+)$", title)
        if not m or m.group(2) != binary:
            continue
        summ = [ln.strip("= ").strip() for ln in lines if "SUMMARY" in ln]
        fail = [ln.strip() for ln in lines if re.match(rf"\s+{m.group(1)} on {binary}: exit", ln)]
        res = "; ".join(summ[-2:]) if summ else "no summary line"
        if fail:
            res += f" ({fail[0]})"
        found.append(f"{m.group(1)}: {res}")
    if not found:
        return (source(a, ["gpu-suite.log"]) + "\n\ncompute-sanitizer on `" + binary + "`: not in "
                "this archive (run `scripts/gpu-suite.sh sanitize`).")
    return source(a, ["gpu-suite.log"]) + "\n\n" + "\n".join(
        f"- `{binary}`, {x}" for x in found)


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
         "warpgroup's own P_{j-1} V_{j-1} (two commit groups, `wait_group 1`)", "384"],
        ["6", "`v6_fp8.cu`", "fp8-e4m3", "version 5 on e4m3 Q, K and V^T (keys permuted to the "
         "order a thread holds P), one scale per tensor, dim 128; the conversion is timed with it",
         "384"],
        ["7", "(yardstick)", "l04-tiles", "lesson 04's version 7 (`mma.sync`) on the same inputs",
         "128"],
    ]),
}


def default_shape(a, lesson):
    """The shape of the lesson's default run: its first row in lessons.csv (the suite runs the
    default before the lines of gpu-runs.txt), or None."""
    rs = a.rows(lesson)
    return {k: rs[0][k] for k in SHAPE_KEYS} if rs else None


def half_up(x, nd):
    """@p x rounded half up to @p nd decimals, from the digits lessons.csv holds. It keeps one or
    two digits fewer than the csv, so that the figure reads as the program printed it, rounded."""
    if x is None:
        return "-"
    return str(decimal.Decimal(repr(x)).quantize(decimal.Decimal(1).scaleb(-nd),
                                                 rounding=decimal.ROUND_HALF_UP))


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
        cell = "; ".join(measured(a, n, v, shape) for v in range(lo, hi + 1)) if shape else \
            "not in this archive"
        out.append(row + [cell])
    words = (f"batch {shape['batch']}, {shape_words(shape)}" if shape else
             "not in this archive: " + NO_RUN)
    lead = (f"The last column is the default `./run` ({words}): the median time, then TFLOP/s "
            "where the version counts flops and GB/s where it counts only bytes, each with its % "
            "of the peak the program names, rounded from lessons.csv.")
    return "\n".join([source(a, ["lessons.csv"]), "", lead, "",
                      table(head + ["measured (default shape)"], out)])


# ---- Lesson 05 ------------------------------------------------------------------------------------

L05_COLS = ((128, 0), (128, 1), (64, 0), (64, 1))
# (label, shape) of the rows of lessons/05_fa3_hopper/gpu-runs.txt past the four table shapes
L05_SHAPES = [("batch 1, seq 16384, 16 heads, dim 128", att(1, 16, 16384, 128)),
              ("batch 16, seq 1024, 16 heads, dim 128", att(16, 16, 1024, 128)),
              ("batch 4, seq 4096, 32 heads, 4 KV heads (GQA 8:1), dim 128",
               att(4, 32, 4096, 128, kvh=4)),
              ("batch 4, seq 1024 against kv 8192, 16 heads, dim 128, causal",
               att(4, 16, 1024, 128, 1, skv=8192))]


def l05_versions(a):
    """(number, name) of every row lesson 5's table printed, in order (the yardstick last)."""
    seen = {}
    for r in a.rows(5):
        seen.setdefault(r["version"], r["name"])
    return sorted(seen.items())


def l05_t(a, v, **shape):
    r = a.one(5, v, **shape)
    return r["tflops"] if r else None


def r_l05_table(a, ctx):
    src = source(a, ["lessons.csv"])
    vs = l05_versions(a)
    if not vs:
        return src + "\n\nThe lesson's table: " + NO_RUN + "."
    last = vs[-1][0]  # the yardstick: lesson 04's version 7
    rows = []
    for v, name in vs:
        cells = []
        for dim, c in L05_COLS:
            r = l05_t(a, v, **l04_shape(dim, c))
            cells.append(f(r))
        shape = l04_shape(128, 0)
        r = a.one(5, v, **shape)
        pct = pc(r and r["pct_flops"], 0)
        if v == last:
            bought = "-"
        else:
            prev = ratio(l05_t(a, v, **shape), l05_t(a, v - 1, **shape)) if v > 1 else None
            y = ratio(l05_t(a, v, **shape), l05_t(a, last, **shape))
            prev64 = (ratio(l05_t(a, v, **l04_shape(64, 0)), l05_t(a, v - 1, **l04_shape(64, 0)))
                      if v > 1 else None)
            bought = (f"{xs(prev)} / {xs(prev64)}" if v > 1 else "-") + f"; {xs(y)}"
        label = f"`{name}`" + (" (lesson 04)" if v == last else "")
        rows.append([v if v != last else "-", label] + cells + [pct, bought])
    rs = [r for dim, c in L05_COLS for r in a.rows(5, **l04_shape(dim, c))]
    ran = [r for r in rs if r["status"] != "skipped"]
    bad = [r for r in ran if r["status"] != "PASS"]
    mx = [r["max_abs"] for r in ran if r["max_abs"] is not None and "fp8" not in r["name"]]
    m8 = [r for r in ran if r["max_abs"] is not None and "fp8" in r["name"]]
    s = ("Every run of these shapes passed its check" if not bad else
         f"{len(bad)} of {len(ran)} runs did not pass their check")
    if mx:
        s += (f" (bf16 max-abs error at most {max(mx):.1e} against the double-precision "
              "reference")
        if m8:
            s += (f"; FP8 at most {max(r['max_abs'] for r in m8):.1e}, relative L2 at most "
                  f"{max(r['rel_l2'] for r in m8):.1e}, against its own tolerances")
        s += ")"
    if len(ran) < len(rs):
        s += (f"; {len(rs) - len(ran)} runs were skipped with their reason (FP8 at dim 64, not "
              "built)")
    return "\n".join([src, "", "TFLOP/s, batch 4, seq 4096 (causal counted as half the pairs); % of "
                      "the H200's dense bf16 peak at dim 128 not causal; bought: over the version "
                      "before (dim 128 / dim 64, not causal); over lesson 04's version 7 (dim 128).",
                      "", table(["#", "version", "dim 128 (16 heads)", "causal",
                                 "dim 64 (32 heads)", "causal", "% of peak",
                                 "bought; over lesson 04"], rows), "", s + ". " +
                      noise_sentence(a, 5)])


def r_l05_shapes(a, ctx):
    src = source(a, ["lessons.csv"])
    vs = l05_versions(a)
    rows = []
    for label, shape in L05_SHAPES:
        ts = [l05_t(a, v, **shape) for v, _ in vs]
        if all(t is None for t in ts):
            continue
        rows.append([label] + [f(t) for t in ts])
    if not rows:
        return src + "\n\nOther shapes: " + NO_RUN + "."
    return "\n".join([src, "", "TFLOP/s of each version at the other shapes of `gpu-runs.txt`:", "",
                      table(["shape"] + [f"{v} `{n}`" for v, n in vs], rows)])


def r_l05_peers(a, ctx):
    src = source(a, ["peers.csv"])
    if not a.peers or not a.peer(5, "sdpa-cudnn"):
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    nums = sorted({int(m.group(1)) for r in a.peers if int(r["lesson"]) == 5
                   for m in [re.match(r"v(\d+)-", r["impl"] or "")] if m})
    rows, targets, fp8_over = [], {}, {}
    for dim in (64, 128):
        for c in (0, 1):
            seqs = sorted({r["seq_q"] for r in a.peers if int(r["lesson"]) == 5 and
                           r["dim"] == dim and r["causal"] == c and r["seq_q"]})
            for sq in seqs:
                kv = dict(dim=dim, causal=c, seq_q=sq)
                fl, cu = a.peer(5, "sdpa-flash", **kv), a.peer(5, "sdpa-cudnn", **kv)
                l4 = a.peer(5, r"l04-.*", **kv)
                vs = {v: a.peer(5, rf"v{v}-.*", **kv) for v in nums}
                ts = {v: r["tflops"] for v, r in vs.items() if r and r["tflops"]}
                bf = [t for v, t in ts.items() if "fp8" not in vs[v]["impl"]]
                best = max(bf) if bf else None
                fk = a.peer(5, "fp8-kernel-only", **kv)
                fp8v = [v for v, r in vs.items() if r and "fp8" in r["impl"]]
                if fk and fk["tflops"] and sq >= 4096:
                    prev = ts.get(fp8v[0] - 1) if fp8v else None
                    fp8_over.setdefault(c, []).append((ratio(fk["tflops"], prev),
                                                       ratio(ts.get(fp8v[0]), prev)
                                                       if fp8v else None))
                b_c = ratio(best, cu and cu["tflops"])
                if sq >= 4096 and b_c:
                    targets.setdefault((dim, c), []).append(b_c)
                rows.append([dim, "yes" if c else "no", seq_label(sq), f(fl and fl["tflops"]),
                             f(cu and cu["tflops"]), f(l4 and l4["tflops"])] +
                            [f(ts.get(v)) for v in nums] + [f(fk and fk["tflops"])] +
                            [f(ratio(best, fl and fl["tflops"]), 2), f(b_c, 2),
                             f(ratio(best, l4 and l4["tflops"]), 2)])
    sw = a.software()
    out = [src, "", f"TFLOP/s in one process ({sw}), the papers' shapes: 16k tokens (batch = "
           "16384 / seq), hidden 2048 (heads = 2048 / dim); causal counted as half the pairs.", "",
           table(["dim", "causal", "seq", "SDPA flash", "SDPA cuDNN", "lesson 04 v7"] +
                 [f"v{v}" for v in nums] + ["FP8 kernel alone", "best / flash", "best / cuDNN",
                                            "best / l04"], rows),
           "", "Best: the fastest bf16 version. The FP8 version's column counts its conversion of "
           "Q, K and V (as the lesson's program times it); \"FP8 kernel alone\" times its kernel "
           "on tensors converted before the timing (dim 128 only).", ""]
    words = []
    for (dim, c), rs in sorted(targets.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
        words.append(f"dim {dim}{' causal' if c else ''} {span(min(rs), max(rs), 2)}x")
    if words:
        out.append("Best bf16 version over cuDNN at seq 4k-16k: " + "; ".join(words) + ".")
    for c, rs in sorted(fp8_over.items()):
        k = [x for x, _ in rs if x]
        e = [y for _, y in rs if y]
        if k:
            out.append(f"FP8 at dim 128{' causal' if c else ''}, seq 4k-16k: the kernel alone "
                       f"{span(min(k), max(k), 2)}x the bf16 version before it" +
                       (f", {span(min(e), max(e), 2)}x counting the conversion." if e else "."))
    return "\n".join(out).rstrip()


# ---- Lesson 06 ------------------------------------------------------------------------------------

L06_DEFAULT = att(1, 32, 1, 128, kvh=8, skv=32768)
L06_NAMES = {1: "one-block", 2: "split-kv", 3: "gqa-group", 4: "pipeline", 5: "one-launch",
             6: "varlen"}
# (label, shape) of the other rows of lessons/06_flash_decoding/gpu-runs.txt
L06_SHAPES = [("kv 8192", att(1, 32, 1, 128, kvh=8, skv=8192)),
              ("kv 131072", att(1, 32, 1, 128, kvh=8, skv=131072)),
              ("32 KV heads, kv 8192", att(1, 32, 1, 128, kvh=32, skv=8192)),
              ("32 KV heads", att(1, 32, 1, 128, kvh=32, skv=32768)),
              ("1 KV head (MQA)", att(1, 32, 1, 128, kvh=1, skv=32768)),
              ("batch 8", att(8, 32, 1, 128, kvh=8, skv=32768)),
              ("batch 32, kv 8192", att(32, 32, 1, 128, kvh=8, skv=8192)),
              ("dim 64", att(1, 32, 1, 64, kvh=8, skv=32768)),
              ("4 query rows, causal", att(1, 32, 4, 128, c=1, kvh=8, skv=32768))]
L06_MIXED = "131072,1024x31"
L06_EQUAL = att(32, 32, 1, 128, kvh=8, skv=5088)


def tbs(r):
    return r["gbs"] / 1000.0 if r and r["gbs"] is not None else None


def us(r):
    return r["ms"] * 1000.0 if r and r["ms"] is not None else None


def l06_missing(a):
    return a.one(6, 1, **L06_DEFAULT) is None


def r_l06_default(a, ctx):
    src = source(a, ["lessons.csv"])
    if l06_missing(a):
        return src + "\n\nThe lesson's table: " + NO_RUN + "."
    v1 = a.one(6, 1, **L06_DEFAULT)
    rows = []
    for v in range(1, 7):
        r = a.one(6, v, **L06_DEFAULT)
        t = us(r)
        rows.append([v, f"`{L06_NAMES[v]}`", "-" if t is None else
                     (f"{t:.0f} us" if t >= 100 else f"{t:.1f} us"), f(r and r["gbs"], 0),
                     pc(r and r["pct_bw"]), xs(ratio(v1["ms"], r and r["ms"]), 1)])
    out = [src, "", "Default shape, batch 1, 32 heads, 8 KV heads, kv 32768, dim 128:", "",
           table(["#", "version", "time", "GB/s", "% of HBM", "over version 1"], rows)]
    again = [a.rows(6, v, timed=True, **L06_DEFAULT) for v in range(1, 7)]
    if all(len(x) > 1 for x in again):
        ts = [us(x[-1]) for x in again]
        out += ["", "The same shape repeated at the end of the run: " +
                ", ".join((f"{t:.0f}" if t >= 100 else f"{t:.1f}") for t in ts[:-1]) +
                f" and {ts[-1]:.1f} us."]
    return "\n".join(out)


def r_l06_speedups(a, ctx):
    src = source(a, ["lessons.csv"])
    if l06_missing(a):
        return src + "\n\nThe speed-ups: " + NO_RUN + "."
    d = L06_DEFAULT
    sh = dict(L06_SHAPES)

    def sp(shape, x, y):  # version y's speed-up over version x at a shape
        return ratio(a.one(6, x, **shape)["ms"], a.one(6, y, **shape)["ms"])

    def gain(shape):  # version 5 over version 4, in percent
        return rel(a.one(6, 4, **shape)["ms"], a.one(6, 5, **shape)["ms"])

    saved = [us(a.one(6, 4, **x)) - us(a.one(6, 5, **x))
             for x in (d, sh["kv 8192"], sh["kv 131072"])]

    return "\n".join([src, "", (
        "The honest speed-up of splitting depends on how far the rows alone are from filling the "
        f"GPU: at batch 1 version 2 is {sp(d, 1, 2):.1f}x version 1 (32 rows for 132 SMs); at batch "
        f"8 (256 rows) {sp(sh['batch 8'], 1, 2):.1f}x; at batch 32 and kv 8192 (1024 rows, one "
        f"chunk) {sp(sh['batch 32, kv 8192'], 1, 2):.2f}x, although one chunk splits nothing and "
        "version 2 adds the combine (its header says what is not explained). "
        f"Grouping is worth {sp(d, 2, 3):.1f}x at 8 KV heads and nothing at 32 "
        f"({tbs(a.one(6, 3, **sh['32 KV heads'])):.2f} against "
        f"{tbs(a.one(6, 2, **sh['32 KV heads'])):.2f} TB/s at kv 32768), where there is nothing "
        f"to share. Dropping the combine's launch (version 5) is worth {gain(d):.1f}% at the "
        f"default shape, {gain(sh['kv 8192']):.1f}% at kv 8192 and {gain(sh['kv 131072']):.1f}% "
        f"at kv 131072, {span(min(saved), max(saved), 1)} us a call. Where one block would merge "
        f"more than 64 KiB of partial states alone (MQA: 16 rows x 64 chunks per unit, 512 KiB; 4 "
        f"causal query rows: 128 KiB), version 5 leaves the merge to the combine kernel and runs as "
        f"version 4 does: {tbs(a.one(6, 5, **sh['1 KV head (MQA)'])):.2f} against "
        f"{tbs(a.one(6, 4, **sh['1 KV head (MQA)'])):.2f} TB/s with MQA, "
        f"{tbs(a.one(6, 5, **sh['4 query rows, causal'])):.2f} against "
        f"{tbs(a.one(6, 4, **sh['4 query rows, causal'])):.2f} with 4 causal rows; version 6, "
        f"which always merges in the kernel, reaches {tbs(a.one(6, 6, **sh['1 KV head (MQA)'])):.2f} "
        "with MQA.")])


def r_l06_shapes(a, ctx):
    src = source(a, ["lessons.csv"])
    if l06_missing(a):
        return src + "\n\nOther shapes: " + NO_RUN + "."
    rows = []
    for label, shape in L06_SHAPES:
        rows.append([label] + [f(tbs(a.one(6, v, **shape)), 2) for v in range(1, 7)])
    return "\n".join([src, "", "Other rows of the same run (TB/s, the lesson's count):", "",
                      table(["shape"] + [f"v{v}" for v in range(1, 7)], rows)])


def r_l06_varlen(a, ctx):
    src = source(a, ["lessons.csv"])
    mixed = a.one(6, 6, kv_lens=L06_MIXED)
    e6, e3 = a.one(6, 6, **L06_EQUAL), a.one(6, 3, **L06_EQUAL)
    if not (mixed and e6 and e3):
        return src + "\n\nLengths per sequence: " + NO_RUN + "."
    return "\n".join([src, "", (
        "Lengths per sequence (version 6 only; the others are skipped with the reason): one "
        "sequence of 131072 keys and 31 of 1024, 8 KV heads, 667 MB of K + V: "
        f"{us(mixed):.0f} us, {tbs(mixed):.2f} TB/s. The same keys in 32 equal sequences of 5088: "
        f"version 6 {tbs(e6):.2f} TB/s, version 3 {tbs(e3):.2f}. The mixed batch runs at "
        f"{100 * tbs(mixed) / tbs(e6):.0f}% of the equal one.")])


L06_PEER_ROWS = [(32, 1, 8192), (32, 1, 32768), (32, 1, 131072), (32, 8, 32768), (32, 32, 8192),
                 (8, 1, 1024), (8, 1, 8192), (8, 1, 32768), (8, 1, 131072), (8, 8, 32768),
                 (8, 8, 131072), (8, 32, 8192), (8, 32, 131072), (8, 128, 32768)]


def r_l06_peers(a, ctx):
    src = source(a, ["peers.csv"])
    if not a.peers or not a.peer(6, "sdpa-cudnn"):
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    # the lesson's versions this bench ran (an older run stops at version 4)
    nv = max(v for v in range(1, 7) if a.peer(6, re.escape(f"v{v}-{L06_NAMES[v]}")))
    names = ["sdpa-flash", "sdpa-cudnn"] + [f"v{v}-{L06_NAMES[v]}" for v in range(1, nv + 1)]

    def rate(impl, **kv):
        r = a.peer(6, re.escape(impl), **kv)
        return tbs(r)
    rows = []
    for hkv, b, skv in L06_PEER_ROWS:
        kv = dict(dim=128, kv_heads=hkv, batch=b, seq_kv=skv)
        rs = [rate(n, **kv) for n in names]
        best = max((x for x in rs[2:] if x is not None), default=None)
        rows.append([b, hkv, seq_label(skv)] + [f(x, 2) for x in rs] + [xs(ratio(best, rs[1]))])
    shapes = sorted({(r["dim"], r["kv_heads"], r["batch"], r["seq_kv"]) for r in a.peers
                     if int(r["lesson"]) == 6 and r["impl"] == "sdpa-cudnn" and r["gbs"]})
    below, best_below, trail, trails = [], 0, 0.0, []
    for dim, hkv, b, skv in shapes:
        kv = dict(dim=dim, kv_heads=hkv, batch=b, seq_kv=skv)
        cu, v4 = rate("sdpa-cudnn", **kv), rate("v4-pipeline", **kv)
        best = max(x for x in (rate(n, **kv) for n in names[2:]) if x is not None)
        if v4 is not None and v4 < cu:
            below.append(1 - v4 / cu)
        if best < cu:
            best_below += 1
            trail = max(trail, 1 - best / cu)
            if best / cu < 0.98:
                trails.append(f"dim {dim}, {hkv} KV heads, batch {b}, kv {seq_label(skv)} "
                              f"({best / cu:.2f}x)")
    out = [src, "", table(["batch", "KV heads", "kv", "SDPA flash", "cuDNN"] +
                          [f"v{v}" for v in range(1, nv + 1)] + ["best / cuDNN"], rows), "",
           f"`peers.csv` holds all {len(shapes)} shapes. Version 4 matches or beats cuDNN on "
           f"{len(shapes) - len(below)} of them; the others trail by "
           f"{100 * min(below):.2f}% to {100 * max(below):.0f}%. The best version trails cuDNN on "
           f"{best_below} shapes, by at most {100 * trail:.1f}%" +
           (f"; by more than 2% on {len(trails)}: {'; '.join(trails)}." if trails else ".")]
    return "\n".join(out)


# The read floor lesson 06's report prints after its table (versions.c, read_floor.cu): a plain
# read of the run's K + V bytes, timed as the versions are; or why it was not measured.
L06_FLOOR_LINE = re.compile(
    r"^read floor: a plain read of the same ([\d.]+) MB of K \+ V \(16-byte loads, (\d+) blocks "
    r"of (\d+) threads\): ([\d.]+) us, (\d+) GB/s \(([\d.]+)% of HBM\); the fastest version "
    r"here, (\d+) (\S+), takes ([\d.]+) us, ([\d.]+)% of the floor's rate\s*$")
L06_FLOOR_SKIP = re.compile(r"^read floor: not measured: (.*?)\s*$")
L06_PROBLEM_LINE = re.compile(r"^problem\s+batch (\d+)\s+heads (\d+)/(\d+)\s+seq (\d+)/(\d+)\s+"
                              r"dim (\d+)\s+(full|causal)\b(.*)$")
# The sizes the targets speak of: (label, MB of K + V, shape), all batch 1 and 8 KV heads.
L06_FLOOR_SIZES = [("kv 8k", 34, att(1, 32, 1, 128, kvh=8, skv=8192)),
                   ("32k", 134, L06_DEFAULT),
                   ("128k", 537, att(1, 32, 1, 128, kvh=8, skv=131072))]


def l06_read_floor(a, shape):
    """The read floor of the first lesson-6 run of @p shape in gpu-suite.log (a section `lesson-6
    ARGS`, told apart by its `problem` line; runs with --kv-lens never match): a dict with us, gbs,
    pct_hbm, or a string saying why there is none."""
    if not a.log:
        return "no `gpu-suite.log` in this archive"
    for title, body in a.log["sections"]:
        if (title.split() or [""])[0] != "lesson-6":
            continue
        prob = next((m for m in map(L06_PROBLEM_LINE.match, body) if m), None)
        if not prob or "kv lens" in prob.group(8):
            continue
        g = [int(x) for x in prob.groups()[:6]]
        if dict(batch=g[0], heads=g[1], kv_heads=g[2], seq_q=g[3], seq_kv=g[4], dim=g[5],
                causal=int(prob.group(7) == "causal")) != shape:
            continue
        for line in body:
            m = L06_FLOOR_LINE.match(line)
            if m:
                return {"mb": float(m.group(1)), "blocks": int(m.group(2)),
                        "threads": int(m.group(3)), "us": float(m.group(4)),
                        "gbs": float(m.group(5)), "pct_hbm": float(m.group(6))}
            m = L06_FLOOR_SKIP.match(line)
            if m:
                return f"not measured: {m.group(1)}"
        return "the run's `lesson-6` block in `gpu-suite.log` predates that line"
    return "no run of this shape in `gpu-suite.log`"


def l06_floor_sentence(a):
    """What one launch can reach at batch 1 and kv 8k, 32k, 128k: the read floor of each size,
    version 5 against it, and whether 90% of HBM is within reach."""
    got, lack = [], []
    for label, mb, shape in L06_FLOOR_SIZES:
        fl = l06_read_floor(a, shape)
        if isinstance(fl, dict):
            got.append((label, mb, fl, a.one(6, 5, **shape)))
        else:
            lack.append((label, fl))
    what = ("The read floor, a plain read of the same K + V bytes timed as the versions are (the "
            "`read floor` line after the table, in `gpu-suite.log`)")
    why = (lack[0][1] if len({w for _, w in lack}) == 1 else
           "; ".join(f"{label}: {w}" for label, w in lack))
    if not got:
        return f"{what}: no read floor in this run ({why})."
    sizes = "; ".join(f"{fl['us']:.1f} us, {fl['gbs'] / 1000:.2f} TB/s ({fl['pct_hbm']:.0f}% of "
                      f"HBM) for the {mb} MB of {label}" for label, mb, fl, _ in got)
    if lack:
        sizes += "; none at " + " and ".join(label for label, _ in lack) + f" ({why})"
    out = f"{what}: {sizes}."
    v5 = [(label, 100.0 * fl["us"] / us(r)) for label, _, fl, r in got if us(r)]
    if v5:
        out += (" Version 5 runs at " + ", ".join(f"{x:.0f}%" for _, x in v5) +
                " of the floor's rate (" + ", ".join(label for label, _ in v5) + ").")
    out_of = [(label, fl) for label, _, fl, _ in got if fl["pct_hbm"] < 90.0]
    within = [(label, fl) for label, _, fl, _ in got if fl["pct_hbm"] >= 90.0]
    parts = []
    if out_of:
        parts.append("beyond any single launch of that size at " +
                     " and ".join(label for label, _ in out_of) + " (the plain read itself reaches " +
                     " and ".join(f"{fl['pct_hbm']:.0f}%" for _, fl in out_of) + ")")
    if within:
        parts.append("within reach at " + " and ".join(label for label, _ in within) + " (" +
                     " and ".join(f"{fl['pct_hbm']:.0f}%" for _, fl in within) + ")")
    return out + " 90% of HBM is " + ", and ".join(parts) + "."


def r_l06_targets(a, ctx):
    src = source(a, ["lessons.csv", "gpu-suite.log"])
    if l06_missing(a):
        return src + "\n\nThe targets: " + NO_RUN + "."
    sh = dict(L06_SHAPES)
    d5, l5 = a.one(6, 5, **L06_DEFAULT), a.one(6, 5, **sh["kv 131072"])
    s5, s8 = a.one(6, 5, **sh["32 KV heads, kv 8192"]), a.one(6, 5, **sh["kv 8192"])
    t8, t32, t128 = (us(a.one(6, 4, **x)) for x in (sh["kv 8192"], L06_DEFAULT, sh["kv 131072"]))
    b32, b128 = 2.0 * 32768 * 128 * 2 * 8 / 1e6, 2.0 * 131072 * 128 * 2 * 8 / 1e6
    slope = (t128 - t32) / (b128 - b32)
    zero = t32 - slope * b32
    miss = abs(zero + slope * b32 / 4 - t8)
    return "\n".join([src, "", (
        f"What is not reached yet, measured: 90% of HBM (4.3 TB/s) at batch 1, 8 KV heads, kv 32k "
        f"({tbs(d5):.2f} TB/s with version 5, {d5['pct_bw']:.0f}%) and 128k ({tbs(l5):.2f}, "
        f"{l5['pct_bw']:.0f}%); 3.5 TB/s at batch 1 and kv 8k is "
        f"{'reached' if tbs(s5) >= 3.5 else 'not reached'} with 32 KV heads ({tbs(s5):.2f}, version "
        f"5) and not with 8 ({tbs(s8):.2f}, where the whole K + V is 34 MB). The gap at small sizes "
        f"is a fixed cost of about {zero:.0f} us per call that does not scale with the keys: "
        f"version 4 takes {t8:.1f} us for 34 MB (kv 8192), {t32:.1f} us for 134 MB and {t128:.1f} "
        f"us for 537 MB (kv 131072); a line through the last two meets zero bytes at {zero:.1f} us "
        f"and passes within {miss:.1f} us of the first."), "", l06_floor_sentence(a)])


# ---- Top README --------------------------------------------------------------------------------

def r_headline(a, ctx):
    st = {}
    for r in a.lessons:
        st[r["status"]] = st.get(r["status"], 0) + 1
    bad = sum(v for k, v in st.items() if k not in ("PASS", "skipped", "unchecked"))
    skipped = f", {st['skipped']} skipped with the reason in their note" if st.get("skipped") else ""
    check = (f"Every version run in this archive passed its check ({st.get('PASS', 0)} rows PASS"
             f"{skipped})." if not bad else
             f"{bad} rows of this archive did not pass their check: see lessons.csv.")
    rows = []
    # 01
    r16, cp, sm, s32 = l01(a, "read16"), l01(a, "copy16"), l01(a, "row"), l01(a, "stride32")
    if r16 and cp and sm and s32:
        peak = l01_hbm_peak(a)
        rows.append(["01", f"HBM read {r16['gbs'] / 1000:.2f} TB/s ({r16['pct_bw']:.1f}% of "
                     f"{peak / 1000:.2f} TB/s, clock x bus width); copy {cp['gbs'] / 1000:.2f} TB/s; "
                     f"shared memory {sm['gbs'] / 1000:.2f} TB/s ({sm['pct_bw']:.1f}% of SMs x 128 B "
                     f"x clock); 32-way bank conflict {s32['ms'] / sm['ms']:.2f}x slower (32x "
                     f"predicted)", copy_verdict(a, short=True)])
    # 02
    d6, l6 = a.one(2, 6, **L02_DEFAULT), a.one(2, 6, **L02_LONG)
    if d6 and l6:
        t, m = l02_peer(a, r"torch\.softmax", L02_DEFAULT), l02_peer(a, r"lesson02\.v6-.*",
                                                                      L02_DEFAULT)
        peer = (f"`torch.softmax` {t['ms']:.3f} ms, version 6 {m['ms']:.3f} ms "
                f"({t['ms'] / m['ms']:.2f}x), 16384 x 4096 in one process" if t and m else
                "peer figures: " + NO_PEERS)
        rows.append(["02", f"one-pass online softmax, row in registers (version 6): "
                     f"{l02_1r1w(a, d6)[1]:.1f}% of HBM on 16384 x 4096 fp32, "
                     f"{l02_1r1w(a, l6)[1]:.1f}% on 4096 x 32768", peer])
    # 03
    q4, n4 = a.one(3, 3, **att(1, 16, 4096, 64)), a.one(1, 15, **att(1, 16, 4096, 64))
    q64 = a.one(3, 3, **att(1, 16, 65536, 64))
    if q4:
        h = "FlashAttention-1, tiled and parallel over Q-tile groups (version 3)"
        if q64:
            h += f": runs seq 65536 ({q64['ms']:.0f} ms; S would need 256 GiB)"
        h += f"; {q4['tflops']:.1f} TFLOP/s fp32 at seq 4096"
        if n4:
            h += f", {n4['ms'] / q4['ms']:.2f}x the naive attention's speed"
        rows.append(["03", h, "-"])
    # 04
    v128, v64 = l04(a, 7, 128, 0), l04(a, 7, 64, 0)
    if v128 and v64:
        if a.peers and a.peer(4, "sdpa-flash"):
            bf, bc = [], []
            for dim, c, s, fl, cu, vs in sdpa_rows(a):
                ts = [v["tflops"] for v in vs.values() if v and v["tflops"]]
                if s >= 2048 and ts and fl and cu:
                    bf.append(max(ts) / fl["tflops"])
                    bc.append(cu["tflops"] / max(ts))
            peer = (f"{span(min(bf), max(bf), 2)}x SDPA's FlashAttention-2 backend at seq 2k-16k, "
                    f"dim 64 and 128, causal and not; cuDNN (wgmma) reaches "
                    f"{span(min(bc), max(bc), 1)}x the best version's rate: lesson 05") if bf \
                else "peer figures: none at seq 2k-16k"
        else:
            peer = "peer figures: " + NO_PEERS
        rows.append(["04", f"FlashAttention-2 with `mma.sync` (version 7): {v128['tflops']:.1f} TFLOP/s "
                     f"at dim 128, {v64['tflops']:.1f} at dim 64 (batch 4, seq 4096)", peer])
    return "\n".join([source(a, ["lessons.csv", "peers.csv"]), "", check, "",
                      table(["lesson", "headline", "against PyTorch"], rows)])


# ---- Lesson 07 ------------------------------------------------------------------------------------

L07_DEFAULT = att(1, 32, 1, 128, kvh=8, skv=32768)
L07_NAMES = {1: "paged-row", 2: "paged-split", 3: "paged-pipeline", 4: "paged-overlap",
             5: "paged-balance", 6: "dense-one-launch", 7: "dense-varlen"}
L07_PAGED = 5  # versions 1..5 are paged, 6 and 7 the dense yardsticks
# The runs at the default shape, in the order of the default run and of
# lessons/07_paged_attention/gpu-runs.txt (lessons.csv has no block-size column: the n-th row of a
# version at the default shape is the n-th of these runs).
L07_BLOCK_SIZES = [16, 8, 32, 64, 128]
# (label, shape or kv_lens) of the other rows of gpu-runs.txt
L07_SHAPES = [("kv 131072", att(1, 32, 1, 128, kvh=8, skv=131072)),
              ("batch 8", att(8, 32, 1, 128, kvh=8, skv=32768)),
              ("batch 32, kv 8192", att(32, 32, 1, 128, kvh=8, skv=8192)),
              ("batch 128, kv 1024", att(128, 32, 1, 128, kvh=8, skv=1024)),
              ("batch 128, kv 8192", att(128, 32, 1, 128, kvh=8, skv=8192)),
              ("one of 131072 keys, 31 of 1024", {"kv_lens": "131072,1024x31"}),
              ("one of 131072 keys, 7 of 1024", {"kv_lens": "131072,1024x7"}),
              ("the same, the long one fourth", {"kv_lens": "1024x3,131072,1024x4"}),
              ("one of 32768 keys, 7 of 1024", {"kv_lens": "32768,1024x7"}),
              ("32k, 8k, 2k, 4 x 512, 17, 1; 2 rows, causal", {"kv_lens": "32768,8192,2048,512x4,17,1"}),
              ("dim 64", att(1, 32, 1, 64, kvh=8, skv=32768)),
              ("32 KV heads, kv 8192", att(1, 32, 1, 128, kvh=32, skv=8192))]


def l07_missing(a):
    return a.one(7, L07_PAGED, **L07_DEFAULT) is None


def l07_dense(rows):
    """The faster dense yardstick of a run (versions 6 and 7 of its rows)."""
    ts = [r for r in rows if r and r["version"] in (L07_PAGED + 1, L07_PAGED + 2) and r["ms"]]
    return min(ts, key=lambda r: r["ms"]) if ts else None


def r_l07_default(a, ctx):
    src = source(a, ["lessons.csv"])
    if l07_missing(a):
        return src + "\n\nThe lesson's table: " + NO_RUN + "."
    rs = {v: a.one(7, v, **L07_DEFAULT) for v in L07_NAMES}
    best = l07_dense(rs.values())
    rows = []
    for v in L07_NAMES:
        r, t = rs[v], us(rs[v])
        rows.append([v, f"`{L07_NAMES[v]}`", "-" if t is None else
                     (f"{t:.0f} us" if t >= 100 else f"{t:.1f} us"), f(r and r["gbs"], 0),
                     pc(r and r["pct_bw"]),
                     pc(100.0 * best["ms"] / r["ms"] if r and r["ms"] and best else None)])
    return "\n".join([src, "", "Default shape: batch 1, 32 heads, 8 KV heads, kv 32768, dim 128, "
                      "block size 16, pages in a shuffled order:", "",
                      table(["#", "version", "time", "GB/s", "% of HBM",
                             "% of the faster dense speed"], rows)])


def r_l07_block_sizes(a, ctx):
    src = source(a, ["lessons.csv"])
    runs = {v: a.rows(7, v, timed=True, **L07_DEFAULT) for v in L07_NAMES}
    paged = list(range(2, L07_PAGED + 1))
    if any(len(runs[v]) < len(L07_BLOCK_SIZES) for v in paged + [L07_PAGED + 1, L07_PAGED + 2]):
        return src + "\n\nBlock sizes: " + NO_RUN + "."
    rows = []
    for i, bs in enumerate(L07_BLOCK_SIZES):
        best = l07_dense([runs[L07_PAGED + 1][i], runs[L07_PAGED + 2][i]])
        rows.append([bs] + [f(tbs(runs[v][i]), 2) for v in paged] + [f(tbs(best), 2)] +
                    [pc(100.0 * best["ms"] / runs[v][i]["ms"]) for v in paged])
    rows.sort(key=lambda r: r[0])
    return "\n".join([src, "", "The default shape at each block size (TB/s of K + V; the dense "
                      "yardstick ran beside each):", "",
                      table(["block size"] + [f"v{v}" for v in paged] + ["dense"] +
                            [f"v{v} / dense" for v in paged], rows)])


def r_l07_shapes(a, ctx):
    src = source(a, ["lessons.csv"])
    if l07_missing(a):
        return src + "\n\nOther shapes: " + NO_RUN + "."
    rows = []
    last, prev = L07_PAGED, L07_PAGED - 1
    for label, shape in L07_SHAPES:
        rs = {v: a.one(7, v, **shape) for v in L07_NAMES}
        if rs[last] is None:
            rows.append([label] + ["-"] * (L07_PAGED + 3))
            continue
        best = l07_dense(rs.values())
        rows.append([label] + [f(tbs(rs[v]), 2) for v in range(1, L07_PAGED + 1)] + [
            f(tbs(best), 2),
            pc(100.0 * best["ms"] / rs[prev]["ms"] if best and rs[prev] else None),
            pc(100.0 * best["ms"] / rs[last]["ms"] if best else None)])
    return "\n".join([src, "", "Other rows of the same run (TB/s; block size 16):", "",
                      table(["shape"] + [f"v{v}" for v in range(1, L07_PAGED + 1)] +
                            ["dense", f"v{prev} / dense", f"v{last} / dense"], rows)])


def r_l07_loop(a, ctx):
    src = source(a, ["gpu-suite.log"])
    lines = []
    for title, body in (a.log or {}).get("sections", []):
        if title.startswith("lesson-7") and title.strip() == "lesson-7":
            lines = body
            break
    text = " ".join(x.strip() for x in lines)
    m = re.search(r"decode loop on the GPU \((\S+), block size (\d+), pool of (\d+) blocks\): "
                  r"(\d+) steps, (\d+) rows decoded, (\d+) sequences started and (\d+) finished, "
                  r"(\d+) copy-on-write copies; .*?checked against fp64 \((\d+) rows\): max \|diff\| "
                  r"(\S+), (PASS|FAIL); free blocks at the end (\d+) of (\d+): (PASS|FAIL) "
                  r"the decode kernels: ([\d.]+) us per step, (\d+) rows/s, (\d+) GB/s", text)
    if not m:
        return src + "\n\nThe decode loop on the GPU: " + NO_LOG + "."
    g = m.groups()
    return "\n".join([src, "", (
        f"`./run` at the default shape: {g[3]} steps of up to 16 live sequences (prompts of 16 to "
        f"2048 tokens, 8 to 128 generated, a fork every 8 steps), {g[4]} rows decoded by "
        f"`{g[0]}` at block size {g[1]}, {g[5]} sequences started and {g[6]} finished, {g[7]} "
        f"copy-on-write copies. {g[8]} query rows checked against fp64: max |diff| {g[9]}, "
        f"{g[10]}; free blocks at the end {g[11]} of {g[12]}: {g[13]}. The decode kernels took "
        f"{g[14]} us per step on average: {int(g[15]):,} rows/s and {g[16]} GB/s of K + V, small "
        f"batches of short sequences, where a decode is mostly its fixed cost (no L2 flush).")])


def r_l07_peers(a, ctx):
    src = source(a, ["peers.csv"])
    if not a.peers or not a.peer(7, "cudnn-paged-bs16"):
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    shapes = sorted({(r["batch"], r["seq_kv"]) for r in a.peers
                     if int(r["lesson"]) == 7 and r["impl"] == "cudnn-paged-bs16" and r["gbs"]})
    # the two newest paged versions the run measured
    ours = [v for v in range(1, L07_PAGED + 1)
            if a.peer(7, f"v{v}-{L07_NAMES[v]}-bs16(-mixed)?")][-2:]
    top = ours[-1]
    rows, wins, n, worst, dense_low = [], 0, 0, None, []
    for mixed in ("", "-mixed"):
        for b, skv in shapes:
            kv = dict(dim=128, kv_heads=8, batch=b, seq_kv=skv)

            def rate(impl):
                return tbs(a.peer(7, re.escape(impl + mixed), **kv))
            cp, cd, fl = (rate(x) for x in ("cudnn-paged-bs16", "cudnn-dense", "read-floor"))
            vs = {v: rate(f"v{v}-{L07_NAMES[v]}-bs16") for v in ours}
            l06 = max([x for x in (rate("l06-v5-one-launch"), rate("l06-v6-varlen")) if x],
                      default=None)
            vt = vs[top]
            if cp is None or vt is None:
                continue
            n += 1
            wins += vt >= cp
            worst = min(worst, vt / cp) if worst else vt / cp
            if l06:
                dense_low.append(vt / l06)
            rows.append([b, seq_label(skv), "mixed" if mixed else "equal", f(fl, 2), f(cp, 2),
                         f(cd, 2), f(l06, 2)] + [f(vs[v], 2) for v in ours] +
                        [xs(ratio(vt, cp), 3), pc(100 * vt / l06 if l06 else None),
                         pc(100 * vt / fl if fl else None)])
    return "\n".join([src, "", table(["batch", "kv", "lengths", "read floor", "cuDNN paged",
                                      "cuDNN dense", "lesson 06"] + [f"v{v}" for v in ours] +
                                     [f"v{top} / cuDNN paged", f"v{top} % of lesson 06",
                                      f"v{top} % of the floor"], rows), "",
                      f"Version {top} matches or beats cuDNN's paged graph on {wins} of these {n} "
                      f"rows; its lowest ratio is {worst:.3f}. Against lesson 06's faster dense "
                      f"kernel on the same values it runs at {100 * min(dense_low):.0f}% to "
                      f"{100 * max(dense_low):.0f}%."])


# ---- Lesson 08 ---------------------------------------------------------------------------------
# lessons.csv has no column for the ranks: two runs of the same shape with 2 and 8 ranks give rows
# that differ in nothing else. So the lesson's runs are read from gpu-suite.log, one `lesson-8 ...`
# block per run (the problem, the ranks, each ring version's placement and, for virtual ranks, the
# program's prediction for a GPU per rank), and each block is matched with its rows of lessons.csv
# by shape and order: the k-th block of a shape takes the k-th rows of that shape. The times are
# lessons.csv's; the log gives what the csv cannot.

L08_BLOCK = re.compile(r"^lesson-8(?:\s+(.*))?$")
L08_PROBLEM = re.compile(r"^problem\s+batch (\d+)\s+heads (\d+)/(\d+)\s+seq (\d+)/(\d+)\s+dim (\d+)"
                         r"\s+(full|causal)")
L08_VERSION = re.compile(r"^(\d+) (\S+): (\d+) ranks? on (\d+) GPUs? \(([^)]*)\), (\S+) layout")
L08_PREDICT = re.compile(r"^\s+a GPU per rank \(not run here\): ([\d.]+)x predicted .*?"
                         r"share of the work, ([\d.]+)\)")


def l08_runs(a):
    """Every run of lesson 08 in gpu-suite.log, in the suite's order: {args, shape, ranks, rows
    (version -> its lessons.csv row), ring (version -> {name, gpus, how, layout, predicted,
    share})}. [] without a log."""
    runs, seen = [], {}
    for title, lines in (a.log or {}).get("sections", []):
        m = L08_BLOCK.match(title)
        if not m:
            continue
        run = {"args": (m.group(1) or "").strip(), "shape": None, "ranks": None, "rows": {},
               "ring": {}}
        cur = None
        for line in lines:
            p = L08_PROBLEM.match(line)
            if p and run["shape"] is None:
                g = [int(x) for x in p.groups()[:6]]
                run["shape"] = dict(batch=g[0], heads=g[1], kv_heads=g[2], seq_q=g[3],
                                    seq_kv=g[4], dim=g[5], causal=int(p.group(7) == "causal"))
            r = re.match(r"^ring: (\d+) ranks", line)
            if r and run["ranks"] is None:
                run["ranks"] = int(r.group(1))
            v = L08_VERSION.match(line)
            if v:
                cur = run["ring"].setdefault(int(v.group(1)), {
                    "name": v.group(2), "gpus": int(v.group(4)), "how": v.group(5),
                    "layout": v.group(6), "predicted": None, "share": None})
                continue
            q = L08_PREDICT.match(line)
            if q and cur is not None:
                cur["predicted"], cur["share"] = float(q.group(1)), float(q.group(2))
        if run["shape"] is None:
            continue
        key = tuple(run["shape"][k] for k in SHAPE_KEYS)
        k = seen.get(key, 0)
        seen[key] = k + 1
        for vn in sorted({r["version"] for r in a.rows(8)}):
            rs = a.rows(8, vn, **run["shape"])
            if k < len(rs):
                run["rows"][vn] = rs[k]
        runs.append(run)
    return runs


def l08_names(a):
    names = {}
    for r in a.rows(8):
        names.setdefault(r["version"], r["name"])
    return names


def l08_ms(ms):
    """A time in ms to four significant digits: 6.848, 13.99, 109.4, 904.0."""
    if ms is None:
        return "-"
    return f"{ms:.1f}" if ms >= 100 else f"{ms:.2f}" if ms >= 10 else f"{ms:.3f}"


def l08_where(run):
    """'2 virtual ranks on 1 GPU', or '2 ranks on 2 GPUs (NCCL)', from the ring versions' lines."""
    ring = list(run["ring"].values())
    p = run["ranks"]
    if not ring:
        return f"{p} ranks"
    g = ring[0]
    if g["gpus"] == 1 and p > 1:
        return f"{p} virtual ranks on 1 GPU"
    return f"{p} ranks on {g['gpus']} GPU{'s' if g['gpus'] > 1 else ''} ({g['how']})"


def l08_over(run, v):
    """Version v's time over version 1's in the same run, minus 1, in percent (None if either is
    missing)."""
    one, r = run["rows"].get(1), run["rows"].get(v)
    return rel(r and r["ms"], one and one["ms"])


def l08_missing(a, what):
    return source(a, ["lessons.csv", "gpu-suite.log"]) + f"\n\n{what}: " + NO_RUN + "."


def r_l08_versions(a, ctx):
    """Each version at the default shape, without and with the causal mask: time, TFLOP/s, its
    speed-up over version 1 in the same run, and the program's prediction for a GPU per rank."""
    runs = [r for r in l08_runs(a) if r["rows"].get(1)]
    if not runs:
        return l08_missing(a, "The lesson's runs")
    d = runs[0]
    shapes = [d] + [r for r in runs[1:] if r["ranks"] == d["ranks"] and r["shape"] ==
                    dict(d["shape"], causal=1 - d["shape"]["causal"])][:1]
    shapes.sort(key=lambda r: r["shape"]["causal"])
    names = l08_names(a)
    head, rows = ["version"], []
    for r in shapes:
        mask = "causal" if r["shape"]["causal"] else "full"
        head += [f"{mask}: time", "TFLOP/s", "over one-gpu", "a GPU per rank (model)"]
    for v in sorted(names):
        row = [f"{v} `{names[v]}`"]
        for r in shapes:
            x, ring = r["rows"].get(v), r["ring"].get(v, {})
            one = r["rows"][1]
            if x is None or x["ms"] is None:
                row += [esc(x["status"]) if x else "-", "-", "-", "-"]
                continue
            row += [f"{l08_ms(x['ms'])} ms", f(x["tflops"]), xs(ratio(one["ms"], x["ms"])),
                    xs(ring.get("predicted")) if v > 1 else "-"]
        rows.append(row)
    s = d["shape"]
    words = (f"batch {s['batch']}, {s['heads']} heads" +
             (f" / {s['kv_heads']} KV heads" if s["kv_heads"] != s["heads"] else "") +
             f", seq {s['seq_q']}, dim {s['dim']}, {l08_where(d)}")
    out = [source(a, ["lessons.csv", "gpu-suite.log"]), "",
           f"The default `./run` ({words}) and the same with `--causal`. TFLOP/s counts the whole "
           "problem's flops for every version (causal: the visible pairs), so the rates compare "
           "directly; \"over one-gpu\" is version 1's time over the version's, in the same run. "
           "The last column of each half is the program's model for a GPU per rank (one-gpu time "
           "over this time times the busiest rank's share of the work), printed only for virtual "
           "ranks: a prediction, not a measurement.", "",
           table(head, rows), ""]
    st = [r["status"] for r in a.rows(8)]
    virt = all(g["gpus"] == 1 for r in runs for g in r["ring"].values())
    tail = (f"{st.count('PASS')} of the lesson's {len(st)} rows in this archive passed their check "
            "(every version's output and log-sum-exp against the fp64 reference on sampled rows; "
            "the rings' also against version 1's, every element).")
    if virt:
        tail += (" Every ring in this archive ran on one GPU: no run had a GPU per rank, so no "
                 "speed-up over one GPU here is a multi-GPU measurement.")
    out.append(tail)
    return "\n".join(out).rstrip()


def r_l08_scaling(a, ctx):
    """One row per run of the lesson (the default `./run` and each line of gpu-runs.txt), by length:
    version 1's time, each ring's speed-up over it in the same run, and the prediction for a GPU
    per rank; then the rings' overhead on one GPU and the prediction at the issue's target."""
    runs = [r for r in l08_runs(a) if r["rows"].get(1)]
    if not runs:
        return l08_missing(a, "The lesson's runs")
    names = l08_names(a)
    rings = [v for v in sorted(names) if v > 1]
    order = sorted(runs, key=lambda r: (r["shape"]["seq_q"], r["ranks"], -r["shape"]["dim"],
                                        r["shape"]["causal"]))
    rows = []
    for r in order:
        s = r["shape"]
        one = r["rows"][1]
        cells = []
        for v in rings:
            x = r["rows"].get(v)
            if x is None or x["ms"] is None:
                cells.append(esc(x["status"]) if x else "-")
                continue
            c = f"{xs(ratio(one['ms'], x['ms']))} ({l08_ms(x['ms'])} ms)"
            g = r["ring"].get(v)
            if g and g["gpus"] > 1:
                c += f", {100 * ratio(one['ms'], x['ms']) / g['gpus']:.0f}% of {g['gpus']} GPUs"
            cells.append(c if x["status"] == "PASS" else c + f" {esc(x['status'])}")
        pred = [r["ring"].get(v, {}).get("predicted") for v in rings]
        heads = f"{s['heads']}" + (f"/{s['kv_heads']}" if s["kv_heads"] != s["heads"] else "")
        rows.append([seq_label(s["seq_q"]), l08_where(r).replace(" on 1 GPU", ""),
                     f"{heads}, {s['dim']}", "yes" if s["causal"] else "no",
                     f"{l08_ms(one['ms'])} ms"] + cells +
                    [" / ".join(xs(p) for p in pred) if any(pred) else "measured"])
    out = [source(a, ["lessons.csv", "gpu-suite.log"]), "",
           "Every run of the lesson in the archive (the default `./run`, then each line of "
           "`gpu-runs.txt`), by length: batch 1, heads (query/KV) and head dimension as given. "
           "The ring columns are version 1's time over the ring's, measured in the same run "
           "(with its median time); the last column is the program's prediction for a GPU per "
           "rank, versions " + " / ".join(str(v) for v in rings) + ".", "",
           table(["tokens", "ranks", "heads, dim", "causal", f"1 `{names.get(1, 'one-gpu')}`"] +
                 [f"{v} `{names[v]}`" for v in rings] + ["a GPU per rank (model)"], rows), ""]
    s = []
    virt = [r for r in runs if all(g["gpus"] == 1 for g in r["ring"].values())]
    over = [(l08_over(r, v), v, r) for r in virt for v in rings if l08_over(r, v) is not None]
    if over:
        lo, hi = min(over, key=lambda t: t[0]), max(over, key=lambda t: t[0])

        def where(t):
            sh = t[2]["shape"]
            return (f"version {t[1]}, {seq_label(sh['seq_q'])} tokens, {t[2]['ranks']} ranks"
                    f"{', causal' if sh['causal'] else ''}")
        s.append(f"On one GPU the rings took {lo[0]:.1f}% ({where(lo)}) to {hi[0]:.1f}% "
                 f"({where(hi)}) longer than version 1.")
    # The issue's target: 2 ranks, 128k tokens and more.
    target = [r for r in runs if r["ranks"] == 2 and r["shape"]["seq_q"] >= 131072]
    long2 = [t[0] for t in over if t[2] in target]
    zz = [x for x in (r["ring"].get(4, {}).get("predicted") for r in target) if x]
    cont = [x for x in (r["ring"].get(3, {}).get("predicted") for r in target
                        if r["shape"]["causal"]) if x]
    if long2 or zz:
        w = []
        if long2:
            w.append(f"the rings took {min(long2):.1f}% to {max(long2):.1f}% longer than version 1")
        if zz:
            w.append(f"the model predicts {span(min(zz), max(zz), 2)}x for version 4 with a GPU "
                     "per rank, causal or not" +
                     (f", and {span(min(cont), max(cont), 2)}x for version 3 under the causal "
                      "mask (contiguous shards)" if cont else ""))
        s.append("With 2 ranks from 128k tokens on, " + "; ".join(w) + ".")
    multi = [r for r in runs if r not in virt]
    if not multi:
        s.append("No run in this archive had a GPU per rank: those figures are predictions, not "
                 "measurements.")
    else:
        got = [ratio(r["rows"][1]["ms"], r["rows"][v]["ms"]) for r in multi for v in rings
               if r["rows"].get(v) and r["rows"][v]["ms"]]
        at = [ratio(r["rows"][1]["ms"], r["rows"][4]["ms"]) for r in multi if r in target and
              r["rows"].get(4) and r["rows"][4]["ms"]]
        if got:
            n = f"{len(multi)} run{'s' if len(multi) > 1 else ''}"
            s.append(f"Measured with a GPU per rank ({n}): the rings ran at "
                     f"{span(min(got), max(got), 2)}x version 1's speed" +
                     (f"; version 4 with 2 ranks from 128k tokens on, {span(min(at), max(at), 2)}x."
                      if at else "."))
    ones = {}
    for r in runs:
        ones.setdefault(tuple(r["shape"][k] for k in SHAPE_KEYS), []).append(r["rows"][1]["ms"])
    twice = {k: v for k, v in ones.items() if len(v) > 1}
    if twice:
        k, v = max(twice.items(), key=lambda kv: (max(kv[1]) - min(kv[1])) / min(kv[1]))
        sh = dict(zip(SHAPE_KEYS, k))
        which = "" if len(twice) == 1 else f" (the widest spread of the {len(twice)} it repeated)"
        times = "twice" if len(v) == 2 else f"{len(v)} times"
        mask = ", causal" if sh["causal"] else ""
        s.append(f"Run-to-run noise: version 1 does not depend on the ranks, and it ran {times} at "
                 f"{seq_label(sh['seq_q'])} tokens{mask}{which}, once per rank count: "
                 f"{', '.join(l08_ms(x) for x in v[:-1])} and {l08_ms(v[-1])} ms, "
                 f"{100 * (max(v) - min(v)) / min(v):.2f}% apart.")
    out.append(" ".join(s))
    return "\n".join(out).rstrip()


# ---- Lesson 09 ---------------------------------------------------------------------------------
# bench/lesson09_peers.py writes three files: its timing rows into peers.csv (lesson 09, through
# bench/peer_timing.py's PeerCsv), and accuracy-lesson09.csv and memory-lesson09.csv beside it
# (columns: ACCURACY_COLUMNS and MEMORY_COLUMNS of that script). The regions read a folder named in
# their marker, e.g. <!-- results:l09-peers h200-l09-2026-12-01 -->, or the lesson's newest one.

def no_l09(name):
    return (f"not in this archive (`bench/lesson09_peers.py --out DIR` writes `{name}` into DIR; "
            f"copy it into the run's folder)")


def l09_csv(a, name):
    """The rows of one of lesson 09's own CSVs in the folder (shape columns as ints, the figures
    as floats), or None when it is missing or empty."""
    path = os.path.join(a.folder, name)
    if not os.path.exists(path):
        return None
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in SHAPE_KEYS:
            v = _num(r.get(k))
            r[k] = int(v) if v is not None else None
        for k in ("rel_l2", "max_abs", "ref_max_abs", "flash_rel_l2", "ratio", "bar", "io_bytes",
                  "workspace_bytes", "model_bytes", "peak_bytes", "extra_bytes", "free_bytes"):
            if k in r:
                r[k] = _num(r[k])
    return rows or None


def l09_shape(r):
    """'b1 h8/1 s1024 d128 causal', as the script prints a shape."""
    kv = f"/{r['kv_heads']}" if r["kv_heads"] != r["heads"] else ""
    seq = f"{r['seq_q']}" if r["seq_q"] == r["seq_kv"] else f"{r['seq_q']}/{r['seq_kv']}"
    mask = "causal" if r["causal"] else "full"
    return f"b{r['batch']} h{r['heads']}{kv} s{seq} d{r['dim']} {mask}"


def l09_bytes(n):
    """Decimal units, as bench/lesson09_peers.py prints them."""
    if n is None:
        return "-"
    return f"{n / 1e9:.2f} GB" if abs(n) >= 1e9 else f"{n / 1e6:.1f} MB"


def r_l09_peers(a, ctx):
    src = source(a, ["peers.csv"])
    if not a.peers or not a.peer(9, "sdpa-flash"):
        return src + "\n\nPeer figures: " + NO_PEERS + "."
    l9 = [r for r in a.peers if int(r["lesson"]) == 9]
    nums = sorted({int(m.group(1)) for r in l9 for m in [re.match(r"v(\d+)-", r["impl"] or "")]
                   if m})
    shapes = sorted({(r["dim"], r["causal"], r["seq_q"]) for r in l9 if r["seq_q"]})
    rows, over_fl, over_cu = [], [], []
    for dim, c, sq in shapes:
        kv = dict(dim=dim, causal=c, seq_q=sq)
        fl, cu = a.peer(9, "sdpa-flash", **kv), a.peer(9, "sdpa-cudnn", **kv)
        vs = {v: a.peer(9, rf"v{v}-.*", **kv) for v in nums}
        ts = [r["tflops"] for r in vs.values() if r and r["tflops"]]
        best = max(ts) if ts else None
        b_f, b_c = ratio(best, fl and fl["tflops"]), ratio(best, cu and cu["tflops"])
        if sq >= 2048:
            over_fl += [b_f] if b_f else []
            over_cu += [b_c] if b_c else []
        rows.append([dim, "yes" if c else "no", seq_label(sq), f(fl and fl["tflops"]),
                     f(cu and cu["tflops"])] + [f(vs[v] and vs[v]["tflops"]) for v in nums] +
                    [f(b_f, 2), f(b_c, 2)])
    sw = a.software()
    out = [src, "", f"Backward TFLOP/s in one process ({sw}), the papers' shapes: 16k tokens "
           "(batch = 16384 / seq), hidden 2048 (heads = 2048 / dim); the backward counted as 2.5x "
           "the forward's flops, causal as the visible pairs. The versions read O and the LSE of "
           "lesson 04's version 7.", "",
           table(["dim", "causal", "seq", "SDPA flash", "SDPA cuDNN"] + [f"v{v}" for v in nums] +
                 ["best / flash", "best / cuDNN"], rows), ""]
    mine = [r for r in l9 if re.match(r"v\d+-", r["impl"] or "")]
    checked = [r for r in mine if r["check"] in ("ok", "MISMATCH")]
    bad = [r for r in checked if r["check"] == "MISMATCH"]
    s = []
    if checked:
        s.append(f"{len(checked) - len(bad)} of the {len(checked)} version rows checked matched "
                 f"flash's dQ, dK and dV (relative L2 under 1e-1, a guard against garbage; the accuracy table is the bar)" +
                 (f"; {len(bad)} did not." if bad else "."))
    skipped = {}
    for r in mine:
        if (r["check"] or "").startswith("skipped"):
            skipped.setdefault(r["impl"], []).append(r["seq_q"])
    for impl, seqs in sorted(skipped.items()):
        s.append(f"`{impl}` was not timed at {len(seqs)} shape{'s' if len(seqs) > 1 else ''} "
                 f"(seq {', '.join(seq_label(x) for x in sorted(set(seqs)))}: its workspace did "
                 "not fit, or one run outlasted the time budget).")
    if over_fl:
        s.append(f"At seq 2k and longer the fastest version runs at "
                 f"{span(min(over_fl), max(over_fl), 2)}x FlashAttention-2's backward" +
                 (f" and {span(min(over_cu), max(over_cu), 2)}x cuDNN's." if over_cu else "."))
    out.append(" ".join(s))
    return "\n".join(out).rstrip()


def r_l09_accuracy(a, ctx):
    name = "accuracy-lesson09.csv"
    src = source(a, [name])
    rs = l09_csv(a, name)
    if not rs:
        return src + "\n\nAccuracy: " + no_l09(name) + "."
    groups = {}  # (shape, impl) -> {grad: row}, in the file's order
    for r in rs:
        groups.setdefault((l09_shape(r), r["impl"]), {})[r["grad"]] = r
    rows, judged, passed, worst = [], 0, 0, None
    for (shape, impl), g in groups.items():
        first = next(iter(g.values()))
        verdict = first["verdict"] or ""
        if first["rel_l2"] is None:  # an error or a skipped version: its reason
            rows.append([shape, f"`{impl}`", "-", "-", "-", "-", esc(verdict)])
            continue
        ratios = [g[x]["ratio"] for x in ("dq", "dk", "dv") if x in g and g[x]["ratio"] is not None]
        top = max(ratios) if ratios else None
        if verdict in ("PASS", "FAIL"):
            judged += 1
            passed += verdict == "PASS"
            if top is not None and (worst is None or top > worst[0]):
                worst = (top, impl, shape)
        rows.append([shape, f"`{impl}`"] +
                     [f"{g[x]['rel_l2']:.2e}" if x in g and g[x]["rel_l2"] is not None else "-"
                      for x in ("dq", "dk", "dv")] + [xs(top), esc(verdict)])
    bar = next((r["bar"] for r in rs if r.get("bar")), None)
    out = [src, "", "The gradients of one backward on bf16 inputs against float64 (the same "
           "inputs), relative L2 error ||got - ref|| / ||ref||; the ratio is the largest over dQ, "
           "dK and dV of an implementation's error over SDPA flash's.", "",
           table(["shape", "implementation", "dQ", "dK", "dV", "worst / flash", "verdict"], rows),
           ""]
    if judged:
        s = (f"{passed} of {judged} version rows pass the lesson's bar (at most "
             f"{bar:g}x flash's error on each gradient)" if bar else
             f"{passed} of {judged} version rows pass")
        if worst:
            s += f"; the largest ratio is {worst[0]:.2f} (`{worst[1]}`, {worst[2]})"
        out.append(s + ".")
    return "\n".join(out).rstrip()


def r_l09_memory(a, ctx):
    name = "memory-lesson09.csv"
    src = source(a, [name])
    rs = l09_csv(a, name)
    if not rs:
        return src + "\n\nMemory: " + no_l09(name) + "."
    impls = list(dict.fromkeys(r["impl"] for r in rs))
    seqs = sorted({r["seq_q"] for r in rs})
    cell = {(r["seq_q"], r["impl"]): r for r in rs}

    def show(r):
        if r is None:
            return "-"
        chk = r["check"] or ""
        if chk.startswith("refused"):
            m = re.search(r"needs ([\d.]+ GB)", chk)
            return f"refused (needs {m.group(1)})" if m else "refused"
        if not chk.startswith("ok"):
            return "error"
        return l09_bytes(r["extra_bytes"])
    rows = []
    for sq in seqs:
        io = next((cell[(sq, i)]["io_bytes"] for i in impls if (sq, i) in cell), None)
        rows.append([seq_label(sq), l09_bytes(io)] + [show(cell.get((sq, i))) for i in impls])
    r0 = rs[0]
    out = [src, "", f"Device memory of one backward beyond its inputs and outputs (the peak of "
           f"`torch.cuda.max_memory_allocated()`, the versions' workspace allocated as a torch "
           f"tensor; GB = 1e9 bytes): batch {r0['batch']}, {r0['heads']} heads, dim {r0['dim']}, "
           f"{'causal' if r0['causal'] else 'full'}.", "",
           table(["seq", "inputs + outputs"] + [f"`{i}`" for i in impls], rows), ""]
    s = []
    for i in impls:
        ok = sorted((r["seq_q"], r["extra_bytes"]) for r in rs
                    if r["impl"] == i and (r["check"] or "").startswith("ok") and r["extra_bytes"])
        if len(ok) >= 2 and re.match(r"v\d+-", i):
            (s0, e0), (s1, e1) = ok[0], ok[-1]
            s.append(f"`{i}` grows from {l09_bytes(e0)} at seq {seq_label(s0)} to {l09_bytes(e1)} "
                     f"at {seq_label(s1)}: {e1 / e0:.0f}x for a {s1 // s0}x longer sequence.")
    out.append(" ".join(s))
    return "\n".join(out).rstrip()


def l09_ms(ms):
    """A time in ms with three or four significant digits: 0.812, 12.34, 812.3, 4012."""
    if ms is None:
        return "-"
    return f"{ms:.0f}" if ms >= 1000 else f"{ms:.1f}" if ms >= 100 else \
        f"{ms:.2f}" if ms >= 10 else f"{ms:.3f}"


def r_l09_versions(a, ctx):
    """Every run of lesson 09 in lessons.csv (the default `./run`, then each line of gpu-runs.txt),
    one row per shape in the order the suite ran them: each version's TFLOP/s and median time, and
    version 5's time against version 4's."""
    src = source(a, ["lessons.csv"])
    rs = a.rows(9)
    if not rs:
        return src + "\n\nThe lesson's runs: " + NO_RUN + "."
    names = {}
    for r in rs:
        names.setdefault(r["version"], r["name"])
    vs = sorted(names)
    shapes = list(dict.fromkeys(tuple(r[k] for k in SHAPE_KEYS) for r in rs))
    default = dict(zip(SHAPE_KEYS, shapes[0]))

    def cell(r):
        if r is None:
            return "-"
        if r["ms"] is None:  # skipped or failed to run: the reason goes below the table
            return esc(r["status"])
        c = f"{f(r['tflops'])} ({l09_ms(r['ms'])} ms)"
        return c if r["status"] == "PASS" else c + f" {esc(r['status'])}"

    rows, det = [], []
    for key in shapes:
        s = dict(zip(SHAPE_KEYS, key))
        got = {}
        for v in vs:
            first = a.rows(9, v, **s)
            got[v] = a.one(9, v, **s) or (first[0] if first else None)
        d = rel(got[5] and got[5]["ms"], got[4] and got[4]["ms"]) if 4 in got and 5 in got else None
        if d is not None:
            det.append((d, s))
        rows.append([f"batch {s['batch']}, {shape_words(s, default)}"] + [cell(got[v]) for v in vs] +
                    ["-" if d is None else f"{d:+.1f}%"])
    out = [src, "", "TFLOP/s (the backward counted as 2.5x the forward's flops, causal as the visible "
           "pairs; median time in ms), one row per shape the suite ran: the default `./run`, then "
           "each line of `gpu-runs.txt`, the first run of a shape where it ran more than once. The "
           "last column is version 5's time over version 4's, minus 1: what the deterministic dQ "
           "costs (+) or saves (-) against the atomics.", "",
           table(["run"] + [f"{v} `{names[v]}`" for v in vs] + ["5 vs 4, time"], rows), ""]
    st = {}
    for r in rs:
        st[r["status"]] = st.get(r["status"], 0) + 1
    s = [f"{st.get('PASS', 0)} of the {len(rs)} rows passed their check (dQ, dK and dV against the "
         "double-precision reference)"]
    said = {"FAIL": "failed it", "unchecked": "were timed without a check (`--no-check`)",
            "error": "hit an error"}
    for k in sorted(x for x in st if x not in ("PASS", "skipped")):
        s.append(f"{st[k]} {said.get(k, k)}")
    s = ["; ".join(s) + "."]
    for r in rs:
        if r["status"] == "skipped":
            s.append(f"Version {r['version']} at batch {r['batch']}, {shape_words(r)}: "
                     f"\"{esc(r['note'] or 'skipped')}\".")
    if det:
        lo, hi = min(det, key=lambda t: t[0]), max(det, key=lambda t: t[0])
        s.append(f"Version 5 against version 4 over the {len(det)} shapes: {lo[0]:+.1f}% "
                 f"(batch {lo[1]['batch']}, {shape_words(lo[1])}) to {hi[0]:+.1f}% (batch "
                 f"{hi[1]['batch']}, {shape_words(hi[1])}) in time.")
    s.append(noise_sentence(a, 9))
    out.append(" ".join(s))
    return "\n".join(out).rstrip()


RENDERERS = {
    "headline": r_headline,
    "pyramid": r_pyramid, "host-link": r_host_link, "hbm": r_hbm, "l2": r_l2, "banks": r_banks,
    "fma": r_fma, "naive-kernels": r_naive_kernels, "naive-floors": r_naive_floors,
    "naive-causal": r_naive_causal, "naive-shapes": r_naive_shapes,
    "softmax-setup": r_softmax_setup, "softmax-default": r_softmax_default,
    "softmax-long": r_softmax_long, "softmax-peers": r_softmax_peers,
    "softmax-targets": r_softmax_targets, "softmax-v8": r_softmax_v8,
    "softmax-steps": r_softmax_steps,
    "dram": r_dram, "fa1-seq": r_fa1_seq, "fa1-ratios": r_fa1_ratios, "fa1-65536": r_fa1_65536,
    "fa1-shapes": r_fa1_shapes,
    "l04-setup": r_l04_setup, "l04-table": r_l04_table, "l04-predicted": r_l04_predicted,
    "l04-banks": r_l04_banks, "sdpa": r_sdpa, "floors": r_floors, "q-outer": r_q_outer,
    "causal-measured": r_causal_measured, "causal-queue": r_causal_queue,
    "sanitizers": r_sanitizers, "transcript": r_transcript, "versions": r_versions,
    "l04-triton": r_l04_triton, "l05-table": r_l05_table, "l05-shapes": r_l05_shapes, "l05-peers": r_l05_peers,
    "l06-default": r_l06_default, "l06-speedups": r_l06_speedups, "l06-shapes": r_l06_shapes,
    "l06-varlen": r_l06_varlen, "l06-peers": r_l06_peers, "l06-targets": r_l06_targets,
    "l07-default": r_l07_default, "l07-block-sizes": r_l07_block_sizes,
    "l07-shapes": r_l07_shapes, "l07-loop": r_l07_loop, "l07-peers": r_l07_peers,
    "l08-versions": r_l08_versions, "l08-scaling": r_l08_scaling,
    "l09-peers": r_l09_peers, "l09-accuracy": r_l09_accuracy, "l09-memory": r_l09_memory,
    "l09-versions": r_l09_versions,
}

# ---- Regions -------------------------------------------------------------------------------------

# An opening marker may name a folder under docs/results/ after the region's name: that region
# reads that run instead of the README's (a table kept from an earlier run, e.g. peers the newest
# run did not measure).
OPEN = re.compile(r"^<!-- results:([a-z0-9-]+)(?: ([A-Za-z0-9._-]+))? -->$")
CLOSE = re.compile(r"^<!-- /results:([a-z0-9-]+) -->$")


def readmes():
    out = [os.path.join(ROOT, "README.md")]
    out += sorted(glob.glob(os.path.join(ROOT, "lessons", "*", "README.md")))
    return [p for p in out if os.path.exists(p)]


def regenerate(path, text, a, load=None):
    """The file's text with every region rewritten; raises ValueError on broken markers. @p load
    gives the Archive of a folder a marker names (default: read it)."""
    m = re.match(r"lessons/0*(\d+)_", os.path.relpath(path, ROOT))
    ctx = {"lesson": int(m.group(1)) if m else 0, "path": path}
    lines = text.split("\n")
    out, i = [], 0
    rel_path = os.path.relpath(path, ROOT)
    while i < len(lines):
        line = lines[i]
        out.append(line)
        o = OPEN.match(line.strip())
        if CLOSE.match(line.strip()):
            raise ValueError(f"{rel_path}:{i + 1}: closing marker without an opening one")
        if not o:
            i += 1
            continue
        name = o.group(1)
        j = i + 1
        while j < len(lines) and not CLOSE.match(lines[j].strip()):
            if OPEN.match(lines[j].strip()):
                raise ValueError(f"{rel_path}:{j + 1}: region '{name}' is not closed before "
                                 f"the next one opens")
            j += 1
        if j == len(lines) or CLOSE.match(lines[j].strip()).group(1) != name:
            raise ValueError(f"{rel_path}:{i + 1}: region '{name}' has no matching "
                             f"<!-- /results:{name} -->")
        if name not in RENDERERS:
            raise ValueError(f"{rel_path}:{i + 1}: no generator for region '{name}' "
                             f"(known: {', '.join(sorted(RENDERERS))})")
        pinned = o.group(2)
        if pinned and not os.path.isdir(os.path.join(RESULTS, pinned)):
            raise ValueError(f"{rel_path}:{i + 1}: region '{name}' names docs/results/{pinned}/, "
                             f"which does not exist")
        src = (load or Archive)(os.path.join(RESULTS, pinned)) if pinned else a
        out.extend(RENDERERS[name](src, ctx).rstrip("\n").split("\n"))
        out.append(lines[j])
        i = j + 1
    return "\n".join(out)


# The lessons whose rows the top README's regions read (its headline covers lessons 01-04).
TOP_LESSONS = (1, 2, 3, 4)


def lessons_in(folder):
    """The lesson numbers with rows in a folder's lessons.csv."""
    with open(os.path.join(folder, "lessons.csv"), newline="", encoding="utf-8") as fh:
        return {int(r["lesson"]) for r in csv.DictReader(fh) if (r.get("lesson") or "").isdigit()}


def newest_folder(lessons=()):
    """The newest folder (by the date its name ends with, then its name) whose lessons.csv has rows
    of every lesson in `lessons`: a partial run (scripts/gpu-suite.sh with LESSONS=...) is the
    newest source only for the lessons it ran."""
    best = None
    for d in sorted(os.listdir(RESULTS)) if os.path.isdir(RESULTS) else []:
        full = os.path.join(RESULTS, d)
        m = re.match(r"^.*-(\d{4}-\d{2}-\d{2})$", d)
        if not (m and os.path.isdir(full) and os.path.exists(os.path.join(full, "lessons.csv"))):
            continue
        if lessons and not set(lessons) <= lessons_in(full):
            continue
        key = (m.group(1), d)
        if best is None or key > best[0]:
            best = (key, full)
    if best is None:
        want = f" with rows of lessons {', '.join(map(str, lessons))}" if lessons else ""
        raise SystemExit("results-tables: no results folder (NAME-YYYY-MM-DD/lessons.csv)"
                         f"{want} under docs/results/")
    return best[1]


def readme_lessons(path):
    """The lessons a README's regions read: its own, or TOP_LESSONS for the top README."""
    m = re.match(r"lessons/0*(\d+)_", os.path.relpath(path, ROOT))
    return (int(m.group(1)),) if m else TOP_LESSONS


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", nargs="?", help="a results folder (default: the newest under "
                    "docs/results/)")
    ap.add_argument("--check", action="store_true", help="compare, do not write: print a unified "
                    "diff of any drift and exit 1")
    args = ap.parse_args()
    archives = {}  # folder -> Archive, read once
    drift = 0
    for path in readmes():
        with open(path, encoding="utf-8") as fh:
            old = fh.read()
        if args.folder is None and "<!-- results:" not in old:
            continue  # no region: nothing to read
        folder = args.folder or newest_folder(readme_lessons(path))
        if folder not in archives:
            archives[folder] = Archive(folder)
        a = archives[folder]
        def load(folder):
            if folder not in archives:
                archives[folder] = Archive(folder)
            return archives[folder]
        try:
            new = regenerate(path, old, a, load)
        except ValueError as e:
            print(f"results-tables: {e}", file=sys.stderr)
            return 2
        if new == old:
            continue
        rel_path = os.path.relpath(path, ROOT)
        if args.check:
            drift += 1
            try:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), new.splitlines(True), f"a/{rel_path}", f"b/{rel_path}"))
                sys.stdout.flush()
            except BrokenPipeError:  # a pager or head that stopped reading
                sys.stdout = None
                return 1
        else:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(new)
            print(f"results-tables: rewrote {rel_path} from {a.rel}")
    if args.check:
        if drift:
            print(f"\nresults-tables: {drift} README(s) out of sync; run "
                  f"scripts/results-tables.py", file=sys.stderr)
            return 1
        print("results-tables: every README region matches "
              f"{', '.join(sorted(x.rel for x in archives.values())) or 'no archive'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
