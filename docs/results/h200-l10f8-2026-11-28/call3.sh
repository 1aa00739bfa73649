#!/usr/bin/env bash
# Nsight Compute on version 5's and version 4's main kernels at the default step and batch 64.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
B=$R/build-c3
exec > >(tee $L/v5-ncu.log) 2>&1
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75|spill"
echo "built $(el) s"
P=$B/bin/lesson-10
for vs in "8|" "7|" "8|--batch 64 --kv-seq 8192"; do
  v=${vs%%|*}; s=${vs#*|}
  echo "#### v$v [$s]"
  ncu --clock-control none --kernel-name regex:"l10_(f8)?wg_kernel" --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section SchedulerStats --section WarpStateStats \
    --section LaunchStats --metrics smsp__inst_executed.sum,sm__cycles_active.avg,smsp__inst_executed_pipe_tensor.sum,sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_fma.sum,sm__inst_executed_pipe_xu.sum,sm__inst_executed_pipe_lsu.sum,sm__inst_executed_pipe_uniform.sum \
    $P $v $s --no-check --iters 2 2>&1 | grep -vE "^==PROF==|^ *$" | grep -E "Duration|Throughput|Cycles|Issue|Eligible|Occupancy|Block Limit|Registers|Warp Cycles|inst_executed|cycles_active|Stall|stall|Active Warps|No Eligible|One or More" | head -60
  echo "($(el) s)"
done
ncu --clock-control none --kernel-name regex:"l10_f8wg_kernel" --launch-skip 1 --launch-count 1 --section SourceCounters --print-source sass --csv $P 8 --no-check --iters 2 > $L/v5-source.csv 2>&1
echo "source counters $(el) s; $(wc -l < $L/v5-source.csv) lines"
rm -rf $B
