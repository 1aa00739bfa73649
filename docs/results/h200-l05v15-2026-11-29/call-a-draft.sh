#!/usr/bin/env bash
# Call A: the persistent version 5, pairs under the mask dealt statically (pz, v5z.cu), against the static deal (ps) and the tree.
set -u
X=$OUT/pz; mkdir -p $X
exec > >(tee $X/pz-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s24
for i in 1 2; do
SHAPES="2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 1024:1:16:128 2048:1:8:128 4096:1:4:128 8192:1:2:128 16384:1:1:128 3000:1:6:128 3000:0:6:128 2048:0:8:64 2048:1:8:64" \
ROUNDS=15 timeout 200 python3 $S/ab_libs.py tree=$S/new.so ps=$S/ps.so pz=$S/pz.so > $X/ab-pz$i.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pz$i.log | cut -c1-400; echo "checks failing: $(grep -c FAIL $X/ab-pz$i.log)"; grep FAIL $X/ab-pz$i.log | head -3 | cut -c1-300
done
cp $S/call-a.sh $X/
cd $OUT && tar czf all.tgz pz && rm -rf pz
echo "all $(( $(date +%s) - t0 )) s"
