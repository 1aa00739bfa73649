#!/usr/bin/env bash
# Call E (2026-11-29): version 14 with its O rescale out of the turn (v14a: into the fold, as a
# multiply-add; v14b: O kept in units of the last tile's V descale, one multiply-add a value),
# checked and timed against the tree's file in turns (ab14v.py), two processes.
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-e.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
L=.gpu/s25/libs
for i in 1 2; do
  timeout 250 python3 .gpu/s25/ab14v.py r0=$L/r0.so a=$L/v14a.so b=$L/v14b.so
  echo "process $i $(( $(date +%s) - t0 )) s"
done
cp .gpu/s25/call-e.sh .gpu/s25/ab14v.py .gpu/s25/mk14.sh .gpu/s25/v14a.cu .gpu/s25/v14b.cu $OUT/logs/
echo "all $(( $(date +%s) - t0 )) s"
