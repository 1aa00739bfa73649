#!/usr/bin/env bash
# Nsight Compute: instructions by pipe, cuDNN's SDPA backward against lesson 09's version 7, dim 128,
# no mask, seq 8k (batch 2, 16 heads): where version 7's extra instructions are.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/bw-call2.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target lesson-9 2>&1 | grep -E "error|C75" | head
echo "built $(( $(date +%s) - t0 )) s"
P=$(ncu --query-metrics 2>/dev/null | grep -o "^smsp__inst_executed_pipe_[a-z0-9_]*" | sort -u | sed 's/$/.sum/' | tr '\n' ',')
P=${P}smsp__inst_executed.sum,smsp__inst_executed_op_branch.sum,smsp__inst_executed_op_global_red.sum,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio
echo "metrics: $P"
timeout 200 ncu --profile-from-start off -k regex:bprop --metrics $P --csv --print-units base python3 .gpu/bw/cudnn_bwd.py 2 16 8192 128 0 2>&1 | grep -v "^==PROF==" > $L/ncu2-cudnn.csv
(cd build-gpu/bin && timeout 200 ncu -k regex:l09_bulkdq --metrics $P --csv --print-units base ./lesson-9 7 --batch 2 --heads 16 --seq 8192 --dim 128 --no-check --iters 1 --warmup 0 2>&1 | grep -v "^==PROF==" > $L/ncu2-v7.csv)
python3 - $L/ncu2-cudnn.csv $L/ncu2-v7.csv <<'PY'
import csv, sys
def load(f):
    rows = [r for r in csv.reader(open(f)) if len(r) > 10]
    if not rows: print(open(f).read()[-3000:]); return {}
    h = rows[0]; mi, vi = h.index("Metric Name"), h.index("Metric Value")
    return {r[mi]: r[vi] for r in rows[1:]}
a, b = load(sys.argv[1]), load(sys.argv[2])
for k in sorted(set(a) | set(b)):
    print(f"{k:90s} cudnn {a.get(k, '-'):>18s}  v7 {b.get(k, '-'):>18s}")
PY
echo "all $(( $(date +%s) - t0 )) s"
