#!/usr/bin/env bash
# Causal items longest first inside groups of heads (v11 FP8 and v9 bf16 dim 64) against the tree:
# checks (bit for bit against the tree), the kernels alone in rounds taking turns, sanitizers.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/lpt-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
B=/tmp/l05; mkdir -p $B; t0=$(date +%s)
V7=lessons/05_fa3_hopper/v7_fp8_tiles.cu; S5=lessons/05_fa3_hopper/v5_overlap.cu; T11=lessons/05_fa3_hopper/v11_fp8_persistent.cu
sed 's/^#define FA_GROUP_WAVES 4/#define FA_GROUP_WAVES 2/' .gpu/lpt/v11_lpt.cu > $B/v11_lpt2.cu
.gpu/lpt/wrap9.sh lessons/05_fa3_hopper/v9_persistent.cu $B/w9t.cu; .gpu/lpt/wrap9.sh .gpu/lpt/v9_lpt.cu $B/w9l.cu
EXTRA=$V7 .gpu/mklib05.sh $T11 $S5 $B/tree.so > $L/b-tree.log 2>&1 & pids=$!
EXTRA=$V7 .gpu/mklib05.sh .gpu/lpt/v11_lpt.cu $S5 $B/lpt4.so > $L/b-lpt4.log 2>&1 & pids="$pids $!"
EXTRA=$V7 .gpu/mklib05.sh $B/v11_lpt2.cu $S5 $B/lpt2.so > $L/b-lpt2.log 2>&1 & pids="$pids $!"
wait $pids
EXTRA=$V7 .gpu/mklib05.sh $T11 $B/w9t.cu $B/t9.so > $L/b-t9.log 2>&1 & pids=$!
EXTRA=$V7 .gpu/mklib05.sh $T11 $B/w9l.cu $B/l9.so > $L/b-l9.log 2>&1 & pids="$pids $!"
wait $pids; grep -H . $L/b-*.log | grep -v "v5 d\|v6:"
ls -la $B/*.so; echo "built $(( $(date +%s) - t0 )) s"
SH="2048:1:8:16:16 4096:1:4:16:16 8192:1:2:16:16 16384:1:1:16:16 6000:1:2:16:16 12000:1:1:16:16 8192:1:2:32:4 8192:0:2:16:16"
SHAPES="$SH" PREFIX=l05_fp8p ROUNDS=3 timeout 330 python3 .gpu/lpt/ab.py tree=$B/tree.so lpt4=$B/lpt4.so lpt2=$B/lpt2.so
echo "fp8 timed $(( $(date +%s) - t0 )) s"
SH9="1024:1:16:32:32 2048:1:8:32:32 4096:1:4:32:32 8192:1:2:32:32 16384:1:1:32:32 6000:1:2:32:32 8192:1:2:32:8 8192:0:2:32:32"
SHAPES="$SH9" MODE=bf16 DIMS=64 CUDNN=0 PREFIX=l05_fp8p ROUNDS=3 timeout 200 python3 .gpu/lpt/ab.py t9=$B/t9.so l9=$B/l9.so
echo "bf16 timed $(( $(date +%s) - t0 )) s"
gcc -std=c11 -I/usr/local/cuda/include -c .gpu/san05.c -o $B/san05.o && gcc -o $B/san05 $B/san05.o $B/lpt4.so -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,$B
for tool in memcheck racecheck synccheck; do for a in "1 140 140 200 130 1 1" "2 16 4 1100 700 1 1"; do
  echo "-- $tool lpt4 [$a]: $(P=1 timeout 100 compute-sanitizer --tool $tool $B/san05 $a 2>&1 | grep -E "san05:|ERROR SUMMARY|RACECHECK SUMMARY|hazard" | head -4 | tr '\n' ' ')"; done; done
echo "all $(( $(date +%s) - t0 )) s"
