#!/usr/bin/env bash
# Call L: the persistent version 5 with static items (ps) against the same with the items under the mask longest first in groups of heads, dealt in a snake (pss, v5s.cu), against the tree.
set -u
X=$OUT/pl2; mkdir -p $X
exec > >(tee $X/pl2-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s23
for i in 1 2; do
SHAPES="2048:0:8:128 4096:0:4:128 1024:1:16:128 2048:1:8:128 4096:1:4:128 8192:1:2:128 16384:1:1:128 3000:1:6:128" \
ROUNDS=15 timeout 150 python3 $S/ab_libs.py tree=$S/new.so ps=$S/ps.so pss=$S/pss.so > $X/ab-pl2$i.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pl2$i.log | cut -c1-400; echo "checks failing: $(grep -c FAIL $X/ab-pl2$i.log)"; grep FAIL $X/ab-pl2$i.log | head -3 | cut -c1-300
done
cp $S/call-l.sh $S/v5s.cu $X/
cd $OUT && tar czf all.tgz pl2 && rm -rf pl2
echo "all $(( $(date +%s) - t0 )) s"
