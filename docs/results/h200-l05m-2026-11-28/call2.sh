#!/usr/bin/env bash
# Version 7's pass with V transposed in registers (no staging tile): bytes against the pass before,
# the A/B of versions 11 and 12 with both passes, the program and the GPU suite, sanitizers.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L; B=/tmp/b-new; mkdir -p /tmp/l05
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/v12-call2.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
bash .gpu/ab12/mklib12.sh /tmp/l05/new.so > $L/mklib-new.log 2>&1 & p1=$!
QT=$R/.gpu/ab12/fp8_quant_tiles_old.cu bash .gpu/ab12/mklib12.sh /tmp/l05/old.so > $L/mklib-old.log 2>&1 & p2=$!
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 && \
  cmake --build $B -j 12 --target lesson-5 test_lesson05_gpu 2>&1 | grep -E "error|C75|spill" ) & p3=$!
wait $p1; wait $p2; wait $p3; cat $L/mklib-new.log; echo old:; cat $L/mklib-old.log; echo "built $(el) s"
python3 .gpu/ab12/cmp_ws.py /tmp/l05/old.so /tmp/l05/new.so; echo "($(el) s)"
P=$B/bin/lesson-5
echo "== lesson-5 (default run, every version):"; timeout 120 $P 2>&1 | grep -E "fp8|overlap|ok:|FAIL" | head -30; echo "($(el) s)"
echo "== A/B ($(el) s)"; ROUNDS=4 timeout 300 python3 .gpu/ab12/ab12.py /tmp/l05/new.so /tmp/l05/old.so; echo "($(el) s)"
echo "== test_lesson05_gpu: $(timeout 150 $B/bin/test_lesson05_gpu 2>&1 | grep -E '^[0-9]+%|FAIL' | tr '\n' '|') $(el) s"
for tool in memcheck racecheck synccheck; do
  for v in 7 12; do
    sh="--batch 2 --heads 16 --kv-heads 4 --seq 300 --kv-seq 777 --causal"
    [ $(el) -gt 520 ] && { echo "skip $tool: time"; continue; }
    echo "== $tool lesson-5 $v $sh: $(timeout 90 compute-sanitizer --tool $tool $P $v $sh --dim 128 --check-only 2>&1 | grep -E 'SUMMARY|fp8-|FAIL' | tr -s ' ' | tr '\n' ' ') $(el) s"
  done
done
[ $(el) -lt 540 ] && timeout 50 ncu --kernel-name regex:quant_tiles --section SpeedOfLight --section Occupancy \
  --section WarpStateStats --section SchedulerStats python3 .gpu/ab12/cvt.py /tmp/l05/new.so > $L/ncu-cvt-new.txt 2>&1; echo "ncu rc $? $(el) s"
echo "all $(el) s"
