#!/usr/bin/env bash
# Version 12's kernel: its Q conversion's cost apart (no conversion, timing only) and with the
# largest |x| taken on packed bf16 bits (VIMNMX.U16x2).
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L; mkdir -p /tmp/l05
exec > >(tee $L/v12-call3.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
bash .gpu/ab12/mklib12.sh /tmp/l05/base.so > $L/mk-base.log 2>&1 & p1=$!
V12=$R/.gpu/ab12/v12_packed.cu bash .gpu/ab12/mklib12.sh /tmp/l05/packed.so > $L/mk-packed.log 2>&1 & p2=$!
V12=$R/.gpu/ab12/v12_noconv.cu bash .gpu/ab12/mklib12.sh /tmp/l05/noconv.so > $L/mk-noconv.log 2>&1 & p3=$!
wait $p1; wait $p2; wait $p3; cat $L/mk-*.log; echo "built $(el) s"
NOCHECK=noconv ROUNDS=5 timeout 400 python3 .gpu/ab12/ab_alone.py base=/tmp/l05/base.so packed=/tmp/l05/packed.so noconv=/tmp/l05/noconv.so
echo "all $(el) s"
