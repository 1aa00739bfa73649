#!/usr/bin/env bash
# The programmatic launches' configuration in one helper (pdl_launch.cuh): the GPU suite's cases
# that take those launches (versions 1, 2 and 4's merge, version 3's chain, the graphs), the
# program's default run checked, sanitizers on the cascade case.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L; B=/tmp/b-new
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/mg-call2.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
git log --oneline -1; git status --short | head
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B -j 16 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"
echo "built $(el) s"
echo "== lesson-10 (default run, every version checked):"; timeout 120 $B/bin/lesson-10 2>&1 | tail -25
echo "($(el) s)"
for c in cascade graph wgmma fp8 gpu serve; do
  [ $(el) -gt 470 ] && { echo "skip $c: time"; continue; }
  echo "== test_lesson10_gpu $c: $(CK_RUN_CASE=$c timeout 200 $B/bin/test_lesson10_gpu 2>&1 | grep -E '^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
done
for tool in memcheck racecheck synccheck; do
  [ $(el) -gt 530 ] && { echo "skip $tool: time"; continue; }
  echo "== $tool cascade: $(ATTN_TEST_SANITIZER=1 CK_RUN_CASE=cascade timeout 60 compute-sanitizer --tool $tool $B/bin/test_lesson10_gpu 2>&1 | grep -E 'SUMMARY|^[0-9]+%|FAIL' | tr '\n' ' ') $(el) s"
done
echo "all $(el) s"
