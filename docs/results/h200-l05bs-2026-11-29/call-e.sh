#!/usr/bin/env bash
# Call E: version 5's blocks stamped (v5-block-stamps.patch, not in the tree) at the grid's rows,
# dim 128, no mask: a block's fixed part and the gap between blocks on one SM.
set -u
X=$OUT/stamps; mkdir -p $X
exec > >(tee $X/stamps-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
patch -p1 < .gpu/l19/v5-block-stamps.patch > /dev/null || { echo "patch failed"; exit 1; }
timeout 200 cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
patch -R -p1 < .gpu/l19/v5-block-stamps.patch > /dev/null
OUT=$X timeout 150 python3 .gpu/l19/stamps.py build-gpu/lib/libattn_lessons.so
echo "rc $? $(( $(date +%s) - t0 )) s"
cp .gpu/l19/call-e.sh .gpu/l19/stamps.py .gpu/l19/v5-block-stamps.patch $X/
