#!/usr/bin/env bash
# cuDNN's rates in the bench against the rounds harness (ab_cudnn.py), in one call: bench, rounds, bench.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/harness.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "lib $(( $(date +%s) - t0 )) s"
B="python3 bench/lesson05_peers.py --lib build-gpu/lib/libattn_lessons.so --dims 128 --causal 0 --seqs 4096,16384 --versions 5,13"
for i in 1 2; do
  echo "== bench $i"; timeout 150 $B 2>&1 | grep -E "impl=(sdpa-cudnn|cudnn-fp8|v5-|fp8x-kernel)" | sed 's/ vs_fp64.*//'
  echo "== rounds $i"; SHAPES="4096:0 16384:0" ROUNDS=3 timeout 150 python3 .gpu/l13/ab_cudnn.py build-gpu/lib/libattn_lessons.so | grep -E "seq|v5:|v13-alone|cudnn"
done
echo "all $(( $(date +%s) - t0 )) s"
