#!/usr/bin/env bash
# Checks not yet run on a GPU: the cascade GPU case (nine steps, two forked families), memcheck on
# it, lesson 05's version 5 after overlap_turns() became a function (checks, GPU suite).
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
B=$R/build-c1
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/pending-checks.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
git log --oneline -1
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; tail $L/cmake.log; exit 1; }
cmake --build $B -j 16 --target lesson-10 lesson-5 test_lesson10_gpu test_lesson05_gpu 2>&1 | grep -E "error|C75|spill" 
echo "built $(el) s"
echo "== test_lesson10_gpu cascade:"; CK_RUN_CASE=cascade timeout 200 $B/bin/test_lesson10_gpu 2>&1 | tail -15
echo "($(el) s)"
echo "== memcheck cascade: $(ATTN_TEST_SANITIZER=1 CK_RUN_CASE=cascade timeout 150 compute-sanitizer --tool memcheck $B/bin/test_lesson10_gpu 2>&1 | grep -E 'SUMMARY|^[0-9]+%|FAIL' | tr '\n' ' ') $(el) s"
echo "== lesson 05 version 5 checks"
for s in "" "--dim 64 --heads 32" "--batch 1 --seq 1000 --causal" "--batch 2 --seq 777 --kv-heads 2 --dim 64"; do
  echo "[$s] $($B/bin/lesson-5 5 $s --check-only 2>&1 | grep -E '^ *5 |rror|skip' | head -2 | tr -s ' ')"
done
echo "== test_lesson05_gpu: $(timeout 240 $B/bin/test_lesson05_gpu 2>&1 | grep -E '^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
rm -rf $B
