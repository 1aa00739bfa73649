#!/usr/bin/env bash
# Half of a tile's exponentials on the FMA pipes, which half: six patterns (and the line's constant).
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L /tmp/l05
exec > >(tee $L/schr-call3.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader; t0=$(date +%s)
bash .gpu/ab12/mklib12.sh /tmp/l05/tree.so > $L/mk-tree.log 2>&1 & p0=$!
declare -A V=( [a]="#define L05_SCHR_MASK 0x69
#define L05_SCHR_K 0x3F79999Au" [b]="#define L05_SCHR_MASK 0x69" [c]="#define L05_SCHR_MASK 0xAA"
  [d]="#define L05_SCHR_MASK 0x96" [e]="#define L05_SCHR_MASK 0x55" [f]="#define L05_SCHR_MASK 0x5A"
  [g]="#define L05_SCHR_HI 1" )
NAMES="${NAMES:-a b c d e f g}"
for n in $NAMES; do mkdir -p /tmp/l05/$n; { echo "${V[$n]}"; cat .gpu/schr/v12_schr.cu; } > /tmp/l05/$n/v12_fp8_q_in_kernel.cu; done
wait $p0; pids=""; i=0
for n in $NAMES; do
  V12=/tmp/l05/$n/v12_fp8_q_in_kernel.cu bash .gpu/ab12/mklib12.sh /tmp/l05/$n.so > $L/mk-$n.log 2>&1 & pids="$pids $!"
  i=$((i+1)); if [ $((i % 3)) = 0 ]; then for p in $pids; do wait $p; done; pids=""; fi
done
for p in $pids; do wait $p; done
grep -h -E "error|C75|spill [1-9]" $L/mk-*.log; echo "built $(( $(date +%s) - t0 )) s"
for n in $NAMES; do echo "== checks $n"; SHAPES="" timeout 120 python3 .gpu/ab12/ab12.py /tmp/l05/$n.so | grep -E "check|worst" > $L/checks-$n.log; grep -o "q/p [0-9.]*" $L/checks-$n.log | tr "\n" " "; grep worst $L/checks-$n.log; grep -c "nan True" $L/checks-$n.log; done
args=""; for n in $NAMES; do args="$args $n=/tmp/l05/$n.so"; done
NOCHECK=$(echo $NAMES | tr ' ' ',') ROUNDS=${ROUNDS:-5} timeout 300 python3 .gpu/ab12/ab_alone.py tree=/tmp/l05/tree.so $args
echo "all $(( $(date +%s) - t0 )) s"
