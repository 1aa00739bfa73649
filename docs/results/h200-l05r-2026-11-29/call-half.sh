#!/usr/bin/env bash
# Version 13 with the diagonal's last tile run as a half tile (first 128 keys) where its second
# half is masked for every row, against the tree's version 13: checks, then rounds in turns.
set -u
L=$OUT/logs; mkdir -p $L /tmp/l05/half
exec > >(tee $L/ab-half.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ) & pb=$!
cp .gpu/l16/v14_half.cu /tmp/l05/half/v12_fp8_q_in_kernel.cu
V12=/tmp/l05/half/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/half.so
wait $pb; echo "built $(( $(date +%s) - t0 )) s"
ROUNDS=5 SHAPES="2048:1:8:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 4096:0:4:16:16 2900:0:5:16:16 3000:1:5:16:16 8192:1:2:32:4" \
  timeout 300 python3 .gpu/l16/ab_half.py tree=build-gpu/lib/libattn_lessons.so half=/tmp/l05/half.so
echo "all $(( $(date +%s) - t0 )) s"
