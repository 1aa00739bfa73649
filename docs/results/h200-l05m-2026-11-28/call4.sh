#!/usr/bin/env bash
# Version 12 converting the next item's Q while the tensor cores make the last tile's P V (two e4m3 Q
# buffers), against version 12 and its timing-only form without the conversion.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L; mkdir -p /tmp/l05
exec > >(tee $L/v12-call4.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
bash .gpu/ab12/mklib12.sh /tmp/l05/base.so > $L/mk-base.log 2>&1 & p1=$!
V12=$R/.gpu/ab12/v12_hide.cu bash .gpu/ab12/mklib12.sh /tmp/l05/hide.so > $L/mk-hide.log 2>&1 & p2=$!
V12=$R/.gpu/ab12/v12_noconv.cu bash .gpu/ab12/mklib12.sh /tmp/l05/noconv.so > $L/mk-noconv.log 2>&1 & p3=$!
wait $p1; wait $p2; wait $p3; cat $L/mk-*.log; echo "built $(el) s"
NOCHECK=noconv ROUNDS=5 timeout 400 python3 .gpu/ab12/ab_alone.py base=/tmp/l05/base.so hide=/tmp/l05/hide.so noconv=/tmp/l05/noconv.so
echo "all $(el) s"
