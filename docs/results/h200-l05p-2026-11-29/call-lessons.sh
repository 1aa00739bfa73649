#!/usr/bin/env bash
# The lessons phase of lessons 05 and 09 into the folders their benches went to this session
# (h200-l05p-2026-11-29, h200-l09u-2026-11-29), on the same tree.
set -u
mkdir -p $OUT/logs; exec > >(tee $OUT/logs/lessons-call.log) 2>&1
date; t0=$(date +%s)
export BUILD_DIR=build-gpu OUT PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
RUN=h200-l05p-2026-11-29 LESSONS=5 timeout 240 scripts/gpu-suite.sh build lessons > /tmp/s5.log 2>&1; echo "lesson 5 rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|gpu-suite:|rror" /tmp/s5.log | tail -5
RUN=h200-l09u-2026-11-29 LESSONS=9 timeout $(( 400 - ($(date +%s) - t0) )) scripts/gpu-suite.sh lessons > /tmp/s9.log 2>&1; echo "lesson 9 rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|gpu-suite:|rror" /tmp/s9.log | tail -5
for r in h200-l05p-2026-11-29 h200-l09u-2026-11-29; do mv $OUT/$r/nvidia-smi.txt $OUT/$r/nvidia-smi-lessons.txt; wc -l $OUT/$r/lessons.csv; done
