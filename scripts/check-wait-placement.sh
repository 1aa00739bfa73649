#!/usr/bin/env bash
# Where ptxas put a warpgroup's two waits, checked without a GPU:
#
#   scripts/check-wait-placement.sh PROGRAM KERNEL_REGEX
#
# Lesson 05's version 5 overlaps the softmax of S_j with the warpgroup's own P_{j-1} V_{j-1}: the
# source waits with wgmma.wait_group 1, computes the exponentials, then waits with wait_group 0.
# Whether any exponential really runs between the two is decided by ptxas (a branch between them
# once made it put the second wait first). For every kernel of PROGRAM whose name matches
# KERNEL_REGEX, this counts the MUFU.EX2 instructions that sit, in machine-code order, between a
# WARPGROUP.DEPBAR.LE gsb0, 0x1 and the next WARPGROUP.DEPBAR: at least one such window must hold
# exponentials. Fails when no kernel matches.
set -u
prog=$1 regex=$2
command -v cuobjdump >/dev/null || { echo "check-wait-placement: skipped: cuobjdump not found (CUDA toolkit binary utilities)"; exit 77; }
sass=$(bash "$(dirname "$0")/sass-dump.sh" "$prog") || { echo "check-wait-placement: cuobjdump failed on $prog"; exit 1; }
# A build of PTX only (e.g. ARCH=80-virtual) holds no machine code to check: skipped (77).
printf '%s\n' "$sass" | grep -q 'Function : ' || { echo "check-wait-placement: skipped: $prog holds no SASS (built as PTX only)"; exit 77; }
# One line per kernel: name, the number of wait_group 1 windows, the exponentials inside them.
summary=$(printf '%s\n' "$sass" | awk '
  function flush() { if (name != "") print name, windows, inside }
  /Function : / { flush(); name = $3; windows = 0; inside = 0; open = 0; next }
  name == "" { next }
  /WARPGROUP\.DEPBAR\.LE gsb0, 0x1/ { windows++; open = 1; next }
  /WARPGROUP\.DEPBAR/ { open = 0; next }
  open && /MUFU\.EX2/ { inside++ }
  END { flush() }')
matched=0 bad=0
while read -r name windows inside; do
  [ -n "$name" ] || continue
  printf '%s\n' "$name" | grep -Eq "$regex" || continue
  matched=$((matched + 1))
  if [ "$windows" -gt 0 ] && [ "$inside" -gt 0 ]; then
    echo "ok   $name: $inside MUFU.EX2 between wait_group 1 and wait_group 0 ($windows windows)"
  else
    echo "FAIL $name: $inside MUFU.EX2 between wait_group 1 and wait_group 0 ($windows windows)"
    bad=$((bad + 1))
  fi
done <<< "$summary"
if [ "$matched" -eq 0 ]; then
  echo "check-wait-placement: no kernel of $prog matches /$regex/"
  exit 1
fi
echo "check-wait-placement: $matched kernel(s), $bad failing"
[ "$bad" -eq 0 ]
