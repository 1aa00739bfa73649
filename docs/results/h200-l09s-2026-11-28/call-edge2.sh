#!/usr/bin/env bash
# Lesson 09's causal order against no order (the order before) where the tree's threshold decides:
# dim 64 at seq 2048-8192 (the tree has the order on from 16 KV tiles) and dim 128 at 1280-1792
# (10-14 tiles: the tree has it off). Time only, 3 rounds taking turns.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/order-edge2.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
B=$R/build-ab9; W=$R/build-w9; O=$R/build-o9
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || exit 1
build() { cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75" ; }
build; mkdir -p $O/tree; cp $B/bin/lesson-9 $O/tree/
for t in 1 1000000; do
  sed -i "s/^#define WG_ORDER_MIN_TILES [0-9]*/#define WG_ORDER_MIN_TILES $t/" lessons/09_backward/v7_bulk_dq.cu
  grep -q "WG_ORDER_MIN_TILES $t\$" lessons/09_backward/v7_bulk_dq.cu || { echo "sed failed"; exit 1; }
  build; mkdir -p $O/min$t; cp $B/bin/lesson-9 $O/min$t/
done
mv $O/min1 $O/on; mv $O/min1000000 $O/off
echo "built $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do for s in "--batch 8 --seq 2048 --dim 64 --heads 32" "--batch 5 --seq 3072 --dim 64 --heads 32" "--batch 4 --seq 4096 --dim 64 --heads 32" "--batch 2 --seq 8192 --dim 64 --heads 32" "--batch 12 --seq 1280 --dim 128" "--batch 10 --seq 1536 --dim 128" "--batch 9 --seq 1792 --dim 128" "--batch 8 --seq 2048 --dim 128"; do
  for v in $( [ $((r % 2)) = 1 ] && echo "off tree on" || echo "on tree off"); do echo "r$r [$s] $v: $($O/$v/lesson-9 7 $s --causal --no-check --iters 30 2>&1 | grep bulkdq | head -1)"; done; done; done
echo "all $(( $(date +%s) - t0 )) s"
