#!/usr/bin/env bash
# Version 13 against cuDNN's FP8 and bf16 in rounds taking turns, the papers' shapes at dim 128.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/ab-cudnn.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "lib $(( $(date +%s) - t0 )) s"
timeout 400 python3 .gpu/l13/ab_cudnn.py build-gpu/lib/libattn_lessons.so
echo "all $(( $(date +%s) - t0 )) s"
