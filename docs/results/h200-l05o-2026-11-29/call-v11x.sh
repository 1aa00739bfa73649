#!/usr/bin/env bash
# Version 13's line on version 11 (Q converted ahead): the kernels alone against versions 5, 11, 12, 13.
set -u
L=$OUT/logs; mkdir -p $L /tmp/l05/v11x
exec > >(tee $L/ab-v11-line.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ) & pb=$!
cp .gpu/l11x/v11_line.cu /tmp/l05/v11x/v11_fp8_persistent.cu
V11=/tmp/l05/v11x/v11_fp8_persistent.cu bash .gpu/l11x/mklib11x.sh /tmp/l05/v11x.so
wait $pb; echo "built $(( $(date +%s) - t0 )) s"
timeout 300 python3 .gpu/l11x/ab_v11x.py build-gpu/lib/libattn_lessons.so /tmp/l05/v11x.so
echo "all $(( $(date +%s) - t0 )) s"
