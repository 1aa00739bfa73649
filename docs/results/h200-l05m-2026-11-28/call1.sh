#!/usr/bin/env bash
# Version 12 (Q converted in the kernel by the consumer warps): build, the program's checks,
# the GPU suite of lesson 05, sanitizers, the A/B against version 11 and 5, ncu of the conversions.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L; B=/tmp/b-new; LIB=/tmp/l05/lib.so; mkdir -p /tmp/l05
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/v12-call1.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
bash .gpu/ab12/mklib12.sh $LIB > $L/mklib.log 2>&1 & p1=$!
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 && \
  cmake --build $B -j 14 --target lesson-5 test_lesson05_gpu 2>&1 | grep -E "error|C75|spill" ) & p2=$!
wait $p1; wait $p2; cat $L/mklib.log; echo "built $(el) s"
P=$B/bin/lesson-5
echo "== lesson-5 (default run, every version):"; timeout 120 $P 2>&1 | tail -22; echo "($(el) s)"
for sh in "--batch 1 --heads 2 --seq 1 --kv-seq 1" "--batch 2 --heads 16 --kv-heads 4 --seq 1100 --kv-seq 700 --causal" \
          "--batch 1 --heads 4 --kv-heads 2 --seq 300 --kv-seq 520 --causal" "--batch 3 --heads 140 --seq 20" \
          "--batch 2 --heads 8 --kv-heads 1 --seq 777 --kv-seq 3000" "--batch 1 --heads 6 --seq 4100 --kv-seq 129 --causal"; do
  echo "== lesson-5 12 $sh: $(timeout 60 $P 12 $sh --dim 128 --check-only 2>&1 | grep -E 'fp8-q-in|FAIL|rror' | tr -s ' ' | tr '\n' '|')"
done
echo "== A/B ($(el) s)"; ROUNDS=4 timeout 300 python3 .gpu/ab12/ab12.py $LIB; echo "($(el) s)"
echo "== test_lesson05_gpu: $(timeout 150 $B/bin/test_lesson05_gpu 2>&1 | grep -E '^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
for tool in memcheck racecheck synccheck; do
  for sh in "--batch 1 --heads 4 --kv-heads 2 --seq 300 --kv-seq 520 --causal" "--batch 2 --heads 70 --kv-heads 10 --seq 400 --kv-seq 383"; do
    [ $(el) -gt 500 ] && { echo "skip $tool: time"; continue; }
    echo "== $tool lesson-5 12 $sh: $(timeout 90 compute-sanitizer --tool $tool $P 12 $sh --dim 128 --check-only 2>&1 | grep -E 'SUMMARY|fp8-q-in|FAIL' | tr -s ' ' | tr '\n' ' ') $(el) s"
  done
done
[ $(el) -lt 530 ] && timeout 60 ncu --kernel-name regex:quant_tiles --section SpeedOfLight --section Occupancy \
  --section WarpStateStats --section SchedulerStats python3 .gpu/ab12/cvt.py $LIB > $L/ncu-cvt.txt 2>&1; echo "ncu rc $? $(el) s"
echo "all $(el) s"
