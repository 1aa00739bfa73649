#!/usr/bin/env bash
# Per-block timeline of version 4 at batch 1 (instrumented build; the patch is applied here only).
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/tl-call1.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s)
git apply .gpu/tl/tl.patch || { echo "patch failed"; exit 1; }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" | head
echo "built $(( $(date +%s) - t0 )) s"
export ATTN_LIB=$PWD/build-gpu/lib/libattn_lessons.so
timeout 300 python3 .gpu/tl/tl.py --iters 8 --cfg 1,32768,8,causal 1,131072,8,causal
echo "wg rc=$? $(( $(date +%s) - t0 )) s"
echo "all $(( $(date +%s) - t0 )) s"
git apply -R .gpu/tl/tl.patch
#!/usr/bin/env bash
# Diagnostic: the one-wave plan against more chunks (L10_SPLITX = 1, 2, 4), bench rows of versions
# 1, 2 and 4 at batch 1 / 16 (32k keys) and 64 (8k keys), 1 and 8 tokens, three rounds in turns.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/splitx.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s)
git apply .gpu/tl/splitx.patch || { echo "patch failed"; exit 1; }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" | head
echo "built $(( $(date +%s) - t0 )) s"
export ATTN_LIB=$PWD/build-gpu/lib/libattn_lessons.so
for round in 1 2; do for x in 1 2 4; do
  [ $(( $(date +%s) - t0 )) -gt 520 ] && { echo "stopped"; break 2; }
  for shp in "1,16 32768" "64 8192"; do set -- $shp
    L10_SPLITX=$x timeout 150 python3 bench/lesson10_peers.py --dims 128 --batches $1 --kvs $2 --tokens 1,8 --iters 15 --out $L/x$x-r$round-$1.csv > $L/x$x-r$round-b$1.log 2>&1
    echo "== round $round splitx $x batches $1 kv $2 rc=$? t=$(( $(date +%s) - t0 ))"
    grep -E "^l10 impl=l10-(v1|v2|v4)" $L/x$x-r$round-b$1.log | sed -E 's/ (what|check|note)=.*//' | cut -c1-150
  done; done; done
git apply -R .gpu/tl/splitx.patch
tar czf $OUT/splitx-logs.tgz -C $L .
