#!/usr/bin/env bash
# Build, test and benchmark everything on a GPU machine, into one log.
#
#   scripts/gpu-suite.sh [PHASE ...]      phases: build test lessons sanitize bench ncu (default: all
#                                         but ncu)
#   OUT=dir   where the results folder goes (default ./gpu-out)
#   RUN=name  the results folder's name (default <device>-<UTC date>, e.g. h200-2026-11-23)
#   LESSONS="1 2"  which lessons to run (default: every lesson present); given, it also limits the
#                  sanitize phase to those lessons' GPU suites and the bench phase to their
#                  bench/lessonNN_peers.py (a partial run: name its folder apart, e.g.
#                  RUN=h200-l06-2026-11-23, so that it is not taken for a whole run)
#   SAN_TIMEOUT=300  seconds each compute-sanitizer run may take (phase sanitize: every GPU suite,
#                    sanitizer-sized with ATTN_TEST_SANITIZER=1, under memcheck, racecheck and
#                    synccheck)
#   SAN_TOOLS="racecheck"  the sanitizer tools of phase sanitize (default: memcheck racecheck
#                    synccheck), so that a long phase can be split over several calls
#   RUNS=gpu-runs-4gpu.txt  the file of extra runs read in each lesson's folder (default
#                    gpu-runs.txt; a lesson without that file runs its default shape alone)
#   BENCH_PROCS=5    phase bench: each peer script run as 5 processes, its figures each row's
#                    median process (bench/peers_median.py); every process's rows are kept beside
#                    peers.csv in peers-lessonNN-processes.csv (default 1: one process, as before)
#
# Writes one results folder, $OUT/$RUN/, laid out as docs/results/ keeps it (docs/results/README.md),
# so that it can be copied there as it is and read by scripts/results-tables.py:
#   gpu-suite.log   everything, every phase
#   nvidia-smi.txt  nvidia-smi -q, then nvcc --version
#   lessons.csv     phase lessons: every lesson run's table (the programs' --csv rows)
#   peers.csv       phase bench: every bench/lesson*_peers.py figure (columns: bench/peer_timing.py)
#   peers-lessonNN-processes.csv
#                   phase bench with BENCH_PROCS > 1: every process's rows of lesson NN, a first
#                   column `process` (peers.csv then holds each row's median process)
#   accuracy-lessonNN.csv, memory-lessonNN.csv
#                   phase bench: a peer script's other tables, where it writes them (lesson 09's
#                   gradient errors and peak memory, bench/lesson09_peers.py), copied as they are
#   ncu.txt         phase ncu: per line of lessons/*/ncu-runs.txt a header "#### ncu FILE:LINE: ARGS"
#                   and Nsight Compute's --csv --print-units base output of that line
# Each lesson may list extra runs in lessons/NN_*/gpu-runs.txt, one line of arguments per run; a line
# may repeat a shape, and the repeats are the archive's measure of run-to-run noise.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
BUILD=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
phases=${*:-build test lessons sanitize bench}
status=0

# The folder's name: the GPU's model in lower case ("NVIDIA H200" -> h200) and the UTC date.
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
slug=$(printf '%s' "${gpu_name:-no-gpu}" | sed -E 's/^NVIDIA //I' | tr '[:upper:]' '[:lower:]' |
       sed -E 's/^([a-z][0-9]+[a-z]?)([ -].*)?$/\1/; s/[^a-z0-9]+/-/g; s/^-+|-+$//g')
RUN=${RUN:-${slug:-gpu}-$(date -u +%F)}
DEST=$OUT/$RUN
mkdir -p "$DEST"
LOG=$DEST/gpu-suite.log
CSV=$DEST/lessons.csv
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

say() { printf '\n==== %s ====\n' "$*" | tee -a "$LOG"; }
run() { echo "\$ $*" >>"$LOG"; "$@" >>"$LOG" 2>&1; local rc=$?; [ $rc -eq 0 ] || echo "  (exit $rc) $*" | tee -a "$LOG"; return $rc; }
has() { case " $phases " in *" $1 "*) return 0;; esac; return 1; }

: >"$LOG"
say "machine $(date -u +%Y-%m-%dT%H:%MZ) -> $DEST"
run nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
run nvcc --version
run cmake --version
{ nvidia-smi -q 2>&1; printf '\n==== nvcc --version ====\n'; nvcc --version 2>&1; } >"$DEST/nvidia-smi.txt"

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

# The lessons present: folders lessons/NN_name/ (NN two digits: 01..09, 10) with a CMakeLists.txt
# (one without is not written yet), as numbers without the leading zero, as the programs are named.
present=$(ls -d lessons/[0-9][0-9]_*/ 2>/dev/null | while read -r d; do
            [ -f "${d}CMakeLists.txt" ] && echo "$((10#$(basename "$d" | cut -c1-2)))"; done)
only=${LESSONS:-}
LESSONS=${LESSONS:-$present}
# picked N: 0 when LESSONS was given and does not name lesson N
picked() { [ -z "$only" ] && return 0; case " $only " in *" $((10#$1)) "*) return 0;; esac; return 1; }

if has lessons; then
  : >"$CSV"
  for n in $LESSONS; do
    n=$((10#$n)) # LESSONS="06 10" as well as "6 10"
    bin=$BUILD/bin/lesson-$n
    [ -x "$bin" ] || { echo "lesson-$n: not built" | tee -a "$LOG"; status=1; continue; }
    dir=$(ls -d "lessons/$(printf '%02d' "$n")"_*/ | head -n 1)
    runs=("")
    if [ -f "$dir/${RUNS:-gpu-runs.txt}" ]; then
      while IFS= read -r line; do
        case "$line" in ''|'#'*) continue;; esac
        runs+=("$line")
      done <"$dir/${RUNS:-gpu-runs.txt}"
    fi
    for args in "${runs[@]}"; do
      say "lesson-$n $args"
      # shellcheck disable=SC2086
      "$bin" $args --csv "$TMP/one.csv" 2>&1 | tee -a "$LOG" | tail -30
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      if [ -f "$TMP/one.csv" ]; then
        if [ -s "$CSV" ]; then tail -n +2 "$TMP/one.csv" >>"$CSV"; else cat "$TMP/one.csv" >>"$CSV"; fi
        rm -f "$TMP/one.csv"
      fi
    done
  done
fi

# Each GPU test suite under memcheck, racecheck and synccheck, sanitizer-sized: racecheck tracks
# every shared-memory access and memcheck every load and store, so with ATTN_TEST_SANITIZER=1
# (tests/attn_test.h) a suite keeps every awkward case on small shapes and leaves out, with a line
# each, the tests that exist only for their size. The line after each run gives its error count and
# wall time; a run past SAN_TIMEOUT is killed (exit 124) and fails the phase.
if has sanitize; then
  san() { # tool test-binary
    local tool=$1 bin=$2 name from t0 rc secs errors
    name=$(basename "$bin")
    say "compute-sanitizer --tool $tool $name"
    from=$(wc -l <"$LOG")
    t0=$SECONDS
    ATTN_TEST_SANITIZER=1 timeout "${SAN_TIMEOUT:-300}" \
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin" >>"$LOG" 2>&1
    rc=$?
    secs=$((SECONDS - t0))
    # "ERROR SUMMARY: 0 errors" (memcheck, synccheck), "RACECHECK SUMMARY: ... (0 errors, ...)"
    errors=$(tail -n +"$((from + 1))" "$LOG" | grep 'SUMMARY' | tail -n 1 |
             grep -oE '[0-9]+ errors?' | head -n 1)
    echo "  $tool $name: ${errors:-no summary}, $secs s" | tee -a "$LOG"
    [ $rc -eq 0 ] || { echo "  $tool on $name: exit $rc" | tee -a "$LOG"; status=1; }
  }
  for t in "$BUILD"/bin/test_*gpu*; do
    [ -x "$t" ] || continue
    if [[ "$(basename "$t")" =~ ^test_lesson0*([0-9]+)_gpu$ ]]; then
      picked "${BASH_REMATCH[1]}" || continue
    elif [ -n "$only" ]; then
      continue # a partial run sanitizes only its lessons' suites
    fi
    for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do san "$tool" "$t"; done
  done
fi

if has bench; then
  export ATTN_LIB=$PWD/$BUILD/lib/libattn_lessons.so # the peer scripts call the lessons through it
  mkdir -p "$TMP/peers"
  rm -f "$DEST/peers.csv" "$DEST"/accuracy-lesson*.csv "$DEST"/memory-lesson*.csv
  procs=${BENCH_PROCS:-1}
  for py in bench/lesson*_peers.py; do
    [ -f "$py" ] || continue
    [[ "$py" =~ lesson([0-9]+)_peers ]] && { picked "${BASH_REMATCH[1]}" || continue; }
    if [ "$procs" -le 1 ]; then
      say "python3 $py"
      PYTHONUNBUFFERED=1 PEERS_OUT="$TMP/peers" python3 "$py" 2>&1 | tee -a "$LOG" | tail -20
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      continue
    fi
    # BENCH_PROCS=N: the script N times, a process each, then each row's median process
    # (bench/peers_median.py says why and how); the other tables come from the first process.
    for p in $(seq 1 "$procs"); do
      say "python3 $py (process $p of $procs)"
      PYTHONUNBUFFERED=1 PEERS_OUT="$TMP/peers-p$p" python3 "$py" 2>&1 | tee -a "$LOG" | tail -20
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
    for f in "$TMP"/peers-p1/peers-lesson*.csv; do
      [ -f "$f" ] || continue
      name=$(basename "$f")
      inputs=()
      for p in $(seq 1 "$procs"); do [ -f "$TMP/peers-p$p/$name" ] && inputs+=("$TMP/peers-p$p/$name"); done
      mkdir -p "$TMP/peers"
      run python3 bench/peers_median.py "$TMP/peers/$name" "${inputs[@]}" \
        --all "$DEST/${name%.csv}-processes.csv" || status=1
    done
    for f in "$TMP"/peers-p1/accuracy-lesson*.csv "$TMP"/peers-p1/memory-lesson*.csv; do
      [ -f "$f" ] && { mkdir -p "$TMP/peers"; cp "$f" "$TMP/peers/"; }
    done
  done
  # One peers.csv: the scripts write the same columns, so the header is kept once.
  for f in "$TMP"/peers/peers-lesson*.csv; do
    [ -f "$f" ] || continue
    if [ -s "$DEST/peers.csv" ]; then tail -n +2 "$f" >>"$DEST/peers.csv"; else cat "$f" >"$DEST/peers.csv"; fi
  done
  # The other tables a peer script writes beside its timings, one file per lesson: copied as they are.
  for f in "$TMP"/peers/accuracy-lesson*.csv "$TMP"/peers/memory-lesson*.csv; do
    [ -f "$f" ] || continue
    cp "$f" "$DEST/" || status=1
  done
fi

if has ncu; then
  rm -f "$DEST/ncu.txt"
  for f in lessons/*/ncu-runs.txt; do
    [ -f "$f" ] || continue
    lineno=0
    while IFS= read -r line; do
      lineno=$((lineno + 1))
      case "$line" in ''|'#'*) continue;; esac
      say "ncu $line"
      # The counters go to their own file as CSV (base units: bytes, nanoseconds); the program's
      # output stays in the log.
      rm -f "$TMP/ncu.csv"
      # shellcheck disable=SC2086
      (cd "$BUILD/bin" && timeout 600 ncu --clock-control none --csv --print-units base \
         --log-file "$TMP/ncu.csv" $line) 2>&1 | tee -a "$LOG" | tail -30
      { printf '#### ncu %s:%d: %s\n' "$f" "$lineno" "$line"
        [ -f "$TMP/ncu.csv" ] && cat "$TMP/ncu.csv"
        printf '\n'; } | tee -a "$LOG" >>"$DEST/ncu.txt"
    done <"$f"
  done
fi

say "gpu-suite: $([ $status -eq 0 ] && echo PASS || echo FAIL); results in $DEST"
exit $status
