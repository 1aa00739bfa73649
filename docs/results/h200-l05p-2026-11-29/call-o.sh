#!/usr/bin/env bash
# Version 13 with its pass beside the kernel (the pass in L05_PASS_SMS blocks, the kernel launched as
# its programmatic dependent, each tile's stamp waited for), end to end against the tree's version 13
# and version 5: checks against float32 through the forward, then rounds in turns.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/ab-beside.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ) & pb=$!
pids=""
for p in ${PS:-22 33 44}; do
  mkdir -p /tmp/l05/o$p; { echo "#define L05_PASS_SMS $p"; cat .gpu/l14o/v14.cu; } > /tmp/l05/o$p/v12_fp8_q_in_kernel.cu
  V12=/tmp/l05/o$p/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/o$p.so > $L/mk-o$p.log 2>&1 & pids="$pids $!"
done
for p in $pids; do wait $p; done; wait $pb; grep -h "v12_fp8\|rror" $L/mk-o*.log | sort | uniq -c; echo "built $(( $(date +%s) - t0 )) s"
args="tree=build-gpu/lib/libattn_lessons.so"; for p in ${PS:-22 33 44}; do args="$args p$p=/tmp/l05/o$p.so"; done
ROUNDS=${ROUNDS:-5} SHAPES="${SHAPES:-2048:0:8:16:16 4096:0:4:16:16 8192:0:2:16:16 16384:0:1:16:16 2048:1:8:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 8192:0:2:32:4}" \
  timeout 240 python3 .gpu/l14p/ab_e2e.py $args
echo "all $(( $(date +%s) - t0 )) s"
