#!/usr/bin/env bash
# The transposed-V helpers moved to fp8_workspace.cuh (l05_vt_key, l05_vt_words): the pass's bytes
# against the pass in registers, and versions 11 and 12's checks on awkward shapes.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L /tmp/l05
exec > >(tee $L/v12-call6.log) 2>&1
date; t0=$(date +%s)
bash .gpu/ab12/mklib12.sh /tmp/l05/new.so > $L/mk-new.log 2>&1 & p1=$!
QT=$R/.gpu/ab12/fp8_quant_tiles_regs.cu bash .gpu/ab12/mklib12.sh /tmp/l05/regs.so > $L/mk-regs.log 2>&1 & p2=$!
wait $p1; wait $p2; cat $L/mk-new.log; echo "built $(( $(date +%s) - t0 )) s"
python3 .gpu/ab12/cmp_ws.py /tmp/l05/regs.so /tmp/l05/new.so
SHAPES="" timeout 120 python3 .gpu/ab12/ab12.py /tmp/l05/new.so | grep -E "check|worst"
echo "all $(( $(date +%s) - t0 )) s"
