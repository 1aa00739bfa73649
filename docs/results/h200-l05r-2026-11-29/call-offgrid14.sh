#!/usr/bin/env bash
# Version 14 beside the grid (dim 128): lengths between the grid's (3000, 6000, 12000) with the grid
# rows around them in one process, then GQA (4 KV heads) at 4k-16k in a second; versions 5, 6
# (brings cuDNN's FP8), 13 and 14; the rows of a shape take turns.
set -u
RUN=${RUN:-h200-l05r-2026-11-29}; D=$OUT/$RUN; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/offgrid14-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
L=build-gpu/lib/libattn_lessons.so
PYTHONUNBUFFERED=1 timeout 300 python3 bench/lesson05_peers.py --lib $L --versions 5,6,13,14 --dims 128 \
  --seqs 2048,3000,4096,6000,8192,12000,16384 --out /tmp/p5l > $D/l05-lengths.log 2>&1
echo "lengths rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p5l/peers-lesson05.csv $D/l05-lengths-peers.csv 2>/dev/null
PYTHONUNBUFFERED=1 timeout 200 python3 bench/lesson05_peers.py --lib $L --versions 5,6,13,14 --dims 128 \
  --seqs 4096,8192,16384 --kv-heads 4 --out /tmp/p5g > $D/l05-gqa.log 2>&1
echo "gqa rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p5g/peers-lesson05.csv $D/l05-gqa-peers.csv 2>/dev/null
grep -E "MISMATCH|rror" $D/l05-*.log | head -5
for f in $D/l05-lengths.log $D/l05-gqa.log; do grep -A30 "^FP8 at dim 128" $f | cut -c1-140; done
