#!/usr/bin/env bash
# Lesson 10 version 4 with S of tile t issued beside P V of tile t - 1 (the softmax under the
# warpgroup's own P V), against the tree: build both, where ptxas put the waits, checks on awkward
# shapes, the two builds taking turns on draft and cascade steps, then the GPU suite's wgmma,
# cascade and graph cases on the new build.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W=$R/build-wv; B=$R/build-bv; O=$R/build-ov
rm -rf $W $O; mkdir -p $O/new $O/old $W && (git ls-files -z | xargs -0 cp --parents -t $W)
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cd $W; git init -q .
exec > >(tee $L/v4-overlap-b.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; tail $L/cmake.log; exit 1; }
cmake --build $B -j 16 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"
cp $B/bin/lesson-10 $O/new/
git apply -R $R/.gpu/ovl/ovl.patch || { echo "patch -R failed"; exit 1; }
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75"
cp $B/bin/lesson-10 $O/old/
git apply $R/.gpu/ovl/ovl.patch || { echo "patch failed"; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
echo "== where ptxas put the waits (new, then old)"
bash scripts/check-wait-placement.sh $O/new/lesson-10 "l10_wg(_pair)?_kernel_d(64|128|256)"
bash scripts/check-wait-placement.sh $O/old/lesson-10 "l10_wg(_pair)?_kernel_d(64|128|256)" | tail -1
cuobjdump -res-usage $O/new/lesson-10 2>/dev/null | grep -A1 "l10_wg" | grep -oE "Function [a-z0-9_]+|REG:[0-9]+|STACK:[0-9]+|LOCAL:[0-9]+" | paste - - - - 
echo "== checks on awkward shapes (new; versions 7 draft-wgmma and 4 cascade)"
P=$O/new/lesson-10
for s in "--batch 3 --kv-seq 1 --seq 1" "--batch 4 --kv-seq 777 --seq 16 --causal" \
         "--batch 2 --kv-seq 2049 --seq 12 --dim 64 --causal" "--batch 3 --kv-seq 70 --seq 16 --dim 256 --causal"; do
  echo "[$s] $($P 7 $s --check-only 2>&1 | grep -E '^ *7 |rror' | head -2 | tr -s ' ')"
done
for s in "--batch 6 --kv-seq 3000 --seq 5 --causal"; do
  echo "[$s] $($P 4 $s --check-only 2>&1 | grep -E '^ *4 |rror' | head -2 | tr -s ' ')"
done
echo "checked $(( $(date +%s) - t0 )) s"
echo "== new against old, two rounds taking turns (version, name, dtype, check, -, -, ms, ...)"
for r in 1 2; do
  for vs in "7|--seq 8 --causal" "7|--heads 32 --kv-heads 4 --seq 16" "7|--batch 16 --kv-seq 8192 --seq 16 --causal" \
            "7|--batch 16 --kv-seq 32768 --seq 16 --dim 256 --causal" \
            "4|--batch 32 --kv-seq 33792 --seq 1" "4|--batch 32 --kv-seq 33792 --seq 4 --causal" "4|--batch 32 --kv-seq 33792 --seq 1 --dim 64" \
            "4|--batch 32 --kv-seq 9216 --seq 1" "4|--batch 16 --kv-seq 8192"; do
    v=${vs%%|*}; s=${vs#*|}
    line="r$r v$v [$s]"
    for b in $( [ $r = 1 ] && echo "old new" || echo "new old"); do
      line="$line $b $($O/$b/lesson-10 $v $s --no-check --iters 30 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ')"
    done
    echo "$line"
  done
done
echo "timed $(( $(date +%s) - t0 )) s"
echo "all $(( $(date +%s) - t0 )) s"
cd $R; rm -rf $W $B $O
