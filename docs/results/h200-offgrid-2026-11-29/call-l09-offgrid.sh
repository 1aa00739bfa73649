#!/usr/bin/env bash
# Lesson 09 beside the grid: lengths between the grid's, and GQA (4 query heads per KV head), each
# with the nearest grid rows in the same process; the rows of a shape take turns.
set -u
RUN=${RUN:-h200-offgrid-2026-11-29}; D=$OUT/$RUN; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/l09-offgrid-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi-l09.txt 2>&1
L=build-gpu/lib/libattn_lessons.so
PYTHONUNBUFFERED=1 timeout 300 python3 bench/lesson09_peers.py --lib $L --timing-only --versions 6,7 \
  --seqs 2048,3000,4096,6000,8192,12000,16384 --out /tmp/p9l > $D/l09-lengths.log 2>&1
echo "lengths rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p9l/peers-lesson09.csv $D/l09-lengths-peers.csv 2>/dev/null
PYTHONUNBUFFERED=1 timeout 200 python3 bench/lesson09_peers.py --lib $L --timing-only --versions 6,7 \
  --seqs 4096,8192,16384 --group 4 --out /tmp/p9g > $D/l09-gqa.log 2>&1
echo "gqa rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p9g/peers-lesson09.csv $D/l09-gqa-peers.csv 2>/dev/null
grep -E "MISMATCH|rror" $D/l09-*.log | head -5
for f in $D/l09-lengths.log $D/l09-gqa.log; do tail -22 $f; done
