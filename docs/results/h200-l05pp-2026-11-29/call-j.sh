#!/usr/bin/env bash
# Call J: the persistent version 5 (v5p.cu) with the first K tile's stage fixed, no pin: pn; ps the loop specialised on the ring's parity; pg the same code with a block per item (grid = every item), against the tree.
set -u
X=$OUT/pj; mkdir -p $X
exec > >(tee $X/pj-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s23
for i in 1 2; do
SHAPES="2048:0:8:128 4096:0:4:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 2048:0:8:64" \
ROUNDS=15 timeout 150 python3 $S/ab_libs.py tree=$S/new.so pn=$S/pn.so ps=$S/ps.so pg=$S/pg.so > $X/ab-pj$i.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pj$i.log | cut -c1-400; echo "checks failing: $(grep -c FAIL $X/ab-pj$i.log)"; grep FAIL $X/ab-pj$i.log | head -3 | cut -c1-300
done
cp $S/call-j.sh $S/v5p.cu $X/
cd $OUT && tar czf all.tgz pj && rm -rf pj
echo "all $(( $(date +%s) - t0 )) s"
