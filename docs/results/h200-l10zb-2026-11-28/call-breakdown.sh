#!/usr/bin/env bash
# The cascade step kernel by kernel (Nsight Compute durations), new and old, and the step timed.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W=$R/build-wp; B=$R/build-bp; O=$R/build-op
rm -rf $W $O; mkdir -p $O/new $O/old $W && (git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t $W)
cd $W; git init -q .
exec > >(tee $L/call2.log) 2>&1
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; exit 1; }
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75|spill|warning"
cp $B/bin/lesson-10 $O/new/
git apply -R $R/.gpu/pf/pf.patch || { echo "patch -R failed"; exit 1; }
cmake --build $B -j 16 --target lesson-10 2>&1 | grep -E "error|C75"
cp $B/bin/lesson-10 $O/old/
echo "built $(el) s"
S="--batch 32 --kv-seq 33792 --seq 1"
for b in new old; do
  echo "== ncu $b [$S]"
  rm -f $L/ncu-$b.csv
  timeout 150 ncu --clock-control none --print-units base --print-kernel-base function --launch-count 60 --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --log-file $L/ncu-$b.csv $O/$b/lesson-10 4 $S --no-check --iters 2 > /dev/null 2>&1
  grep -E "prefill|wg_|merge|cascade" $L/ncu-$b.csv | awk -F'","' '{print $5, $13, $15}' | tail -12
  echo "$(el) s"
done
for r in 1 2; do for b in new old; do echo "r$r $b $($O/$b/lesson-10 4 $S --no-check --iters 20 2>&1 | grep -E '^ *4 ' | tr -s ' ')"; done; done
echo "all $(el) s"
cd $R; rm -rf $W $B $O
