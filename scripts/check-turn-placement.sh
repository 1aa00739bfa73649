#!/usr/bin/env bash
# Where ptxas put lesson 05 version 10's turn at the exponentials, checked without a GPU:
#
#   scripts/check-turn-placement.sh PROGRAM KERNEL_REGEX BARRIER MIN [MAX]
#
# Version 10's warpgroups take turns at the exponentials through named barrier BARRIER: warpgroup 1
# waits at it before its exponentials, warpgroup 0 after its own. That only staggers the bursts if
# the exponentials sit between the two barrier instructions in the machine code: ptxas may move
# arithmetic across a barrier, and did until the source made the exponentials depend on it. For
# every kernel of PROGRAM whose name matches KERNEL_REGEX, this counts the MUFU.EX2 instructions
# between the first and the second BAR.SYNC on BARRIER (in machine-code order) and the ones of the
# loop before the first: at least MIN must sit between (and at most MAX, when given: version 13
# takes half of them off the special function unit), at most 2 (the factor alpha's) before.
# Fails when no kernel matches or a kernel has fewer than two such barriers.
set -u
prog=$1 regex=$2 bar=$3 min=$4 max=${5:-1000000}
command -v cuobjdump >/dev/null || { echo "check-turn-placement: skipped: cuobjdump not found (CUDA toolkit binary utilities)"; exit 77; }
sass=$(bash "$(dirname "$0")/sass-dump.sh" "$prog") || { echo "check-turn-placement: cuobjdump failed on $prog"; exit 1; }
# A build of PTX only (e.g. ARCH=80-virtual) holds no machine code to check: skipped (77).
printf '%s\n' "$sass" | grep -q 'Function : ' || { echo "check-turn-placement: skipped: $prog holds no SASS (built as PTX only)"; exit 77; }
# One line per kernel: name, barriers seen, exponentials between the first two, exponentials
# between the loop's first wgmma wait (S) and the first barrier.
summary=$(printf '%s\n' "$sass" | awk -v bar="$bar" '
  function flush() { if (name != "") print name, bars, inside, before }
  /Function : / { flush(); name = $3; bars = 0; inside = 0; before = 0; seen_s = 0; next }
  name == "" { next }
  /WARPGROUP\.DEPBAR/ && bars == 0 { seen_s = 1; before = 0; next }
  /BAR\.SYNC/ && index($0, "BAR.SYNC.DEFER_BLOCKING " bar ",") { bars++; next }
  /MUFU\.EX2/ { if (bars == 1) inside++; else if (bars == 0 && seen_s) before++ }
  END { flush() }')
matched=0 bad=0
while read -r name bars inside before; do
  [ -n "$name" ] || continue
  printf '%s\n' "$name" | grep -Eq "$regex" || continue
  matched=$((matched + 1))
  if [ "$bars" -ge 2 ] && [ "$inside" -ge "$min" ] && [ "$inside" -le "$max" ] && [ "$before" -le 2 ]; then
    echo "ok   $name: $inside MUFU.EX2 between the turn's barriers, $before before them"
  else
    echo "FAIL $name: $bars barriers $bar, $inside MUFU.EX2 between the first two (want $min to $max), $before before them (want <= 2)"
    bad=$((bad + 1))
  fi
done <<< "$summary"
if [ "$matched" -eq 0 ]; then
  echo "check-turn-placement: no kernel of $prog matches /$regex/"
  exit 1
fi
echo "check-turn-placement: $matched kernel(s), $bad failing"
[ "$bad" -eq 0 ]
