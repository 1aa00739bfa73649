#!/usr/bin/env bash
# Call 4: lesson 10 version 4's "form B" (h200-l10za overlap-b.patch) with the row sums stored to
# shared memory before wait_group 0 (formb-pin.patch), against the tree: both builds of lesson-10,
# where ptxas put the waits, checks on awkward shapes, then the two taking turns.
set -u
X=$OUT/formb; mkdir -p $X $OUT/logs
exec > >(tee $OUT/logs/call-4.log) 2>&1
t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 135 cmake --build build-gpu -j 16 --target lesson-10 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
[ -x build-gpu/bin/lesson-10 ] || exit 1
mkdir -p /tmp/old /tmp/new; cp build-gpu/bin/lesson-10 /tmp/old/
patch -p1 < .gpu/l17/formb-pin.patch > /dev/null || { echo "patch failed"; exit 1; }
timeout 60 cmake --build build-gpu -j 16 --target lesson-10 2>&1 | grep -E "error|C75"; cp build-gpu/bin/lesson-10 /tmp/new/
patch -R -p1 < .gpu/l17/formb-pin.patch > /dev/null; echo "both $(( $(date +%s) - t0 )) s"
bash scripts/check-wait-placement.sh /tmp/new/lesson-10 "l10_wg(_pair)?_kernel_d(64|128|256)"
bash scripts/check-wait-placement.sh /tmp/old/lesson-10 "l10_wg(_pair)?_kernel_d(64|128|256)" | tail -1
for s in "7|--batch 3 --kv-seq 1 --seq 1" "7|--batch 4 --kv-seq 777 --seq 16 --causal" "7|--batch 2 --kv-seq 2049 --seq 12 --dim 64 --causal" "7|--batch 3 --kv-seq 70 --seq 16 --dim 256 --causal" "4|--batch 6 --kv-seq 3000 --seq 5 --causal"; do
  v=${s%%|*}; a=${s#*|}; echo "check [$v $a] $(timeout 20 /tmp/new/lesson-10 $v $a --check-only 2>&1 | grep -E "^ *$v |rror" | head -1 | tr -s ' ')"; done
for r in 1 2; do
  for vs in "7|--heads 32 --kv-heads 4 --seq 16" "7|--batch 16 --kv-seq 8192 --seq 16 --causal" "7|--seq 8 --causal" \
            "7|--batch 16 --kv-seq 32768 --seq 16 --dim 256 --causal" "4|--batch 32 --kv-seq 33792 --seq 4 --causal" "4|--batch 32 --kv-seq 33792 --seq 1"; do
    [ $(( $(date +%s) - t0 )) -gt 195 ] && { echo "stop: time"; break 2; }
    v=${vs%%|*}; s=${vs#*|}; line="r$r v$v [$s]"
    for b in $( [ $r = 1 ] && echo "old new" || echo "new old"); do
      line="$line $b $(timeout 15 /tmp/$b/lesson-10 $v $s --no-check --iters 30 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ' | cut -c1-60)"
    done
    echo "$line"
  done
done
cp .gpu/l17/call-4.sh .gpu/l17/formb-pin.patch $X/
echo "all $(( $(date +%s) - t0 )) s"
