#!/usr/bin/env bash
# cuDNN's SDPA backward (dim 128, no mask) and FP8 forward kernels: their machine code with
# executed counts (Nsight Compute source counters), to read which wgmma shapes they issue and how
# their exponentials are spaced.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/sass-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; ncu --version | tail -1
t0=$(date +%s)
timeout 150 ncu --profile-from-start off -k regex:bprop --section SourceCounters --import-source no -f -o $OUT/bw \
  python3 .gpu/bw/cudnn_bwd.py 2 16 8192 128 0 > $L/ncu-bw-run.txt 2>&1; echo "bw rc $? $(( $(date +%s) - t0 )) s"
tail -3 $L/ncu-bw-run.txt
ncu --import $OUT/bw.ncu-rep --page source --csv --print-source sass > $L/cudnn-bprop-sass.csv 2> /dev/null
gzip -f $L/cudnn-bprop-sass.csv; rm -f $OUT/bw.ncu-rep
timeout 150 ncu --clock-control none --target-processes all -k regex:'(sdpa|fprop|flash|fmha|attn)' --launch-skip 2 --launch-count 1 \
  --section SourceCounters --import-source no -f -o $OUT/f8 python3 .gpu/ncufp8/cudnn8.py 4096 4 0 > $L/ncu-f8-run.txt 2>&1
echo "f8 rc $? $(( $(date +%s) - t0 )) s"; tail -3 $L/ncu-f8-run.txt
ncu --import $OUT/f8.ncu-rep --page source --csv --print-source sass > $L/cudnn-fp8-fprop-sass.csv 2> /dev/null
gzip -f $L/cudnn-fp8-fprop-sass.csv; rm -f $OUT/f8.ncu-rep
ls -la $L; echo "all $(( $(date +%s) - t0 )) s"
