#!/usr/bin/env bash
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/turns-vs-blocks.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "lib $(( $(date +%s) - t0 )) s"
timeout 300 python3 .gpu/l14b/turns_vs_blocks.py build-gpu/lib/libattn_lessons.so
echo "all $(( $(date +%s) - t0 )) s"
