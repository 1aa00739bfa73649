#!/usr/bin/env bash
# On an H100: lesson 09's GQA DRAM bytes (tree vs the order before), then lesson 09's bench.
set -u
mkdir -p $OUT/logs
t0=$(date +%s)
timeout 200 bash .gpu/gqa/ncu.sh > /dev/null 2>&1; echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -E "####|dram__bytes|gpu__time|dram__throughput|hit_rate" $OUT/logs/ncu-gqa.log
export RUN=${RUN:-h100-l09r-2026-11-28}
timeout 380 bash .gpu/h100l09.sh; echo "bench rc $? $(( $(date +%s) - t0 )) s"
