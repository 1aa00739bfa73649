#!/usr/bin/env bash
# Landing call B for version 14: lesson 05's bench phase (SDPA flash and cuDNN, cuDNN's FP8 from
# .peers/), then versions 13 and 14 end to end and alone, with version 5, in rounds taking turns.
set -u
RUN=${RUN:-h200-l05r-2026-11-29}; mkdir -p $OUT/logs $OUT/$RUN
exec > >(tee $OUT/logs/land-b.log) 2>&1
date; t0=$(date +%s)
export BUILD_DIR=build-gpu LESSONS=5 RUN OUT PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
timeout 300 scripts/gpu-suite.sh bench > /tmp/suiteB.log 2>&1; echo "suite bench rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|MISMATCH|gpu-suite:|rror" /tmp/suiteB.log | tail -8
grep -A30 "^FP8 at dim 128" $OUT/$RUN/gpu-suite.log | head -20
{ nvidia-smi -q; nvcc --version; } > $OUT/$RUN/nvidia-smi-bench.txt 2>&1
L=build-gpu/lib/libattn_lessons.so
ROUNDS=5 SHAPES="2048:1:8:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 4096:0:4:16:16 16384:0:1:16:16 3000:1:5:16:16" \
  timeout 200 python3 .gpu/l16/ab14.py v13=$L@l05_fp8x v14=$L@l05_fp8h > $OUT/logs/ab14.log 2>&1; echo "ab14 rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $OUT/logs/ab14.log | tail -30; grep -c "^check" $OUT/logs/ab14.log
echo "all $(( $(date +%s) - t0 )) s"
