"""Reading one archive (Archive), the formatting helpers every lesson's renderers share, the
region markers and the choice of folder (newest_folder)."""
import csv
import decimal
import glob
import io
import os
import re
import statistics


# scripts/results/core.py: the repository is three levels up
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
        # A folder without lessons.csv but with its log is a transcript run: the default `./run`
        # of some lessons, kept for the README's transcripts (a region names it in its marker);
        # it is never any lesson's newest folder (newest_folder() needs lessons.csv). So is one
        # that holds only programs' output, saved as NAME-run.log (a region that names the folder
        # reads it with program_run()), or a bench script's printed output, bench.log.
        self.runs = {os.path.basename(x)[:-len("-run.log")]: x
                     for x in sorted(glob.glob(os.path.join(self.folder, "*-run.log")))}
        if not os.path.exists(path) and not self.runs and \
                not os.path.exists(os.path.join(self.folder, "gpu-suite.log")) and \
                not os.path.exists(os.path.join(self.folder, "bench.log")):
            raise SystemExit(f"results-tables: {self.rel}/lessons.csv is missing")
        self.lessons = []
        with open(path if os.path.exists(path) else os.devnull, newline="") as f:
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
            (self.peers[0]["device"] if self.peers else None) or self._device_from_runs() or \
            "unknown device"

    # -- files
    def _read_peers(self):
        paths = [os.path.join(self.folder, "peers.csv")]
        if not os.path.exists(paths[0]):
            paths = sorted(p for p in glob.glob(os.path.join(self.folder, "peers-lesson*.csv"))
                           if not p.endswith("-processes.csv"))
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

    def timed_in(self, lesson, sw):
        """How lesson `lesson`'s bench was timed, with the software `sw`, for a table's caption:
        "in one process (sw)", or, where the bench ran as several processes (scripts/gpu-suite.sh
        BENCH_PROCS, bench/peers_median.py), each figure their median, and the file that keeps
        every process's figures."""
        name = f"peers-lesson{int(lesson):02d}-processes.csv"
        path = os.path.join(self.folder, name)
        if not os.path.exists(path):
            return f"in one process ({sw})"
        with open(path, newline="") as f:
            n = len({r.get("process") for r in csv.DictReader(f)})
        return (f"as the median of {n} processes, each timing every implementation ({sw}; each "
                f"process's figures in `{name}`)")

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

    def program_run(self, name):
        """The lines of NAME-run.log (a program's output, saved as it printed it), or None."""
        path = self.runs.get(name)
        if path is None:
            return None
        with open(path, errors="replace") as f:
            return f.read().splitlines()

    def _device_from_runs(self):
        """The GPU's name from the `device` line the lesson programs print, in the first
        NAME-run.log that has one; None without."""
        for name in self.runs:
            for line in self.program_run(name):
                m = re.match(r"^device\s+(.+?), sm_\d+, \d+ SMs", line)
                if m:
                    return m.group(1)
        return None

    def _read_smi(self):
        path = os.path.join(self.folder, "nvidia-smi.txt")
        if not os.path.exists(path):
            return self._smi_from_log()
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

    def _smi_from_log(self):
        """The GPU's name, driver and nvcc from the lines every gpu-suite.log opens with
        (`nvidia-smi --query-gpu=name,driver_version,...` and `nvcc --version`), for a folder
        without nvidia-smi.txt; None without a log."""
        path = os.path.join(self.folder, "gpu-suite.log")
        if not os.path.exists(path):
            return None
        info = {}
        with open(path, errors="replace") as f:
            head = [next(f, "") for _ in range(40)]
        for i, line in enumerate(head):
            if line.startswith("name, driver_version") and i + 1 < len(head):
                name, driver = [x.strip() for x in head[i + 1].split(",")[:2]]
                info.setdefault("product", name)
                info.setdefault("driver", driver)
            m = re.search(r"release ([\d.]+), V([\d.]+)", line)
            if m:
                info.setdefault("nvcc", m.group(2))
        return {"product": info.get("product"), "driver": info.get("driver"), "cuda": None,
                "nvcc": info.get("nvcc")}

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


# ---- Regions -------------------------------------------------------------------------------------

# An opening marker may name a folder under docs/results/ after the region's name: that region
# reads that run instead of the README's (a table kept from an earlier run, e.g. peers the newest
# run did not measure).
OPEN = re.compile(r"^<!-- results:([a-z0-9-]+)(?: ([A-Za-z0-9._-]+))? -->$")
CLOSE = re.compile(r"^<!-- /results:([a-z0-9-]+) -->$")


# The lessons whose newest folder the top README's regions read by default (its headline reads
# each lesson's own newest folder instead: scripts/results/top.py).
TOP_LESSONS = (1, 2, 3, 4)


def lesson_dirs():
    """(number, folder name) of every lesson present: lessons/NN_name/ with a CMakeLists.txt."""
    out = []
    base = os.path.join(ROOT, "lessons")
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        m = re.match(r"^(\d{2})_\w+$", d)
        if m and os.path.isfile(os.path.join(base, d, "CMakeLists.txt")):
            out.append((int(m.group(1)), d))
    return out


def lessons_in(folder):
    """The lesson numbers with rows in a folder's lessons.csv."""
    with open(os.path.join(folder, "lessons.csv"), newline="", encoding="utf-8") as fh:
        return {int(r["lesson"]) for r in csv.DictReader(fh) if (r.get("lesson") or "").isdigit()}


def folders_newest_first(lessons=()):
    """Every folder (NAME-YYYY-MM-DD with a lessons.csv) whose lessons.csv has rows of every lesson
    in `lessons`, the newest first (by the date its name ends with, then its name)."""
    found = []
    for d in sorted(os.listdir(RESULTS)) if os.path.isdir(RESULTS) else []:
        full = os.path.join(RESULTS, d)
        m = re.match(r"^.*-(\d{4}-\d{2}-\d{2})$", d)
        if not (m and os.path.isdir(full) and os.path.exists(os.path.join(full, "lessons.csv"))):
            continue
        if lessons and not set(lessons) <= lessons_in(full):
            continue
        found.append(((m.group(1), d), full))
    return [full for _, full in sorted(found, reverse=True)]


def newest_folder(lessons=()):
    """The newest folder (by the date its name ends with, then its name) whose lessons.csv has rows
    of every lesson in `lessons`: a partial run (scripts/gpu-suite.sh with LESSONS=...) is the
    newest source only for the lessons it ran."""
    found = folders_newest_first(lessons)
    if not found:
        want = f" with rows of lessons {', '.join(map(str, lessons))}" if lessons else ""
        raise SystemExit("results-tables: no results folder (NAME-YYYY-MM-DD/lessons.csv)"
                         f"{want} under docs/results/")
    return found[0]

