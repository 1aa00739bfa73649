#!/usr/bin/env bash
# Dim 256 at batch 64, 4k keys: why one token is slower than eight (versions 1 and 4), per kernel.
set -u
L=$OUT/logs; mkdir -p $L; B=/tmp/b10
exec > >(tee $L/d256-call1.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
P=$B/bin/lesson-10
for d in 256 128; do for T in 1 2 4 8; do
  echo "== dim $d tokens $T: $($P 7 --batch 64 --seq $T --kv-seq 4096 --dim $d --no-check --iters 30 2>&1 | grep -E "draft-wgmma|plan|items|chunk" | tr -s ' ' | tr '\n' '|')"
done; done
echo "== v1 dim 256 tokens 1: $($P 1 --batch 64 --seq 1 --kv-seq 4096 --dim 256 --no-check --iters 30 2>&1 | grep -E "draft-tiles" | tr -s ' ')"
for T in 1 8; do
  echo "== ncu dim 256 tokens $T"
  timeout 120 ncu --metrics gpu__time_duration.sum,launch__grid_size,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    $P 7 --batch 64 --seq $T --kv-seq 4096 --dim 256 --no-check --iters 1 --warmup 0 2>&1 | grep -E "^  [a-z_0-9]+.*\(|gpu__time|launch__grid|dram__|sm__thr" | head -40
done
echo "all $(( $(date +%s) - t0 )) s"
