#!/usr/bin/env bash
# Lesson 09's bench, timing part, with its implementations taking turns at every shape: a quick
# smoke first, then the grid into $OUT/$RUN (peers.csv as scripts/gpu-suite.sh would join it).
set -u
RUN=${RUN:-h200-l09u-2026-11-29}; D=$OUT/$RUN; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/l09-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
timeout 120 python3 bench/lesson09_peers.py --lib build-gpu/lib/libattn_lessons.so --quick --timing-only > /tmp/quick.log 2>&1
rc=$?; tail -8 /tmp/quick.log; echo "quick rc $rc $(( $(date +%s) - t0 )) s"
[ $rc -eq 0 ] || exit 1
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi.txt 2>&1
PYTHONUNBUFFERED=1 timeout 470 python3 bench/lesson09_peers.py --lib build-gpu/lib/libattn_lessons.so --timing-only --out /tmp/p9 > $D/bench.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p9/peers-lesson09.csv $D/peers.csv
grep -E "MISMATCH|rror" $D/bench.log | head -5
grep -E "best/cudnn" -A26 $D/bench.log | head -30
