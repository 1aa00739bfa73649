#!/usr/bin/env bash
# Call K: the persistent version 5 specialised on the ring's parity with its items static (ps, blockIdx + n gridDim) or from an atomic counter (pq; pqp with the row sums stored before wait_group 0 to pin the exponentials between the waits, v5q.cu), against the tree.
set -u
X=$OUT/pk; mkdir -p $X
exec > >(tee $X/pk-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
S=.gpu/s23
for i in 1 2; do
SHAPES="1024:0:16:128 2048:0:8:128 4096:0:4:128 8192:0:2:128 16384:0:1:128 2048:1:8:128 4096:1:4:128 8192:1:2:128 2048:0:8:64" \
ROUNDS=15 timeout 150 python3 $S/ab_libs.py tree=$S/new.so ps=$S/ps.so pq=$S/pq.so pqp=$S/pqp.so > $X/ab-pk$i.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pk$i.log | cut -c1-400; echo "checks failing: $(grep -c FAIL $X/ab-pk$i.log)"; grep FAIL $X/ab-pk$i.log | head -3 | cut -c1-300
done
cp $S/call-k.sh $S/v5p.cu $S/v5q.cu $X/
cd $OUT && tar czf all.tgz pk && rm -rf pk
echo "all $(( $(date +%s) - t0 )) s"
