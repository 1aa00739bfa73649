#!/usr/bin/env bash
# Call I: version 5 in persistent blocks (v5p.cu: one block per SM taking items blockIdx + n *
# gridDim, two Q buffers, the ping-pong carried from item to item, the next item's Q fetched into
# L2; pers with the row sums stored to shared memory before wait_group 0 to pin the exponentials
# between the two waits, persnp without) against the tree's version 5, two processes.
set -u
X=$OUT/pers; mkdir -p $X
exec > >(tee $X/pers-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s23
for i in 1 2; do
SHAPES="1024:0:16:128 2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 8192:1:2:128 2048:0:8:64 4096:0:4:64" \
ROUNDS=15 timeout 150 python3 $S/ab_libs.py tree=$S/new.so pers=$S/p.so persnp=$S/pn.so > $X/ab-pers$i.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pers$i.log | cut -c1-400; echo "checks failing: $(grep -c FAIL $X/ab-pers$i.log)"; grep FAIL $X/ab-pers$i.log | head -3 | cut -c1-300
done
cp $S/call-i.sh $S/v5p.cu $X/
cd $OUT && tar czf all.tgz pers && rm -rf pers
echo "all $(( $(date +%s) - t0 )) s"
