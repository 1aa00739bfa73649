#!/usr/bin/env bash
# Call A (2026-11-29): lesson 10's version 2 in persistent blocks (v2p.cu): a grid of one wave,
# each block taking its items in turn, each next item's first tiles and Q issued while the last
# one streams. Checks on awkward steps, the GPU suite, sanitizers, then rounds in turns and the bench.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-a.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH CK_FORK=no
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
pip install -q --no-deps .peers/*.whl 2>/dev/null
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
F=lessons/10_serving_decode/v2_fp8_cache.cu; cp $F /tmp/v2.orig
mk() { timeout 300 cmake --build build-gpu -j 16 --target attn_lessons lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75|[1-9][0-9]* bytes spill"; L=$(find build-gpu -name libattn_lessons.so | head -1); cp $L /tmp/lib-$1.so; cp build-gpu/bin/lesson-10 /tmp/l10-$1; echo "built $1 $(( $(date +%s) - t0 )) s"; }
mk t
cp .gpu/s26/v2p.cu $F; mk p
(cd build-gpu && timeout 200 ./bin/test_lesson10_gpu > $OUT/logs/test_lesson10_gpu-p.log 2>&1; echo "suite p rc $?"); tail -3 $OUT/logs/test_lesson10_gpu-p.log
cp /tmp/v2.orig $F
echo "suite $(( $(date +%s) - t0 )) s"
for sh in "--seq 1" "--batch 3 --kv-lens 1,777,4100 --causal --seq 5" "--kv-lens 30000,300x7 --seq 8" "--batch 64 --kv-seq 8192 --seq 1" "--kv-heads 1 --seq 16 --block-size 8" "--dim 64 --batch 64 --kv-seq 8192 --seq 2" "--dim 256 --batch 16 --kv-seq 8192 --seq 4 --causal" "--batch 200 --kv-seq 3000 --seq 3 --causal" "--kv-lens 1,16,17,4096x5,100000 --seq 16 --causal" "--kv-heads 2 --heads 32 --batch 5 --kv-seq 9000 --seq 4" "--dim 64 --kv-lens 20,500x40 --seq 1"; do
  /tmp/l10-p 3 --check-only $sh > /tmp/c.log 2>&1; echo "check p rc $? [$sh] $(grep -E 'fp8-cache' /tmp/c.log | head -1 | tr -s ' ' | cut -c1-110)"
done
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 99 /tmp/l10-p 3 --check-only --batch 3 --kv-lens 100,777,4100 --causal --seq 5 > /tmp/s.log 2>&1
  echo "$tool rc $? $(grep -E 'SUMMARY' /tmp/s.log)"; cat /tmp/s.log >> $OUT/logs/sanitize.log
done
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 99 /tmp/l10-p 3 --check-only --batch 40 --kv-seq 8192 --seq 1 > /tmp/s.log 2>&1; echo "memcheck multi-item rc $? $(grep -E 'SUMMARY' /tmp/s.log)"
echo "checks done $(( $(date +%s) - t0 )) s"
STEPS=("--batch 64 --kv-seq 8192 --seq 1" "--batch 128 --kv-seq 8192 --seq 1" "--batch 16 --kv-seq 8192 --seq 1" "--batch 16 --kv-seq 32768 --seq 1" "--batch 1 --kv-seq 32768 --seq 8" "--batch 16 --kv-seq 8192 --seq 8" "--batch 64 --kv-seq 8192 --seq 8" "--batch 16 --kv-seq 32768 --seq 16" "--batch 64 --kv-seq 32768 --seq 1")
for r in 1 2 3; do
  for sh in "${STEPS[@]}"; do
    line="r$r [$sh]"
    for v in t p; do
      ms=$(/tmp/l10-$v 3 --no-check --iters 30 $sh 2>&1 | grep -E "^ +3 +fp8-cache" | tr -s ' ' | cut -d' ' -f5-9)
      line="$line | $v $ms"
    done
    echo "$line"
  done
  echo "round $r $(( $(date +%s) - t0 )) s"
  [ $(( $(date +%s) - t0 )) -gt 330 ] && break
done
for v in t p; do
  mkdir -p $OUT/bench-$v
  timeout 120 python3 bench/lesson10_peers.py --lib /tmp/lib-$v.so --batches 16,64 --kvs 8192,32768 --tokens 1,8,16 --dims 128 --out $OUT/bench-$v > $OUT/logs/bench-$v.log 2>&1
  echo "bench $v rc $? $(( $(date +%s) - t0 )) s"
  [ $(( $(date +%s) - t0 )) -gt 500 ] && break
done
cp .gpu/s26/call-a.sh .gpu/s26/v2p.cu $OUT/logs/
echo "all $(( $(date +%s) - t0 )) s"
