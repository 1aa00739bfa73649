#!/usr/bin/env bash
# Lesson 09 beside the grid (lengths, again: the first call's files did not all come back), then
# lesson 10's bench with a step's implementations taking turns (the suite's bench phase), then the
# FP8 goal's step (batch 64, 8k keys). Everything packed into one tarball.
set -u
R9=h200-offgrid-2026-11-29; R10=${R10:-h200-l10zc-2026-11-29}; mkdir -p $OUT/logs $OUT/$R9 $OUT/$R10
exec > >(tee $OUT/logs/l10-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
L=build-gpu/lib/libattn_lessons.so
{ nvidia-smi -q; nvcc --version; } > $OUT/$R9/nvidia-smi-l09.txt 2>&1
cp $OUT/$R9/nvidia-smi-l09.txt $OUT/$R10/nvidia-smi.txt
PYTHONUNBUFFERED=1 timeout 100 python3 bench/lesson09_peers.py --lib $L --timing-only --versions 6,7 \
  --seqs 2048,3000,4096,6000,8192,12000,16384 --out /tmp/p9l > $OUT/$R9/l09-lengths.log 2>&1
echo "l09 lengths rc $? $(( $(date +%s) - t0 )) s"
cp /tmp/p9l/peers-lesson09.csv $OUT/$R9/l09-lengths-peers.csv
tail -32 $OUT/$R9/l09-lengths.log
export BUILD_DIR=build-gpu LESSONS=10 RUN=$R10 OUT
timeout 390 scripts/gpu-suite.sh bench > /tmp/suite10.log 2>&1; echo "l10 bench rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|MISMATCH|gpu-suite:|rror" /tmp/suite10.log | tail -5
PYTHONUNBUFFERED=1 timeout 90 python3 bench/lesson10_peers.py --lib $L --batches 64 --kvs 8192 \
  --dims 128 --out /tmp/p10b > $OUT/$R10/bench-b64-8k.log 2>&1
echo "b64 rc $? $(( $(date +%s) - t0 )) s"; cp /tmp/p10b/peers-lesson10.csv $OUT/$R10/peers-b64-8k.csv
tail -8 $OUT/$R10/bench-b64-8k.log
cd $OUT && tar czf all.tgz $R9 $R10 logs && rm -rf $R9 $R10 && echo packed
