#!/usr/bin/env bash
# The lessons phase of lesson 06 into the folder its bench went to (h200-l06t-2026-11-29), on the
# same tree, so that the folder is lesson 06's newest (lessons.csv) and its regions read one run.
set -u
R=h200-l06t-2026-11-29; mkdir -p $OUT/logs; exec > >(tee $OUT/logs/l06-lessons-call.log) 2>&1
date; t0=$(date +%s)
export BUILD_DIR=build-gpu OUT PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
RUN=$R LESSONS=6 timeout 420 scripts/gpu-suite.sh build lessons > /tmp/s6.log 2>&1; echo "lesson 6 rc $? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|gpu-suite:|rror" /tmp/s6.log | tail -5
mv $OUT/$R/nvidia-smi.txt $OUT/$R/nvidia-smi-lessons.txt; wc -l $OUT/$R/lessons.csv
cp .gpu/l15/call-l06-lessons.sh $OUT/$R/
cd $OUT && tar czf all.tgz $R logs && rm -rf $R && echo packed
