#!/usr/bin/env bash
# Lesson 05 version 5 without the mask at seq 16k-32k: heads in pairs (FA_HEAD_GROUP 2) against the
# tree (1), 8 rounds taking turns.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W=$R/build-wx; B=$R/build-bx; O=$R/build-ox
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; git init -q .
exec > >(tee $L/head-group-16k.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || { echo cmake failed; exit 1; }
git apply $R/.gpu/ilv/head-group.patch || { echo patch failed; exit 1; }
for g in 1 2; do
  sed -i "s/^#define FA_HEAD_GROUP [0-9]*/#define FA_HEAD_GROUP $g/" lessons/05_fa3_hopper/v5_overlap.cu
  grep -q "^#define FA_HEAD_GROUP $g\$" lessons/05_fa3_hopper/v5_overlap.cu || { echo sed failed; exit 1; }
  cmake --build $B -j 16 --target lesson-5 2>&1 | grep -E "error|C75"
  mkdir -p $O/g$g; cp $B/bin/lesson-5 $O/g$g/
done
echo "built $(( $(date +%s) - t0 )) s"
for r in 1 2 3 4 5 6 7 8; do
  for s in "--batch 1 --seq 16384 --heads 16" "--batch 2 --seq 16384 --heads 16" "--batch 1 --seq 16384 --heads 32 --kv-heads 4" "--batch 1 --seq 32768 --heads 16"; do
    for g in $( [ $((r % 2)) = 1 ] && echo "1 2" || echo "2 1"); do
      echo "r$r [$s] g$g: $($O/g$g/lesson-5 5 $s --dim 128 --no-check --iters 10 2>&1 | grep -E '^ *5 ' | head -1)"
    done
  done
done
echo "all $(( $(date +%s) - t0 )) s"
cd $R; rm -rf $W $B $O
