#!/usr/bin/env bash
# Call B: lesson 09's bench, its timing part, as processes of their own (as
# many as fit; call C runs the rest), each process's CSV kept for bench/peers_median.py.
set -u
D=$OUT/h200-l09v-2026-11-29; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/call-b.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export BUILD_DIR=build-gpu OUT PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 300 cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
for p in ${PROCS:-1 2}; do
  left=$(( 570 - ($(date +%s) - t0) )); [ $left -lt 200 ] && { echo "process $p: not enough time ($left s)"; break; }
  PYTHONUNBUFFERED=1 timeout $left python3 bench/lesson09_peers.py --lib build-gpu/lib/libattn_lessons.so --timing-only --out /tmp/p9-$p > $D/bench-p$p.log 2>&1
  echo "bench process $p rc $? $(( $(date +%s) - t0 )) s"
  cp /tmp/p9-$p/peers-lesson09.csv $D/peers-lesson09-p$p.csv
  grep -E "MISMATCH|rror" $D/bench-p$p.log | head -3
done
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi.txt 2>&1
cp .gpu/l19/call-b.sh $D/
echo "all $(( $(date +%s) - t0 )) s"
cp $OUT/logs/call-b.log $D/ 2>/dev/null
tar czf $OUT/all.tgz -C $OUT h200-l09v-2026-11-29 logs && rm -rf $D $OUT/logs
