#!/usr/bin/env bash
# Lesson 05's bench phase (PyTorch's SDPA flash and cuDNN, cuDNN's FP8 from .peers/), its rows
# taking turns at every shape, into the results folder $RUN.
set -u
RUN=${RUN:-h200-l05p-2026-11-29}; mkdir -p $OUT/logs
exec > >(tee $OUT/logs/bench-call.log) 2>&1
date; t0=$(date +%s)
export BUILD_DIR=build-gpu LESSONS=5 RUN OUT PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
timeout 540 scripts/gpu-suite.sh bench > /tmp/suiteB.log 2>&1; echo "suite bench rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|MISMATCH|gpu-suite:|rror" /tmp/suiteB.log | tail -8
tail -42 $OUT/$RUN/gpu-suite.log
