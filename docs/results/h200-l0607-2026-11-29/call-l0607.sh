#!/usr/bin/env bash
# Lessons 06 and 07's benches with a shape's implementations taking turns (the suite's bench
# phase, LESSONS="6 7"), packed into one tarball.
set -u
R=${R:-h200-l0607-2026-11-29}; mkdir -p $OUT/logs
exec > >(tee $OUT/logs/l0607-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
export BUILD_DIR=build-gpu LESSONS="6 7" RUN=$R OUT
timeout 500 scripts/gpu-suite.sh bench > /tmp/suite.log 2>&1; echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|MISMATCH|gpu-suite:|rror" /tmp/suite.log | tail -8
{ nvidia-smi -q; nvcc --version; } > $OUT/$R/nvidia-smi.txt 2>&1
cp .gpu/l15/call-l0607.sh $OUT/$R/
cd $OUT && tar czf all.tgz $R logs && rm -rf $R && echo packed
