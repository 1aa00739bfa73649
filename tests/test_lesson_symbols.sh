#!/usr/bin/env bash
# Every symbol a lesson's objects export starts with its prefix, lNN_ (kernels too, mangled); the
# prefix attn_ belongs to common/. Compiler-made symbols (CUDA registration stubs, the C++
# personality reference) are not the lesson's names and are left out.
#
#   tests/test_lesson_symbols.sh BUILD_DIR
set -u
build=$1
bad=0
for dir in "$build"/lessons/[0-9][0-9]_*/CMakeFiles/attn_l*.dir; do
  [ -d "$dir" ] || continue
  nn=$(basename "$dir" | sed -E 's/^attn_l([0-9]+)(_[a-z0-9]+)?\.dir$/\1/') # attn_l09_sm90a: 09
  syms=$(find "$dir" -name '*.o' -print0 | xargs -0 nm -g --defined-only 2>/dev/null | awk 'NF == 3 {print $3}' |
         c++filt | sed -E 's/^__device_stub__Z[0-9]+//; s/\(.*$//' |
         grep -vE "^(l${nn}_|L${nn}_|DW\.ref\.__gxx_personality|__cudaRegisterLinkedBinary|__nv_|_GLOBAL__|__sti____cudaRegisterAll|__fatbinwrap)" |
         sort -u)
  count=$(find "$dir" -name '*.o' | wc -l)
  if [ "$count" -eq 0 ]; then
    echo "FAIL lesson $nn: no objects in $dir (build first)"
    bad=1
  elif [ -n "$syms" ]; then
    echo "FAIL lesson $nn exports names outside l${nn}_:"
    printf '       %s\n' $syms
    bad=1
  else
    echo "ok   lesson $nn: every exported name of its $count objects starts with l${nn}_"
  fi
done
exit $bad
