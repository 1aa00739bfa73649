#!/usr/bin/env bash
# Lesson 10 version 4, form D: K of tile t + 2 copied at the top of tile t, its V once the P V of
# tile t - 1 (issued beside S_t) is done; the softmax of S_t under that P V. Against the tree:
# wait placement, checks, the two builds taking turns, then the GPU suite's wgmma and cascade
# cases and racecheck on a small step, as far as the call's time allows.
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
exec > >(tee $L/v4-overlap-d.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; tail $L/cmake.log; exit 1; }
cmake --build $B -j 16 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"
cp $B/bin/lesson-10 $O/new/
git apply -R $R/.gpu/ovl/ovl.patch || { echo "patch -R failed"; exit 1; }
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75"
cp $B/bin/lesson-10 $O/old/
git apply $R/.gpu/ovl/ovl.patch || { echo "patch failed"; exit 1; }
echo "built $(el) s"
echo "== where ptxas put the waits (new)"
bash scripts/check-wait-placement.sh $O/new/lesson-10 "l10_wg(_pair)?_kernel_d(64|128|256)"
P=$O/new/lesson-10
echo "== checks (new)"
for vs in "7|--batch 4 --kv-seq 777 --seq 16 --causal" "7|--batch 3 --kv-seq 70 --seq 16 --dim 256 --causal" "7|--batch 2 --kv-seq 2049 --seq 12 --dim 64 --causal" "4|--batch 6 --kv-seq 3000 --seq 5 --causal"; do
  v=${vs%%|*}; s=${vs#*|}; echo "v$v [$s] $($P $v $s --check-only 2>&1 | grep -E "^ *$v |rror" | head -2 | tr -s ' ')"
done
echo "checked $(el) s"
echo "== new against old, taking turns (version, name, dtype, check, -, -, ms, ...)"
for r in 1 2; do
  for vs in "4|--batch 32 --kv-seq 33792 --seq 1" "4|--batch 32 --kv-seq 33792 --seq 4 --causal" "4|--batch 32 --kv-seq 9216 --seq 1" "4|--batch 16 --kv-seq 8192" \
            "7|--heads 32 --kv-heads 4 --seq 16" "7|--seq 8 --causal" "7|--batch 16 --kv-seq 8192 --seq 16 --causal" "7|--batch 16 --kv-seq 32768 --seq 16 --dim 256 --causal"; do
    [ $(el) -gt 400 ] && { echo "stop timing at $(el) s"; break 2; }
    v=${vs%%|*}; s=${vs#*|}; line="r$r v$v [$s]"
    for b in $( [ $r = 1 ] && echo "old new" || echo "new old"); do
      line="$line $b $($O/$b/lesson-10 $v $s --no-check --iters 30 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ')"
    done
    echo "$line"
  done
done
echo "timed $(el) s"
for c in wgmma cascade; do
  [ $(el) -gt 470 ] && break
  echo "== test_lesson10_gpu $c: $(CK_RUN_CASE=$c timeout $(( 530 - $(el) )) $B/bin/test_lesson10_gpu 2>&1 | grep -E '^[0-9]+%|FAIL|Error' | tail -3 | tr '\n' ' ') $(el) s"
done
for t in racecheck synccheck memcheck; do
  [ $(el) -gt 520 ] && break
  echo "$t: $(timeout $(( 560 - $(el) )) compute-sanitizer --tool $t $P 7 --batch 2 --kv-seq 300 --seq 16 --causal --check-only 2>&1 | grep -E 'SUMMARY|draft-wgmma' | tr -s ' ' | tr '\n' ' ') $(el) s"
done
echo "all $(el) s"
cd $R; rm -rf $W $B $O
