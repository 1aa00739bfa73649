#!/usr/bin/env bash
# Build, test and benchmark everything on a GPU machine, into one log.
#
#   scripts/gpu-suite.sh [PHASE ...]      phases: build test lessons sanitize bench ncu (default: all
#                                         but ncu)
#   OUT=dir   where the log and results go (default ./gpu-out)
#   LESSONS="1 2"  which lessons to run (default: every lesson present)
#   SAN_TIMEOUT=300  seconds each compute-sanitizer run may take
#
# Writes $OUT/gpu-suite.log (everything) and $OUT/results.csv (every lesson run's table).
# Each lesson may list extra runs in lessons/NN_*/gpu-runs.txt, one line of arguments per run.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/gpu-suite.log
CSV=$OUT/results.csv
BUILD=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
phases=${*:-build test lessons sanitize bench}
status=0

say() { printf '\n==== %s ====\n' "$*" | tee -a "$LOG"; }
run() { echo "\$ $*" >>"$LOG"; "$@" >>"$LOG" 2>&1; local rc=$?; [ $rc -eq 0 ] || echo "  (exit $rc) $*" | tee -a "$LOG"; return $rc; }
has() { case " $phases " in *" $1 "*) return 0;; esac; return 1; }

: >"$LOG"
say "machine $(date -u +%Y-%m-%dT%H:%MZ)"
run nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
run nvcc --version
run cmake --version

# Check from the Debian packages carried in .carry/ (the GPU machine has no package manager).
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

if has build; then
  say "build"
  run cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release || status=1
  run cmake --build "$BUILD" -j "$JOBS" || { status=1; tail -40 "$LOG"; }
fi

if has test; then
  say "ctest"
  ctest --test-dir "$BUILD" --output-on-failure 2>&1 | tee -a "$LOG" | tail -25
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

present=$(ls -d lessons/[0-9][0-9]_*/ 2>/dev/null | sed -E 's#lessons/0?([0-9]+)_.*#\1#')
LESSONS=${LESSONS:-$present}

if has lessons; then
  : >"$CSV"
  for n in $LESSONS; do
    bin=$BUILD/bin/lesson-$n
    [ -x "$bin" ] || { echo "lesson-$n: not built" | tee -a "$LOG"; status=1; continue; }
    dir=$(ls -d lessons/0${n}_*/ | head -n 1)
    runs=("")
    if [ -f "$dir/gpu-runs.txt" ]; then
      while IFS= read -r line; do
        case "$line" in ''|'#'*) continue;; esac
        runs+=("$line")
      done <"$dir/gpu-runs.txt"
    fi
    for args in "${runs[@]}"; do
      say "lesson-$n $args"
      # shellcheck disable=SC2086
      "$bin" $args --csv "$OUT/one.csv" 2>&1 | tee -a "$LOG" | tail -30
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      if [ -f "$OUT/one.csv" ]; then
        if [ -s "$CSV" ]; then tail -n +2 "$OUT/one.csv" >>"$CSV"; else cat "$OUT/one.csv" >>"$CSV"; fi
        rm -f "$OUT/one.csv"
      fi
    done
  done
fi

if has sanitize; then
  for t in "$BUILD"/bin/test_*gpu*; do
    [ -x "$t" ] || continue
    for tool in memcheck racecheck synccheck; do
      say "compute-sanitizer --tool $tool $(basename "$t")"
      timeout "${SAN_TIMEOUT:-300}" compute-sanitizer --tool "$tool" --error-exitcode 99 "$t" >>"$LOG" 2>&1
      rc=$?
      tail -n 2 "$LOG"
      [ $rc -eq 0 ] || { echo "  $tool on $(basename "$t"): exit $rc" | tee -a "$LOG"; status=1; }
    done
  done
fi

if has bench; then
  export ATTN_LIB=$PWD/$BUILD/lib/libattn_lessons.so # the peer scripts call the lessons through it
  for py in bench/lesson*_peers.py; do
    [ -f "$py" ] || continue
    say "python3 $py"
    PYTHONUNBUFFERED=1 python3 "$py" 2>&1 | tee -a "$LOG" | tail -20
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
fi

if has ncu; then
  for f in lessons/*/ncu-runs.txt; do
    [ -f "$f" ] || continue
    while IFS= read -r line; do
      case "$line" in ''|'#'*) continue;; esac
      say "ncu $line"
      # shellcheck disable=SC2086
      (cd "$BUILD/bin" && timeout 600 ncu --clock-control none $line) 2>&1 | tee -a "$LOG" | tail -30
    done <"$f"
  done
fi

say "gpu-suite: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
