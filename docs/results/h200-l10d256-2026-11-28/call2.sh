#!/usr/bin/env bash
# The bench's dim-256 one-token step at batch 64, 4k keys: does it stay slow when measured after
# the eight-token step (order), and beside dim 128?
set -u
L=$OUT/logs; mkdir -p $L; B=build-gpu
exec > >(tee $L/d256-call2.log) 2>&1
date; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1
cmake --build $B -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
export ATTN_LIB=$PWD/$B/lib/libattn_lessons.so
for order in "1,8" "8,1,2"; do
  echo "#### tokens $order"
  timeout 150 python3 bench/lesson10_peers.py --dims 256,128 --batches 64 --kvs 4096 --tokens $order --no-fp8 2>&1 | grep -E "^l10 impl=l10-v[14]|^ *(128|256) " 
  echo "($(( $(date +%s) - t0 )) s)"
done
echo "#### tokens 1 only, dim 256 only"
timeout 120 python3 bench/lesson10_peers.py --dims 256 --batches 64 --kvs 4096 --tokens 1 --no-fp8 2>&1 | grep -E "^l10 impl=l10-v[14]"
echo "all $(( $(date +%s) - t0 )) s"
