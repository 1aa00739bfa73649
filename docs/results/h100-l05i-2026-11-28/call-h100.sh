#!/usr/bin/env bash
# H100: the causal-order A/B (versions 11 and 9 against the order before), then lesson 05's bench alone.
set -u
RUN=${RUN:-h100-l05i-2026-11-28}; D=$OUT/$RUN; mkdir -p $D $OUT/logs
exec > >(tee $OUT/logs/h100.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=/tmp/l05; mkdir -p $B; t0=$(date +%s)
V7=lessons/05_fa3_hopper/v7_fp8_tiles.cu; S5=lessons/05_fa3_hopper/v5_overlap.cu
cp .gpu/lpt/v11_head.cu $B/v11_head.cu
.gpu/lpt/wrap9.sh .gpu/lpt/v9_head.cu $B/w9h.cu; .gpu/lpt/wrap9.sh lessons/05_fa3_hopper/v9_persistent.cu $B/w9n.cu
EXTRA=$V7 .gpu/mklib05.sh $B/v11_head.cu $S5 $B/head.so > $OUT/logs/b-head.log 2>&1 & pids=$!
EXTRA=$V7 .gpu/mklib05.sh lessons/05_fa3_hopper/v11_fp8_persistent.cu $S5 $B/new.so > $OUT/logs/b-new.log 2>&1 & pids="$pids $!"
EXTRA=$V7 .gpu/mklib05.sh $B/v11_head.cu $B/w9h.cu $B/h9.so > $OUT/logs/b-h9.log 2>&1 & pids="$pids $!"
EXTRA=$V7 .gpu/mklib05.sh $B/v11_head.cu $B/w9n.cu $B/n9.so > $OUT/logs/b-n9.log 2>&1 & pids="$pids $!"
wait $pids; ls $B/*.so; echo "built $(( $(date +%s) - t0 )) s"
A=$D/causal-order-ab.log
{ echo "## version 11 (FP8, the kernel alone): head = the order before, new = longest first in groups of heads"
  SHAPES="2048:1:8:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 6000:1:2:16:16 12000:1:1:16:16 8192:0:2:16:16" \
    PREFIX=l05_fp8p ROUNDS=3 timeout 150 python3 .gpu/lpt/ab.py head=$B/head.so new=$B/new.so
  echo "## version 9 (bf16, dim 64)"
  SHAPES="2048:1:8:32:32 4096:1:4:32:32 8192:1:2:32:32 6000:1:2:32:32 8192:0:2:32:32" \
    MODE=bf16 DIMS=64 CUDNN=0 PREFIX=l05_fp8p ROUNDS=3 timeout 100 python3 .gpu/lpt/ab.py head=$B/h9.so new=$B/n9.so
} > $A 2>&1; grep -E "TFLOP" $A; grep -c "max|dO| 0.00e+00" $A
echo "ab $(( $(date +%s) - t0 )) s"
export BUILD_DIR=build-gpu LESSONS=5 RUN OUT
timeout 300 scripts/gpu-suite.sh build bench > /tmp/suiteB.log 2>&1; echo "suite build+bench rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|gpu-suite:" $D/gpu-suite.log | tail -3; wc -l $D/peers.csv
echo "all $(( $(date +%s) - t0 )) s"
