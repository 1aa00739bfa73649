#!/usr/bin/env bash
# Call F (2026-11-29): the plan's cut at more multi-wave steps (batch 40, 80, 100). One library whose chunk_for() takes
# the sequences' cut from L10_SPLITS (plan-splits.c, experiment only), the bench at batch 64 and
# 128 with 8k keys, 1 and 8 tokens, one process per cut (unset: the tree's rule).
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-f.log) 2>&1
date; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
pip install -q --no-deps .peers/*.whl 2>/dev/null
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cp lessons/10_serving_decode/plan.c /tmp/plan.orig; cp .gpu/s26/plan-splits.c lessons/10_serving_decode/plan.c
timeout 300 cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75|[1-9][0-9]* bytes spill"
L=$(find build-gpu -name libattn_lessons.so | head -1); cp $L /tmp/lib-k.so; cp /tmp/plan.orig lessons/10_serving_decode/plan.c
echo "built $(( $(date +%s) - t0 )) s"
for k in tree 1 2 3 4; do
  d=$OUT/bench-k$k-$(date +%s%N | tail -c 6); mkdir -p $d
  if [ $k = tree ]; then env -u L10_SPLITS timeout 90 python3 bench/lesson10_peers.py --lib /tmp/lib-k.so --batches 40,80,100 --kvs 8192 --tokens 1,8,16 --dims 128 --out $d > $d/bench.log 2>&1
  else L10_SPLITS=$k timeout 90 python3 bench/lesson10_peers.py --lib /tmp/lib-k.so --batches 40,80,100 --kvs 8192 --tokens 1,8,16 --dims 128 --out $d > $d/bench.log 2>&1; fi
  echo "bench k=$k rc $? $(( $(date +%s) - t0 )) s"
  [ $(( $(date +%s) - t0 )) -gt 200 ] && break
done
cp .gpu/s26/call-f.sh .gpu/s26/plan-splits.c $OUT/logs/
