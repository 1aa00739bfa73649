#!/usr/bin/env bash
# Call F (2026-11-29): version 5 with the next round's Q fetched into L2 at dim 128, in the tree:
# lesson 05's GPU tests and SASS checks, version 5 under memcheck, racecheck and synccheck, the
# tree before against after in rounds taking turns (two processes), then lesson 05's lessons phase
# and its bench as five processes.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-f.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export BUILD_DIR=build-gpu OUT PATH=/usr/local/cuda/bin:$PATH
if ! pkg-config --exists check 2>/dev/null; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 300 cmake --build build-gpu -j 16 --target attn_lessons lesson-5 test_lesson05_gpu test_lesson05_cpu 2>&1 | grep -E "error|C75|spill"; echo "built $(( $(date +%s) - t0 )) s"
(cd build-gpu && timeout 150 ctest -R 'lesson-5|lesson05' --output-on-failure > $OUT/logs/ctest.log 2>&1; echo "ctest rc $?"; grep -E "tests passed|Test +#" $OUT/logs/ctest.log | tail -16)
echo "ctest done $(( $(date +%s) - t0 )) s"
B=build-gpu/bin/lesson-5
for shape in "--batch 1 --heads 8 --kv-heads 2 --seq 2500 --kv-seq 2600 --dim 128 --causal" \
             "--batch 2 --heads 16 --kv-heads 4 --seq 1000 --dim 128" \
             "--batch 1 --heads 6 --kv-heads 6 --seq 400 --kv-seq 129 --dim 128 --causal" \
             "--batch 1 --heads 2 --seq 1 --kv-seq 1 --dim 128"; do
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 99 $B 5 --check-only $shape > /tmp/san.log 2>&1
    echo "san $tool rc $? [$shape] $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|overlap-bf16' /tmp/san.log | tr -s ' ' | tr '\n' ' ' | cut -c1-160)"
    cat /tmp/san.log >> $OUT/logs/sanitize.log
  done
done
echo "sanitize done $(( $(date +%s) - t0 )) s"
S=.gpu/s23
for i in 1 2; do
SHAPES="512:0:32:128 1024:0:16:128 2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 8192:1:2:128 2048:0:8:64" \
ROUNDS=15 timeout 120 python3 $S/ab_libs.py before=$S/tree.so after=$S/new.so > $OUT/logs/ab-land$i.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $OUT/logs/ab-land$i.log | sed -E 's/before\/cudnn.*same/same/'; grep -c FAIL $OUT/logs/ab-land$i.log
done
left=$(( 560 - ($(date +%s) - t0) )); echo "left $left s"
LESSONS=5 BENCH_PROCS=5 RUN=h200-l05u-2026-11-29 timeout $left scripts/gpu-suite.sh lessons bench > /tmp/s5.log 2>&1
echo "l05 suite rc $? $(( $(date +%s) - t0 )) s"; grep -E "gpu-suite:|MISMATCH|rror" /tmp/s5.log | tail -5
cp $S/call-f.sh $OUT/h200-l05u-2026-11-29/ 2>/dev/null
cd $OUT && tar czf all.tgz logs h200-l05u-2026-11-29 && rm -rf logs h200-l05u-2026-11-29
echo "all $(( $(date +%s) - t0 )) s"
