#!/usr/bin/env bash
# Version 7's pass loading its tiles with TMA (six tiles in flight an SM, converted from shared
# memory) against the pass in registers: bytes, then versions 11 and 12 with both passes.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L /tmp/l05
exec > >(tee $L/v12-call5.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
bash .gpu/ab12/mklib12.sh /tmp/l05/tma.so > $L/mk-tma.log 2>&1 & p1=$!
QT=$R/.gpu/ab12/fp8_quant_tiles_regs.cu bash .gpu/ab12/mklib12.sh /tmp/l05/regs.so > $L/mk-regs.log 2>&1 & p2=$!
wait $p1; wait $p2; cat $L/mk-tma.log; echo regs:; cat $L/mk-regs.log; echo "built $(( $(date +%s) - t0 )) s"
python3 .gpu/ab12/cmp_ws.py /tmp/l05/regs.so /tmp/l05/tma.so
ROUNDS=4 timeout 300 python3 .gpu/ab12/ab12.py /tmp/l05/tma.so /tmp/l05/regs.so
for tool in memcheck racecheck synccheck; do
  echo "== $tool cmp_ws: $(timeout 120 compute-sanitizer --tool $tool python3 .gpu/ab12/cvt.py /tmp/l05/tma.so small 2>&1 | grep -E 'SUMMARY|done' | tr '\n' ' ') $(( $(date +%s) - t0 )) s"
done
timeout 60 ncu --kernel-name regex:quant_tiles --section SpeedOfLight --section Occupancy \
  --section WarpStateStats --section SchedulerStats python3 .gpu/ab12/cvt.py /tmp/l05/tma.so > $L/ncu-cvt-tma.txt 2>&1; echo "ncu rc $?"
echo "all $(( $(date +%s) - t0 )) s"
