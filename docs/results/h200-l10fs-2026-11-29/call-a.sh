#!/usr/bin/env bash
# Call A (2026-11-29): lesson 10's version 2 (the FP8 cache) with a deeper ring at dim 128.
# Tree: 3 stages of 16 keys a warp, 3 blocks an SM. Variants: 4 and 5 stages (2 blocks an SM by
# shared memory, so the plan's chunks change with them), and 3 stages padded to 2 blocks an SM
# (the plan's change without the deeper ring). Checks on awkward steps, then rounds in turns.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-a.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
if ! pkg-config --exists check 2>/dev/null; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
F=lessons/10_serving_decode/v2_fp8_cache.cu; cp $F /tmp/v2.orig
mk() { timeout 240 cmake --build build-gpu -j 16 --target lesson-10 2>&1 | grep -E "error|C75|[1-9][0-9]* bytes spill"; cp build-gpu/bin/lesson-10 /tmp/l10-$1; echo "built $1 $(( $(date +%s) - t0 )) s"; }
mk s3
for n in 4 5; do
  cp /tmp/v2.orig $F; sed -i "s/#define FD_STAGES (HEAD_DIM == 64 ? 7 : 3)/#define FD_STAGES (HEAD_DIM == 64 ? 7 : HEAD_DIM == 128 ? $n : 3)/" $F
  grep -c "HEAD_DIM == 128 ? $n" $F; mk s$n
done
cp /tmp/v2.orig $F
sed -i "s/#define FD_SMEM_BYTES (FD_Q_BYTES + FD_WARPS \* FD_WARP_BYTES)/#define FD_SMEM_BYTES (FD_Q_BYTES + FD_WARPS * FD_WARP_BYTES + (HEAD_DIM == 128 ? 36864 : 0))/" $F
grep -c "36864" $F; mk p3
cp /tmp/v2.orig $F; git diff --stat
for v in s4 s5 p3; do
  for sh in "--seq 1" "--batch 3 --kv-lens 1,777,4100 --causal --seq 5" "--kv-lens 30000,300x7 --seq 8" "--batch 64 --kv-seq 8192 --seq 1" "--kv-heads 1 --seq 16 --block-size 8"; do
    /tmp/l10-$v 3 --check-only $sh > /tmp/c.log 2>&1; echo "check $v rc $? [$sh] $(grep -E 'fp8-cache +bf16' /tmp/c.log | tr -s ' ' | cut -c1-80)"
  done
done
compute-sanitizer --tool memcheck --error-exitcode 99 /tmp/l10-s5 3 --check-only --batch 3 --kv-lens 1,777,4100 --causal --seq 5 > /tmp/m.log 2>&1; echo "memcheck s5 rc $? $(grep 'ERROR SUMMARY' /tmp/m.log)"
echo "checks done $(( $(date +%s) - t0 )) s"
STEPS=("--batch 64 --kv-seq 8192 --seq 1" "--batch 128 --kv-seq 8192 --seq 1" "--batch 16 --kv-seq 32768 --seq 1" "--batch 16 --kv-seq 131072 --seq 1" "--seq 1" "--seq 8" "--batch 16 --kv-seq 8192 --seq 8" "--batch 64 --kv-seq 8192 --seq 8" "--batch 16 --kv-seq 8192 --seq 16" "--batch 16 --kv-seq 32768 --seq 4")
for r in 1 2 3; do
  for sh in "${STEPS[@]}"; do
    line="r$r [$sh]"
    for v in s3 s4 s5 p3; do
      ms=$(/tmp/l10-$v 3 --no-check --iters 30 $sh 2>&1 | grep -E "^ +3 +fp8-cache" | tr -s ' ' | cut -d' ' -f5-9)
      line="$line | $v $ms"
    done
    echo "$line"
  done
  echo "round $r $(( $(date +%s) - t0 )) s"
  [ $(( $(date +%s) - t0 )) -gt 480 ] && break
done
for sh in "--batch 64 --kv-seq 8192 --seq 1" "--batch 16 --kv-seq 32768 --seq 1" "--batch 64 --kv-seq 8192 --seq 8"; do
  echo "bf16 v1 [$sh] $(/tmp/l10-s3 1 --no-check --iters 30 $sh 2>&1 | grep -E '^ +1 +draft-tiles' | tr -s ' ')"
done
cp .gpu/s25/call-a.sh $OUT/logs/
echo "all $(( $(date +%s) - t0 )) s"
