#!/usr/bin/env bash
# Named barriers that ptxas did not put behind a WARPSYNC, checked without a GPU:
#
#   scripts/check-warpsync.sh PROGRAM KERNEL_REGEX
#
# Lesson 05's consumer warpgroups take turns through named barriers (bar.sync with a barrier
# number in a register: BAR.SYNC.DEFER_BLOCKING Rn). Where ptxas cannot prove a warp converged
# before one, it puts WARPSYNC.ALL in front of it, and the loop around it runs slower: version 15's
# first form kept a value across the wait on its Q tile, ptxas put a WARPSYNC before 6 of its 9
# named barrier waits, and each tile ran 6-7% slower (lesson 05's NOTES, "Version 5 in persistent
# blocks"). For every kernel of PROGRAM whose name matches KERNEL_REGEX, this counts the named
# barrier waits with a WARPSYNC.ALL among the two instructions before them: every one must have
# none. Fails when no kernel matches.
set -u
prog=$1 regex=$2
command -v cuobjdump >/dev/null || { echo "check-warpsync: skipped: cuobjdump not found (CUDA toolkit binary utilities)"; exit 77; }
sass=$(bash "$(dirname "$0")/sass-dump.sh" "$prog") || { echo "check-warpsync: cuobjdump failed on $prog"; exit 1; }
# A build of PTX only (e.g. ARCH=80-virtual) holds no machine code to check: skipped (77).
printf '%s\n' "$sass" | grep -q 'Function : ' || { echo "check-warpsync: skipped: $prog holds no SASS (built as PTX only)"; exit 77; }
# One line per kernel: name, its named barrier waits, those with a WARPSYNC.ALL just before.
summary=$(printf '%s\n' "$sass" | awk '
  function flush() { if (name != "") print name, waits, behind }
  /Function : / { flush(); name = $3; waits = 0; behind = 0; p1 = ""; p2 = ""; next }
  name == "" { next }
  /BAR\.SYNC\.DEFER_BLOCKING R[0-9]+/ { waits++; if (p1 ~ /WARPSYNC\.ALL/ || p2 ~ /WARPSYNC\.ALL/) behind++ }
  /\/\*[0-9a-f]+\*\// { p2 = p1; p1 = $0 }
  END { flush() }')
matched=0 bad=0
while read -r name waits behind; do
  [ -n "$name" ] || continue
  printf '%s\n' "$name" | grep -Eq "$regex" || continue
  matched=$((matched + 1))
  if [ "$behind" -eq 0 ]; then
    echo "ok   $name: $waits named barrier waits, none behind a WARPSYNC"
  else
    echo "FAIL $name: $behind of $waits named barrier waits behind a WARPSYNC"
    bad=$((bad + 1))
  fi
done <<< "$summary"
if [ "$matched" -eq 0 ]; then
  echo "check-warpsync: no kernel of $prog matches /$regex/"
  exit 1
fi
echo "check-warpsync: $matched kernel(s), $bad failing"
[ "$bad" -eq 0 ]
