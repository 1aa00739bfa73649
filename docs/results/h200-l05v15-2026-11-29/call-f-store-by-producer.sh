#!/usr/bin/env bash
# Call F: the O store handed to the producer warpgroup's warp 2 (v15st.cu), beside the tree version 15 and version 5.
set -u
X=$OUT/st; mkdir -p $X
exec > >(tee $X/st-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s24
for i in 1 2; do
SHAPES="512:0:32:128 1024:0:16:128 2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 1024:1:16:128 2048:1:8:128 4096:1:4:128 8192:1:2:128 16384:1:1:128 3000:1:6:128 3000:0:6:128 2048:0:8:64 2048:1:8:64" \
ROUNDS=15 timeout 200 python3 $S/ab_libs.py v5=$S/new.so v15=$S/new.so@l05_pairs v15st=$S/v15st.so@l05_pairs > $X/ab-st-$i.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-st-$i.log | sed -E 's/v5\/cudnn.*same/same/'; echo "checks failing: $(grep -c FAIL $X/ab-st-$i.log)"; grep FAIL $X/ab-st-$i.log | head -3 | cut -c1-300
done
cp $S/call-f.sh $S/v15st.cu $X/
cd $OUT && tar czf all.tgz st && rm -rf st
echo "all $(( $(date +%s) - t0 )) s"
