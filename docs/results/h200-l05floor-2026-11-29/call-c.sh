#!/usr/bin/env bash
# Call C (2026-11-29): lesson 05's pass over K and V against floors for its bytes (floor.py).
set -u
mkdir -p $OUT/logs
exec > >(tee $OUT/logs/call-c.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 240 cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75"; echo "built $(( $(date +%s) - t0 )) s"
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -Xcompiler -fPIC -shared -o /tmp/floor.so .gpu/s25/floor.cu
timeout 200 python3 .gpu/s25/floor.py build-gpu/lib/libattn_lessons.so /tmp/floor.so
cp .gpu/s25/call-c.sh .gpu/s25/floor.cu .gpu/s25/floor.py $OUT/logs/
echo "all $(( $(date +%s) - t0 )) s"
