#!/usr/bin/env python3
"""Each lesson README's versions table names exactly the versions its program prints, every
version file opens with the course's header template, and the top README's table of lessons gives
each lesson's versions up to its last version file.

    tests/test_readme_versions.py SOURCE_DIR BUILD_DIR

The program's list is what `lesson-N --help` prints under "versions:". The README's table is the
first markdown table whose first column is `#` and which has a `version` or `name` column; a `#`
cell may be a range (`1-4`) whose name cell lists that many names. In a name cell, backticked
words ending in `.cu` are file names and are ignored; the other backticked words are the names, or,
when there are none, the cell's plain text is.
"""
import glob
import os
import re
import subprocess
import sys


def cells(line):
    parts = re.split(r"(?<!\\)\|", line.strip())
    return [p.strip().replace("\\|", "|") for p in parts[1:-1]]


def readme_versions(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            continue
        head = [c.lower() for c in cells(line)]
        if not head or head[0] != "#":
            continue
        col = next((k for k, c in enumerate(head) if c in ("version", "name")), None)
        if col is None:
            continue
        found = {}
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            c = cells(row)
            nums = c[0]
            m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", nums)
            if not m:
                raise SystemExit(f"{path}: row '{row}': '#' is not a number or a range")
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            ticks = [t for t in re.findall(r"`([^`]+)`", c[col]) if not re.search(r"\.cuh?$", t)]
            if not ticks:
                plain = re.sub(r"`[^`]+\.cuh?`", "", c[col]).strip()
                ticks = [plain] if plain else []
            if len(ticks) != hi - lo + 1:
                raise SystemExit(f"{path}: row '{row}' covers {hi - lo + 1} versions "
                                 f"but names {len(ticks)}")
            for n, name in zip(range(lo, hi + 1), ticks):
                found[n] = name
        return found
    raise SystemExit(f"{path}: no versions table ('| # | ... version or name ... |')")


def program_versions(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, check=True).stdout
    listing = out.split("\nversions:\n", 1)[1].split("\n\n", 1)[0]
    found = {}
    for line in listing.splitlines():
        m = re.fullmatch(r"\s*(\d+)\s+(.+?)\s*", line)
        if m:
            found[int(m.group(1))] = m.group(2)
    return found


HEADINGS = ["What changed:", "Why:", "Prediction:", "Measured:", "Run:"]


def header_problems(folder):
    """Version files (vN_*.cu, and lesson 01's probe_*.cu) whose opening comment lacks a heading of
    the template or has them out of order."""
    bad = []
    files = sorted(glob.glob(os.path.join(folder, "v[0-9]*_*.cu")) +
                   glob.glob(os.path.join(folder, "probe_*.cu")))
    for f in files:
        text = open(f, encoding="utf-8").read()
        head = text[:text.find("*/") + 2] if "*/" in text else ""
        at = [head.find(h) for h in HEADINGS]
        if min(at) < 0 or at != sorted(at):
            missing = [h for h, a in zip(HEADINGS, at) if a < 0]
            bad.append(f"{os.path.basename(f)}: " +
                       (f"lacks {', '.join(missing)}" if missing else "headings out of order"))
    return bad, len(files)


def front_page_problems(src):
    """The top README's table of lessons: where a lesson's Versions cell gives a range (`1-7`), its
    largest version number must be the number of version files (vN_*.cu) in the lesson's folder,
    so that the front page cannot fall behind a lesson that gains a version. Returns (checked,
    problems)."""
    checked, bad = 0, []
    for line in open(os.path.join(src, "README.md"), encoding="utf-8").read().splitlines():
        m = re.match(r"\|\s*(\d\d)\s*\|\s*\[[^]]*\]\((lessons/\d\d_\w+)/?\)\s*\|", line)
        if not m:
            continue
        cell = cells(line)[-1]
        if not re.search(r"\b1-\d+\b", cell):
            continue  # a count in words (lesson 01's probes) or a lesson in progress
        most = max(int(x) for x in re.findall(r"\b\d+\b", cell))
        files = glob.glob(os.path.join(src, m.group(2), "v[0-9]*_*.cu"))
        checked += 1
        if most != len(files):
            bad.append(f"lesson {int(m.group(1))}: the front page's versions go to {most}, "
                       f"{m.group(2)}/ has {len(files)} version files")
    return checked, bad


def main():
    src, build = sys.argv[1], sys.argv[2]
    bad = 0
    checked, problems = front_page_problems(src)
    for p in problems:
        print(f"FAIL front page: {p}")
    bad += len(problems)
    if not problems:
        print(f"ok   front page: {checked} lessons' version ranges match their version files")
    # Lessons this build leaves out on purpose (lesson 05 without sm_90a): their headers are still
    # checked, their program is not there to ask.
    left_out = {}
    try:
        with open(os.path.join(build, "lessons-left-out.txt"), encoding="utf-8") as fh:
            for line in fh:
                n, _, why = line.rstrip("\n").partition("\t")
                if n.isdigit():
                    left_out[int(n)] = why
    except FileNotFoundError:
        pass
    # Lesson N is the folder lessons/NN_name/ (NN two digits: 01..09, 10); one without a
    # CMakeLists.txt is not written yet, and not checked.
    lessons = sorted(glob.glob(os.path.join(src, "lessons", "[0-9][0-9]_*")))
    for folder in lessons:
        n = int(os.path.basename(folder)[:2])
        if not os.path.isfile(os.path.join(folder, "CMakeLists.txt")):
            print(f"skip lesson {n}: {os.path.relpath(folder, src)}/ has no CMakeLists.txt "
                  "(not written yet)")
            continue
        binary = os.path.join(build, "bin", f"lesson-{n}")
        if not os.path.exists(binary) and n not in left_out:
            print(f"FAIL lesson {n}: {binary} is not built")
            bad += 1
            continue
        problems, count = header_problems(folder)
        if problems:
            bad += 1
            print(f"FAIL lesson {n}: version file headers ({' / '.join(HEADINGS)}):")
            for p in problems:
                print(f"       {p}")
        else:
            print(f"ok   lesson {n}: {count} version files open with the header template")
        if n in left_out:
            print(f"skip lesson {n}: README's versions not compared: the lesson is not in this "
                  f"build ({left_out[n]})")
            continue
        readme = os.path.join(folder, "README.md")
        if not os.path.isfile(readme):
            print(f"FAIL lesson {n}: {os.path.relpath(readme, src)} is missing (its versions "
                  "table names the program's versions)")
            bad += 1
            continue
        want = program_versions(binary)
        have = readme_versions(readme)
        if want == have:
            print(f"ok   lesson {n}: README names the program's {len(want)} versions")
            continue
        bad += 1
        print(f"FAIL lesson {n}: README and program disagree")
        for k in sorted(set(want) | set(have)):
            if want.get(k) != have.get(k):
                print(f"       version {k}: program '{want.get(k)}', README '{have.get(k)}'")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
