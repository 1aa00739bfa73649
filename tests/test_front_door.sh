#!/usr/bin/env bash
# What a newcomer meets first, checked end to end: the Makefile's messages, the configure-time
# architecture check, and how the programs fail when output cannot be written.
#
#   tests/test_front_door.sh make|arch|output SOURCE_DIR BUILD_DIR
#
# Each check prints "ok ..." or "FAIL ..."; the exit code is the number of failures (capped at 1).
set -u
what=$1
src=$(cd "$2" && pwd)
build=$(cd "$3" && pwd)
fails=0

ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# expect RC PATTERN command...: the command exits RC and its output matches PATTERN (extended regex).
expect() {
  local want_rc=$1 pattern=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -eq "$want_rc" ] && grep -Eq -- "$pattern" <<<"$out"; then
    ok "$* -> exit $rc, says /$pattern/"
  else
    bad "$* -> exit $rc (want $want_rc), output:"
    printf '%s\n' "$out" | sed 's/^/       /' | tail -n 12
  fi
}

case "$what" in
  make)
    cd "$src" || exit 1
    export BUILD_DIR=$build
    last=$(sed -n 's/^LAST_LESSON := //p' Makefile)
    # Lesson N's folder is lessons/NN_name/, NN two digits (01..09, 10, ...); one without a
    # CMakeLists.txt is not written yet.
    absent="" nofolder=""
    for n in $(seq 1 "$last"); do
      dir=$(ls -d "lessons/$(printf '%02d' "$n")"_*/ 2>/dev/null | head -n 1)
      if [ -z "$dir" ]; then absent=$n nofolder=1; break; fi
      [ -f "${dir}CMakeLists.txt" ] || { absent=$n; break; }
    done
    if [ -n "$absent" ]; then
      expect 2 "^lesson $absent is not written yet; present: .*01_memory_hierarchy" \
        make -s --no-print-directory "lesson-$absent"
      if [ -n "$nofolder" ]; then
        expect 2 "^lesson $absent is not written yet" make -s --no-print-directory "diff-$absent" B=2
      fi
    fi
    expect 2 "N is a lesson number, 1\.\.$last; got '0'" make -s --no-print-directory lesson-0
    expect 2 "N is a lesson number, 1\.\.$last; got '$((last + 1))'" \
      make -s --no-print-directory "lesson-$((last + 1))"
    expect 2 "N is a lesson number, 1\.\.$last; got 'x'" make -s --no-print-directory lesson-x
    expect 2 "N is a lesson number, 1\.\.$last; got '01'" make -s --no-print-directory lesson-01
    expect 2 "make diff-N: N is a lesson number, 1\.\.$last; got '$((last + 1))'" \
      make -s --no-print-directory "diff-$((last + 1))" B=2
    expect 2 "make drill-N: N is a lesson number, 1\.\.$last; got '$((last + 1))'" \
      make -s --no-print-directory "drill-$((last + 1))"
    expect 2 "make drill-N: N is a lesson number, 1\.\.$last; got 'x'" \
      make -s --no-print-directory drill-x
    # Every number up to the last, two-digit ones too, reaches its lesson's folder (lessons/NN_*):
    # a version that no lesson has is named as missing from that lesson, or the lesson as not
    # written yet, never the number as wrong.
    for n in 1 "$last"; do
      expect 2 "^lesson $n (has no version file v98_\*|is not written yet)" \
        make -s --no-print-directory "diff-$n" A=98 B=99
    done
    expect 0 "make lesson-N +build lesson N \(1\.\.$last\)" make -s --no-print-directory help
    expect 0 "make diff-N A=2 B=3" make -s --no-print-directory help
    # The diff target shows one version against the next, and exits 0 when they differ.
    expect 0 "^\+\+\+ lessons/04_fa2_warps/v3_mma\.cu" make -s --no-print-directory diff-4 A=2 B=3
    expect 0 "^\+\+\+ lessons/04_fa2_warps/v3_mma\.cu" make -s --no-print-directory diff-4 B=3
    expect 0 "^\+\+\+ lessons/03_fa1_tiling/v2_fa1\.cu" make -s --no-print-directory diff-3 A=1 B=2
    expect 2 "lesson 3 has no version file v9_\*" make -s --no-print-directory diff-3 A=1 B=9
    expect 2 "give the versions as numbers" make -s --no-print-directory diff-4 B=x
    ;;
  arch)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    expect 1 "CUDA architecture 75 is too old for this course" \
      cmake -S "$src" -B "$tmp/b75" -DATTN_ARCHS=75 -DCMAKE_CUDA_ARCHITECTURES=75
    expect 1 "CUDA architecture 'sm80' in ATTN_ARCHS is not a number" \
      cmake -S "$src" -B "$tmp/bbad" -DATTN_ARCHS=sm80 -DCMAKE_CUDA_ARCHITECTURES=80
    # An architecture list without 90a for the Hopper lesson is no error: configure succeeds (a
    # Hopper lesson, once one exists, is left out with a message; no lesson uses HOPPER yet).
    expect 0 "Generating done" \
      cmake -S "$src" -B "$tmp/b86" -DATTN_ARCHS=86 -DCMAKE_CUDA_ARCHITECTURES=86 -DATTN_ARCHS_HOPPER=90
    ;;
  output)
    bin=$build/bin
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    for n in $(ls "$bin" | sed -n 's/^lesson-\([0-9]*\)$/\1/p'); do
      # A full disk on stdout is an error, named.
      expect 1 "lesson-$n: writing standard output failed" sh -c "'$bin/lesson-$n' --cpu > /dev/full"
      expect 1 "lesson-$n: writing standard output failed" sh -c "'$bin/lesson-$n' --help > /dev/full"
      # --csv without GPU rows: the header is written, and the run says no rows were.
      rm -f "$tmp/t.csv"
      expect 0 "--csv $tmp/t.csv: header only, no GPU rows were written" \
        "$bin/lesson-$n" --cpu --csv "$tmp/t.csv"
      if head -n 1 "$tmp/t.csv" 2>/dev/null | grep -q '^lesson,version,name,dtype'; then
        ok "lesson-$n --cpu --csv writes the header"
      else
        bad "lesson-$n --cpu --csv left no header in $tmp/t.csv"
      fi
      expect 1 "lesson-$n: writing /dev/full failed" "$bin/lesson-$n" --cpu --csv /dev/full
      # Without a GPU: one line that says why, and that the CPU part ran.
      expect 0 "no usable CUDA device: .*(no NVIDIA driver|none is visible)" \
        env CUDA_VISIBLE_DEVICES=-1 "$bin/lesson-$n" --check-only
      expect 0 "the CPU part above ran; the GPU part was not run" \
        env CUDA_VISIBLE_DEVICES=-1 "$bin/lesson-$n" --check-only
      expect 2 "--seq must be an integer in 1\.\.[0-9]+, got ' 128'" "$bin/lesson-$n" --seq " 128"
    done
    ;;
  *)
    echo "usage: test_front_door.sh make|arch|output SOURCE_DIR BUILD_DIR" >&2
    exit 2
    ;;
esac
[ "$fails" -eq 0 ]
