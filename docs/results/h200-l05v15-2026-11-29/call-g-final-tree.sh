#!/usr/bin/env bash
# Call G (2026-11-29): the final tree (version 15's lists in attn_causal.h, the WARPSYNC check):
# lesson 05's GPU tests, SASS checks and checklist on the H200, and version 15 in the program at
# the default shape and at seq 2k.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-g.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
if ! pkg-config --exists check 2>/dev/null; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 300 cmake --build build-gpu -j 16 --target lesson-5 test_lesson05_gpu test_lesson05_cpu checklist-5 drill-5 2>&1 | grep -E "error|C75|[1-9][0-9]* bytes spill"; echo "built $(( $(date +%s) - t0 )) s"
(cd build-gpu && timeout 200 ctest -R 'lesson-5|lesson05|checklist-5' --output-on-failure > $OUT/logs/ctest-final.log 2>&1; echo "ctest rc $?"; grep -E "tests passed|Test +#" $OUT/logs/ctest-final.log | tail -20)
timeout 60 build-gpu/bin/lesson-5 15 > $OUT/logs/run15.log 2>&1; echo "run 15 rc $?"; grep -E "pairs|PASS|FAIL" $OUT/logs/run15.log | head -6
for v in 5 15; do timeout 60 build-gpu/bin/lesson-5 $v --seq 2048 --batch 8 > $OUT/logs/run$v-2k.log 2>&1; echo "run $v 2k rc $?"; grep -E "overlap|pairs" $OUT/logs/run$v-2k.log | head -4; done
cd $OUT && tar czf all.tgz logs && rm -rf logs
echo "all $(( $(date +%s) - t0 )) s"
