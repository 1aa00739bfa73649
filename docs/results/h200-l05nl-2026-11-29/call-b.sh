#!/usr/bin/env bash
# Call B: (1) the no-loads A/B of call A, with the libraries fixed (common's C files linked in);
# (2) lesson 10 version 4's form B with the pinned row sums (.gpu/l17/formb-pin.patch) against the
# tree at the steps call 4 of the last session could not time: dim 256 and the cascade (version 3).
set -u
X=$OUT/noloads; F=$OUT/formb; mkdir -p $OUT/logs $X $F
exec > >(tee $OUT/logs/call-b.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
timeout 170 python3 .gpu/l18/ab_nl.py tree=.gpu/l18/tree.so nl=.gpu/l18/nl.so > $X/ab-noloads.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
cat $X/ab-noloads.log
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 200 cmake --build build-gpu -j 16 --target lesson-10 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
[ -x build-gpu/bin/lesson-10 ] || exit 1
mkdir -p /tmp/old /tmp/new; cp build-gpu/bin/lesson-10 /tmp/old/
patch -p1 < .gpu/l17/formb-pin.patch > /dev/null || { echo "patch failed"; exit 1; }
timeout 90 cmake --build build-gpu -j 16 --target lesson-10 2>&1 | grep -E "error|C75"; cp build-gpu/bin/lesson-10 /tmp/new/
patch -R -p1 < .gpu/l17/formb-pin.patch > /dev/null; echo "both $(( $(date +%s) - t0 )) s"
for s in "7|--batch 3 --kv-seq 70 --seq 16 --dim 256 --causal" "4|--batch 6 --kv-seq 3000 --seq 5 --causal" "4|--batch 4 --kv-seq 1500 --seq 3 --dim 256"; do
  v=${s%%|*}; a=${s#*|}; echo "check [$v $a] $(timeout 30 /tmp/new/lesson-10 $v $a --check-only 2>&1 | grep -E "^ *$v |rror" | head -1 | tr -s ' ')"; done
for vs in "7|--batch 16 --kv-seq 32768 --seq 16 --dim 256 --causal" "4|--batch 32 --kv-seq 33792 --seq 4 --causal" "4|--batch 32 --kv-seq 33792 --seq 1" \
          "7|--batch 16 --kv-seq 32768 --seq 8 --dim 256 --causal"; do
  for r in 1 2; do
    [ $(( $(date +%s) - t0 )) -gt 540 ] && { echo "stop: time"; break 2; }
    v=${vs%%|*}; s=${vs#*|}; line="r$r v$v [$s]"
    for b in $( [ $r = 1 ] && echo "old new" || echo "new old"); do s0=$(date +%s)
      line="$line $b $(timeout 45 /tmp/$b/lesson-10 $v $s --no-check --iters 30 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ' | cut -c1-60) ($(( $(date +%s) - s0 )) s)"
    done
    echo "$line"
  done
done
cp .gpu/l18/call-b.sh .gpu/l17/formb-pin.patch $F/
echo "all $(( $(date +%s) - t0 )) s"
