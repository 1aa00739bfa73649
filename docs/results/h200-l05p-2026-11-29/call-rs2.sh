#!/usr/bin/env bash
# Version 13 with its row sums on the tensor cores, with 1/2, 5/8 and 3/4 of the exponentials on the
# FMA pipes, against the tree's version 13: checks against float32, then five rounds in turns.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/ab-rowsums.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ) & pb=$!
pids=""
for m in 0x55 0x5D 0x77; do
  mkdir -p /tmp/l05/rs$m; { echo "#define L05_RS_MASK $m"; cat .gpu/l13rs/v13_rs_frac.cu; } > /tmp/l05/rs$m/v12_fp8_q_in_kernel.cu
  V12=/tmp/l05/rs$m/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/rs$m.so > $L/mk-rs$m.log 2>&1 & pids="$pids $!"
done
for p in $pids; do wait $p; done; wait $pb; grep -h "v12_fp8" $L/mk-rs*.log; echo "built $(( $(date +%s) - t0 )) s"
ROUNDS=5 SHAPES="2048:0:8:16:16 4096:0:4:16:16 8192:0:2:16:16 16384:0:1:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 8192:0:2:32:4" \
  timeout 400 python3 .gpu/l13rs/ab_var2.py tree=build-gpu/lib/libattn_lessons.so rs_half=/tmp/l05/rs0x55.so rs_5of8=/tmp/l05/rs0x5D.so rs_3of4=/tmp/l05/rs0x77.so
echo "all $(( $(date +%s) - t0 )) s"
