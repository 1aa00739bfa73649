#!/usr/bin/env bash
# Call D: the prefetch by warp 1 (TMA: pwq Q only, pwkv Q+K0+V0) against warps 1-3 prefetching the Q rows line by line (pwl, prefetch.global.L2)
set -u
X=$OUT/pl; mkdir -p $X
exec > >(tee $X/pl-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s23
SHAPES="512:0:32:128 1024:0:16:128 2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 2048:0:8:64 4096:0:4:64" \
ROUNDS=15 timeout 300 python3 $S/ab_libs.py tree=$S/tree.so pwq=$S/pwq.so pwkv=$S/pwkv.so pwl=$S/pwl.so > $X/ab-pl.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pl.log; grep -c FAIL $X/ab-pl.log
SHAPES="512:0:32:128 1024:0:16:128 2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 2048:0:8:64 4096:0:4:64" \
ROUNDS=15 timeout 300 python3 $S/ab_libs.py tree=$S/tree.so pwq=$S/pwq.so pwkv=$S/pwkv.so pwl=$S/pwl.so > $X/ab-pl2.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pl2.log
cp $S/call-d.sh $S/v5pf.cu $S/mklib.sh $S/ab_libs.py $X/
echo "all $(( $(date +%s) - t0 )) s"
