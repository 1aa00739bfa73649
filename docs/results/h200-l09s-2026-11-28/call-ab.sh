#!/usr/bin/env bash
# Lesson 09: the tree (causal order from 10 KV tiles x dim 128) against prev (from 16 KV tiles).
set -u
VS=${VS:-bwork/prev}; V=${V:-tree}
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/$V-ab.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=$R/build-ab9; W=$R/build-w9; O=$R/build-o9
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null || exit 1
build() { cmake --build $B -j 16 --target lesson-9 test_lesson09_gpu 2>&1 | grep -E "error|C75" ; }
save() { mkdir -p $O/$1;  cp $B/bin/lesson-9 $B/bin/test_lesson09_gpu $O/$1/; }
build; save tree
cp $R/.gpu/$VS/v7_bulk_dq.cu lessons/09_backward/v7_bulk_dq.cu; build; save prev; VS=prev
echo "built $(( $(date +%s) - t0 )) s"
$O/$V/test_lesson09_gpu 2>&1 | tail -2
for a in "--batch 1 --seq 1" "--batch 2 --seq 200 --heads 4 --kv-heads 1 --causal" "--batch 1 --seq 333 --kv-seq 1000" "--batch 3 --seq 777 --heads 8 --kv-heads 2" "--batch 1 --seq 1000 --kv-seq 333 --heads 4 --kv-heads 2" "--batch 2 --seq 4100 --heads 4 --kv-heads 2" "--batch 3 --seq 2100 --kv-seq 2500 --heads 6 --kv-heads 3 --causal" "--batch 1 --seq 3000 --kv-seq 2000 --heads 2 --causal" "--batch 2 --seq 1300 --kv-seq 1500 --heads 4 --kv-heads 2 --causal" "--batch 1 --seq 1800 --kv-seq 1200 --heads 3 --causal" "--batch 1 --seq 2500 --kv-seq 2600 --heads 2 --causal"; do
  echo "-- [$a]: $( { $O/$V/lesson-9 7 $a --dim 128 --iters 1 --warmup 0; $O/$V/lesson-9 7 $a --dim 64 --iters 1 --warmup 0; } 2>&1 | grep -E "bulkdq|rror" | head -4 | tr '\n' ' ')"; done
for tool in memcheck racecheck synccheck; do
  echo "-- $tool: $(timeout 60 compute-sanitizer --tool $tool $O/$V/lesson-9 7 --batch 1 --seq 1000 --kv-seq 1300 --heads 2 --kv-heads 1 --causal --dim 128 --iters 1 --warmup 0 2>&1 | grep -E "bulkdq|ERROR SUMMARY|RACECHECK SUMMARY" | tr '\n' ' ' | cut -c1-300)"
done
echo "checked $(( $(date +%s) - t0 )) s"
l9time() { $1/lesson-9 7 $2 --no-check --iters 20 2>&1 | grep -E "bulkdq" | head -1; }
for r in 1 2 3; do
  for s in "--batch 16 --seq 1024 --dim 128 --causal" "--batch 12 --seq 1280 --dim 128 --causal" "--batch 10 --seq 1536 --dim 128 --causal" "--batch 9 --seq 1792 --dim 128 --causal" "--batch 8 --seq 2048 --dim 128 --causal" "--batch 4 --seq 1536 --heads 16 --kv-heads 2 --dim 128 --causal" "--batch 16 --seq 1024 --dim 64 --heads 32 --causal" "--batch 8 --seq 2048 --dim 64 --heads 32 --causal" "--batch 6 --seq 2560 --dim 64 --heads 32 --causal" "--batch 4 --seq 4096 --dim 64 --heads 32 --causal"; do
    for v in $( [ $((r % 2)) = 1 ] && echo "tree $VS" || echo "$VS tree"); do echo "r$r [$s] $v: $(l9time $O/$v "$s")"; done
  done
done
echo "time $(( $(date +%s) - t0 )) s"
