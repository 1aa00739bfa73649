#!/usr/bin/env bash
# Call A (2026-11-29): version 5 with its first loads at the block's entry, in the tree: lesson 05's
# and lesson 10's GPU tests and SASS checks, version 5 under memcheck, racecheck and synccheck on
# awkward shapes, then lesson 05's lessons phase and its bench as five processes.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-a.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export BUILD_DIR=build-gpu OUT PATH=/usr/local/cuda/bin:$PATH
if ! pkg-config --exists check 2>/dev/null; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 300 cmake --build build-gpu -j 16 --target attn_lessons lesson-5 lesson-10 test_lesson05_gpu test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"; echo "built $(( $(date +%s) - t0 )) s"
(cd build-gpu && timeout 200 ctest -R 'lesson-5|lesson05|lesson-10|lesson10' --output-on-failure > $OUT/logs/ctest.log 2>&1; echo "ctest rc $?"; tail -4 $OUT/logs/ctest.log; grep -iE "fail|skipped" $OUT/logs/ctest.log | head)
echo "ctest done $(( $(date +%s) - t0 )) s"
B=build-gpu/bin/lesson-5
for shape in "--batch 1 --heads 4 --kv-heads 2 --seq 300 --kv-seq 520 --dim 128 --causal" \
             "--batch 1 --heads 6 --kv-heads 6 --seq 400 --kv-seq 129 --dim 128 --causal" \
             "--batch 2 --heads 8 --kv-heads 1 --seq 777 --kv-seq 3000 --dim 64" \
             "--batch 1 --heads 2 --seq 1 --kv-seq 1 --dim 128"; do
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 99 $B 5 --check-only $shape > /tmp/san.log 2>&1
    echo "san $tool rc $? [$shape] $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASS|FAIL' /tmp/san.log | tr '\n' ' ' | cut -c1-200)"
    cat /tmp/san.log >> $OUT/logs/sanitize.log
  done
done
echo "sanitize done $(( $(date +%s) - t0 )) s"
left=$(( 585 - ($(date +%s) - t0) )); echo "left $left s"
LESSONS=5 BENCH_PROCS=5 RUN=h200-l05t-2026-11-29 timeout $left scripts/gpu-suite.sh lessons bench > /tmp/s5.log 2>&1
echo "l05 suite rc $? $(( $(date +%s) - t0 )) s"; grep -E "gpu-suite:|peers_median|MISMATCH|rror" /tmp/s5.log | tail -8
cp .gpu/s23/call-a.sh $OUT/h200-l05t-2026-11-29/ 2>/dev/null
cd $OUT && tar czf all.tgz logs h200-l05t-2026-11-29 && rm -rf logs h200-l05t-2026-11-29
echo "all $(( $(date +%s) - t0 )) s"
