#!/usr/bin/env python3
"""The README transcripts of `./run` agree with what the programs print now, where that does not
depend on the GPU.

    tests/test_transcripts.py SOURCE_DIR BUILD_DIR     check every transcript region
    tests/test_transcripts.py --self-test SOURCE_DIR BUILD_DIR
                                                       prove the check fails: fixtures made from a
                                                       real transcript with one fault each

A transcript region (`<!-- results:transcript -->` in lessons/*/README.md or NOTES.md, written by
scripts/results-tables.py) shows what `./run` printed in an archived GPU run. For each, the lesson's
program runs as a reader without a GPU runs it (`CUDA_VISIBLE_DEVICES=-1 BUILD_DIR/bin/lesson-N
ARGS`, ARGS the transcript's: its `lesson-N ARGS` block; a ring's rank count, which defaults to the
machine's GPUs, is passed as the transcript's `--ranks`), and these must agree:
  - the lines up to the `problem` line, that line included (the title and the shape);
  - the CPU part the transcript shows (the lines after `problem` up to `...` or the `device` line:
    CPU models, traffic counts, load-balance tables), as the first lines of what the program prints
    after `problem` before it says there is no GPU; a trailing parenthesis that names the GPU (where
    a figure came from: "this GPU's opt-in shared memory") and "NCCL is (not) in this build" are
    left out of the comparison, as they depend on the machine and the build;
  - the versions of the transcript's table, in order, against `lesson-N --help`'s list.
Lines after the device header (times, rates, errors) are never compared. Exit 0 when every
transcript agrees, 1 on any disagreement (one line each), 77 (ctest's SKIP_RETURN_CODE) when a
lesson's program is not built and nothing failed. Standard library only.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
OPEN = re.compile(r"^<!-- results:transcript(?: \S+)? -->$")
CLOSE = "<!-- /results:transcript -->"
# what depends on the machine or the build, not on the program: left out of the comparison
MASKS = [re.compile(r"\s*\([^()]*\bGPU\b[^()]*\)\s*$"),
         re.compile(r";\s*NCCL is (?:not )?in this build")]
ROW = re.compile(r"^\s*(\d+)\s+(.*?)(?:\s{2,}|$)")


def norm(line):
    for m in MASKS:
        line = m.sub("", line)
    return " ".join(line.split())


def transcripts(source_dir):
    """(path, lesson, args, lines) of every transcript region: its ```text block's lines."""
    out = []
    paths = sorted(glob.glob(os.path.join(source_dir, "lessons", "*", "README.md")) +
                   glob.glob(os.path.join(source_dir, "lessons", "*", "NOTES.md")))
    for path in paths:
        m = re.match(r"0*(\d+)_", os.path.basename(os.path.dirname(path)))
        if not m:
            continue
        lines = open(path, encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            if not OPEN.match(lines[i].strip()):
                i += 1
                continue
            j = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == CLOSE), len(lines))
            body = lines[i + 1:j]
            text = "\n".join(body)
            a = re.search(r"`lesson-\d+((?: [^`]*)?)` block", text)
            args = (a.group(1) if a else "").split()
            try:
                s = body.index("```text")
                e = body.index("```", s + 1)
                out.append((path, int(m.group(1)), args, body[s + 1:e], i + s + 2))
            except ValueError:
                pass  # a placeholder: the archive has no transcript
            i = j + 1
    return out


def run(prog, args):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="-1")
    p = subprocess.run([prog] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                       timeout=600, text=True)
    return p.returncode, p.stdout.split("\n")


def help_versions(prog):
    _, lines = run(prog, ["--help"])
    out, on = [], False
    for line in lines:
        if line.strip() == "versions:":
            on = True
            continue
        if on:
            m = re.match(r"^\s+(\d+)\s+(.+?)\s*$", line)
            if not m:
                break
            out.append((int(m.group(1)), m.group(2)))
    return out


def table_versions(lines):
    t = next((k for k, x in enumerate(lines) if re.match(r"\s*#\s+version\s", x)), None)
    out = []
    if t is None:
        return None
    for x in lines[t + 1:]:
        m = ROW.match(x)
        if not x.strip() or not m:
            break
        out.append((int(m.group(1)), m.group(2)))
    return out


def check_one(path, lesson, args, lines, build_dir, rel, at):
    """The disagreements of one transcript (a list of lines), or None when its program is not
    built."""
    prog = os.path.join(build_dir, "bin", f"lesson-{lesson}")
    if not os.access(prog, os.X_OK):
        return None
    where = f"{rel}:{at}"
    bad = []
    p = next((k for k, x in enumerate(lines) if x.startswith("problem ")), None)
    if p is None:
        return [f"{where}: the transcript has no `problem` line"]
    r = next((re.match(r"^ring: (\d+) ranks", x) for x in lines if x.startswith("ring: ")), None)
    if r and "--ranks" not in args:
        args = args + ["--ranks", r.group(1)]  # the default is the machine's GPU count
    rc, out = run(prog, args)
    shown = f"`CUDA_VISIBLE_DEVICES=-1 lesson-{lesson}{''.join(' ' + x for x in args)}`"
    if rc != 0:
        bad.append(f"{where}: {shown} exited {rc}")
    q = next((k for k, x in enumerate(out) if x.startswith("problem ")), None)
    if q is None:
        return bad + [f"{where}: {shown} printed no `problem` line"]
    # the title and the problem line
    for k in range(p + 1):
        got = out[q - p + k] if 0 <= q - p + k < len(out) else "(nothing)"
        if norm(lines[k]) != norm(got):
            bad.append(f"{where}: line {k + 1} of the transcript, \"{lines[k]}\", is now "
                       f"\"{got}\" ({shown})")
    # the CPU part: the transcript's lines after `problem`, up to `...` or `device`
    cpu = []
    for x in lines[p + 1:]:
        if x.strip() == "..." or re.match(r"device\s", x):
            break
        cpu.append(x)
    end = next((k for k in range(q + 1, len(out)) if out[k].startswith("no usable CUDA device")),
               len(out))
    now = out[q + 1:end]
    for k, x in enumerate(cpu):
        got = now[k] if k < len(now) else "(nothing: the CPU part ends before it)"
        if norm(x) != norm(got):
            bad.append(f"{where}: CPU part line {k + 1}, \"{x.strip()}\", is now \"{got.strip()}\" "
                       f"({shown})")
            break  # later lines shift with it
    # the versions
    mine, theirs = table_versions(lines), help_versions(prog)
    if mine is None:
        bad.append(f"{where}: the transcript has no table of versions")
    elif [(n, norm(s)) for n, s in mine] != [(n, norm(s)) for n, s in theirs]:
        bad.append(f"{where}: the transcript's versions ({', '.join(f'{n} {s}' for n, s in mine)}) "
                   f"are not `lesson-{lesson} --help`'s "
                   f"({', '.join(f'{n} {s}' for n, s in theirs)})")
    return bad


def check(source_dir, build_dir):
    """(disagreements, lessons not built, transcripts checked)."""
    bad, missing, n = [], set(), 0
    for path, lesson, args, lines, at in transcripts(source_dir):
        got = check_one(path, lesson, args, lines, build_dir, os.path.relpath(path, source_dir),
                        at)
        if got is None:
            missing.add(lesson)
            continue
        n += 1
        bad += got
    return bad, missing, n


def self_test(source_dir, build_dir):
    """Fixtures from the first transcript whose program is built and which agrees with it: as it
    is (must pass), then with one fault each (a version renamed, a CPU-part line changed, another
    problem line, a version left out): each must fail, naming the fault."""
    base = next((t for t in transcripts(source_dir)
                 if os.access(os.path.join(build_dir, "bin", f"lesson-{t[1]}"), os.X_OK) and
                 not check_one(t[0], t[1], t[2], t[3], build_dir, "", 0)), None)
    if base is None:
        print("self-test: skipped: no lesson with a transcript is built (or none agrees now)")
        return SKIP
    path, lesson, args, lines, _ = base
    folder = os.path.basename(os.path.dirname(path))
    p = next(k for k, x in enumerate(lines) if x.startswith("problem "))
    t = next(k for k, x in enumerate(lines) if re.match(r"\s*#\s+version\s", x))
    row = ROW.match(lines[t + 2])
    renamed = list(lines)
    renamed[t + 2] = lines[t + 2].replace(row.group(2), row.group(2) + "-renamed", 1)
    cpu = list(lines)
    k = next(k for k in range(p + 1, len(lines)) if lines[k].strip())
    cpu[k] = lines[k] + " (edited)"
    problem = list(lines)
    problem[p] = re.sub(r"seed \d+", "seed 99", lines[p])
    dropped = lines[:t + 2] + lines[t + 3:]
    cases = [("unchanged", lines, None),
             ("renamed version", renamed, "are not `lesson-"),
             ("changed CPU line", cpu, "CPU part line"),
             ("changed problem line", problem, f"line {p + 1} of the transcript"),
             ("version left out of the table", dropped, "are not `lesson-")]
    failures = []
    tmp = tempfile.mkdtemp(prefix="transcripts-")
    for name, body, want in cases:
        root = tempfile.mkdtemp(dir=tmp)
        os.makedirs(os.path.join(root, "lessons", folder))
        head = f"`./run` with no arguments (its `lesson-{lesson}{''.join(' ' + x for x in args)}` block)."
        with open(os.path.join(root, "lessons", folder, "README.md"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(["<!-- results:transcript -->", head, "", "```text"] + body +
                               ["```", CLOSE, ""]))
        bad, _, n = check(root, build_dir)
        if want is None:
            if n != 1 or bad:
                failures.append(f"{name}: expected no disagreement, got: {'; '.join(bad)}")
            else:
                print(f"self-test: {name}: agrees, as it should")
        elif n != 1 or not any(want in b for b in bad):
            failures.append(f"{name}: expected a line with '{want}', got: {'; '.join(bad) or 'nothing'}")
        else:
            print(f"self-test: {name}: fails as it should ({next(b for b in bad if want in b)})")
    shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print(f"self-test: FAILED: {f}")
    print(f"self-test: {'FAIL' if failures else 'every fixture of lesson ' + str(lesson) + ' failed as it should'}")
    return 1 if failures else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "--self-test":
        return self_test(argv[2], argv[3])
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    bad, missing, n = check(argv[1], argv[2])
    for line in bad:
        print(f"transcripts: {line}")
    if bad:
        print(f"transcripts: {len(bad)} disagreement(s) in {n} transcript(s): the program prints "
              "something else now; archive a new run (scripts/gpu-suite.sh) or mend the program")
        return 1
    if missing:
        print(f"transcripts: skipped: lesson(s) {', '.join(map(str, sorted(missing)))} not built "
              f"in {argv[2]} ({n} transcript(s) checked and in agreement)")
        return SKIP
    print(f"transcripts: every one of the {n} transcripts agrees with what its program prints now "
          "without a GPU")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
