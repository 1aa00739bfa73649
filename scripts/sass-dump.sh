#!/usr/bin/env bash
# The SASS of a program, as `cuobjdump --dump-sass PROGRAM` prints it, kept beside the program
# (PROGRAM.sass) and printed from there while it is newer than the program:
#
#   scripts/sass-dump.sh PROGRAM
#
# The SASS checks (check-sass.sh, check-wait-placement.sh, check-turn-placement.sh,
# check-warpsync.sh) run several
# times on each lesson's program, and dumping a program of every head dimension's kernels takes
# cuobjdump most of a minute; the first check of a build pays it, the others read the file.
set -u
prog=$1 cache=$1.sass
if [ -s "$cache" ] && [ "$cache" -nt "$prog" ]; then
  cat "$cache"
  exit 0
fi
tmp=$cache.$$
cuobjdump --dump-sass "$prog" > "$tmp" || { rm -f "$tmp"; exit 1; }
mv -f "$tmp" "$cache" 2>/dev/null || { cat "$tmp"; rm -f "$tmp"; exit 0; }
cat "$cache"
