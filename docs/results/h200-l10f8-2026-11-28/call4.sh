#!/usr/bin/env bash
# Version 5 (FP8 cache on version 4's warpgroup): GPU suite case, program checks on awkward
# shapes, timings beside versions 1, 2 and 4, sanitizers.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
B=$R/build-c4
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/v5-pipe.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; tail $L/cmake.log; exit 1; }
cmake --build $B -j 16 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"
echo "built $(el) s"
P=$B/bin/lesson-10
echo "== program checks (row 8)"
for s in "" "--seq 16" "--dim 64" "--dim 256" "--batch 3 --kv-seq 1000 --seq 5 --causal" "--kv-lens 32k,1024x7 --causal" "--kv-heads 1 --seq 4" "--batch 5 --kv-seq 77 --seq 3 --block-size 64" "--batch 2 --kv-seq 16 --seq 16 --dim 64"; do
  echo "[$s] $(timeout 60 $P 8 $s --check-only 2>&1 | grep -E '^ *8 |rror|skip|FAIL' | head -2 | tr -s ' ')"
done
echo "checked $(el) s"
echo "== test_lesson10_gpu fp8wgmma: $(CK_RUN_CASE=fp8wgmma timeout 200 $B/bin/test_lesson10_gpu 2>&1 | grep -E "FAIL|rror|^[0-9]+%" | head -10)"
echo "($(el) s)"
echo "== timing: rows 7 (v4), 8 (v5), 3 (v2), 1 (v1); version, name, dtype, check, err, err, ms, TB/s..."
for s in "" "--seq 1" "--seq 4" "--seq 16" "--batch 16 --kv-seq 8192" "--batch 16 --kv-seq 8192 --seq 16" "--batch 64 --kv-seq 8192" "--kv-seq 131072" "--dim 64" "--dim 256" "--dim 256 --seq 16"; do
  [ $(el) -gt 330 ] && { echo "stop timing at $(el) s"; break; }
  line="[$s]"
  for v in 7 8 3; do line="$line | $(timeout 60 $P $v $s --no-check --iters 30 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ' | cut -d' ' -f2-9)"; done
  echo "$line"
done
echo "timed $(el) s"
[ $(el) -lt 420 ] && for t in racecheck synccheck; do
  echo "$t: $(timeout 90 compute-sanitizer --tool $t $P 8 --batch 2 --kv-seq 600 --seq 5 --causal --check-only 2>&1 | grep -E 'SUMMARY|^ *8 ' | tr -s ' ' | tr '\n' ' ') $(el) s"
done
[ $(el) -lt 450 ] && echo "memcheck test: $(ATTN_TEST_SANITIZER=1 CK_RUN_CASE=fp8wgmma timeout 100 compute-sanitizer --tool memcheck $B/bin/test_lesson10_gpu 2>&1 | grep -E 'SUMMARY|^[0-9]+%' | tr '\n' ' ') $(el) s"
[ $(el) -lt 500 ] && ncu --clock-control none --print-units base --print-kernel-base function --launch-count 6 --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --log-file $L/ncu-v5.csv $P 8 --no-check --iters 2 > /dev/null 2>&1 && awk -F'","' '{print $5, $13, $15}' $L/ncu-v5.csv | head -14
echo "all $(el) s"
rm -rf $B
