#!/usr/bin/env bash
# Time only (checks ran on bord2 in h200-l09o): lesson 09 v7 tree vs bord2 (groups of two waves) vs
# bcap (the same, capped by L2), causal dim 128 at 4k, 8k, 16k, three rounds.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/bcap-time.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
B=$R/build-ab9; W=$R/build-w9; O=$R/build-o9
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || exit 1
build() { cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75" ; }
build; mkdir -p $O/tree; cp $B/bin/lesson-9 $O/tree/
for v in bord2 bcap; do cp $R/.gpu/$v/v7_bulk_dq.cu lessons/09_backward/v7_bulk_dq.cu; build; mkdir -p $O/$v; cp $B/bin/lesson-9 $O/$v/; done
echo "built $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do for s in "--batch 4 --seq 4096" "--batch 2 --seq 8192" "--batch 1 --seq 16384"; do
  for v in tree bord2 bcap; do echo "r$r [$s] $v: $($O/$v/lesson-9 7 $s --dim 128 --causal --no-check --iters 20 2>&1 | grep bulkdq | head -1)"; done; done; done
echo "all $(( $(date +%s) - t0 )) s"
