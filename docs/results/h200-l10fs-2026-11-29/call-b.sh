#!/usr/bin/env bash
# Call B (2026-11-29): lesson 10's version 2 with 4 stages a warp at dim 128 (2 blocks an SM):
# the GPU suite and racecheck/synccheck on it, then lesson 10's bench on the tree's library and on
# it, one process each, the FP8 rows with their bf16 rows in the same process.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-b.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH CK_FORK=no
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
F=lessons/10_serving_decode/v2_fp8_cache.cu; cp $F /tmp/v2.orig
mk() { timeout 240 cmake --build build-gpu -j 16 --target attn_lessons lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|[1-9][0-9]* bytes spill"; L=$(find build-gpu -name libattn_lessons.so | head -1); cp $L /tmp/lib-$1.so; echo "built $1 ($L) $(( $(date +%s) - t0 )) s"; }
mk s3
sed -i "s/#define FD_STAGES (HEAD_DIM == 64 ? 7 : 3)/#define FD_STAGES (HEAD_DIM == 64 ? 7 : HEAD_DIM == 128 ? 4 : 3)/" $F
grep -c "HEAD_DIM == 128 ? 4" $F; mk s4
(cd build-gpu && timeout 200 ./bin/test_lesson10_gpu > $OUT/logs/test_lesson10_gpu.log 2>&1; echo "suite rc $?"); tail -2 $OUT/logs/test_lesson10_gpu.log
echo "suite $(( $(date +%s) - t0 )) s"
for tool in racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 99 build-gpu/bin/lesson-10 3 --check-only --batch 3 --kv-lens 100,777,4100 --causal --seq 5 > /tmp/s.log 2>&1
  echo "$tool rc $? $(grep -E 'SUMMARY' /tmp/s.log)"; cat /tmp/s.log >> $OUT/logs/sanitize.log
done
cp /tmp/v2.orig $F
echo "sanitize $(( $(date +%s) - t0 )) s"
for v in s3 s4; do
  mkdir -p $OUT/bench-$v
  timeout 170 python3 bench/lesson10_peers.py --lib /tmp/lib-$v.so --batches 16,64 --kvs 8192,32768 --tokens 1,8,16 --dims 128 --out $OUT/bench-$v > $OUT/logs/bench-$v.log 2>&1
  echo "bench $v rc $? $(( $(date +%s) - t0 )) s"
done
cp .gpu/s25/call-b.sh $OUT/logs/
echo "all $(( $(date +%s) - t0 )) s"
