#!/usr/bin/env bash
# Landing call A for version 13: lesson 05's build + lessons phase, its ctest subset
# (GPU suite, SASS), and memcheck, racecheck, synccheck through the program on version 13.
set -u
R=$PWD; RUN=${RUN:-h200-l05o-2026-11-29}; D=$OUT/$RUN; mkdir -p $D $OUT/logs
exec > >(tee $OUT/logs/land-a.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BUILD_DIR=build-gpu LESSONS=5 RUN OUT CK_FORK=no PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 330 scripts/gpu-suite.sh build lessons > /tmp/suiteA.log 2>&1; echo "suite build+lessons rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|gpu-suite:|error" $D/gpu-suite.log /tmp/suiteA.log | tail -8
timeout 150 ctest --test-dir build-gpu -R "lesson-5|lesson05" --output-on-failure > $D/ctest.log 2>&1; echo "ctest rc $? $(( $(date +%s) - t0 )) s"
tail -14 $D/ctest.log
S=$D/sanitizers.log; : > $S
for spec in "13|--batch 1 --heads 4 --kv-heads 2 --seq 300 --kv-seq 520 --dim 128 --causal" "13|--batch 1 --heads 140 --kv-heads 140 --seq 200 --kv-seq 130 --dim 128 --causal" "13|--batch 2 --heads 8 --kv-heads 1 --seq 777 --kv-seq 3000 --dim 128"; do
  v=${spec%%|*}; a=${spec#*|}
  for tool in memcheck racecheck synccheck; do s0=$(date +%s)
    [ $(( $(date +%s) - t0 )) -gt 560 ] && { echo "skip $tool v$v: time"; continue; }
    echo "#### $tool lesson-5 $v $a --check-only" >> $S
    timeout 90 compute-sanitizer --tool $tool build-gpu/bin/lesson-5 $v $a --check-only >> $S 2>&1
    echo "$tool v$v [$a] rc $? $(( $(date +%s) - s0 )) s: $(tail -40 $S | grep -E "SUMMARY|PASS|FAIL" | tr '\n' ' ')"; done; done
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error" ; timeout 200 python3 .gpu/l13/ab13.py build-gpu/lib/libattn_lessons.so > $OUT/logs/ab13.log 2>&1; echo "ab13 rc $?"; cat $OUT/logs/ab13.log | tail -12
echo "all $(( $(date +%s) - t0 )) s"
