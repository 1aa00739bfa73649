#!/usr/bin/env python3
"""Rewrite the measured figures in the READMEs from archived GPU runs.

    scripts/results-tables.py [FOLDER]           rewrite every results region in place
    scripts/results-tables.py --check [FOLDER]   compare instead; print a unified diff of any drift
                                                 and exit 1 (0 when every region is in sync)

FOLDER is one run's folder under docs/results/, as scripts/gpu-suite.sh writes it. Without it, each
README reads the newest folder (by the date its name ends with, then its name) that holds rows of
its lessons: a lesson README (and its NOTES.md) its own lesson's; the top README's headline a row
per lesson of lessons/, each from that lesson's newest folder that holds the row's figures (with
FOLDER, every row from FOLDER).
So a partial run (gpu-suite.sh with LESSONS=6) serves its lessons and leaves the others on the last
whole run.
Layout (docs/results/README.md describes it): lessons.csv, peers.csv, ncu.txt, gpu-suite.log,
nvidia-smi.txt, accuracy-lesson09.csv and memory-lesson09.csv (bench/lesson09_peers.py's other two
tables). A folder without lessons.csv is read only where a region names it (a transcript run: its
gpu-suite.log; programs' output, NAME-run.log; a bench's output, bench.log) and is never a
lesson's newest folder. A figure
whose file is missing is written as a placeholder that says which suite phase produces it.

A region is every line between two markers in README.md, lessons/*/README.md or lessons/*/NOTES.md
(a lesson's notes read as its README does: the same folder, the same lesson number):

    <!-- results:NAME -->
    ...generated...
    <!-- /results:NAME -->

NAME picks the function that writes it (RENDERERS below). The opening marker may name a folder of
docs/results/ after NAME (`<!-- results:NAME FOLDER -->`); that region then reads that folder.
Each region opens with a line naming the folder, device and date it comes from. Standard library
only: CI runs --check (ctest results-tables-in-sync).

The code is the package scripts/results/, one module per lesson over a shared core:

    core.py        Archive (one folder's files), the formatting helpers, the region markers and the
                   choice of folder (newest_folder)
    common.py      what every lesson shows alike: the `./run` transcript, the versions table
    lessonNN.py    lesson NN's renderers, each module's RENDERERS naming the regions it writes
                   (found by name: a lesson10.py joins without being listed anywhere)
    top.py         the top README's headline
    regions.py     the table of every region's renderer, the rewriting of a file, main()

This file is the command line, and holds every name of those modules as its own (scripts/plot-data.py
loads it and reads rt.Archive, rt.newest_folder, rt.L06_NAMES, ...).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from results import common, core, regions, top  # noqa: E402

# Every module's names as this module's own, later modules last (regions' RENDERERS is the table
# of every region; a lesson module's own RENDERERS is only its part). The lesson modules are every
# scripts/results/lessonNN.py, in lesson order (regions.LESSON_MODULES: 01..09, 10, ...).
for _mod in (core, common) + regions.LESSON_MODULES + (top, regions):
    globals().update({k: v for k, v in vars(_mod).items() if not k.startswith("__")})
    globals()[_mod.__name__.rsplit(".", 1)[-1]] = _mod  # results.lesson06 as lesson06
del _mod

main = regions.main

if __name__ == "__main__":
    sys.exit(main())
