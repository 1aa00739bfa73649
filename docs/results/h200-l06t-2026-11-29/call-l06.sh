#!/usr/bin/env bash
# Lesson 06's bench with a shape's implementations taking turns and the sleep kernel after each
# flush (the suite's bench phase, LESSONS="6"); then the host's launch cost apart: two short
# shapes with --rounds 1 or 5 and --busy-us 0 or 100. Packed into one tarball.
set -u
R=${R:-h200-l06t-2026-11-29}; mkdir -p $OUT/logs
exec > >(tee $OUT/logs/l06-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
export BUILD_DIR=build-gpu LESSONS="6" RUN=$R OUT
timeout 500 scripts/gpu-suite.sh bench > /tmp/suite.log 2>&1; echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|MISMATCH|gpu-suite:|rror" /tmp/suite.log | tail -8
for sh in "--dims 64 --kv-heads 8 --batches 32 --kvs 1024" "--dims 64 --kv-heads 32 --batches 8 --kvs 1024"; do
  for rb in "1 0" "5 0" "1 100" "5 100"; do set -- $rb
    echo "==== $sh --rounds $1 --busy-us $2"
    python3 bench/lesson06_peers.py --lib build-gpu/lib/libattn_lessons.so $sh --rounds $1 --busy-us $2 | grep 'impl=sdpa\|impl=v5'
  done
done > $OUT/$R/launch-cost.log 2>&1; echo "launch-cost $(( $(date +%s) - t0 )) s"; cat $OUT/$R/launch-cost.log
{ nvidia-smi -q; nvcc --version; } > $OUT/$R/nvidia-smi.txt 2>&1
cp .gpu/l15/call-l06.sh $OUT/$R/
cd $OUT && tar czf all.tgz $R logs && rm -rf $R && echo packed
