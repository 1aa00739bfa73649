#!/usr/bin/env bash
# Call B: version 5 with the next round's Q (and first K and V) prefetched into L2 at each block's
# entry (v5pf.cu: pfq Q only, pfkv Q+K0+V0, pf2 the same two rounds ahead) against the tree's.
set -u
X=$OUT/pf; mkdir -p $X
exec > >(tee $X/pf-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s23
SHAPES="2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 2048:0:8:64 4096:0:4:64" \
ROUNDS=9 timeout 300 python3 $S/ab_libs.py tree=$S/tree.so pfq=$S/pfq.so pfkv=$S/pfkv.so pf2=$S/pf2.so > $X/ab-pf.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pf.log; grep -c FAIL $X/ab-pf.log
cp $S/call-b.sh $S/v5pf.cu $S/mklib.sh $S/ab_libs.py $X/
echo "all $(( $(date +%s) - t0 )) s"
