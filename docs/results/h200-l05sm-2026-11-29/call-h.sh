#!/usr/bin/env bash
# Call H: version 5's O written into shared memory with stmatrix (v5sm.cu, eight stmatrix.x4 a
# thread where the tree has 64 four-byte stores) against the tree's version 5, two processes.
set -u
X=$OUT/sm; mkdir -p $X
exec > >(tee $X/sm-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s23
for i in 1 2; do
SHAPES="1024:0:16:128 2048:0:8:128 4096:0:4:128 8192:0:2:128 2048:1:8:128 4096:1:4:128" \
ROUNDS=15 timeout 120 python3 $S/ab_libs.py tree=$S/new.so stmatrix=$S/sm.so > $X/ab-sm$i.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-sm$i.log; grep -c FAIL $X/ab-sm$i.log
done
cp $S/call-h.sh $S/v5sm.cu $X/
cd $OUT && tar czf all.tgz sm && rm -rf sm
echo "all $(( $(date +%s) - t0 )) s"
