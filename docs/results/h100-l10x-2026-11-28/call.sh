#!/usr/bin/env bash
# Per-block timeline of version 4 at batch 1 (instrumented build; the patch is applied here only).
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/tl-h100.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s)
git apply .gpu/tl/tl.patch || { echo "patch failed"; exit 1; }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" | head
echo "built $(( $(date +%s) - t0 )) s"
export ATTN_LIB=$PWD/build-gpu/lib/libattn_lessons.so
timeout 300 python3 .gpu/tl/tl.py --iters 8 --cfg 1,32768,8,causal 1,131072,8,causal
echo "wg rc=$? $(( $(date +%s) - t0 )) s"
echo "all $(( $(date +%s) - t0 )) s"
git apply -R .gpu/tl/tl.patch
