#!/usr/bin/env bash
# Version 3's suffix pass merging the prefix's states into the rows of every sequence it does not
# cut (WG_PRE_KERNEL), the cascade merge kernel left only the cut ones: correctness (the GPU suite's
# cascade, wgmma and graph cases, the program's checks on awkward cascade steps, sanitizers), then
# the tree and the change timed in turns at the cascade shapes, lesson 07's kernel once.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W0=/tmp/w0; B0=/tmp/b-tree; B1=/tmp/b-new
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/pre-call3.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
git log --oneline -1; git status --short | head
rm -rf $W0; mkdir -p $W0; git archive HEAD | tar -x -C $W0
( cmake -S $W0 -B $B0 -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake0.log 2>&1 && cmake --build $B0 -j 6 --target lesson-10 > $L/build0.log 2>&1 ) & p0=$!
cmake -S . -B $B1 -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake1.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B1 -j 10 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"
wait $p0; ls -la $B0/bin/lesson-10 $B1/bin/lesson-10; echo "built $(el) s"
echo "== test_lesson10_gpu cascade: $(CK_RUN_CASE=cascade timeout 120 $B1/bin/test_lesson10_gpu 2>&1 | grep -E '^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
for S in "--batch 2 --kv-seq 40000 --seq 3 --causal" "--kv-lens 8192,3000x3 --seq 3 --causal" "--batch 5 --kv-seq 20000 --seq 8 --dim 64" "--batch 32 --kv-seq 33792 --seq 1 --kv-heads 4" "--batch 6 --kv-seq 5000 --seq 16 --causal --block-size 8"; do
  echo "check new v4 [$S]: $(timeout 90 $B1/bin/lesson-10 4 $S --check-only 2>&1 | grep -E '^ *4 |skipped|rror' | tr -s ' ' | head -3) ($(el) s)"
done
for tool in memcheck racecheck synccheck; do
  echo "== $tool cascade: $(ATTN_TEST_SANITIZER=1 CK_RUN_CASE=cascade timeout 60 compute-sanitizer --tool $tool $B1/bin/test_lesson10_gpu 2>&1 | grep -E 'SUMMARY|^[0-9]+%|FAIL' | tr '\n' ' ') $(el) s"
done
SH=("--batch 32 --kv-seq 33792 --seq 1" "--batch 16 --kv-seq 8192 --seq 8" "--batch 32 --kv-seq 33792 --seq 4 --causal" "--batch 32 --kv-seq 33792 --seq 1 --dim 64" "--batch 32 --kv-seq 9216 --seq 1")
tm() {
  for S in "${SH[@]}"; do
    [ $(el) -gt $2 ] && return
    for b in tree new; do
      echo "r$1 $b [$S] $(/tmp/b-$b/bin/lesson-10 4 $S --no-check --iters 30 2>&1 | grep -E '^ *4 ' | tr -s ' ') ($(el) s)"
    done
  done
}
tm 1 330
echo "== main shape checked (new): $($B1/bin/lesson-10 4 --batch 32 --kv-seq 33792 --seq 1 --iters 30 2>&1 | grep -E '^ *4 ' | tr -s ' ') ($(el) s)"
echo "== l07-forked main shape: $($B1/bin/lesson-10 6 --batch 32 --kv-seq 33792 --seq 1 --no-check --iters 30 2>&1 | grep -E '^ *6 ' | tr -s ' ') ($(el) s)"
echo "== default step v4 (plain kernel) tree: $($B0/bin/lesson-10 7 --no-check --iters 30 2>&1 | grep -E '^ *7 ' | tr -s ' ') new: $($B1/bin/lesson-10 7 --no-check --iters 30 2>&1 | grep -E '^ *7 ' | tr -s ' ')"
for c in wgmma graph; do
  [ $(el) -gt 470 ] && { echo "skip $c: time"; continue; }
  echo "== test_lesson10_gpu $c: $(CK_RUN_CASE=$c timeout 100 $B1/bin/test_lesson10_gpu 2>&1 | grep -E '^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
done
tm 2 560
echo "all $(el) s"
