#!/usr/bin/env bash
# Version 3's prefix pass on lesson 05's version 5 (prefill.cu), the landing call: build the tree
# and the change, the GPU suite's cascade case, checks on awkward shapes, the five cascade shapes
# taking turns, the sanitizers, lesson 05's version 5 against itself before overlap_turns().
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W=$R/build-wp; B=$R/build-bp; O=$R/build-op
rm -rf $W $O; mkdir -p $O/new $O/old $W && (git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t $W)
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cd $W; git init -q .
exec > >(tee $L/prefill-experiment.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; tail $L/cmake.log; exit 1; }
cmake --build $B -j 16 --target lesson-10 lesson-5 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill|warning"
cp $B/bin/lesson-10 $B/bin/lesson-5 $O/new/
git apply -R $R/.gpu/pf/pf.patch || { echo "patch -R failed"; exit 1; }
cmake --build $B -j 16 --target lesson-10 lesson-5 2>&1 | grep -E "error|C75"
cp $B/bin/lesson-10 $B/bin/lesson-5 $O/old/
git apply $R/.gpu/pf/pf.patch || { echo "patch failed"; exit 1; }
echo "built $(el) s"
P=$O/new/lesson-10
echo "== test_lesson10_gpu cascade: $(CK_RUN_CASE=cascade timeout 200 $B/bin/test_lesson10_gpu 2>&1 | grep -E 'cascade case|^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
echo "== checks (new)"
for vs in "4|--batch 6 --kv-seq 3000 --seq 5 --causal" "4|--batch 5 --kv-seq 2100 --seq 3 --dim 64 --heads 32 --kv-heads 4" "4|--batch 40 --kv-seq 1500 --seq 4 --heads 16 --kv-heads 1 --dim 64" "4|--batch 3 --kv-seq 1300 --seq 1 --block-size 256" "4|--batch 9 --kv-seq 5000 --seq 16 --block-size 8 --causal"; do
  v=${vs%%|*}; s=${vs#*|}; echo "v$v [$s] $($P $v $s --check-only 2>&1 | grep -E "^ *$v |rror|skip" | head -2 | tr -s ' ')"
done
echo "checked $(el) s"
SH=("4|--batch 32 --kv-seq 33792 --seq 1" "4|--batch 32 --kv-seq 33792 --seq 4 --causal" "4|--batch 32 --kv-seq 33792 --seq 1 --dim 64" "4|--batch 32 --kv-seq 9216 --seq 1" "4|--batch 16 --kv-seq 8192")
timing() { # round
  local r=$1
  for vs in "${SH[@]}"; do
    [ $(el) -gt $2 ] && { echo "stop timing at $(el) s"; return; }
    v=${vs%%|*}; s=${vs#*|}; line="r$r v$v [$s]"
    for b in $( [ $((r % 2)) = 1 ] && echo "old new" || echo "new old"); do
      line="$line $b $($O/$b/lesson-10 $v $s --no-check --iters 20 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ')"
    done
    echo "$line"
  done
}
echo "== new against old, taking turns (version, name, dtype, check, -, -, ms, ...)"
timing 1 300
echo "timed $(el) s"
for t in racecheck synccheck; do
  [ $(el) -gt 380 ] && break
  echo "$t: $(timeout 90 compute-sanitizer --tool $t $P 4 --batch 6 --kv-seq 1200 --seq 5 --causal --check-only 2>&1 | grep -E 'SUMMARY|cascade' | tr -s ' ' | tr '\n' ' ') $(el) s"
done
[ $(el) -lt 420 ] && echo "memcheck test: $(ATTN_TEST_SANITIZER=1 CK_RUN_CASE=cascade timeout 100 compute-sanitizer --tool memcheck $B/bin/test_lesson10_gpu 2>&1 | grep -E 'SUMMARY|^[0-9]+%' | tr '\n' ' ') $(el) s"
echo "== lesson 05 version 5 (overlap_turns() a function now), new against old"
for r in 1 2; do for s in "" "--dim 64 --heads 32"; do
  [ $(el) -gt 500 ] && break 2
  line="r$r [$s]"; for b in $( [ $r = 1 ] && echo "old new" || echo "new old"); do line="$line $b $($O/$b/lesson-5 5 $s --no-check --iters 30 2>&1 | grep -E '^ *5 ' | head -1 | tr -s ' ')"; done; echo "$line"; done; done
timing 2 540
echo "all $(el) s"
cd $R; rm -rf $W $B $O
