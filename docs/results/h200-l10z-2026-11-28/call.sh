#!/usr/bin/env bash
# Lesson 10 version 2 (FP8 cache) with one token: the chunks a sequence forced (L10_SPLITS) against
# the plan's choice, beside version 1's default; two rounds.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W=$R/build-wx; B=$R/build-bx
rm -rf $W; mkdir -p $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; git init -q .
exec > >(tee $L/fp8-splits.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || { echo cmake failed; exit 1; }
git apply $R/.gpu/splits/splits.patch || { echo patch failed; exit 1; }
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75"
echo "built $(( $(date +%s) - t0 )) s"
P=$B/bin/lesson-10
for r in 1 2; do
  for s in "--batch 64 --kv-seq 8192" "--batch 16 --kv-seq 8192" "--batch 64 --kv-seq 4096" "--batch 16 --kv-seq 32768"; do
    echo "r$r [$s] v1: $($P 1 $s --seq 1 --no-check --iters 30 2>&1 | grep -E '^ *1 ' | head -1)"
    for k in 0 1 2 3 4 6; do
      echo "r$r [$s] v2 splits $k: $(L10_SPLITS=$k $P 3 $s --seq 1 --no-check --iters 30 2>&1 | grep -E '^ *3 ' | head -1)"
    done
  done
done
echo "all $(( $(date +%s) - t0 )) s"
cd $R; rm -rf $W $B
