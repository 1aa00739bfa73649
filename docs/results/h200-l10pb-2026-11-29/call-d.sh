#!/usr/bin/env bash
# Call D (2026-11-29): is the merge inside the kernel what the cut steps pay? The tree against a
# build whose l10_merge_inside() answers 0 (the merge kernel after the main one), bench only.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-d.log) 2>&1
date; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
pip install -q --no-deps .peers/*.whl 2>/dev/null
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
F=lessons/10_serving_decode/merge_device.cuh; cp $F /tmp/m.orig
mk() { timeout 300 cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75|[1-9][0-9]* bytes spill"; L=$(find build-gpu -name libattn_lessons.so | head -1); cp $L /tmp/lib-$1.so; echo "built $1 $(( $(date +%s) - t0 )) s"; }
mk t
sed -i 's/  if (l10_merge_here(heads, kv_heads, max_q)) return 1;/  if (heads < 0 \&\& l10_merge_here(heads, kv_heads, max_q)) return 1;\n  if (heads > 0) return 0;/' $F; grep -c "heads > 0) return 0" $F; mk m
cp /tmp/m.orig $F
for v in t m t m; do
  mkdir -p $OUT/bench-$v-$RANDOM
  timeout 100 python3 bench/lesson10_peers.py --lib /tmp/lib-$v.so --batches 1,16,64,128 --kvs 8192 --tokens 1,8 --dims 128 --out $(ls -dt $OUT/bench-$v-* | head -1) > /dev/null 2>&1
  echo "bench $v rc $? $(( $(date +%s) - t0 )) s"
done
cp .gpu/s26/call-d.sh $OUT/logs/
