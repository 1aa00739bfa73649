#!/usr/bin/env bash
# Call C: the same prefetch issued by the producer warpgroup's idle warp 1 after the block-wide barrier (pwq Q only, pwkv Q+K0+V0, pwq2 Q two rounds ahead)
set -u
X=$OUT/pw; mkdir -p $X
exec > >(tee $X/pw-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s23
SHAPES="2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 2048:0:8:64 4096:0:4:64" \
ROUNDS=15 timeout 300 python3 $S/ab_libs.py tree=$S/tree.so pwq=$S/pwq.so pwkv=$S/pwkv.so pwq2=$S/pwq2.so > $X/ab-pw.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pw.log; grep -c FAIL $X/ab-pw.log
SHAPES="2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 2048:0:8:64 4096:0:4:64" \
ROUNDS=15 timeout 300 python3 $S/ab_libs.py tree=$S/tree.so pwq=$S/pwq.so pwkv=$S/pwkv.so pwq2=$S/pwq2.so > $X/ab-pw2.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pw2.log
cp $S/call-b.sh $S/v5pf.cu $S/mklib.sh $S/ab_libs.py $X/
echo "all $(( $(date +%s) - t0 )) s"
