#!/usr/bin/env bash
# Call C: version 5 with a ring of three KV stages (.gpu/l18/v5s3.cu) against the tree's version 5
# and cuDNN: checks (bit for bit the tree's output), then rounds in turns.
set -u
X=$OUT/s3; mkdir -p $OUT/logs $X
exec > >(tee $OUT/logs/call-c.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
timeout 300 python3 .gpu/l18/ab_libs.py tree=.gpu/l18/tree.so s3=.gpu/l18/s3.so > $X/ab-s3.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-s3.log; grep -c FAIL $X/ab-s3.log
cp .gpu/l18/call-c.sh .gpu/l18/ab_libs.py $X/; diff -u lessons/05_fa3_hopper/v5_overlap.cu .gpu/l18/v5s3.cu > $X/v5-three-stages.patch
echo "all $(( $(date +%s) - t0 )) s"
