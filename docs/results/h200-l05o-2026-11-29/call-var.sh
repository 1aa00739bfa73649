#!/usr/bin/env bash
# Version 13 without the turn at the exponentials, against the tree's version 13.
set -u
L=$OUT/logs; mkdir -p $L /tmp/l05/nt
exec > >(tee $L/ab-noturn.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ) & pb=$!
cp .gpu/l13v/v13_noturn.cu /tmp/l05/nt/v12_fp8_q_in_kernel.cu
V12=/tmp/l05/nt/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/nt.so
wait $pb; echo "built $(( $(date +%s) - t0 )) s"
timeout 300 python3 .gpu/l13v/ab_var.py tree=build-gpu/lib/libattn_lessons.so noturn=/tmp/l05/nt.so
echo "all $(( $(date +%s) - t0 )) s"
