#!/usr/bin/env bash
# Nsight Compute's warp-state sampling per SASS instruction (SourceCounters) of lesson 05's
# version 11 as it is in the tree, one launch (the third) at the default shape: where a consumer
# warp's cycles go without the stamps' perturbation.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/v11src-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; ncu --version | tail -1
B=$R/build-ab5; W=$R/build-w5
rm -rf $W; mkdir -p $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || exit 1
cmake --build $B -j 16 --target lesson-5 2>&1 | grep -E "error|C75"
echo "built $(( $(date +%s) - t0 )) s"
timeout 200 ncu --clock-control none -k regex:l05_fp8p_kernel --launch-skip 2 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no \
  -f -o $OUT/src-v11 $B/bin/lesson-5 11 --no-check --iters 3 --warmup 0 2>&1 | tail -3
ncu --import $OUT/src-v11.ncu-rep --page source --csv --print-source sass > $OUT/src-v11.csv 2> $L/src.err
echo "csv: $(wc -lc < $OUT/src-v11.csv)"; head -c 700 $OUT/src-v11.csv; echo; head -3 $L/src.err
ncu --import $OUT/src-v11.ncu-rep --page details > $L/details-v11.txt 2>&1
grep -E "Duration|Elapsed Cycles|SM Active Cycles|Warp Cycles Per Issued|Issued Warp" $L/details-v11.txt | head
gzip $OUT/src-v11.csv; rm -f $OUT/src-v11.ncu-rep
echo "all $(( $(date +%s) - t0 )) s"
