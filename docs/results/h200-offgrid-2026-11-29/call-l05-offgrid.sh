#!/usr/bin/env bash
# Lesson 05 beside the grid: lengths that are not tile multiples between the grid's, and GQA, each
# with the nearest grid rows in the same process; the rows of a shape take turns.
set -u
RUN=${RUN:-h200-offgrid-2026-11-29}; D=$OUT/$RUN; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/l05-offgrid-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi.txt 2>&1
L=build-gpu/lib/libattn_lessons.so
PYTHONUNBUFFERED=1 timeout 330 python3 bench/lesson05_peers.py --lib $L --versions 5,6,8,9,13 \
  --seqs 2048,3000,4096,6000,8192,12000,16384 --out /tmp/p5l > $D/l05-lengths.log 2>&1
echo "lengths rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p5l/peers-lesson05.csv $D/l05-lengths-peers.csv 2>/dev/null
cp /tmp/p5l/accuracy-lesson05.csv $D/l05-lengths-accuracy.csv 2>/dev/null
PYTHONUNBUFFERED=1 timeout 200 python3 bench/lesson05_peers.py --lib $L --versions 5,6,8,9,13 \
  --seqs 4096,8192,16384 --kv-heads 4 --out /tmp/p5g > $D/l05-gqa.log 2>&1
echo "gqa rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p5g/peers-lesson05.csv $D/l05-gqa-peers.csv 2>/dev/null
cp /tmp/p5g/accuracy-lesson05.csv $D/l05-gqa-accuracy.csv 2>/dev/null
grep -E "MISMATCH|rror" $D/l05-*.log | head -5
for f in $D/l05-lengths.log $D/l05-gqa.log; do tail -45 $f; done
