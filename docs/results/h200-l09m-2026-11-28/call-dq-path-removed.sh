#!/usr/bin/env bash
# Time only (dQ wrong in the variants): version 7 with the dQ staging stores left out, with the
# reductions left out, and with both, against the tree; dim 128, two rounds taking turns.
set -u
VS=${VS:-nostage noreduce nodq}
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/smem-time.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=$R/build-ab9; W=$R/build-w9; O=$R/build-o9
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || exit 1
build() { cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75" ; }
build; mkdir -p $O/tree; cp $B/bin/lesson-9 $O/tree/
for v in $VS; do cp $R/.gpu/$v/v7_bulk_dq.cu lessons/09_backward/v7_bulk_dq.cu; build; mkdir -p $O/$v; cp $B/bin/lesson-9 $O/$v/; done
echo "built $(( $(date +%s) - t0 )) s"
l9time() { $1/lesson-9 7 $2 --no-check --iters 20 2>&1 | grep -E "bulkdq" | head -1; }
for r in 1 2; do
  for s in "--batch 1 --seq 16384" "--batch 2 --seq 8192" "" "--causal" "--batch 8 --seq 2048"; do
    for v in tree $VS; do echo "r$r [$s] $v: $(l9time $O/$v "$s")"; done
  done
done
echo "time $(( $(date +%s) - t0 )) s"
