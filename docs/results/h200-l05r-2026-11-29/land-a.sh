#!/usr/bin/env bash
# Landing call A for version 14: lesson 05's build + lessons phase, its ctest subset (GPU suite,
# SASS), and memcheck, racecheck, synccheck through the program on version 14.
set -u
RUN=${RUN:-h200-l05r-2026-11-29}; D=$OUT/$RUN; mkdir -p $D $OUT/logs
exec > >(tee $OUT/logs/land-a.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BUILD_DIR=build-gpu LESSONS=5 RUN OUT CK_FORK=no PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 300 scripts/gpu-suite.sh build lessons > /tmp/suiteA.log 2>&1; echo "suite build+lessons rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|gpu-suite:|error" $D/gpu-suite.log /tmp/suiteA.log | tail -8
grep -E "^ *1[345] " $D/gpu-suite.log | tail -6
timeout 150 ctest --test-dir build-gpu -R "lesson-5|lesson05" --output-on-failure > $D/ctest.log 2>&1; echo "ctest rc $? $(( $(date +%s) - t0 )) s"
tail -24 $D/ctest.log
S=$D/sanitizers.log; : > $S
for a in "--batch 1 --heads 4 --kv-heads 2 --seq 300 --kv-seq 520 --dim 128 --causal" "--batch 1 --heads 140 --kv-heads 140 --seq 200 --kv-seq 130 --dim 128 --causal" "--batch 2 --heads 8 --kv-heads 1 --seq 777 --kv-seq 3000 --dim 128" "--batch 1 --heads 4 --kv-heads 4 --seq 256 --kv-seq 256 --dim 128 --causal"; do
  for tool in memcheck racecheck synccheck; do s0=$(date +%s)
    [ $(( $(date +%s) - t0 )) -gt 540 ] && { echo "skip $tool v14 [$a]: time"; continue; }
    echo "#### $tool lesson-5 14 $a --check-only" >> $S
    timeout 90 compute-sanitizer --tool $tool build-gpu/bin/lesson-5 14 $a --check-only >> $S 2>&1
    echo "$tool v14 [$a] rc $? $(( $(date +%s) - s0 )) s: $(tail -40 $S | grep -E "SUMMARY|PASS|FAIL" | tr '\n' ' ')"; done; done
echo "all $(( $(date +%s) - t0 )) s"
