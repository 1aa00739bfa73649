#!/usr/bin/env bash
# Call 2: the build; lesson 10's bench into h200-l10ze (beside call 1's lessons phase); version 9 at
# dim 128 (a build of the tree with v9_persistent.cu at both dims): its checks, A/B against
# version 5 and cuDNN in turns, the program's row, sanitizers, lesson 05's ctest cases.
set -u
R=${R:-h200-l10ze-2026-11-29}; D=$OUT/$R; X=$OUT/v9d128; mkdir -p $OUT/logs $D $X
exec > >(tee $OUT/logs/call-2.log) 2>&1
date; t0=$(date +%s)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BUILD_DIR=build-gpu OUT CK_FORK=no PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 2>&1 | grep -E "error|C75|warning" | head; echo "built $(( $(date +%s) - t0 )) s"
L=build-gpu/lib/libattn_lessons.so
timeout 150 python3 .gpu/l17/ab_v9.py $L > $X/ab-v9-d128.log 2>&1; echo "ab d128 rc $? $(( $(date +%s) - t0 )) s"
cat $X/ab-v9-d128.log | grep -v "^check" ; grep -c "FAIL" $X/ab-v9-d128.log
LESSONS=10 RUN=$R timeout 200 scripts/gpu-suite.sh bench > /tmp/b10.log 2>&1; echo "l10 bench rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|MISMATCH|gpu-suite:|rror" /tmp/b10.log | tail -4; ls $D
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi-bench.txt 2>&1
for a in "--dim 128" "--dim 128 --causal" "--dim 64 --heads 32"; do build-gpu/bin/lesson-5 9 $a 2>&1 | tail -4; done > $X/program.log 2>&1; tail -12 $X/program.log
S=$X/sanitizers.log; : > $S
for a in "--batch 1 --heads 4 --kv-heads 2 --seq 300 --kv-seq 520 --dim 128 --causal" "--batch 2 --heads 8 --kv-heads 1 --seq 777 --kv-seq 3000 --dim 128"; do
  for tool in memcheck racecheck synccheck; do s0=$(date +%s)
    [ $(( $(date +%s) - t0 )) -gt 500 ] && { echo "skip $tool [$a]: time"; continue; }
    echo "#### $tool lesson-5 9 $a --check-only" >> $S
    timeout 60 compute-sanitizer --tool $tool build-gpu/bin/lesson-5 9 $a --check-only >> $S 2>&1
    echo "$tool v9 [$a] rc $? $(( $(date +%s) - s0 )) s: $(tail -30 $S | grep -E "SUMMARY|PASS|FAIL" | tr '\n' ' ' | cut -c1-160)"; done; done
[ $(( $(date +%s) - t0 )) -lt 520 ] && { timeout 70 ctest --test-dir build-gpu -R "lesson05_gpu|lesson-5-check" --output-on-failure > $X/ctest.log 2>&1; echo "ctest rc $?"; tail -5 $X/ctest.log; }
cp .gpu/l17/call-2.sh .gpu/l17/ab_v9.py $X/
echo "all $(( $(date +%s) - t0 )) s"
