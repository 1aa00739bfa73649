#!/usr/bin/env bash
# A library with lesson 05's versions 5 (dim 128), 7, 11 and 12 entry points: mklib12.sh OUT.so
set -e
R=$(cd "$(dirname "$0")/../.." && pwd); T=$(mktemp -d); D=$R/lessons/05_fa3_hopper
I="-I$R/common -I$R/lessons/04_fa2_warps -I$D"
F="-gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -lineinfo -Xcompiler -fPIC"
for s in $D/v11_fp8_persistent.cu ${V12:-$D/v12_fp8_q_in_kernel.cu}; do
  ( nvcc $F $I -Xptxas -v -c $s -o $T/$(basename $s .cu).o 2>&1 | grep -E "error|C75|spill|Used [0-9]+ registers, used 16" | sed "s|^|$(basename $s): |" ) &
done
nvcc $F $I -DHEAD_DIM=128 -c $D/v5_overlap.cu -o $T/v5.o &
for s in v7_fp8_tiles tensor_map fp8_quant v6_fp8; do nvcc $F $I -c $D/$s.cu -o $T/$s.o & done
nvcc $F $I -Xptxas -v -c ${QT:-$D/fp8_quant_tiles.cu} -o $T/qt.o > $T/qt.log 2>&1 &
nvcc $F $I -c $R/common/l2_evict.cu -o $T/l2.o &
wait; grep -E "error|spill|Used" $T/qt.log | sed "s/^/qt: /"
for c in device runner types bf16 rng reference verify timer progress cli paged; do
  gcc -O2 -fPIC -std=c11 $I -I/usr/local/cuda/include -c $R/common/$c.c -o $T/c_$c.o 2>/dev/null || true
done
nvcc -shared -o "$1" $T/*.o -lcudart
rm -rf $T
