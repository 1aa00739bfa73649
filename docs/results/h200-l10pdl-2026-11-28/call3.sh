#!/usr/bin/env bash
# The committed tree after the launchers' refactor (wg_one()): the cascade case, the default step
# through l10_wg (version 4 alone, the launch every other path takes) checked, one timing.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L; B=/tmp/build-final
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
exec > >(tee $L/pdl-call3.log) 2>&1
date; t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
git status --short | head -5
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake3.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B -j 16 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill"
echo "built $(el) s"
echo "== test_lesson10_gpu cascade: $(CK_RUN_CASE=cascade timeout 100 $B/bin/test_lesson10_gpu 2>&1 | grep -E '^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
echo "== lesson-10 7 (default step, checked): $($B/bin/lesson-10 7 --check-only 2>&1 | grep -E '^ *7 ' | tr -s ' ')"
echo "== lesson-10 4 --batch 32 --kv-seq 33792 --seq 1: $($B/bin/lesson-10 4 --batch 32 --kv-seq 33792 --seq 1 --iters 30 2>&1 | grep -E '^ *4 ' | tr -s ' ') $(el) s"
echo "all $(el) s"
