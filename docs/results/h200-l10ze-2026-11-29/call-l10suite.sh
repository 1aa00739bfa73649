#!/usr/bin/env bash
# Lesson 10 after l10_merge_inside(): the whole GPU suite (every case) and lesson 10's lessons phase
# (the program's default steps and gpu-runs.txt), into one results folder.
set -u
R=${R:-h200-l10ze-2026-11-29}; D=$OUT/$R; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/l10suite-call.log) 2>&1
date; t0=$(date +%s)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BUILD_DIR=build-gpu LESSONS=10 RUN=$R OUT CK_FORK=no PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 400 scripts/gpu-suite.sh build lessons > /tmp/suite10.log 2>&1; echo "build+lessons rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|gpu-suite:|rror" $D/gpu-suite.log /tmp/suite10.log | tail -6
s0=$(date +%s)
(cd build-gpu && timeout 400 ./bin/test_lesson10_gpu 2>&1 || echo "suite rc $?") > $D/test_lesson10_gpu.log 2>&1
[ -x build-gpu/bin/test_lesson10_gpu ] || (cd build-gpu && timeout 400 ctest -R test_lesson10_gpu -V) > $D/test_lesson10_gpu.log 2>&1
echo "gpu suite $(( $(date +%s) - s0 )) s"; tail -5 $D/test_lesson10_gpu.log
timeout 120 ctest --test-dir build-gpu -R "lesson10|lesson-10" -E test_lesson10_gpu --output-on-failure > $D/ctest.log 2>&1; echo "ctest rc $? $(( $(date +%s) - t0 )) s"
tail -6 $D/ctest.log
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi.txt 2>&1
cp .gpu/l17/call-l10suite.sh $D/
echo "all $(( $(date +%s) - t0 )) s"
