#!/usr/bin/env python3
"""The top README covers exactly the lessons present in lessons/.

    tests/test_lesson_map.py SOURCE_DIR     check SOURCE_DIR/README.md against SOURCE_DIR/lessons/
    tests/test_lesson_map.py --self-test    prove the check fails: run it on fixtures with a fault
                                            each (a lesson missing from the map or the headline, a
                                            row for a lesson that is not there, a count in words
                                            that disagrees), and on a clean fixture that passes

A lesson is a folder lessons/NN_name/ with a CMakeLists.txt. The README must have:
  - under "## The lessons", a table with one row `| NN | [name](lessons/NN_name/) | ...` per lesson,
    its link naming that lesson's folder;
  - in the region `<!-- results:headline -->` (scripts/results-tables.py), one row `| NN | ...` per
    lesson;
  - in its first paragraph (the lines after the title, up to the first blank line), no count of
    lessons that disagrees: "Seven lessons" (one..twenty, or digits, a word or two before
    "lessons") when there are nine fails.
Each fault prints one line naming the lesson or the words; exit 1 on any. Standard library only.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen", "twenty"]
COUNT = re.compile(r"\b(" + "|".join(WORDS[1:]) + r"|\d+)\s+(?:[\w-]+\s+){0,2}?lessons\b", re.I)
ROW = re.compile(r"^\|\s*(\d{2})\s*\|(.*)$")
LINK = re.compile(r"\]\((?:\./)?lessons/([^/)]+)/?\)")


def lessons_present(root):
    base = os.path.join(root, "lessons")
    out = {}
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        m = re.match(r"^(\d{2})_\w+$", d)
        if m and os.path.isfile(os.path.join(base, d, "CMakeLists.txt")):
            out[int(m.group(1))] = d
    return out


def section(lines, heading):
    """The lines under a markdown heading, up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    for i, line in enumerate(lines):
        if line.strip() == heading:
            out = []
            for x in lines[i + 1:]:
                m = re.match(r"^(#+)\s", x)
                if m and len(m.group(1)) <= level:
                    break
                out.append(x)
            return out
    return None


def first_table(lines):
    out, seen = [], False
    for x in lines:
        if x.startswith("|"):
            out.append(x)
            seen = True
        elif seen:
            break
    return out


def region(lines, name):
    try:
        i = next(k for k, x in enumerate(lines) if x.strip().startswith(f"<!-- results:{name}"))
        j = next(k for k in range(i + 1, len(lines)) if lines[k].strip() == f"<!-- /results:{name} -->")
    except StopIteration:
        return None
    return lines[i + 1:j]


def first_paragraph(lines):
    i = next((k for k, x in enumerate(lines) if x.startswith("# ")), -1) + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    out = []
    while i < len(lines) and lines[i].strip():
        out.append(lines[i])
        i += 1
    return " ".join(out)


def check(root):
    """The faults of root's README.md against root/lessons/, one line each."""
    have = lessons_present(root)
    bad = []
    path = os.path.join(root, "README.md")
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    if not have:
        bad.append("lessons/: no lesson folder (NN_name/ with a CMakeLists.txt)")

    # the lesson map
    sec = section(lines, "## The lessons")
    if sec is None:
        bad.append("README.md: no \"## The lessons\" section (the lesson map)")
    else:
        rows = {}
        for x in first_table(sec):
            m = ROW.match(x)
            if not m:
                continue
            n = int(m.group(1))
            if n in rows:
                bad.append(f"README.md lesson map: lesson {n:02d} has two rows")
            rows[n] = m.group(2)
        for n, d in sorted(have.items()):
            if n not in rows:
                bad.append(f"README.md lesson map: no row for lesson {n:02d} (lessons/{d}/)")
                continue
            links = LINK.findall(rows[n])
            if d not in links:
                bad.append(f"README.md lesson map: the row of lesson {n:02d} does not link "
                           f"lessons/{d}/ (links: {', '.join(links) or 'none'})")
        for n in sorted(set(rows) - set(have)):
            bad.append(f"README.md lesson map: a row for lesson {n:02d}, which is not in lessons/ "
                       "(no NN_name/ folder with a CMakeLists.txt)")

    # the headline region
    head = region(lines, "headline")
    if head is None:
        bad.append("README.md: no <!-- results:headline --> region")
    else:
        rows = [int(m.group(1)) for m in (ROW.match(x) for x in head) if m]
        for n, d in sorted(have.items()):
            if n not in rows:
                bad.append(f"README.md headline region: no row for lesson {n:02d} (lessons/{d}/): "
                           "run scripts/results-tables.py")
        for n in sorted(set(rows) - set(have)):
            bad.append(f"README.md headline region: a row for lesson {n:02d}, which is not in "
                       "lessons/: run scripts/results-tables.py")

    # counts in words in the first paragraph
    for m in COUNT.finditer(first_paragraph(lines)):
        w = m.group(1).lower()
        k = int(w) if w.isdigit() else WORDS.index(w)
        if k != len(have):
            bad.append(f"README.md first paragraph: \"{m.group(0)}\" but lessons/ holds "
                       f"{len(have)} lessons")
    return bad


# ---- The self-test: fixtures with one fault each ----------------------------------------------

FIXTURE = """# A course

Three lessons in C that
rebuild something.

## The lessons

| # | Lesson | What it teaches |
|---|---|---|
| 01 | [first](lessons/01_first/) | a |
| 02 | [second](lessons/02_second/) | b |
| 03 | [third](lessons/03_third/) | c |

<!-- results:headline -->
| lesson | run | headline |
|---|---|---|
| 01 | `x` | a |
| 02 | `x` | b |
| 03 | - | no archived run yet |
<!-- /results:headline -->
"""


def make_fixture(tmp, readme=FIXTURE, lessons=("01_first", "02_second", "03_third")):
    root = tempfile.mkdtemp(dir=tmp)
    for d in lessons:
        os.makedirs(os.path.join(root, "lessons", d))
        open(os.path.join(root, "lessons", d, "CMakeLists.txt"), "w").close()
    with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as fh:
        fh.write(readme)
    return root


def self_test(source_dir=None):
    """Each fixture must give exactly the fault it was made with (a line holding the expected
    words); the clean one none. With @p source_dir, also a copy of the real README with one lesson
    map row and one headline row removed must name that lesson."""
    tmp = tempfile.mkdtemp(prefix="lesson-map-")
    failures = []
    drop = lambda text, line: text.replace(line + "\n", "")  # noqa: E731
    cases = [
        ("clean fixture", make_fixture(tmp), None),
        ("map row removed", make_fixture(tmp, drop(FIXTURE, "| 02 | [second](lessons/02_second/) | b |")),
         "lesson map: no row for lesson 02"),
        ("headline row removed", make_fixture(tmp, drop(FIXTURE, "| 03 | - | no archived run yet |")),
         "headline region: no row for lesson 03"),
        ("lesson folder removed", make_fixture(tmp, lessons=("01_first", "02_second")),
         "a row for lesson 03, which is not in lessons/"),
        ("a lesson without a CMakeLists.txt", None, "a row for lesson 03, which is not in lessons/"),
        ("link to another folder", make_fixture(tmp, FIXTURE.replace("(lessons/01_first/)",
                                                                     "(lessons/01_old/)")),
         "the row of lesson 01 does not link lessons/01_first/"),
        ("count in words", make_fixture(tmp, lessons=("01_first", "02_second", "03_third",
                                                      "04_fourth")),
         "\"Three lessons\" but lessons/ holds 4 lessons"),
    ]
    # a lesson folder without a CMakeLists.txt is no lesson
    root = make_fixture(tmp)
    os.remove(os.path.join(root, "lessons", "03_third", "CMakeLists.txt"))
    cases[4] = (cases[4][0], root, cases[4][2])
    for name, root, want in cases:
        got = check(root)
        if want is None and got:
            failures.append(f"{name}: expected no fault, got: {'; '.join(got)}")
        elif want is not None and not any(want in g for g in got):
            failures.append(f"{name}: expected a line with '{want}', got: "
                            f"{'; '.join(got) or 'nothing'}")
        else:
            print(f"self-test: {name}: " + ("passes" if want is None else f"fails as it should "
                                            f"({next(g for g in got if want in g)})"))
    if source_dir:
        have = lessons_present(source_dir)
        n = max(have) if have else None
        if n:
            root = tempfile.mkdtemp(dir=tmp)
            os.makedirs(os.path.join(root, "lessons"))
            for d in have.values():
                os.makedirs(os.path.join(root, "lessons", d))
                open(os.path.join(root, "lessons", d, "CMakeLists.txt"), "w").close()
            with open(os.path.join(source_dir, "README.md"), encoding="utf-8") as fh:
                text = fh.read()
            text = "\n".join(x for x in text.split("\n") if not ROW.match(x) or
                             int(ROW.match(x).group(1)) != n)
            with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as fh:
                fh.write(text)
            got = check(root)
            for want in (f"lesson map: no row for lesson {n:02d}",
                         f"headline region: no row for lesson {n:02d}"):
                if not any(want in g for g in got):
                    failures.append(f"the real README without lesson {n:02d}'s rows: expected "
                                    f"'{want}', got: {'; '.join(got) or 'nothing'}")
                else:
                    print(f"self-test: the real README without lesson {n:02d}'s rows fails as it "
                          f"should ({want})")
    # the command line itself exits 1 on a fault
    rc = subprocess.run([sys.executable, os.path.abspath(__file__), cases[1][1]],
                        stdout=subprocess.DEVNULL).returncode
    if rc != 1:
        failures.append(f"the command line on a faulty fixture exited {rc}, not 1")
    shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print(f"self-test: FAILED: {f}")
    print("self-test: " + ("FAIL" if failures else "every fixture gave the fault it was made with"))
    return 1 if failures else 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "--self-test":
        return self_test(argv[2] if len(argv) > 2 else None)
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    bad = check(argv[1])
    for line in bad:
        print(f"lesson-map: {line}")
    if bad:
        return 1
    print(f"lesson-map: README.md's lesson map and headline cover exactly the "
          f"{len(lessons_present(argv[1]))} lessons of lessons/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
