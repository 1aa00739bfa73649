#!/usr/bin/env bash
# Lessons 05 and 09 beside the grid, a second time in one call (lengths with their grid rows, then
# GQA), so that each lesson's four CSVs come from one machine and one call; files end in -r2.
set -u
R=h200-offgrid-2026-11-29; D=$OUT/$R; mkdir -p $OUT/logs $D
exec > >(tee $OUT/logs/repeat-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" ; echo "lib $(( $(date +%s) - t0 )) s"
L=build-gpu/lib/libattn_lessons.so
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi-r2.txt 2>&1
run() { # name, timeout, script and its arguments
  local n=$1 t=$2; shift 2
  PYTHONUNBUFFERED=1 timeout $t python3 "$@" --out /tmp/$n > $D/$n-r2.log 2>&1
  echo "$n rc $? $(( $(date +%s) - t0 )) s"
  for f in /tmp/$n/*.csv; do b=$(basename $f .csv); cp $f $D/$n-${b%%-lesson0*}-r2.csv; done
}
run l05-lengths 200 bench/lesson05_peers.py --lib $L --versions 5,6,8,9,13 --seqs 2048,3000,4096,6000,8192,12000,16384
run l05-gqa 120 bench/lesson05_peers.py --lib $L --versions 5,6,8,9,13 --seqs 4096,8192,16384 --kv-heads 4
run l09-lengths 120 bench/lesson09_peers.py --lib $L --timing-only --versions 6,7 --seqs 2048,3000,4096,6000,8192,12000,16384
run l09-gqa 90 bench/lesson09_peers.py --lib $L --timing-only --versions 6,7 --seqs 4096,8192,16384 --group 4
ls $D; cd $OUT && tar czf all.tgz $R logs && rm -rf $R && echo packed
