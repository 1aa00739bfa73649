#!/usr/bin/env bash
# The lesson 05 bench with its rows taking turns, on a subset, twice.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/bench-turns.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "lib $(( $(date +%s) - t0 )) s"
B="python3 bench/lesson05_peers.py --lib build-gpu/lib/libattn_lessons.so --dims 128 --causal 0 --seqs 8192,16384 --versions 5,12,13 --out $OUT/peers"
for i in 1 2; do echo "== bench $i"; timeout 200 $B 2>&1 | grep -E "impl=|rror|Trace|line" | sed 's/ vs_fp64.*//'; echo "rc ${PIPESTATUS[0]}"; done
echo "all $(( $(date +%s) - t0 )) s"
