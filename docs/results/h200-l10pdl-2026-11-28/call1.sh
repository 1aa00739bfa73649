#!/usr/bin/env bash
# Version 3 with its passes chained as programmatic dependent launches (prefix pass, then the suffix
# pass beside it, then the merge): the GPU suite's cascade, wgmma, graph and serve cases, the three
# sanitizers on the cascade case, then the tree and the change timed in turns at the cascade shapes.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
B1=$R/build-new; W0=/tmp/w0; B0=/tmp/build-tree
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/pdl-call1.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
git log --oneline -1; git status --short | head
rm -rf $W0; mkdir -p $W0; git archive HEAD | tar -x -C $W0
( cmake -S $W0 -B $B0 -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake0.log 2>&1 && cmake --build $B0 -j 8 --target lesson-10 > $L/build0.log 2>&1 ) & p0=$!
cmake -S . -B $B1 -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake1.log 2>&1 || { echo cmake failed; tail $L/cmake1.log; exit 1; }
cmake --build $B1 -j 8 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"
wait $p0; ls -la $B0/bin/lesson-10 $B1/bin/lesson-10; echo "built $(el) s"
tm() { # one round of the cascade shapes, the tree then the change
  for S in "--batch 32 --kv-seq 33792 --seq 1" "--batch 32 --kv-seq 33792 --seq 4 --causal" "--batch 16 --kv-seq 8192 --seq 8"; do
    [ $(el) -gt $2 ] && break
    for v in tree new; do
      b=$B1; [ $v = tree ] && b=$B0
      echo "r$1 $v [$S] $($b/bin/lesson-10 4 $S --no-check --iters 30 2>&1 | grep -E '^ *4 ' | tr -s ' ') ($(el) s)"
    done
  done
}
echo "== test_lesson10_gpu cascade: $(CK_RUN_CASE=cascade timeout 120 $B1/bin/test_lesson10_gpu 2>&1 | grep -E '^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
tm 1 300
echo "== test_lesson10_gpu wgmma: $(CK_RUN_CASE=wgmma timeout 120 $B1/bin/test_lesson10_gpu 2>&1 | grep -E '^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
for tool in racecheck synccheck memcheck; do
  [ $(el) -gt 440 ] && { echo "skip $tool: time"; continue; }
  echo "== $tool cascade: $(ATTN_TEST_SANITIZER=1 CK_RUN_CASE=cascade timeout 100 compute-sanitizer --tool $tool $B1/bin/test_lesson10_gpu 2>&1 | grep -E 'SUMMARY|^[0-9]+%|FAIL' | tr '\n' ' ') $(el) s"
done
tm 2 500
echo "all $(el) s"
rm -rf $B1 $B0 $W0
