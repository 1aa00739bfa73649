#!/usr/bin/env bash
# The caches' footprint: versions 1 and 2 with both caches allocated and each alone.
set -u
L=$OUT/logs; mkdir -p $L; B=build-gpu
exec > >(tee $L/d256-call3.log) 2>&1
date; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1
cmake --build $B -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
for s in "128 64 8192 1" "128 64 8192 8" "256 64 4096 1" "256 64 4096 8" "128 16 32768 1" "128 64 32768 1"; do
  timeout 100 python3 .gpu/d256/footprint.py $B/lib/libattn_lessons.so $s; echo "($(( $(date +%s) - t0 )) s)"
done
