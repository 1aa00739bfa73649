#!/usr/bin/env bash
# Version 11's descales: the tree (d1 chosen after d0 lands: the warp waits for d0's load before
# S's last k-step) against dsel (d1 loaded from a clamped index, no wait) and dpre (both loaded
# one tile ahead, under P V). Checks bit for bit, then the kernel alone, rounds taking turns.
# Then lesson 09's GQA DRAM bytes (.gpu/gqa/ncu.sh).
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/dpre-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=/tmp/l05; mkdir -p $B; t0=$(date +%s)
V7=lessons/05_fa3_hopper/v7_fp8_tiles.cu; S5=lessons/05_fa3_hopper/v5_overlap.cu; T11=lessons/05_fa3_hopper/v11_fp8_persistent.cu
EXTRA=$V7 .gpu/mklib05.sh $T11 $S5 $B/tree.so > $L/b-tree.log 2>&1 & pids=$!
EXTRA=$V7 .gpu/mklib05.sh .gpu/dpre/v11_dsel.cu $S5 $B/dsel.so > $L/b-dsel.log 2>&1 & pids="$pids $!"
EXTRA=$V7 .gpu/mklib05.sh .gpu/dpre/v11_dpre.cu $S5 $B/dpre.so > $L/b-dpre.log 2>&1 & pids="$pids $!"
wait $pids; ls -la $B/*.so; echo "built $(( $(date +%s) - t0 )) s"
SH="4096:0:4:16:16 8192:0:2:16:16 16384:0:1:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 2048:0:8:16:16 8192:1:2:32:4"
SHAPES="$SH" PREFIX=l05_fp8p ROUNDS=4 CUDNN=0 timeout 300 python3 .gpu/lpt/ab.py tree=$B/tree.so dsel=$B/dsel.so dpre=$B/dpre.so
echo "fp8 timed $(( $(date +%s) - t0 )) s"
[ "${GQA:-1}" = 1 ] && timeout 240 bash .gpu/gqa/ncu.sh
echo "all $(( $(date +%s) - t0 )) s"
