#!/usr/bin/env bash
# Lesson 10 with the chunks merged inside the kernel up to 8 float4 a thread when the plan cuts a
# sequence into at most 4 chunks (l10_merge_inside()): lesson 10's ctest cases (GPU suite, SASS),
# memcheck and racecheck through the program at a step that now merges inside, then the bench.
set -u
R=${R:-h200-l10zd-2026-11-29}; D=$OUT/$R; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/l10in-call.log) 2>&1
date; t0=$(date +%s)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BUILD_DIR=build-gpu LESSONS=10 RUN=$R OUT CK_FORK=no PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
timeout 150 ctest --test-dir build-gpu -R "lesson10|lesson-10" --output-on-failure > $D/ctest.log 2>&1; echo "ctest rc $? $(( $(date +%s) - t0 )) s"
tail -12 $D/ctest.log
S=$D/sanitizers.log; : > $S
for v in 1 2 4; do for tool in memcheck racecheck; do s0=$(date +%s)
  a="--batch 16 --seq 8 --kv-seq 1024 --causal"
  echo "#### $tool lesson-10 $v $a --check-only" >> $S
  timeout 60 compute-sanitizer --tool $tool build-gpu/bin/lesson-10 $v $a --check-only >> $S 2>&1
  echo "$tool v$v rc $? $(( $(date +%s) - s0 )) s: $(tail -12 $S | grep -E "SUMMARY|PASS|FAIL" | tr '\n' ' ' | cut -c1-200)"; done; done
timeout 200 scripts/gpu-suite.sh bench > /tmp/suite10.log 2>&1; echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|MISMATCH|gpu-suite:|rror" /tmp/suite10.log | tail -5
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi.txt 2>&1
cp .gpu/l16/call-l10in.sh $D/
echo "all $(( $(date +%s) - t0 )) s"
