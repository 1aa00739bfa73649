#!/usr/bin/env bash
# Smoke of the benches after L2Flush took the sleep kernel (bench/peer_timing.py): one short shape each.
set -u
mkdir -p $OUT/logs; exec > >(tee $OUT/logs/smoke.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
L=build-gpu/lib/libattn_lessons.so
for b in 0 100; do python3 bench/lesson06_peers.py --lib $L --dims 64 --kv-heads 8 --batches 32 --kvs 1024 --busy-us $b | grep -E 'timing|impl=sdpa|impl=v5'; done
python3 bench/lesson05_peers.py --lib $L --versions 5,13 --seqs 2048 --dims 128 --causal 0 | grep -E 'timing|^l05 impl'
python3 bench/lesson07_peers.py --lib $L --batches 8 --kvs 8192 --no-mixed | grep -E 'timing|impl=' | cut -c1-120
python3 bench/lesson09_peers.py --lib $L --quick --timing-only --versions 7 | tail -4
python3 bench/lesson10_peers.py --lib $L --batches 1 --kvs 32768 --tokens 8 --dims 128 | grep -E 'timing|impl=' | cut -c1-120
echo "all $(( $(date +%s) - t0 )) s"
