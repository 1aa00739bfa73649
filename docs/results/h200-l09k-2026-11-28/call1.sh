#!/usr/bin/env bash
# Nsight Compute: cuDNN's SDPA backward against lesson 09's version 7, dim 128, no mask, seq 16k
# (batch 1, 16 heads) and 8k (batch 2): launch shapes, tensor pipe, L2 reductions, instructions.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/bw-call1.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target lesson-9 2>&1 | grep -E "error|C75" | head
echo "built $(( $(date +%s) - t0 )) s"
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__cluster_size,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_eligible.avg.per_cycle_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__cycles_active.avg,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_shared_ld.sum
for shp in "1 16 16384" "2 16 8192"; do set -- $shp
  echo "#### cuDNN backward b$1 h$2 s$3 d128 nc"
  timeout 200 ncu --profile-from-start off --metrics $M --csv --print-units base python3 .gpu/bw/cudnn_bwd.py $1 $2 $3 128 0 2>&1 | grep -v "^==PROF==" | tail -n +1 > $L/ncu-cudnn-s$3.csv
  python3 - $L/ncu-cudnn-s$3.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print(open(sys.argv[1]).read()[-2000:]); sys.exit()
hdr = rows[0]; ki, mi, vi = hdr.index("Kernel Name"), hdr.index("Metric Name"), hdr.index("Metric Value")
idi = hdr.index("ID")
k = collections.OrderedDict()
for r in rows[1:]:
    k.setdefault((r[idi], r[ki][:90]), {})[r[mi]] = r[vi]
for (i, n), m in k.items():
    print(f"  [{i}] {n}")
    for key in sorted(m): print(f"      {key} = {m[key]}")
PY
  echo "#### lesson 09 version 7 b$1 h$2 s$3 d128 nc"
  (cd build-gpu/bin && timeout 200 ncu -k regex:l09_ --metrics $M --csv --print-units base ./lesson-9 7 --batch $1 --heads $2 --seq $3 --dim 128 --no-check --iters 1 --warmup 0 2>&1 | grep -v "^==PROF==" > $L/ncu-v7-s$3.csv)
  python3 - $L/ncu-v7-s$3.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print(open(sys.argv[1]).read()[-2000:]); sys.exit()
hdr = rows[0]; ki, mi, vi = hdr.index("Kernel Name"), hdr.index("Metric Name"), hdr.index("Metric Value")
idi = hdr.index("ID")
k = collections.OrderedDict()
for r in rows[1:]:
    k.setdefault((r[idi], r[ki][:90]), {})[r[mi]] = r[vi]
for (i, n), m in k.items():
    print(f"  [{i}] {n}")
    for key in sorted(m): print(f"      {key} = {m[key]}")
PY
done
echo "all $(( $(date +%s) - t0 )) s"
