#!/usr/bin/env bash
# Source counters (Nsight Compute) of lesson 09 version 7 (tree) and the producer-warpgroup variant
# pw8, batch 2, 16 heads, seq 8192, dim 128, no mask: the shape of cuDNN's archived profile.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
exec > >(tee $L/src-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; ncu --version | tail -1
B=$R/build-ab9; W=$R/build-w9; O=$R/build-o9
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
cd $W; t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null || exit 1
build() { cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75" ; }
build; mkdir -p $O/tree; cp $B/bin/lesson-9 $O/tree/
cp $R/.gpu/pw8/v7_bulk_dq.cu lessons/09_backward/v7_bulk_dq.cu; build; mkdir -p $O/pw8; cp $B/bin/lesson-9 $O/pw8/
echo "built $(( $(date +%s) - t0 )) s"
for v in tree pw8; do
  timeout 200 ncu -k regex:'(bulkdq_kernel|pw_kernel)' --launch-skip 1 --launch-count 1 --section SourceCounters \
    --section WarpStateStats --section SpeedOfLight --import-source no -f -o $OUT/$v \
    $O/$v/lesson-9 7 --batch 2 --seq 8192 --heads 16 --dim 128 --no-check --iters 2 --warmup 0 > $L/ncu-$v-run.txt 2>&1
  echo "$v rc $? $(( $(date +%s) - t0 )) s"; tail -2 $L/ncu-$v-run.txt
  ncu --import $OUT/$v.ncu-rep --page source --csv --print-source sass > $L/$v-sass.csv 2>/dev/null
  ncu --import $OUT/$v.ncu-rep --page details > $L/$v-details.txt 2>/dev/null
  gzip -f $L/$v-sass.csv; rm -f $OUT/$v.ncu-rep
done
ls -la $L; echo "all $(( $(date +%s) - t0 )) s"
