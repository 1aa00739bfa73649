#!/usr/bin/env bash
# A library with lesson 05's version 5 (dims 64, 128) and version 14 from the given sources:
# V5=... V14=... mklib.sh OUT.so   (defaults: the tree's files)
set -e
R=$(cd "$(dirname "$0")/../.." && pwd); T=$(mktemp -d); D=$R/lessons/05_fa3_hopper
I="-I$R/common -I$R/lessons/04_fa2_warps -I$D"
F="-gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -lineinfo -Xcompiler -fPIC ${EXTRA:-}"
V5=${V5:-$D/v5_overlap.cu}; V14=${V14:-$D/v14_fp8_half_tile.cu}
for d in 64 128; do ( nvcc $F $I -Xptxas -v -DHEAD_DIM=$d -c $V5 -o $T/v5_$d.o 2>&1 | grep -E "error|C75|spill" | sed "s|^|v5 d$d: |" ) & done
V15=${V15:-$D/v15_persistent_pairs.cu}
[ -f "$V15" ] && for d in 64 128; do ( nvcc $F $I -Xptxas -v -DHEAD_DIM=$d -c $V15 -o $T/v15_$d.o 2>&1 | grep -E "error|C75|spill" | sed "s|^|v15 d$d: |" ) & done
( nvcc $F $I -Xptxas -v -c $V14 -o $T/v14.o 2>&1 | grep -E "error|C75|spill" | sed "s|^|v14: |" ) &
wait
for s in tensor_map fp8_quant fp8_quant_tiles v6_fp8 v7_fp8_tiles; do nvcc $F $I -c $D/$s.cu -o $T/$s.o & done
nvcc $F $I -c $R/common/l2_evict.cu -o $T/l2.o &
wait
for c in device runner types bf16 rng reference verify timer progress cli paged; do
  gcc -O2 -fPIC -std=c11 $I -I/usr/local/cuda/include -c $R/common/$c.c -o $T/c_$c.o 2>/dev/null || true
done
nvcc -shared -Xlinker -Bsymbolic -Xlinker --no-undefined -o "$1" $T/*.o -lcudart
rm -rf $T
