#!/usr/bin/env bash
# Lesson 05's bench with the sleep kernel after each flush (new), the rows of a shape taking turns,
# into h200-l05q-2026-11-29; first the host's launch cost apart (--busy-us 0 and 100 at seq 512 and
# 2048, dim 128); then, if the time allows, the lessons phase into the same folder.
set -u
R=h200-l05q-2026-11-29; mkdir -p $OUT/logs $OUT/$R; exec > >(tee $OUT/logs/l05q-call.log) 2>&1
date; t0=$(date +%s)
export BUILD_DIR=build-gpu OUT PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
L=build-gpu/lib/libattn_lessons.so
for b in 0 100; do
  echo "==== --busy-us $b"
  python3 bench/lesson05_peers.py --lib $L --versions 5,6,13 --seqs 512,2048 --dims 128 --causal 0 --busy-us $b | grep -E '^l05 impl=|^timing'
done > /tmp/launch-cost.log 2>&1; echo "launch-cost $(( $(date +%s) - t0 )) s"
grep -E 'busy|cudnn|v5-|fp8x|v13' /tmp/launch-cost.log | cut -c1-150
RUN=$R LESSONS=5 timeout 330 scripts/gpu-suite.sh bench > /tmp/s5b.log 2>&1; echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|MISMATCH|gpu-suite:|rror" /tmp/s5b.log | tail -5
cp /tmp/launch-cost.log $OUT/$R/
{ nvidia-smi -q; nvcc --version; } > $OUT/$R/nvidia-smi-bench.txt 2>&1
left=$(( 520 - ($(date +%s) - t0) ))
if [ $left -gt 90 ]; then
  cp $OUT/$R/gpu-suite.log /tmp/bench-suite.log
  RUN=$R LESSONS=5 timeout $left scripts/gpu-suite.sh build lessons > /tmp/s5l.log 2>&1; echo "lessons rc $? $(( $(date +%s) - t0 )) s"
  grep -E "FAIL|gpu-suite:|rror" /tmp/s5l.log | tail -3
  mv $OUT/$R/gpu-suite.log $OUT/$R/gpu-suite-lessons.log; cp /tmp/bench-suite.log $OUT/$R/gpu-suite.log
else echo "no time for the lessons phase ($left s)"; fi
cp .gpu/l15/call-l05q.sh $OUT/$R/
cd $OUT && tar czf all.tgz $R logs && rm -rf $R && echo packed
