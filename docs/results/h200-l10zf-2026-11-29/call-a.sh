#!/usr/bin/env bash
# Call A: (1) lesson 05's versions 5 and 14 with no K/V loads after the first two tiles, against
# the same files as the tree has them (both libraries built off the device, .gpu/l18/*.so), in
# turns; (2) the build; lesson 10's whole GPU suite on the head (l10_merge_per_thread()).
set -u
R=${R:-h200-l10zf-2026-11-29}; D=$OUT/$R; X=$OUT/noloads; mkdir -p $OUT/logs $D $X
exec > >(tee $OUT/logs/call-a.log) 2>&1
date; t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version,power.limit --format=csv,noheader
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BUILD_DIR=build-gpu OUT CK_FORK=no PATH=/usr/local/cuda/bin:$PATH
timeout 150 python3 .gpu/l18/ab_nl.py tree=.gpu/l18/tree.so nl=.gpu/l18/nl.so > $X/ab-noloads.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
cat $X/ab-noloads.log
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
timeout 280 cmake --build build-gpu -j 16 2>&1 | grep -E "error|C75|warning" | head; echo "built $(( $(date +%s) - t0 )) s"
s0=$(date +%s)
(cd build-gpu && timeout 220 ./bin/test_lesson10_gpu 2>&1 || echo "suite rc $?") > $D/test_lesson10_gpu.log 2>&1
echo "gpu suite $(( $(date +%s) - s0 )) s"; tail -5 $D/test_lesson10_gpu.log
{ nvidia-smi -q; nvcc --version; } > $D/nvidia-smi.txt 2>&1
cp .gpu/l18/call-a.sh .gpu/l18/ab_nl.py .gpu/l18/mklib.sh $X/
diff -u lessons/05_fa3_hopper/v5_overlap.cu .gpu/l18/v5nl.cu > $X/v5-noloads.patch
diff -u lessons/05_fa3_hopper/v14_fp8_half_tile.cu .gpu/l18/v14nl.cu > $X/v14-noloads.patch
echo "all $(( $(date +%s) - t0 )) s"
