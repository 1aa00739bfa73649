#!/usr/bin/env bash
# Call E: lesson 10 version 3 (the cascade) with its prefix pass on a share of the SMs
# (L10_PF_PCT percent of lesson 05's slots; .gpu/l18/pfpct.patch), so that the suffix pass,
# launched behind it, runs beside it on the rest. 100 is the tree.
set -u
X=$OUT/pfpct; mkdir -p $X $OUT/logs
exec > >(tee $OUT/logs/call-e.log) 2>&1
t0=$(date +%s); date; export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
patch -p1 < .gpu/l18/pfpct.patch > /dev/null || { echo "patch failed"; exit 1; }
timeout 200 cmake --build build-gpu -j 16 --target lesson-10 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
patch -R -p1 < .gpu/l18/pfpct.patch > /dev/null
B=build-gpu/bin/lesson-10
for s in "50|--batch 6 --kv-seq 3000 --seq 5 --causal" "35|--batch 32 --kv-seq 33792 --seq 1" "50|--batch 4 --kv-seq 9000 --seq 2 --dim 64"; do
  p=${s%%|*}; a=${s#*|}; echo "check pct $p [$a] $(L10_PF_PCT=$p timeout 60 $B 4 $a --check-only 2>&1 | grep -E "^ *4 |rror" | head -1 | tr -s ' ')"; done
for vs in "100 70 50 35|--batch 32 --kv-seq 33792 --seq 1" "100 60|--batch 32 --kv-seq 33792 --seq 4 --causal" "100 50|--batch 32 --kv-seq 33792 --seq 1 --dim 64" "100 50|--batch 32 --kv-seq 9216 --seq 1"; do
  ps=${vs%%|*}; s=${vs#*|}; line="[$s]"
  for p in $ps; do
    [ $(( $(date +%s) - t0 )) -gt 540 ] && { echo "$line stop: time"; break 2; }
    line="$line pct$p $(L10_PF_PCT=$p timeout 45 $B 4 $s --no-check --iters 50 2>&1 | grep -E "^ *4 " | head -1 | tr -s ' ' | cut -c30-75)"
  done
  echo "$line"
done
cp .gpu/l18/call-e.sh .gpu/l18/pfpct.patch $X/
echo "all $(( $(date +%s) - t0 )) s"
