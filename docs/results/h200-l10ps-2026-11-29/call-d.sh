#!/usr/bin/env bash
# Call D: the cascade's prefix pass on a share of lesson 05's slots, swept inside one process per
# step (pfsweep.patch: each share timed in rounds taking turns, 8 launches a visit, not in the tree).
set -u
X=$OUT/pfsweep; mkdir -p $X
exec > >(tee $X/pfsweep-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
patch -p1 < .gpu/l19/pfsweep.patch > /dev/null || { echo "patch failed"; exit 1; }
timeout 250 cmake --build build-gpu -j 16 --target lesson-10 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
patch -R -p1 < .gpu/l19/pfsweep.patch > /dev/null
B=build-gpu/bin/lesson-10
for vs in "100,70,60,55,50,45,40,30|--batch 32 --kv-seq 33792 --seq 1" \
          "100,80,70,60,50,40,30|--batch 32 --kv-seq 33792 --seq 1 --dim 64" \
          "100,70,60,50,40,30,20|--batch 32 --kv-seq 9216 --seq 1" \
          "100,90,80,70,65,60,55,50|--batch 32 --kv-seq 33792 --seq 2 --causal" \
          "100,90,80,75,70,65|--batch 32 --kv-seq 33792 --seq 4 --causal" \
          "100,80,70,60,50,40,30|--batch 16 --kv-seq 8192 --seq 8 --causal" \
          "100,90,80,75,70,60|--batch 32 --kv-seq 33792 --seq 4 --causal --dim 64"; do
  ps=${vs%%|*}; s=${vs#*|}
  [ $(( $(date +%s) - t0 )) -gt 400 ] && { echo "[$s] stop: time"; break; }
  echo "#### [$s] shares $ps"
  L10_PF_SWEEP=$ps timeout 60 $B 4 $s --no-check --iters 5 2>&1 | grep -E "sweep|^ *4 |rror"
  echo "  ($(( $(date +%s) - t0 )) s)"
done
cp .gpu/l19/call-d.sh .gpu/l19/pfsweep.patch $X/
echo "all $(( $(date +%s) - t0 )) s"
