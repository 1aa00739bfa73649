#!/usr/bin/env bash
# Call E: the prefetch's code with no prefetch at run time (pw0: ahead = 0) against the tree, pwq and pwl, at the rows where dim 64 lost
set -u
X=$OUT/p0; mkdir -p $X
exec > >(tee $X/p0-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s23
SHAPES="2048:0:8:128 4096:0:4:128 2048:1:8:128 2048:0:8:64 4096:0:4:64 2048:1:8:64 8192:0:2:64" \
ROUNDS=15 timeout 300 python3 $S/ab_libs.py tree=$S/tree.so pwq=$S/pwq.so pw0=$S/pw0.so pwl=$S/pwl.so > $X/ab-p0.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-p0.log; grep -c FAIL $X/ab-p0.log
SHAPES="2048:0:8:128 4096:0:4:128 2048:1:8:128 2048:0:8:64 4096:0:4:64 2048:1:8:64 8192:0:2:64" \
ROUNDS=15 timeout 300 python3 $S/ab_libs.py tree=$S/tree.so pwq=$S/pwq.so pw0=$S/pw0.so pwl=$S/pwl.so > $X/ab-p02.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-p02.log
cp $S/call-e.sh $S/v5pf.cu $S/mklib.sh $S/ab_libs.py $X/
echo "all $(( $(date +%s) - t0 )) s"
