#!/usr/bin/env bash
# 16k only: is the causal order's loss there real or run-to-run spread? Order of variants rotated
# each round; 8 rounds; --iters 40.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/bcap-time2.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
B=$R/build-ab9; W=$R/build-w9; O=$R/build-o9
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || exit 1
build() { cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75" ; }
build; mkdir -p $O/tree; cp $B/bin/lesson-9 $O/tree/
for v in bord2 bcap; do cp $R/.gpu/$v/v7_bulk_dq.cu lessons/09_backward/v7_bulk_dq.cu; build; mkdir -p $O/$v; cp $B/bin/lesson-9 $O/$v/; done
echo "built $(( $(date +%s) - t0 )) s"
orders=("tree bord2 bcap" "bord2 bcap tree" "bcap tree bord2")
for r in 1 2 3 4 5 6 7 8; do for s in "--batch 1 --seq 16384" "--batch 2 --seq 16384" "--batch 1 --seq 12000"; do
  for v in ${orders[$((r % 3))]}; do echo "r$r [$s] $v: $($O/$v/lesson-9 7 $s --dim 128 --causal --no-check --iters 40 2>&1 | grep bulkdq | head -1)"; done; done; done
echo "all $(( $(date +%s) - t0 )) s"
