#!/usr/bin/env bash
# Prototype: version 5 with a producer warpgroup (L10_WG_WS). Checks, then rows 7 and 8 timed.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
B=$R/build-c7
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/ws-first.log) 2>&1
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B -j 16 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"
echo "built $(el) s"
P=$B/bin/lesson-10
for s in "" "--seq 16 --causal" "--batch 3 --kv-seq 1000 --seq 5 --causal"; do
  echo "[$s] $(timeout 30 $P 8 $s --check-only 2>&1 | grep -E '^ *8 |rror|skip|FAIL' | head -2 | tr -s ' ')"
done
echo "checked $(el) s"
for s in "" "--seq 16" "--seq 1" "--batch 16 --kv-seq 8192"; do
  [ $(el) -gt 150 ] && break
  line="[$s]"
  for v in 7 8; do line="$line | $(timeout 30 $P $v $s --no-check --iters 30 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ' | cut -d' ' -f2-8)"; done
  echo "$line"
done
echo "timed $(el) s"
[ $(el) -lt 170 ] && echo "== fp8wgmma: $(CK_RUN_CASE=fp8wgmma timeout 50 $B/bin/test_lesson10_gpu 2>&1 | grep -E "FAIL|rror|^[0-9]+%" | head -6 | tr '\n' '|') $(el) s"
rm -rf $B
