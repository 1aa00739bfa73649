#!/usr/bin/env bash
# Call B (2026-11-29): lesson 05 version 15 (version 5 in persistent blocks, pairs under the mask) in
# the tree: lesson 05's GPU tests and SASS checks, version 15 under memcheck, racecheck and synccheck
# on shapes of several items a block, version 15 against version 5 and the draft (pz) in rounds
# taking turns (two processes), then lesson 05's lessons phase and its bench as five processes.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-b.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export BUILD_DIR=build-gpu OUT PATH=/usr/local/cuda/bin:$PATH
if ! pkg-config --exists check 2>/dev/null; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 300 cmake --build build-gpu -j 16 --target attn_lessons lesson-5 test_lesson05_gpu test_lesson05_cpu 2>&1 | grep -E "error|C75|[1-9][0-9]* bytes spill"; echo "built $(( $(date +%s) - t0 )) s"
(cd build-gpu && timeout 150 ctest -R 'lesson-5|lesson05' --output-on-failure > $OUT/logs/ctest.log 2>&1; echo "ctest rc $?"; grep -E "tests passed|Test +#" $OUT/logs/ctest.log | tail -18)
ok=$(grep -c "100% tests passed" $OUT/logs/ctest.log)
echo "ctest done $(( $(date +%s) - t0 )) s"
B=build-gpu/bin/lesson-5
for shape in "--batch 2 --heads 16 --kv-heads 4 --seq 1000 --dim 128" \
             "--batch 2 --heads 20 --kv-heads 4 --seq 1100 --kv-seq 700 --dim 128 --causal" \
             "--batch 3 --heads 20 --kv-heads 20 --seq 900 --kv-seq 1300 --dim 64 --causal" \
             "--batch 1 --heads 6 --kv-heads 6 --seq 400 --kv-seq 129 --dim 128 --causal" \
             "--batch 1 --heads 2 --seq 1 --kv-seq 1 --dim 64"; do
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 99 $B 15 --check-only $shape > /tmp/san.log 2>&1
    echo "san $tool rc $? [$shape] $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|pairs-bf16' /tmp/san.log | tr -s ' ' | tr '\n' ' ' | cut -c1-160)"
    cat /tmp/san.log >> $OUT/logs/sanitize.log
  done
done
echo "sanitize done $(( $(date +%s) - t0 )) s"
S=.gpu/s24
for i in 1 2; do
SHAPES="1024:0:16:128 2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 1024:1:16:128 2048:1:8:128 4096:1:4:128 8192:1:2:128 16384:1:1:128 3000:1:6:128 2048:0:8:64 2048:1:8:64" \
ROUNDS=15 timeout 150 python3 $S/ab_libs.py v5=$S/new.so v15=$S/new.so@l05_pairs pz=$S/pz.so > $OUT/logs/ab-v15-$i.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $OUT/logs/ab-v15-$i.log | sed -E 's/v5\/cudnn.*same/same/'; echo "checks failing: $(grep -c FAIL $OUT/logs/ab-v15-$i.log)"
done
left=$(( 575 - ($(date +%s) - t0) )); echo "left $left s"
if [ "$ok" = 1 ]; then
LESSONS=5 BENCH_PROCS=5 RUN=h200-l05v15-2026-11-29 timeout $left scripts/gpu-suite.sh lessons bench > /tmp/s5.log 2>&1
echo "l05 suite rc $? $(( $(date +%s) - t0 )) s"; grep -E "gpu-suite:|MISMATCH|rror" /tmp/s5.log | tail -5
fi
mkdir -p $OUT/h200-l05v15-2026-11-29; cp $S/call-b.sh $OUT/h200-l05v15-2026-11-29/
cd $OUT && tar czf all.tgz logs h200-l05v15-2026-11-29 && rm -rf logs h200-l05v15-2026-11-29
echo "all $(( $(date +%s) - t0 )) s"
