"""Rewrite the measured figures in the READMEs from archived GPU runs: the table of every region's
renderer, the rewriting of a file's regions, and the command line (scripts/results-tables.py calls
main())."""
import argparse
import difflib
import glob
import importlib
import os
import pkgutil
import re
import sys

from . import common, top
from .core import CLOSE, OPEN, RESULTS, ROOT, TOP_LESSONS, Archive, newest_folder

# Every lesson's module, scripts/results/lessonNN.py (NN two digits, as the lesson's folder: 01..09,
# 10), in lesson order: a new lesson's renderers join the table by their file alone.
LESSON_MODULES = tuple(
    importlib.import_module(f"{__package__}.{name}")
    for name in sorted(m.name for m in pkgutil.iter_modules([os.path.dirname(__file__)])
                       if re.fullmatch(r"lesson\d{2}", m.name)))

# The modules whose RENDERERS make up the table below.
MODULES = (top, common) + LESSON_MODULES


def _renderers():
    out = {}
    for mod in MODULES:
        for name, fn in mod.RENDERERS.items():
            if name in out:
                raise RuntimeError(f"region '{name}' has two renderers ({mod.__name__})")
            out[name] = fn
    return out


# NAME of `<!-- results:NAME -->` -> the function that writes the region: fn(archive, ctx) with
# ctx = {"lesson": the README's lesson number (0 for the top README), "path": the file}.
RENDERERS = _renderers()


def readmes():
    """Every file whose regions are written: the top README.md, then per lesson its README.md and
    its NOTES.md (the investigations moved out of the README), the two read alike: the same lesson
    number and folder (newest_folder of the lesson)."""
    out = [os.path.join(ROOT, "README.md")]
    for d in sorted(glob.glob(os.path.join(ROOT, "lessons", "*", ""))):
        out += [os.path.join(d, "README.md"), os.path.join(d, "NOTES.md")]
    return [p for p in out if os.path.exists(p)]


def regenerate(path, text, a, load=None, archive_for=None):
    """The file's text with every region rewritten; raises ValueError on broken markers. @p load
    gives the Archive of a folder a marker names (default: read it); @p archive_for(n) lesson n's
    Archive for a region that reads several lessons' runs (the headline; default: each lesson's
    newest folder)."""
    m = re.match(r"lessons/0*(\d+)_", os.path.relpath(path, ROOT))
    ctx = {"lesson": int(m.group(1)) if m else 0, "path": path, "archive_for": archive_for}
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


def readme_lessons(path):
    """The lessons a README's regions read: its own, or TOP_LESSONS for the top README."""
    m = re.match(r"lessons/0*(\d+)_", os.path.relpath(path, ROOT))
    return (int(m.group(1)),) if m else TOP_LESSONS


def main():
    ap = argparse.ArgumentParser(description="Rewrite the measured figures in the READMEs "
                                 "from archived GPU runs.")
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

        def archive_for(n):
            if args.folder:  # one folder for every README: the headline reads it for every lesson
                return a
            return top.headline_archive(n, load)
        try:
            new = regenerate(path, old, a, load, archive_for)
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
