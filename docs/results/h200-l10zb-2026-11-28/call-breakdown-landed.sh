#!/usr/bin/env bash
# The landed cascade step kernel by kernel: Nsight Compute durations and DRAM bytes (cold), three shapes.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
B=$R/build-bn
exec > >(tee $L/breakdown-landed.log) 2>&1
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75|spill|warning"
echo "built $(el) s"
i=0
for S in "--batch 32 --kv-seq 33792 --seq 1" "--batch 32 --kv-seq 33792 --seq 4 --causal" "--batch 32 --kv-seq 33792 --seq 1 --dim 64"; do
  i=$((i+1)); [ $(el) -gt 170 ] && break
  timeout 60 ncu --clock-control none --print-units base --print-kernel-base function --launch-count 40 --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --log-file $L/ncu-landed-$i.csv $B/bin/lesson-10 4 $S --no-check --iters 2 > /dev/null 2>&1
  echo "== [$S]"; grep -E "prefill|wg_|merge" $L/ncu-landed-$i.csv | awk -F'","' '{print $5, $13, $15}' | tail -6
  echo "$(el) s"
done
rm -rf $B
