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
#!/usr/bin/env bash
# Prototype: the merge kernel waits on per-chunk done marks instead of the whole main kernel
# (L10_PROTO_FLAGS=1, version 4 only). GPU cases with it, then the bench in turns.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/mf-call1.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons test_lesson10_gpu 2>&1 | grep -E "error|C75" | head
echo "built $(( $(date +%s) - t0 )) s"
B=build-gpu/bin
for c in wgmma graph cascade; do s0=$(date +%s)
  L10_PROTO_FLAGS=1 CK_RUN_CASE=$c timeout 150 $B/test_lesson10_gpu > $L/test-$c.log 2>&1
  echo "== $c rc=$? $(grep -E "Checks" $L/test-$c.log) $(( $(date +%s) - s0 )) s"
  grep -E "FAIL|:E:|:F:" $L/test-$c.log | head -5; done
export ATTN_LIB=$PWD/build-gpu/lib/libattn_lessons.so
for r in 1 2 3; do for f in 0 1; do
  [ $(( $(date +%s) - t0 )) -gt 480 ] && { echo "stopped"; break 2; }
  L10_PROTO_FLAGS=$f timeout 120 python3 bench/lesson10_peers.py --dims 128 --batches 1,16 --kvs 32768 --tokens 8,16 --no-fp8 --iters 15 --out $L/b-$f-$r > $L/b-$f-$r.log 2>&1
  echo "== round $r flags $f rc=$? t=$(( $(date +%s) - t0 ))"
  grep -E "^l10 impl=l10-v4" $L/b-$f-$r.log | sed -E 's/ (pct_hbm|host_us).*max_abs/ max_abs/; s/ (what|check|note)=.*//' | cut -c1-150
done; done
for f in 0 1; do
  L10_PROTO_FLAGS=$f timeout 100 python3 bench/lesson10_peers.py --dims 64,256 --batches 1 --kvs 32768 --tokens 8,16 --no-fp8 --iters 15 --out $L/c-$f > $L/c-$f.log 2>&1
  echo "== dims 64/256 flags $f rc=$?"; grep -E "^l10 impl=l10-v4" $L/c-$f.log | sed -E 's/ (pct_hbm|host_us).*max_abs/ max_abs/; s/ (what|check|note)=.*//' | cut -c1-150
done
echo "all $(( $(date +%s) - t0 )) s"
rm -rf $L/b-*-? $L/c-?
tar czf $OUT/mf.tgz -C $L .
#!/usr/bin/env bash
# The prototype with the timeline stamps: where does the merge's time go with the done marks?
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/mf-call2.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s)
git apply -R .gpu/mf/proto.patch && git apply .gpu/mf/proto-tl.patch || { echo "patch failed"; exit 1; }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" | head
echo "built $(( $(date +%s) - t0 )) s"
export ATTN_LIB=$PWD/build-gpu/lib/libattn_lessons.so
for f in 0 1 0 1; do echo "##### L10_PROTO_FLAGS=$f"
L10_PROTO_FLAGS=$f timeout 100 python3 .gpu/tl/tl.py --iters 8 --cfg 1,32768,8,causal | grep -v "TB/s per\|SMs fastest\|block idx"
done
echo "all $(( $(date +%s) - t0 )) s"
git apply -R .gpu/mf/proto-tl.patch; git apply .gpu/mf/proto.patch
#!/usr/bin/env bash
# The prototype, second form: 4 threads share a row's float4, each waits on its own chunks' marks
# and loads them in one round. GPU cases, bench in turns, then the timeline build.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/mf-call3.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons test_lesson10_gpu 2>&1 | grep -E "error|C75" | head
echo "built $(( $(date +%s) - t0 )) s"
B=build-gpu/bin
for c in wgmma graph cascade; do s0=$(date +%s)
  L10_PROTO_FLAGS=1 CK_RUN_CASE=$c timeout 150 $B/test_lesson10_gpu > $L/test-$c.log 2>&1
  echo "== $c rc=$? $(grep -E "Checks" $L/test-$c.log) $(( $(date +%s) - s0 )) s"
  grep -E "FAIL|:E:|:F:" $L/test-$c.log | head -5; done
export ATTN_LIB=$PWD/build-gpu/lib/libattn_lessons.so
for r in 1 2 3; do for f in 0 1; do
  L10_PROTO_FLAGS=$f timeout 120 python3 bench/lesson10_peers.py --dims 128 --batches 1,16 --kvs 32768 --tokens 8,16 --no-fp8 --iters 15 --out $L/b-$f-$r > $L/b-$f-$r.log 2>&1
  echo "== round $r flags $f rc=$? t=$(( $(date +%s) - t0 ))"
  grep -E "^l10 impl=l10-v4" $L/b-$f-$r.log | sed -E 's/ (pct_hbm|host_us).*max_abs/ max_abs/; s/ (what|check|note)=.*//; s/; workspace.*//' | cut -c1-150
done; done
for f in 0 1; do
  L10_PROTO_FLAGS=$f timeout 100 python3 bench/lesson10_peers.py --dims 128,64,256 --batches 1 --kvs 4096,131072 --tokens 8,16 --no-fp8 --iters 15 --out $L/c-$f > $L/c-$f.log 2>&1
  echo "== dims 128/64/256 4k/128k flags $f rc=$?"; grep -E "^l10 impl=l10-v4" $L/c-$f.log | sed -E 's/ (pct_hbm|host_us).*max_abs/ max_abs/; s/ (what|check|note)=.*//; s/; workspace.*//' | cut -c1-150
done
echo "bench done $(( $(date +%s) - t0 )) s"
git apply -R .gpu/mf/proto.patch && git apply .gpu/mf/proto-tl.patch || { echo "patch failed"; exit 1; }
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" | head
for f in 0 1; do echo "##### L10_PROTO_FLAGS=$f"
L10_PROTO_FLAGS=$f timeout 100 python3 .gpu/tl/tl.py --iters 8 --cfg 1,32768,8,causal | grep -v "TB/s per\|SMs fastest\|block idx\|granularity\|(us, perc\|entry   \|epilogue"
done
git apply -R .gpu/mf/proto-tl.patch; git apply .gpu/mf/proto.patch
echo "all $(( $(date +%s) - t0 )) s"
rm -rf $L/b-*-? $L/c-?
tar czf $OUT/mf3.tgz -C $L .
