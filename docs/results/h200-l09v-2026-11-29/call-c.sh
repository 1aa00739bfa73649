#!/usr/bin/env bash
# Call C: lesson 09's bench, timing part, a third process (calls B and C: h200-l09v); then lesson
# 10's lessons phase over gpu-runs-cascade.txt (version 3 and lesson 07's version 5 on the forked
# cache, the tree as it is) into h200-l10zg, as time allows.
set -u
D=$OUT/h200-l09v-2026-11-29; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/call-c.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export BUILD_DIR=build-gpu OUT PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 300 cmake --build build-gpu -j 16 --target attn_lessons lesson-10 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
p=3
PYTHONUNBUFFERED=1 timeout 300 python3 bench/lesson09_peers.py --lib build-gpu/lib/libattn_lessons.so --timing-only --out /tmp/p9-$p > $D/bench-p$p.log 2>&1
echo "bench process $p rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p9-$p/peers-lesson09.csv $D/peers-lesson09-p$p.csv
grep -E "MISMATCH|rror" $D/bench-p$p.log | head -3
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi-p3.txt 2>&1
cp .gpu/l19/call-c.sh $D/
left=$(( 575 - ($(date +%s) - t0) )); echo "left $left s"
LESSONS=10 RUNS=gpu-runs-cascade.txt RUN=h200-l10zg-2026-11-29 timeout $left scripts/gpu-suite.sh lessons > /tmp/s10.log 2>&1
echo "l10 cascade lessons rc $? $(( $(date +%s) - t0 )) s"; grep -E "gpu-suite:|FAIL|rror" /tmp/s10.log | tail -5
grep -E "^==== lesson-10" $OUT/h200-l10zg-2026-11-29/gpu-suite.log | tail -3
cp .gpu/l19/call-c.sh $OUT/h200-l10zg-2026-11-29/
echo "all $(( $(date +%s) - t0 )) s"
cp $OUT/logs/call-c.log $D/ 2>/dev/null
tar czf $OUT/all.tgz -C $OUT h200-l09v-2026-11-29 h200-l10zg-2026-11-29 logs && rm -rf $D $OUT/h200-l10zg-2026-11-29 $OUT/logs
