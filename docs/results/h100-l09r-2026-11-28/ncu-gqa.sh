#!/usr/bin/env bash
# DRAM bytes of version 7 on 16 heads over 2 KV heads (batch 4, seq 4k, causal, dim 128), the
# tree (causal order) against the order before (.gpu/bhead), one launch each.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/ncu-gqa.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=$R/build-ab9; W=$R/build-w9; O=$R/build-o9
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null || exit 1
build() { cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75" ; }
build; mkdir -p $O/tree && cp $B/bin/lesson-9 $O/tree/
cp $R/.gpu/bhead/v7_bulk_dq.cu lessons/09_backward/v7_bulk_dq.cu; build; mkdir -p $O/bhead && cp $B/bin/lesson-9 $O/bhead/
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
for s in "--batch 4 --seq 4096 --heads 16 --kv-heads 2" "--batch 4 --seq 4096"; do for v in tree bhead; do
  echo "#### $v [$s]"
  timeout 60 ncu --clock-control none -k regex:bulkdq -c 1 --metrics $M $O/$v/lesson-9 7 $s --dim 128 --causal --no-check --iters 1 --warmup 0 2>&1 | grep -E "bulkdq|gpu__|dram__|lts__|sm__" | grep -v "==PROF=="
done; done
