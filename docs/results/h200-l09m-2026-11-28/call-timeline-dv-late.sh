#!/usr/bin/env bash
# Cycle stamps (clock64) of lesson 09 version 7 (tree) and the producer-warpgroup variant pw13:
# two blocks, steps 0-63, batch 1, 16 heads, seq 16384, dim 128, no mask; the third launch.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/tl-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=$R/build-ab9; W=$R/build-w9; O=$R/build-o9
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || exit 1
build() { cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75" ; }
for v in tree_tl dvlate_tl; do
  cp $R/.gpu/tl/$v.cu lessons/09_backward/v7_bulk_dq.cu; build; mkdir -p $O/$v; cp $B/bin/lesson-9 $O/$v/
done
echo "built $(( $(date +%s) - t0 )) s"
for v in tree_tl dvlate_tl; do
  for s in "--batch 1 --seq 16384"; do
    n=$(echo "$s" | tr -d ' -'); 
    PW_TL=1 $O/$v/lesson-9 7 $s --dim 128 --no-check --iters 3 --warmup 0 2> $L/$v-$n.tl > $L/$v-$n.out
    echo "$v [$s]: $(grep -c '^TL' $L/$v-$n.tl) stamps; $(grep bulkdq $L/$v-$n.out | head -1)"
  done
done
cd $L && tar czf tl.tgz *.tl && rm -f *.tl; ls -la $L
echo "all $(( $(date +%s) - t0 )) s"
