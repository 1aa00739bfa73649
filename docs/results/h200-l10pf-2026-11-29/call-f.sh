#!/usr/bin/env bash
# Call F: more of call E's sweep (the prefix pass's share of lesson 05's slots), for a rule.
set -u
X=$OUT/pfpct2; mkdir -p $X $OUT/logs
exec > >(tee $OUT/logs/call-f.log) 2>&1
t0=$(date +%s); date; export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
patch -p1 < .gpu/l18/pfpct.patch > /dev/null || { echo "patch failed"; exit 1; }
timeout 200 cmake --build build-gpu -j 16 --target lesson-10 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
patch -R -p1 < .gpu/l18/pfpct.patch > /dev/null
B=build-gpu/bin/lesson-10
for vs in "100 60 45 40|--batch 32 --kv-seq 33792 --seq 1" "100 75 50|--batch 32 --kv-seq 33792 --seq 2 --causal" \
          "100 50|--batch 16 --kv-seq 8192 --seq 8 --causal" "100 75|--batch 32 --kv-seq 33792 --seq 4 --causal --dim 64"; do
  ps=${vs%%|*}; s=${vs#*|}; line="[$s]"
  for p in $ps; do
    [ $(( $(date +%s) - t0 )) -gt 330 ] && { echo "$line stop: time"; break 2; }
    line="$line pct$p $(L10_PF_PCT=$p timeout 40 $B 4 $s --no-check --iters 50 2>&1 | grep -E "^ *4 " | head -1 | tr -s ' ' | cut -c30-75)"
  done
  echo "$line"
done
cp .gpu/l18/call-f.sh $X/
echo "all $(( $(date +%s) - t0 )) s"
