#!/usr/bin/env bash
# Call G: version 5's blocks stamped again (v5-block-stamps-pf.patch on the tree's version 5, with
# its early loads and the next round's Q in L2): what is left of a block's fixed part.
set -u
X=$OUT/stamps; mkdir -p $X
exec > >(tee $X/stamps-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
patch -p1 < .gpu/s23/v5-block-stamps-pf.patch > /dev/null || { echo "patch failed"; exit 1; }
timeout 200 cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
patch -R -p1 < .gpu/s23/v5-block-stamps-pf.patch > /dev/null
OUT=$X timeout 150 python3 .gpu/s23/stamps.py build-gpu/lib/libattn_lessons.so
echo "rc $? $(( $(date +%s) - t0 )) s"
cp .gpu/s23/call-g.sh .gpu/s23/stamps.py .gpu/s23/v5-block-stamps-pf.patch $X/
cd $X && gzip stamps-*.csv; cd $OUT && tar czf all.tgz stamps && rm -rf stamps
echo "all $(( $(date +%s) - t0 )) s"
