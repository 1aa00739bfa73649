#!/usr/bin/env bash
# Where between 1k and 2k does lesson 09's causal order start to pay? Time only: the tree
# (WG_ORDER_MIN_TILES 16) against the same kernel with the order on from 1 KV tile (on1), causal
# dim 128 and 64 at seq 512, 1024, 1536, 2048, 3 rounds taking turns.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/order-edge.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
B=$R/build-ab9; W=$R/build-w9; O=$R/build-o9
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || exit 1
build() { cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75" ; }
build; mkdir -p $O/tree; cp $B/bin/lesson-9 $O/tree/
sed -i 's/^#define WG_ORDER_MIN_TILES 16/#define WG_ORDER_MIN_TILES 1/' lessons/09_backward/v7_bulk_dq.cu
grep -q "WG_ORDER_MIN_TILES 1$" lessons/09_backward/v7_bulk_dq.cu || { echo "sed failed"; exit 1; }
build; mkdir -p $O/on1; cp $B/bin/lesson-9 $O/on1/
echo "built $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do for s in "--batch 32 --seq 512 --dim 128" "--batch 16 --seq 1024 --dim 128" "--batch 10 --seq 1536 --dim 128" "--batch 8 --seq 2048 --dim 128" "--batch 32 --seq 512 --dim 64 --heads 32" "--batch 16 --seq 1024 --dim 64 --heads 32" "--batch 10 --seq 1536 --dim 64 --heads 32" "--batch 8 --seq 2048 --dim 64 --heads 32"; do
  for v in $( [ $((r % 2)) = 1 ] && echo "tree on1" || echo "on1 tree"); do echo "r$r [$s] $v: $($O/$v/lesson-9 7 $s --causal --no-check --iters 30 2>&1 | grep bulkdq | head -1)"; done; done; done
echo "all $(( $(date +%s) - t0 )) s"
