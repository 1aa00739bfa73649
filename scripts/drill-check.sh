#!/usr/bin/env bash
# Every drill in drills/ ships with empty bodies; its checklist must FAIL against it. This proves
# each checklist test can fail. (Run on an untouched checkout: a reader's filled-in drill passes.)
set -u
build=${1:-build}
jobs=${2:-2}
drills=$(ls drills/[0-9][0-9]_*.c 2>/dev/null | sed -E 's#drills/0?([0-9]+)_.*#\1#' | sort -un)
if [ -z "$drills" ]; then
  echo "drill-check: no drills yet"
  exit 0
fi
bad=0
for n in $drills; do
  cmake --build "$build" --target drill-$n -j "$jobs" >/dev/null || { echo "drill-$n: does not build"; bad=1; continue; }
  case "$build" in /*) bin=$build/bin;; *) bin=./$build/bin;; esac
  if "$bin/drill-$n" >/dev/null 2>&1; then
    echo "drill-$n: the untouched stub PASSES its checklist: the checklist cannot fail"
    bad=1
  else
    echo "drill-$n: stub fails its checklist, as it must"
  fi
done
exit $bad
