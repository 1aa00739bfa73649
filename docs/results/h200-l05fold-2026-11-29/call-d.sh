#!/usr/bin/env bash
# Call D (2026-11-29): where version 14's time per item goes: timing-only forms without the O store,
# the Q conversion, the mask, in turns with the tree's file (ab14r.py), two processes.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-d.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
L=.gpu/s25/libs
for i in 1 2; do
  timeout 200 python3 .gpu/s25/ab14r.py r0=$L/r0.so r1=$L/r1.so r2=$L/r2.so r3=$L/r3.so r4=$L/r4.so
  echo "process $i $(( $(date +%s) - t0 )) s"
done
cp .gpu/s25/call-d.sh .gpu/s25/ab14r.py .gpu/s25/mk14.sh $OUT/logs/
echo "all $(( $(date +%s) - t0 )) s"
