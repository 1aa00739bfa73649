#!/usr/bin/env bash
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/beside-diag.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ) & pb=$!
mkdir -p /tmp/l05/o33; { echo "#define L05_PASS_SMS 33"; cat .gpu/l14o/v14.cu; } > /tmp/l05/o33/v12_fp8_q_in_kernel.cu
V12=/tmp/l05/o33/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/o33.so > $L/mk-diag.log 2>&1
wait $pb; grep -h "rror" $L/mk-diag.log; echo "built $(( $(date +%s) - t0 )) s"
timeout 200 python3 .gpu/l14o/diag.py build-gpu/lib/libattn_lessons.so /tmp/l05/o33.so
echo "all $(( $(date +%s) - t0 )) s"
