#!/usr/bin/env bash
# Exponentials on the FMA pipes (Schraudolph's line, FFMA + FMNMX + LEA) for 1/8..1/2 of a tile's
# exponentials in version 12: checks (error against v11 on awkward shapes) and the kernel alone in turns.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L /tmp/l05
exec > >(tee $L/schr-call2.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader; t0=$(date +%s)
bash .gpu/ab12/mklib12.sh /tmp/l05/tree.so > $L/mk-tree.log 2>&1 & p0=$!
pids=""
for n in 4 5 6 7 8; do
  mkdir -p /tmp/l05/s$n
  sed "s/^#define L05_SCHR 2 /#define L05_SCHR $n /" .gpu/schr/v12_schr.cu > /tmp/l05/s$n/v12_fp8_q_in_kernel.cu
done
wait $p0
for n in 4 5 6 7 8; do
  V12=/tmp/l05/s$n/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/s$n.so > $L/mk-s$n.log 2>&1 & pids="$pids $!"
  if [ $n = 6 ]; then for p in $pids; do wait $p; done; pids=""; fi
done
for p in $pids; do wait $p; done
cat $L/mk-*.log; echo "built $(( $(date +%s) - t0 )) s"
for n in 4 5 6 7 8; do echo "== checks s$n"; SHAPES="" timeout 120 python3 .gpu/ab12/ab12.py /tmp/l05/s$n.so | grep -E "check|worst" > $L/checks-s$n.log; grep -o "q/p [0-9.]*" $L/checks-s$n.log | tr "\n" " "; grep worst $L/checks-s$n.log; grep -c "nan True" $L/checks-s$n.log; done

NOCHECK=s4,s5,s6,s7,s8 ROUNDS=5 timeout 300 python3 .gpu/ab12/ab_alone.py tree=/tmp/l05/tree.so s4=/tmp/l05/s4.so s5=/tmp/l05/s5.so s6=/tmp/l05/s6.so s7=/tmp/l05/s7.so s8=/tmp/l05/s8.so
echo "all $(( $(date +%s) - t0 )) s"
