#!/usr/bin/env bash
# Version 5 at dim 128 without the mask: the tree (every block walks its KV tiles from the first,
# so the blocks running together read the same tile at once) against a rotated walk (block of Q
# tile i starts at KV tile i mod Tu and wraps round; the tiles cut short stay last). cuDNN's bf16
# (PyTorch SDPA) timed in the same rounds ("cudnn8" in the log is cuDNN bf16 here).
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/rot-ab.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=/tmp/l05; mkdir -p $B; t0=$(date +%s)
V7=lessons/05_fa3_hopper/v7_fp8_tiles.cu; S5=lessons/05_fa3_hopper/v5_overlap.cu; T11=lessons/05_fa3_hopper/v11_fp8_persistent.cu
EXTRA=$V7 .gpu/ab05/mklib.sh $T11 $S5 $B/tree.so > $L/b-tree.log 2>&1 & pids=$!
EXTRA=$V7 .gpu/ab05/mklib.sh $T11 .gpu/ab05/v5_rot.cu $B/rot.so > $L/b-rot.log 2>&1 & pids="$pids $!"
wait $pids; ls -la $B/*.so; echo "built $(( $(date +%s) - t0 )) s"
SH="16384:0:1:16:16 8192:0:2:16:16 4096:0:4:16:16 2048:0:8:16:16 12000:0:1:16:16 16384:0:1:32:4 8192:1:2:16:16"
SHAPES="$SH" MODE=bf16 DIMS=128 SDPA=1 CUDNN=0 PREFIX=l05_fp8p ROUNDS=5 timeout 480 python3 .gpu/ab05/ab.py tree=$B/tree.so rot=$B/rot.so
echo "all $(( $(date +%s) - t0 )) s"
