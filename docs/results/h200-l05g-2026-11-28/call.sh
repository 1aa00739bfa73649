#!/usr/bin/env bash
# Nsight Compute, instructions by pipe: cuDNN's FP8 SDPA kernel against lesson 05's version 11 at the
# default shape (dim 128, batch 4, 16 heads, seq 4096, not causal), one launch each (the third).
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/fp8-pipes.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; ncu --version | tail -1
B=/tmp/l05; mkdir -p $B; t0=$(date +%s)
EXTRA=lessons/05_fa3_hopper/v7_fp8_tiles.cu .gpu/mklib05.sh lessons/05_fa3_hopper/v11_fp8_persistent.cu lessons/05_fa3_hopper/v5_overlap.cu $B/tree.so > $L/build.log 2>&1
cat $L/build.log | head -5; echo "built $(( $(date +%s) - t0 )) s"
P=$(ncu --query-metrics 2>/dev/null | grep -o "^smsp__inst_executed_pipe_[a-z0-9_]*" | sort -u | sed 's/$/.sum/' | tr '\n' ',')
P=${P}smsp__inst_executed.sum,sm__cycles_active.avg,gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_eligible.avg.per_cycle_active
timeout 150 ncu --clock-control none --target-processes all -k regex:'(sdpa|fprop|flash|fmha|attn)' --launch-skip 2 --launch-count 1 --metrics $P --csv --print-units base \
  python3 .gpu/ncufp8/cudnn8.py 4096 4 0 2>&1 | grep -v "^==PROF==" > $L/pipes-cudnn8.csv; echo "cudnn rc $? $(( $(date +%s) - t0 )) s"
timeout 150 ncu --clock-control none -k regex:l05_fp8p_kernel --launch-skip 2 --launch-count 1 --metrics $P --csv --print-units base \
  python3 .gpu/fp8w/ncudrv_p.py $B/tree.so 2>&1 | grep -v "^==PROF==" > $L/pipes-v11.csv; echo "v11 rc $? $(( $(date +%s) - t0 )) s"
python3 - $L/pipes-cudnn8.csv $L/pipes-v11.csv <<'PY'
import csv, sys
def load(f):
    rows = [r for r in csv.reader(open(f)) if len(r) > 10]
    if not rows: print(open(f).read()[-3000:]); return {}, "-"
    h = rows[0]; mi, vi, ki = h.index("Metric Name"), h.index("Metric Value"), h.index("Kernel Name")
    return {r[mi]: r[vi] for r in rows[1:]}, rows[1][ki][:100]
(a, na), (b, nb) = load(sys.argv[1]), load(sys.argv[2])
print("cudnn:", na); print("v11:  ", nb)
for k in sorted(set(a) | set(b)):
    if a.get(k, "0") in ("0", "-") and b.get(k, "0") in ("0", "-"): continue
    print(f"{k:80s} cudnn {a.get(k, '-'):>18s}  v11 {b.get(k, '-'):>18s}")
PY
echo "all $(( $(date +%s) - t0 )) s"
