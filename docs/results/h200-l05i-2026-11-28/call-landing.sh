#!/usr/bin/env bash
# Landing call A for the causal order (versions 9 and 11): A/B against HEAD's files, then lesson 05's
# build + lessons phase, its ctest subset (GPU suite, SASS), and sanitizers on versions 9 and 11.
set -u
R=$PWD; RUN=${RUN:-h200-l05i-2026-11-28}; D=$OUT/$RUN; mkdir -p $D $OUT/logs
exec > >(tee $OUT/logs/land.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=/tmp/l05; mkdir -p $B; t0=$(date +%s)
V7=lessons/05_fa3_hopper/v7_fp8_tiles.cu; S5=lessons/05_fa3_hopper/v5_overlap.cu
cp .gpu/lpt/v11_head.cu $B/v11_head.cu
cp .gpu/lpt/v9_head.cu $B/v9_head.cu
.gpu/lpt/wrap9.sh $B/v9_head.cu $B/w9h.cu; .gpu/lpt/wrap9.sh lessons/05_fa3_hopper/v9_persistent.cu $B/w9n.cu
# the HEAD files compile against today's headers: their own item order is in the file
EXTRA=$V7 .gpu/mklib05.sh $B/v11_head.cu $S5 $B/head.so > $OUT/logs/b-head.log 2>&1 & pids=$!
EXTRA=$V7 .gpu/mklib05.sh lessons/05_fa3_hopper/v11_fp8_persistent.cu $S5 $B/new.so > $OUT/logs/b-new.log 2>&1 & pids="$pids $!"
wait $pids
EXTRA=$V7 .gpu/mklib05.sh $B/v11_head.cu $B/w9h.cu $B/h9.so > $OUT/logs/b-h9.log 2>&1 & pids=$!
EXTRA=$V7 .gpu/mklib05.sh $B/v11_head.cu $B/w9n.cu $B/n9.so > $OUT/logs/b-n9.log 2>&1 & pids="$pids $!"
wait $pids; ls $B/*.so; echo "built $(( $(date +%s) - t0 )) s"
A=$D/causal-order-ab.log
{ echo "## version 11 (FP8, the kernel alone): head = the tree before, new = longest first in groups of heads"
  SHAPES="2048:1:8:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 3000:1:4:16:16 6000:1:2:16:16 12000:1:1:16:16 8192:1:2:32:4 4096:0:4:16:16 8192:0:2:16:16" \
    PREFIX=l05_fp8p ROUNDS=3 timeout 200 python3 .gpu/lpt/ab.py head=$B/head.so new=$B/new.so
  echo "## version 9 (bf16, dim 64)"
  SHAPES="1024:1:16:32:32 2048:1:8:32:32 4096:1:4:32:32 8192:1:2:32:32 16384:1:1:32:32 3000:1:4:32:32 6000:1:2:32:32 8192:1:2:32:8 8192:0:2:32:32" \
    MODE=bf16 DIMS=64 CUDNN=0 PREFIX=l05_fp8p ROUNDS=3 timeout 150 python3 .gpu/lpt/ab.py head=$B/h9.so new=$B/n9.so
} > $A 2>&1; grep -E "TFLOP|^fp8|^bf16|rel_l2.*max" $A | grep -v "max|dO| 0.00e+00" | grep -E "x[0-9]|nan True|dO" | head -60
echo "ab $(( $(date +%s) - t0 )) s"
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BUILD_DIR=build-gpu LESSONS=5 RUN OUT CK_FORK=no PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 280 scripts/gpu-suite.sh build lessons > /tmp/suiteA.log 2>&1; echo "suite build+lessons rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|gpu-suite:|error" $D/gpu-suite.log /tmp/suiteA.log | tail -8
timeout 200 ctest --test-dir build-gpu -R "lesson-5|lesson05" --output-on-failure > $D/ctest.log 2>&1; echo "ctest rc $? $(( $(date +%s) - t0 )) s"
tail -14 $D/ctest.log
S=$D/sanitizers.log; : > $S
for spec in "11|--batch 1 --heads 4 --kv-heads 2 --seq 300 --kv-seq 520 --dim 128 --causal" "11|--batch 1 --heads 140 --kv-heads 140 --seq 200 --kv-seq 130 --dim 128 --causal" "9|--batch 2 --heads 24 --kv-heads 6 --seq 700 --kv-seq 900 --dim 64 --causal"; do
  v=${spec%%|*}; a=${spec#*|}
  for tool in memcheck racecheck synccheck; do s0=$(date +%s)
    echo "#### $tool lesson-5 $v $a --check-only" >> $S
    timeout 90 compute-sanitizer --tool $tool build-gpu/bin/lesson-5 $v $a --check-only >> $S 2>&1
    echo "$tool v$v [$a] rc $? $(( $(date +%s) - s0 )) s: $(tail -40 $S | grep -E "SUMMARY|PASS|FAIL" | tr '\n' ' ')"; done; done
echo "all $(( $(date +%s) - t0 )) s"
