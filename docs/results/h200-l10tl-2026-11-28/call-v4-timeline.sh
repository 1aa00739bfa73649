#!/usr/bin/env bash
# Version 4's tile, event by event (L10_WG_TIMELINE, docs/results/h200-l10tl-2026-11-28/v4-timeline.patch applied first):
# where a tile's cycles go at the steps where FP8 did not pay.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W=$R/build-w8; B=$R/build-c8
rm -rf $W; mkdir -p $W && (git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t $W)
cd $W && git init -q . && git apply $R/docs/results/h200-l10tl-2026-11-28/v4-timeline.patch || { echo "patch failed"; exit 1; }
exec > >(tee $L/v4-timeline.log) 2>&1
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 -DCMAKE_CUDA_FLAGS=-DL10_WG_TIMELINE -DCMAKE_C_FLAGS=-DL10_WG_TIMELINE > $L/cmake.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75|spill"
echo "built $(el) s"
for s in "" "--seq 1" "--seq 16" "--batch 16 --kv-seq 8192" "--batch 64 --kv-seq 8192" "--dim 64"; do
  echo "[$s] $(L10_WG_TL=1 $B/bin/lesson-10 7 $s --no-check --iters 3 2>&1 | grep -E 'wg timeline|^ *7 ' | tr -s ' ' | tr '\n' ' ')"
done
echo "all $(el) s"
cd $R; rm -rf $W $B
