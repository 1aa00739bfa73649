#!/usr/bin/env bash
# Version 13 end to end with its kernel launched as a programmatic dependent of the pass (the pass
# triggering at its top, the kernel waiting before it reads K, V^T and the descales), against the
# tree's version 13 end to end, and version 5: checks against float32, then rounds in turns.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/ab-pdl.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ) & pb=$!
mkdir -p /tmp/l05/pdl; cp .gpu/l14p/v13_pdl.cu /tmp/l05/pdl/v12_fp8_q_in_kernel.cu
V12=/tmp/l05/pdl/v12_fp8_q_in_kernel.cu QT=.gpu/l14p/qt_pdl.cu bash .gpu/ab12/mklib12.sh /tmp/l05/pdl.so > $L/mk-pdl.log 2>&1
wait $pb; cat $L/mk-pdl.log; echo "built $(( $(date +%s) - t0 )) s"
ROUNDS=${ROUNDS:-5} SHAPES="2048:0:8:16:16 4096:0:4:16:16 8192:0:2:16:16 16384:0:1:16:16 2048:1:8:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 8192:0:2:32:4" \
  timeout 420 python3 .gpu/l14p/ab_e2e.py tree=build-gpu/lib/libattn_lessons.so pdl=/tmp/l05/pdl.so
echo "all $(( $(date +%s) - t0 )) s"
