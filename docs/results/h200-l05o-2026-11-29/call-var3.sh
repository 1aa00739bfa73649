#!/usr/bin/env bash
# Version 13 three ways, in turns: with the turn (as first landed), without it (the measured
# variant, 0 added to the scales), without it (the cleaned form).
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/ab-turn3.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH; pids=""
for n in turn noturn clean; do
  mkdir -p /tmp/l05/$n; cp .gpu/l13v/v13_$n.cu /tmp/l05/$n/v12_fp8_q_in_kernel.cu
  V12=/tmp/l05/$n/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/$n.so > $L/mk-$n.log 2>&1 & pids="$pids $!"
done
for p in $pids; do wait $p; done; grep -h "v12_fp8" $L/mk-*.log; echo "built $(( $(date +%s) - t0 )) s"
ROUNDS=7 SHAPES="2048:0:8:16:16 4096:0:4:16:16 8192:0:2:16:16 16384:0:1:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 8192:0:2:32:4" \
  timeout 400 python3 .gpu/l13v/ab_var.py turn=/tmp/l05/turn.so noturn=/tmp/l05/noturn.so clean=/tmp/l05/clean.so
echo "all $(( $(date +%s) - t0 )) s"
