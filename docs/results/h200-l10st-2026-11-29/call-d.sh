#!/usr/bin/env bash
# Call D: lesson 10 version 4 taking its tiles from a counter per (sequence, KV head, unit)
# (.gpu/l18/steal.patch) against the tree: both builds of lesson-10, the new build's checks on
# awkward steps and the GPU suite's wgmma, graph and cascade cases, then the two taking turns.
set -u
X=$OUT/steal; mkdir -p $X $OUT/logs
exec > >(tee $OUT/logs/call-d.log) 2>&1
t0=$(date +%s); date
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CK_FORK=no PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 200 cmake --build build-gpu -j 16 --target lesson-10 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
[ -x build-gpu/bin/lesson-10 ] || exit 1
mkdir -p /tmp/old /tmp/new; cp build-gpu/bin/lesson-10 /tmp/old/
patch -p1 < .gpu/l18/steal.patch > /dev/null || { echo "patch failed"; exit 1; }
timeout 150 cmake --build build-gpu -j 16 --target lesson-10 test_lesson10_gpu 2>&1 | grep -E "error|C75"; cp build-gpu/bin/lesson-10 /tmp/new/
echo "both $(( $(date +%s) - t0 )) s"
bash scripts/check-wait-placement.sh /tmp/new/lesson-10 "l10_wg(_pair)?_kernel_d(64|128|256)" 2>&1 | tail -2
for s in "7|--batch 3 --kv-seq 1 --seq 1" "7|--batch 4 --kv-seq 777 --seq 16 --causal" "7|--batch 2 --kv-seq 2049 --seq 12 --dim 64 --causal" \
         "7|--batch 3 --kv-seq 70 --seq 16 --dim 256 --causal" "7|--kv-seq 5000 --seq 8 --block-size 8" "7|--kv-seq 33000 --seq 3 --causal --heads 16 --kv-heads 2" \
         "7|--batch 2 --kv-seq 20000 --seq 16 --dim 256" "7|--kv-lens 30000,300x7 --seq 4 --causal" "4|--batch 6 --kv-seq 3000 --seq 5 --causal" "7" "7|--causal"; do
  v=${s%%|*}; a=${s#*|}; [ "$a" = "$s" ] && a=""; echo "check [$v $a] $(timeout 40 /tmp/new/lesson-10 $v $a --check-only 2>&1 | grep -E "^ *$v |rror" | head -1 | tr -s ' ')"; done
s0=$(date +%s); (cd build-gpu && for c in wgmma graph cascade; do CK_RUN_CASE=$c timeout 100 ./bin/test_lesson10_gpu 2>&1 | tail -2; done) > $X/test-cases.log 2>&1
echo "suite cases $(( $(date +%s) - s0 )) s"; grep -E "Checks|rc" $X/test-cases.log
patch -R -p1 < .gpu/l18/steal.patch > /dev/null
for r in 1 2; do
  for vs in "7|" "7|--causal" "7|--kv-seq 131072" "7|--kv-seq 4096" "7|--seq 16" "7|--seq 1" "7|--batch 16 --seq 8" "7|--dim 256" "7|--dim 64"; do
    [ $(( $(date +%s) - t0 )) -gt 560 ] && { echo "stop: time"; break 2; }
    v=${vs%%|*}; s=${vs#*|}; line="r$r v$v [$s]"
    for b in $( [ $r = 1 ] && echo "old new" || echo "new old"); do
      line="$line $b $(timeout 40 /tmp/$b/lesson-10 $v $s --no-check --iters 50 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ' | cut -c1-70)"
    done
    echo "$line"
  done
done
cp .gpu/l18/call-d.sh .gpu/l18/steal.patch $X/
echo "all $(( $(date +%s) - t0 )) s"
