#!/usr/bin/env bash
# Call A: lesson 05's lessons phase and its bench as five processes (BENCH_PROCS=5), each row the
# median process; then lesson 09's lessons phase into its own folder.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-a.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export BUILD_DIR=build-gpu OUT PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 300 cmake --build build-gpu -j 16 --target attn_lessons lesson-5 lesson-9 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
LESSONS=5 BENCH_PROCS=5 RUN=h200-l05s-2026-11-29 timeout 420 scripts/gpu-suite.sh lessons bench > /tmp/s5.log 2>&1
echo "l05 suite rc $? $(( $(date +%s) - t0 )) s"; grep -E "gpu-suite:|peers_median|MISMATCH|rror" /tmp/s5.log | tail -8
left=$(( 585 - ($(date +%s) - t0) )); echo "left $left s"
[ $left -gt 60 ] && { LESSONS=9 RUN=h200-l09v-2026-11-29 timeout $left scripts/gpu-suite.sh lessons > /tmp/s9.log 2>&1; echo "l09 lessons rc $? $(( $(date +%s) - t0 )) s"; grep -E "gpu-suite:|FAIL|rror" /tmp/s9.log | tail -5; }
cp .gpu/l19/call-a.sh $OUT/h200-l05s-2026-11-29/
echo "all $(( $(date +%s) - t0 )) s"
