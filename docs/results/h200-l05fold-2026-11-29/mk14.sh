#!/usr/bin/env bash
# A library with lesson 05's version 14 (from the given source) and version 12's pass:
# mk14.sh V14.cu OUT.so
set -e
R=$(cd "$(dirname "$0")/../.." && pwd); T=$(mktemp -d); D=$R/lessons/05_fa3_hopper
I="-I$R/common -I$R/lessons/04_fa2_warps -I$D"
F="-gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -lineinfo -Xcompiler -fPIC"
( nvcc $F $I -DHEAD_DIM=128 -c $D/v5_overlap.cu -o $T/v5.o ) &
( nvcc $F $I -Xptxas -v -c $1 -o $T/v14.o 2>&1 | grep -E "error|C75|spill|registers" | sed "s|^|v14: |" ) &
for s in tensor_map fp8_quant fp8_quant_tiles v6_fp8 v7_fp8_tiles; do nvcc $F $I -c $D/$s.cu -o $T/$s.o & done
wait
for c in device types bf16; do gcc -O2 -fPIC -std=c11 $I -I/usr/local/cuda/include -c $R/common/$c.c -o $T/c_$c.o 2>/dev/null || true; done
nvcc $F $I -c $R/common/l2_evict.cu -o $T/l2.o
nvcc -shared -Xlinker -Bsymbolic -o "$2" $T/*.o -lcudart
rm -rf $T
