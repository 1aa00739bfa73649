#!/usr/bin/env bash
# The machine code of a lesson's kernels, checked without a GPU:
#
#   scripts/check-sass.sh PROGRAM KERNEL_REGEX INSTRUCTION
#
# For every kernel of PROGRAM whose name matches KERNEL_REGEX (an extended regular expression):
# INSTRUCTION (e.g. HGMMA, the Hopper warpgroup matrix multiply) must appear in its SASS, and no
# local-memory access (LDL, STL: registers spilled to the stack) may. INSTRUCTION is a plain string,
# or after a leading ~ an extended regular expression matched against each line (to tell operand
# forms apart). Fails when no kernel matches.
set -u
prog=$1 regex=$2 want=$3
# Without cuobjdump (a toolkit without its binary utilities) the check cannot run: skipped (77).
command -v cuobjdump >/dev/null || { echo "check-sass: skipped: cuobjdump not found (CUDA toolkit binary utilities)"; exit 77; }
sass=$(bash "$(dirname "$0")/sass-dump.sh" "$prog") || { echo "check-sass: cuobjdump failed on $prog"; exit 1; }
# A build of PTX only (e.g. ARCH=80-virtual) holds no machine code to check: skipped (77).
printf '%s\n' "$sass" | grep -q 'Function : ' || { echo "check-sass: skipped: $prog holds no SASS (built as PTX only)"; exit 77; }
# One line per kernel: name, then the counts, from the "Function : name" sections.
summary=$(printf '%s\n' "$sass" | awk -v want="$want" '
  /Function : / { if (name != "") print name, n_want, n_local; name = $3; n_want = 0; n_local = 0; next }
  name != "" && (substr(want, 1, 1) == "~" ? match($0, substr(want, 2)) : index($0, want)) { n_want++ }
  name != "" && /[^A-Z](LDL|STL)[. ]/ { n_local++ }
  END { if (name != "") print name, n_want, n_local }')
matched=0 bad=0
while read -r name n_want n_local; do
  [ -n "$name" ] || continue
  printf '%s\n' "$name" | grep -Eq "$regex" || continue
  matched=$((matched + 1))
  if [ "$n_want" -gt 0 ] && [ "$n_local" -eq 0 ]; then
    echo "ok   $name: $n_want $want, no local memory"
  else
    echo "FAIL $name: $n_want $want, $n_local local-memory instructions (LDL/STL)"
    bad=$((bad + 1))
  fi
done <<< "$summary"
if [ "$matched" -eq 0 ]; then
  echo "check-sass: no kernel of $prog matches /$regex/"
  exit 1
fi
echo "check-sass: $matched kernel(s), $bad failing"
[ "$bad" -eq 0 ]
