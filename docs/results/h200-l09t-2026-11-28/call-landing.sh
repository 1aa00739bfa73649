#!/usr/bin/env bash
# Landing call for lesson 09 version 7's causal order under GQA (KV tiles x dim x group >= 4096):
# the GPU suite, awkward GQA shapes with the order newly on, the three sanitizers on one of them,
# held-out shapes timed against the rule before (3 rounds taking turns), then the sanitize phase
# of scripts/gpu-suite.sh for lesson 09 (RUN names its folder).
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W=$R/build-wg; B=$R/build-bg; O=$R/build-og
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cp -r .carry $W/ 2>/dev/null
cd $W
exec > >(tee $L/gqa-order-landing.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; tail $L/cmake.log; exit 1; }
grep -i "check" $L/cmake.log | head -3
cmake --build $B -j 16 --target lesson-9 test_lesson09_gpu 2>&1 | grep -E "error|C75"
mkdir -p $O/new; cp $B/bin/lesson-9 $O/new/
cp lessons/09_backward/v7_bulk_dq.cu $O/v7-new.cu
git -C $R show HEAD:lessons/09_backward/v7_bulk_dq.cu > lessons/09_backward/v7_bulk_dq.cu
grep -q "WG_ORDER_GQA_TILES" lessons/09_backward/v7_bulk_dq.cu && { echo "old source has the new rule"; exit 1; }
cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75"
mkdir -p $O/old; cp $B/bin/lesson-9 $O/old/
cp $O/v7-new.cu lessons/09_backward/v7_bulk_dq.cu
echo "built $(( $(date +%s) - t0 )) s"
echo "== test_lesson09_gpu"; $B/bin/test_lesson09_gpu 2>&1 | grep -E "^[0-9]+%|Checks|FAIL|Error" | tail -5
echo "== awkward GQA shapes, order newly on (version 7 checked)"
for s in "--batch 25 --seq 517 --heads 16 --kv-heads 2 --dim 128" "--batch 40 --seq 300 --kv-seq 600 --heads 16 --kv-heads 1 --dim 64" \
         "--batch 20 --seq 900 --kv-seq 450 --heads 24 --kv-heads 3 --dim 128" "--batch 2 --seq 1 --kv-seq 1000 --heads 8 --kv-heads 1 --dim 128" \
         "--batch 2 --seq 1000 --heads 32 --kv-heads 4 --dim 64" "--batch 1 --seq 700 --kv-seq 1100 --heads 16 --kv-heads 2 --dim 128"; do
  echo "[$s] $($O/new/lesson-9 7 $s --causal --check-only 2>&1 | grep -E 'bulkdq|rror' | head -2)"
done
echo "== sanitizers, batch 1, 600 queries over 1000 keys, 8/1 heads, dim 128, causal (order on)"
for t in memcheck racecheck synccheck; do
  echo "$t: $(timeout 200 compute-sanitizer --tool $t $O/new/lesson-9 7 --batch 1 --seq 600 --kv-seq 1000 --heads 8 --kv-heads 1 --dim 128 --causal --check-only 2>&1 | grep -E 'SUMMARY|bulkdq' | tr '\n' ' ')"
done
echo "== held-out shapes: new (the group rule) against old (the rule before)"
for r in 1 2 3; do
  for s in "--batch 20 --seq 640 --dim 128 --heads 16 --kv-heads 2" "--batch 10 --seq 768 --dim 64 --heads 32 --kv-heads 4" \
           "--batch 16 --seq 512 --dim 128 --heads 24 --kv-heads 3" "--batch 10 --seq 640 --dim 128 --heads 16 --kv-heads 4" \
           "--batch 24 --seq 1024 --dim 128 --heads 16 --kv-heads 4" "--batch 12 --seq 1152 --dim 64 --heads 32 --kv-heads 8" \
           "--batch 12 --seq 1100 --dim 128 --heads 32 --kv-heads 8" "--batch 21 --seq 768 --dim 128 --heads 32 --kv-heads 4" \
           "--batch 16 --seq 2048 --dim 64 --heads 32 --kv-heads 4"; do
    for v in $( [ $((r % 2)) = 1 ] && echo "old new" || echo "new old"); do
      echo "r$r [$s] $v: $($O/$v/lesson-9 7 $s --causal --no-check --iters 30 2>&1 | grep bulkdq | head -1)"
    done
  done
done
echo "timed $(( $(date +%s) - t0 )) s"
[ -n "${RUN:-}" ] && BUILD_DIR=$B OUT=$OUT LESSONS=9 SAN_TIMEOUT=400 timeout $(( 590 - ($(date +%s) - t0) )) bash scripts/gpu-suite.sh sanitize 2>&1 | tail -12
echo "all $(( $(date +%s) - t0 )) s"
cd $R; rm -rf $W $B $O
