#!/usr/bin/env bash
# A library with lesson 05's FP8 entry points of the given version 11 source (l05_fp8p_*),
# version 7's (EXTRA), and version 5's launchers (l05_overlap_d64/_d128):
#   mklib.sh V11SRC V5SRC OUT.so
set -e
R=$(cd "$(dirname "$0")/../.." && pwd); T=$(mktemp -d)
I="-I$R/common -I$R/lessons/04_fa2_warps -I$R/lessons/05_fa3_hopper"
F="-gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -lineinfo -Xcompiler -fPIC"
cp "$1" $T/v11.cu; cp "$2" $T/v5.cu
( nvcc $F $I -Xptxas -v -c $T/v11.cu -o $T/v11.o 2>&1 | grep -E "error|C75|spill|Used [0-9]+ registers, used 16" | sed 's/^/v11: /' ) &
( nvcc $F $I -DHEAD_DIM=128 -c $T/v5.cu -o $T/v5a.o 2>&1 | grep -E "error" ) &
( nvcc $F $I -DHEAD_DIM=64 -c $T/v5.cu -o $T/v5b.o 2>&1 | grep -E "error" ) &
[ -n "${EXTRA:-}" ] && ( cp "$EXTRA" $T/x.cu; nvcc $F $I -c $T/x.cu -o $T/x.o ) &
nvcc $F $I -c $R/lessons/05_fa3_hopper/fp8_quant_tiles.cu -o $T/q.o &
nvcc $F $I -c $R/lessons/05_fa3_hopper/tensor_map.cu -o $T/tm.o &
nvcc $F $I -c $R/lessons/05_fa3_hopper/fp8_quant.cu -o $T/q6.o &
nvcc $F $I -c $R/lessons/05_fa3_hopper/v6_fp8.cu -o $T/v6.o &
nvcc $F $I -c $R/common/l2_evict.cu -o $T/l2.o &
wait
for c in device runner types bf16 rng reference verify timer progress cli paged; do
  gcc -O2 -fPIC -std=c11 $I -I/usr/local/cuda/include -c $R/common/$c.c -o $T/c_$c.o 2>/dev/null || true
done
nvcc -shared -o "$3" $T/*.o -lcudart
rm -rf $T
