#!/usr/bin/env bash
# Call E (2026-11-29): lesson 05's bf16 versions beside the grid with version 15: lengths that are
# not tile multiples between the grid's, and GQA (4 KV heads), each with the nearest grid rows in
# the same process; the rows of a shape take turns.
set -u
RUN=h200-l05v15-2026-11-29; D=$OUT/$RUN; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/offgrid-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
L=build-gpu/lib/libattn_lessons.so
PYTHONUNBUFFERED=1 timeout 300 python3 bench/lesson05_peers.py --lib $L --versions 5,8,9,15 \
  --seqs 2048,3000,4096,6000,8192,12000,16384 --out /tmp/p5l > $D/offgrid-lengths.log 2>&1
echo "lengths rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p5l/peers-lesson05.csv $D/offgrid-lengths-peers.csv 2>/dev/null
PYTHONUNBUFFERED=1 timeout 200 python3 bench/lesson05_peers.py --lib $L --versions 5,8,9,15 \
  --seqs 4096,8192,16384 --kv-heads 4 --out /tmp/p5g > $D/offgrid-gqa.log 2>&1
echo "gqa rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p5g/peers-lesson05.csv $D/offgrid-gqa-peers.csv 2>/dev/null
grep -E "MISMATCH|rror" $D/offgrid-*.log | head -5
cp .gpu/s24/call-e.sh $D/
cd $OUT && tar czf all.tgz logs $RUN && rm -rf logs $RUN
echo "all $(( $(date +%s) - t0 )) s"
