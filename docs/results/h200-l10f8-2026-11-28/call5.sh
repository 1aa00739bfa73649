#!/usr/bin/env bash
# Where version 5's warps wait: stall reasons and the source counters of its main kernel.
# Its CSV is kept here trimmed to the stall and instruction columns: v5-pipelined-source.csv.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
B=$R/build-c5
exec > >(tee $L/v5-stalls.log) 2>&1
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75|spill"
echo "built $(el) s"
P=$B/bin/lesson-10
for v in 8 7; do
echo "#### v$v"
ncu --clock-control none --kernel-name regex:"l10_(f8)?wg_kernel" --launch-skip 1 --launch-count 1 \
  --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
  $P $v --no-check --iters 2 2>&1 | grep -E "stalled" | awk '$3 > 0.05' | sort -k3 -nr | head -14
done
ncu --clock-control none --kernel-name regex:"l10_f8wg_kernel" --launch-skip 1 --launch-count 1 --section SourceCounters --section WarpStateStats --import-source no \
  --page source --print-source sass --csv $P 8 --no-check --iters 2 > $L/v5-source.csv 2> $L/v5-source.err
echo "source counters $(el) s; $(wc -l < $L/v5-source.csv) lines"; head -3 $L/v5-source.err
rm -rf $B
