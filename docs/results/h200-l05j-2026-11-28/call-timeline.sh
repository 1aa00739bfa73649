#!/usr/bin/env bash
# Cycle stamps (clock64) of lesson 05 version 11's consumer chain: blocks 0 and 1, both consumer
# warpgroups, tiles 0-95, the third launch; default shape (batch 4, 16 heads, seq 4096, no mask)
# and causal batch 2, seq 8192. Then the tree and the stamped build timed the same way (the
# stamps' own cost). Analysis: python3 .gpu/v11tl/tl11.py FILE.tl
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/v11tl-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=$R/build-ab5; W=$R/build-w5; O=$R/build-o5
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || exit 1
build() { cmake --build $B -j 16 --target lesson-5 2>&1 | grep -E "error|C75" ; }
build; mkdir -p $O/tree; cp $B/bin/lesson-5 $O/tree/
cp $R/.gpu/v11tl/v11_tl.cu lessons/05_fa3_hopper/v11_fp8_persistent.cu; build; mkdir -p $O/tl; cp $B/bin/lesson-5 $O/tl/
echo "built $(( $(date +%s) - t0 )) s"
for s in "--batch 4 --seq 4096" "--batch 2 --seq 8192 --causal"; do
  n=$(echo "$s" | tr -d ' -')
  L05_TL=1 $O/tl/lesson-5 11 $s --no-check --iters 3 --warmup 0 2> $L/v11-$n.tl > /dev/null
  echo "[$s]: $(grep -c '^TL' $L/v11-$n.tl) stamps"; python3 $R/.gpu/v11tl/tl11.py $L/v11-$n.tl
  for v in tree tl tree tl; do echo "  $v: $($O/$v/lesson-5 11 $s --no-check --iters 20 2>&1 | grep -E 'fp8-persistent' | head -1)"; done
done
echo "all $(( $(date +%s) - t0 )) s"
