#!/usr/bin/env bash
# Version 11's producer waits: the tree (try_wait at the system's default limit, retried) against
# the same waits with a suspend-time hint of 1 ms and of 2 us (ptxas: TRYWAIT, then
# NANOSLEEP.SYNCS hint). Checks bit for bit on fourteen awkward shapes, then the kernel alone in
# rounds taking turns.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/hint-ab.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=/tmp/l05; mkdir -p $B; t0=$(date +%s)
V7=lessons/05_fa3_hopper/v7_fp8_tiles.cu; S5=lessons/05_fa3_hopper/v5_overlap.cu; T11=lessons/05_fa3_hopper/v11_fp8_persistent.cu
sed 's/^#define HINT_NS 1000000/#define HINT_NS 2000/' .gpu/ab05/v11_hint.cu > $B/v11_h2k.cu
EXTRA=$V7 .gpu/ab05/mklib.sh $T11 $S5 $B/tree.so > $L/b-tree.log 2>&1 & pids=$!
EXTRA=$V7 .gpu/ab05/mklib.sh .gpu/ab05/v11_hint.cu $S5 $B/h1m.so > $L/b-h1m.log 2>&1 & pids="$pids $!"
EXTRA=$V7 .gpu/ab05/mklib.sh $B/v11_h2k.cu $S5 $B/h2k.so > $L/b-h2k.log 2>&1 & pids="$pids $!"
wait $pids; grep -H . $L/b-*.log; ls -la $B/*.so; echo "built $(( $(date +%s) - t0 )) s"
SH="4096:0:4:16:16 8192:0:2:16:16 16384:0:1:16:16 4096:1:4:16:16 8192:1:2:16:16 2048:0:8:16:16"
SHAPES="$SH" PREFIX=l05_fp8p ROUNDS=4 CUDNN=0 timeout 420 python3 .gpu/ab05/ab.py tree=$B/tree.so h1m=$B/h1m.so h2k=$B/h2k.so
echo "all $(( $(date +%s) - t0 )) s"
