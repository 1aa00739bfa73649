#!/usr/bin/env bash
# Call C (2026-11-29): where the persistent forms lose. v2r: the static form with the next item
# found before the loop (not inside step 0); v2s: v2r issuing nothing of the next item ahead.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-c.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH CK_FORK=no
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
pip install -q --no-deps .peers/*.whl 2>/dev/null
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
F=lessons/10_serving_decode/v2_fp8_cache.cu; cp $F /tmp/v2.orig
mk() { timeout 300 cmake --build build-gpu -j 16 --target attn_lessons lesson-10 2>&1 | grep -E "error|C75|[1-9][0-9]* bytes spill"; L=$(find build-gpu -name libattn_lessons.so | head -1); cp $L /tmp/lib-$1.so; cp build-gpu/bin/lesson-10 /tmp/l10-$1; echo "built $1 $(( $(date +%s) - t0 )) s"; }
mk t
cp .gpu/s26/v2r.cu $F; mk r
cp .gpu/s26/v2s.cu $F; mk s
cp /tmp/v2.orig $F
for v in r s; do for sh in "--seq 1" "--batch 64 --kv-seq 8192 --seq 8" "--dim 64 --kv-lens 20,500x40 --seq 1"; do
  /tmp/l10-$v 3 --check-only $sh > /tmp/c.log 2>&1; echo "check $v rc $? [$sh] $(grep -E 'fp8-cache' /tmp/c.log | head -1 | tr -s ' ' | cut -c1-90)"
done; done
for v in t r s; do
  mkdir -p $OUT/bench-$v
  timeout 150 python3 bench/lesson10_peers.py --lib /tmp/lib-$v.so --batches 1,16,64 --kvs 8192,32768 --tokens 1,8 --dims 128 --out $OUT/bench-$v > $OUT/logs/bench-$v.log 2>&1
  echo "bench $v rc $? $(( $(date +%s) - t0 )) s"
done
cp .gpu/s26/call-c.sh .gpu/s26/v2r.cu .gpu/s26/v2s.cu $OUT/logs/
echo "all $(( $(date +%s) - t0 )) s"
