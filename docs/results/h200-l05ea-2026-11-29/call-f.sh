#!/usr/bin/env bash
# Call F: version 5 with Q and the first K and V tile issued at the block's entry, before the
# block-wide barrier and setmaxnreg (v5-early-loads.patch), against the tree's version 5 and cuDNN:
# checks (bit for bit the tree's output), then rounds in turns. Both libraries built off the
# device with the same flags (mklib.sh).
set -u
X=$OUT/early; mkdir -p $X
exec > >(tee $X/early-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
SHAPES="2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 2048:0:8:64 4096:0:4:64" \
ROUNDS=9 timeout 200 python3 .gpu/l19/ab_libs.py tree=.gpu/l19/tree.so early=.gpu/l19/early.so > $X/ab-early.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-early.log; grep -c FAIL $X/ab-early.log
cp .gpu/l19/call-f.sh .gpu/l19/ab_libs.py .gpu/l19/mklib.sh .gpu/l19/v5-early-loads.patch $X/
echo "all $(( $(date +%s) - t0 )) s"
