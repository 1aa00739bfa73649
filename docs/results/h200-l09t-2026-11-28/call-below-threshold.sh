#!/usr/bin/env bash
# Two experiments in one call (each builds one program target per variant, ~30 s):
#  A. lesson 05 version 5 without the mask: the blocks of FA_HEAD_GROUP heads interleaved (1 = the
#     tree, 2, 4), seq 4k-16k at dim 128, 3 rounds taking turns; Nsight Compute on 8k and 16k.
#  B. lesson 09 version 7, causal, GQA below the order's threshold: the order on / off.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W=$R/build-wx; B=$R/build-bx; O=$R/build-ox
rm -rf $W $O; mkdir -p $O $W && (git ls-files -z | xargs -0 cp --parents -t $W)
cd $W; git init -q . && git add -A >/dev/null 2>&1 && git -c user.email=x -c user.name=x commit -qm tree >/dev/null 2>&1
{
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null 2>&1 || { echo cmake failed; exit 1; }
git apply $R/.gpu/ilv/head-group.patch || { echo patch failed; exit 1; }
for g in 1 2 4; do
  sed -i "s/^#define FA_HEAD_GROUP [0-9]*/#define FA_HEAD_GROUP $g/" lessons/05_fa3_hopper/v5_overlap.cu
  grep -q "^#define FA_HEAD_GROUP $g\$" lessons/05_fa3_hopper/v5_overlap.cu || { echo sed failed; exit 1; }
  cmake --build $B -j 16 --target lesson-5 2>&1 | grep -E "error|C75"
  mkdir -p $O/g$g; cp $B/bin/lesson-5 $O/g$g/
done
echo "built A $(( $(date +%s) - t0 )) s"
} 2>&1 | tee $L/head-group.log
{
for r in 1 2 3; do
  for s in "--batch 1 --seq 16384 --heads 16" "--batch 2 --seq 8192 --heads 16" "--batch 4 --seq 4096 --heads 16" \
           "--batch 1 --seq 12000 --heads 16" "--batch 2 --seq 16384 --heads 16" "--batch 1 --seq 16384 --heads 32 --kv-heads 4"; do
    case $r in 1) vs="1 2 4";; 2) vs="4 2 1";; *) vs="2 1 4";; esac
    for g in $vs; do
      echo "r$r [$s] g$g: $($O/g$g/lesson-5 5 $s --dim 128 --no-check --iters 20 2>&1 | grep -E '^ *5 ' | head -1)"
    done
  done
done
echo "timed A $(( $(date +%s) - t0 )) s"
M="--metrics sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_elapsed.max,lts__throughput.avg.pct_of_peak_sustained_elapsed"
for c in "g1 --batch 2 --seq 8192" "g1 --batch 1 --seq 16384" "g2 --batch 1 --seq 16384" "g4 --batch 1 --seq 16384"; do
  set -- $c; g=$1; shift
  echo "#### ncu $g $*"
  timeout 120 ncu --clock-control none -k regex:l05_overlap_kernel_d128 --launch-skip 1 --launch-count 1 $M \
    $O/$g/lesson-5 5 "$@" --heads 16 --dim 128 --no-check --iters 2 2>&1 | grep -E "^ +[a-z_]+__|==ERR|error" | head -20
done
echo "A done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee -a $L/head-group.log
{
t1=$(date +%s)
: # lesson 05 sources stay patched; lesson-9 does not build them
for t in 1 1000000000; do
  sed -i "s/^#define WG_ORDER_MIN_WORK [0-9]*/#define WG_ORDER_MIN_WORK $t/" lessons/09_backward/v7_bulk_dq.cu
  grep -q "^#define WG_ORDER_MIN_WORK $t\$" lessons/09_backward/v7_bulk_dq.cu || { echo sed failed; exit 1; }
  cmake --build $B -j 16 --target lesson-9 2>&1 | grep -E "error|C75"
  mkdir -p $O/m$t; cp $B/bin/lesson-9 $O/m$t/
done
mv $O/m1 $O/on; mv $O/m1000000000 $O/off
echo "built B $(( $(date +%s) - t1 )) s"
for r in 1 2; do
  for s in "--batch 32 --seq 512 --dim 128 --heads 16 --kv-heads 8" "--batch 16 --seq 1024 --dim 128 --heads 16 --kv-heads 8" \
           "--batch 21 --seq 768 --dim 128 --heads 16 --kv-heads 4" "--batch 16 --seq 512 --dim 128 --heads 32 --kv-heads 8" \
           "--batch 16 --seq 512 --dim 128 --heads 32 --kv-heads 4" "--batch 8 --seq 1024 --dim 128 --heads 32 --kv-heads 8" \
           "--batch 64 --seq 512 --dim 128 --heads 16 --kv-heads 4" "--batch 8 --seq 512 --dim 128 --heads 16 --kv-heads 4" \
           "--batch 16 --seq 1024 --dim 64 --heads 32 --kv-heads 16" "--batch 8 --seq 2048 --dim 64 --heads 32 --kv-heads 16" \
           "--batch 32 --seq 512 --dim 64 --heads 32 --kv-heads 8" "--batch 32 --seq 512 --dim 64 --heads 32 --kv-heads 4" \
           "--batch 21 --seq 768 --dim 64 --heads 32 --kv-heads 8"; do
    for v in $( [ $((r % 2)) = 1 ] && echo "off on" || echo "on off"); do
      echo "r$r [$s] $v: $($O/$v/lesson-9 7 $s --causal --no-check --iters 30 2>&1 | grep bulkdq | head -1)"
    done
  done
done
echo "B done $(( $(date +%s) - t1 )) s"
} 2>&1 | tee $L/gqa-order2.log
cd $R; rm -rf $W $B $O
