#!/usr/bin/env bash
# Version 5 after its prologue and scale pages stopped waiting on dependent loads: checks, the GPU
# suite's version 5 case, timings beside versions 4 and 2, then the whole lesson 10 GPU suite.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
B=$R/build-c6
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/v5-prologue.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; tail $L/cmake.log; exit 1; }
cmake --build $B -j 16 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"
echo "built $(el) s"
P=$B/bin/lesson-10
for s in "" "--seq 16 --causal" "--dim 64" "--dim 256 --seq 3" "--batch 3 --kv-seq 1000 --seq 5 --causal" "--batch 5 --kv-seq 77 --seq 3 --block-size 64"; do
  echo "[$s] $(timeout 60 $P 8 $s --check-only 2>&1 | grep -E '^ *8 |rror|skip|FAIL' | head -2 | tr -s ' ')"
done
echo "== test_lesson10_gpu fp8wgmma: $(CK_RUN_CASE=fp8wgmma timeout 200 $B/bin/test_lesson10_gpu 2>&1 | grep -E "FAIL|rror|^[0-9]+%" | head -10) $(el) s"
echo "== timing, two rounds: rows 7 (v4), 8 (v5), 3 (v2): version name dtype check err err ms"
for r in 1 2; do
for s in "" "--seq 1" "--seq 4" "--seq 16" "--batch 16 --kv-seq 8192" "--batch 64 --kv-seq 8192" "--dim 64" "--dim 256 --seq 16"; do
  [ $(el) -gt 300 ] && { echo "stop timing at $(el) s"; break 2; }
  line="r$r [$s]"
  for v in 7 8 3; do line="$line | $(timeout 60 $P $v $s --no-check --iters 30 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ' | cut -d' ' -f2-8)"; done
  echo "$line"
done; done
echo "timed $(el) s"
[ $(el) -lt 330 ] && ncu --clock-control none --print-units base --print-kernel-base function --launch-count 6 --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --log-file $L/v5-prologue-kernels.csv $P 8 --no-check --iters 2 > /dev/null 2>&1 && awk -F'","' '{print $5, $13, $15}' $L/v5-prologue-kernels.csv | grep f8wg
[ $(el) -lt 360 ] && echo "== whole test_lesson10_gpu: $(timeout 200 $B/bin/test_lesson10_gpu 2>&1 | grep -E "FAIL|^[0-9]+%|left out" | head -10) $(el) s"
echo "all $(el) s"
rm -rf $B
