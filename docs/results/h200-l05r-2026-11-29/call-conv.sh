#!/usr/bin/env bash
# Three builds of version 13's kernel in turns: the tree's, the half tile (v14_half.cu), and the
# half tile with Q converted by the producer warpgroup's warps 1-3 (v15_conv.cu).
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/ab-conv.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH; pids=""
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ) & pids="$pids $!"
for n in half conv; do
  mkdir -p /tmp/l05/$n; cp .gpu/l16/v1*_$n.cu /tmp/l05/$n/v12_fp8_q_in_kernel.cu
  V12=/tmp/l05/$n/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/$n.so > $L/mk-$n.log 2>&1 & pids="$pids $!"
done
for p in $pids; do wait $p; done; grep -h "v12_fp8" $L/mk-*.log; echo "built $(( $(date +%s) - t0 )) s"
ROUNDS=7 SHAPES="${SHAPES:-2048:1:8:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 2048:0:8:16:16 4096:0:4:16:16 16384:0:1:16:16 8192:1:2:32:4}" \
  timeout 400 python3 .gpu/l16/ab_half.py tree=build-gpu/lib/libattn_lessons.so half=/tmp/l05/half.so conv=/tmp/l05/conv.so
echo "all $(( $(date +%s) - t0 )) s"
