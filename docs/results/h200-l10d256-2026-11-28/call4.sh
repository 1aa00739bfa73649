#!/usr/bin/env bash
# The bench with its FP8 rows on at dim 256, batch 64, 4k keys: is the one-token step slow only
# when it is the first step measured after the FP8 pools are made?
set -u
L=$OUT/logs; mkdir -p $L; B=build-gpu
exec > >(tee $L/d256-call4.log) 2>&1
date; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1
cmake --build $B -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
export ATTN_LIB=$PWD/$B/lib/libattn_lessons.so
for order in "1,8" "8,1"; do
  echo "#### FP8 on, tokens $order"
  timeout 150 python3 bench/lesson10_peers.py --dims 256 --batches 64 --kvs 4096 --tokens $order 2>&1 | grep -E "^l10 impl=l10-v[124]" | cut -c1-130
  echo "($(( $(date +%s) - t0 )) s)"
done
echo "all $(( $(date +%s) - t0 )) s"
