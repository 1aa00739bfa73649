#!/usr/bin/env bash
# Version 13 with S in two halves, the first half's maxima under the second's S, against the tree's
# version 13: checks against float32 (outputs should match the tree bit for bit), then rounds in turns.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/ab-s2.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ) & pb=$!
pids=""
for v in ${VARIANTS:-v13_s2}; do
  mkdir -p /tmp/l05/$v; cp .gpu/l14s/$v.cu /tmp/l05/$v/v12_fp8_q_in_kernel.cu
  V12=/tmp/l05/$v/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/$v.so > $L/mk-$v.log 2>&1 & pids="$pids $!"
done
for p in $pids; do wait $p; done; wait $pb; grep -h "v12_fp8" $L/mk-*.log; echo "built $(( $(date +%s) - t0 )) s"
args="tree=build-gpu/lib/libattn_lessons.so"; for v in ${VARIANTS:-v13_s2}; do args="$args $v=/tmp/l05/$v.so"; done
ROUNDS=${ROUNDS:-5} SHAPES="2048:0:8:16:16 4096:0:4:16:16 8192:0:2:16:16 16384:0:1:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 8192:0:2:32:4" \
  timeout 420 python3 .gpu/l13rs/ab_var2.py $args
echo "all $(( $(date +%s) - t0 )) s"
