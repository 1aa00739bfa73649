#!/usr/bin/env bash
# Call 3: version 9 with its row sums pinned before wait_group 0, at dims 64 and 128 (the tree),
# against the same file without the pin (.gpu/l17/v9np.cu, a library of its own), version 5 (and 8)
# and cuDNN; its SASS placement, sanitizers, and lesson 05's ctest cases.
set -u
X=$OUT/v9pin; mkdir -p $OUT/logs $X
exec > >(tee $OUT/logs/call-3.log) 2>&1
date; t0=$(date +%s)
for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done 2>/dev/null
export PKG_CONFIG_SYSROOT_DIR=/opt/check PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BUILD_DIR=build-gpu OUT CK_FORK=no PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 2>&1 | grep -E "error|C75|warning" | head; echo "built $(( $(date +%s) - t0 )) s"
I="-Ilessons/05_fa3_hopper -Ilessons/04_fa2_warps -Icommon -O3 -gencode arch=compute_90a,code=sm_90a -Xcompiler -fPIC"
for d in 64 128; do nvcc -DHEAD_DIM=$d $I -c -o /tmp/np$d.o .gpu/l17/v9np.cu 2>&1 | grep -E "error"; done
nvcc $I -c -o /tmp/tm.o lessons/05_fa3_hopper/tensor_map.cu
nvcc -shared -o build-gpu/v9np.so /tmp/np64.o /tmp/np128.o /tmp/tm.o; echo "np.so $(( $(date +%s) - t0 )) s"
bash scripts/check-wait-placement.sh build-gpu/bin/lesson-5 "l05_(overlap|three|persist)_kernel_d(64|128)" > $X/wait-placement.txt 2>&1; cat $X/wait-placement.txt
cuobjdump --dump-resource-usage build-gpu/bin/lesson-5 2>/dev/null | grep -A1 "persist_kernel" | grep -o "REG:[0-9]*\|STACK:[0-9]*\|LOCAL:[0-9]*" | tr '\n' ' '; echo
ITERS=10 ROUNDS=4 timeout 190 python3 .gpu/l17/ab_v9b.py build-gpu/lib/libattn_lessons.so build-gpu/v9np.so > $X/ab-pin.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
grep -v "^check" $X/ab-pin.log; grep -c FAIL $X/ab-pin.log
S=$X/sanitizers.log; : > $S
for a in "--batch 1 --heads 4 --kv-heads 2 --seq 300 --kv-seq 520 --dim 128 --causal" "--batch 2 --heads 8 --kv-heads 1 --seq 777 --kv-seq 3000 --dim 128" "--batch 1 --heads 8 --kv-heads 2 --seq 333 --kv-seq 1000 --dim 64 --causal"; do
  for tool in memcheck racecheck synccheck; do s0=$(date +%s)
    [ $(( $(date +%s) - t0 )) -gt 300 ] && { echo "skip $tool [$a]: time"; continue; }
    echo "#### $tool lesson-5 9 $a --check-only" >> $S
    timeout 25 compute-sanitizer --tool $tool build-gpu/bin/lesson-5 9 $a --check-only >> $S 2>&1
    echo "$tool [$a] rc $? $(( $(date +%s) - s0 )) s: $(tail -3 $S | grep -E "SUMMARY" | cut -c1-90)"; done; done
[ $(( $(date +%s) - t0 )) -lt 290 ] && { timeout 50 ctest --test-dir build-gpu -R "lesson05_gpu|lesson-5-check" --output-on-failure > $X/ctest.log 2>&1; echo "ctest rc $?"; tail -4 $X/ctest.log; }
cp .gpu/l17/call-3.sh .gpu/l17/ab_v9b.py .gpu/l17/v9np.cu $X/
echo "all $(( $(date +%s) - t0 )) s"
