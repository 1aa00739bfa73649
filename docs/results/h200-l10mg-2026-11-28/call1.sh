#!/usr/bin/env bash
# The merge kernel in one round (l10_merge_lanes() threads a float4) with and without the main
# kernels' early trigger, against the tree: builds, checks at the merge's shapes, then the three
# builds timed in turns (lesson-10 V SHAPE --no-check --iters 30).
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W0=/tmp/w0; B0=/tmp/b-tree; B1=/tmp/b-lanes; B2=/tmp/b-both
exec > >(tee $L/mg-call1.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
git log --oneline -1; git status --short | head
rm -rf $W0; mkdir -p $W0; git archive HEAD | tar -x -C $W0
( cmake -S $W0 -B $B0 -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake0.log 2>&1 && cmake --build $B0 -j 5 --target lesson-10 > $L/build0.log 2>&1 ) & p0=$!
( cmake -S . -B $B1 -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 -DCMAKE_CUDA_FLAGS=-DL10_NO_TRIGGER > $L/cmake1.log 2>&1 && cmake --build $B1 -j 5 --target lesson-10 > $L/build1.log 2>&1 ) & p1=$!
cmake -S . -B $B2 -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake2.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B2 -j 6 --target lesson-10 2>&1 | grep -E "error|C75|spill"
wait $p0; wait $p1; ls -la $B0/bin/lesson-10 $B1/bin/lesson-10 $B2/bin/lesson-10; echo "built $(el) s"
grep -c L10_NO_TRIGGER $B1/CMakeCache.txt
SH=("--batch 1 --seq 8 --kv-seq 32768" "--batch 1 --seq 8 --kv-seq 131072" "--batch 1 --seq 8 --kv-seq 4096" "--batch 1 --seq 16 --kv-seq 32768" "--batch 1 --seq 8 --kv-seq 32768 --dim 64" "--batch 16 --seq 8 --kv-seq 32768" "--batch 1 --seq 1 --kv-seq 32768")
for S in "${SH[@]:0:6}"; do for v in 1 3 7; do
  echo "check both v$v [$S]: $($B2/bin/lesson-10 $v $S --check-only 2>&1 | grep -E "^ *$v " | tr -s ' ')"
done; done
echo "checked $(el) s"
tm() {
  for S in "${SH[@]}"; do for v in 7 1 3; do
    [ $(el) -gt $2 ] && return
    [ $v = 3 ] && [[ "$S" != "--batch 1 --seq 8 --kv-seq 32768" ]] && continue
    for b in tree lanes both; do
      echo "r$1 $b v$v [$S] $(/tmp/b-$b/bin/lesson-10 $v $S --no-check --iters 30 2>&1 | grep -E "^ *$v " | tr -s ' ') ($(el) s)"
    done
  done; done
}
tm 1 330
tm 2 560
echo "all $(el) s"
