# call 1: SAN=1 bash .gpu/fp8wg/call.sh (the prototype before PW_SKIP and PW_FOLD2 existed: both 0)
#!/usr/bin/env bash
# FP8 wgmma decode prototype: build the library and the prototype, check, time, sanitize.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/fp8wg-call.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" | head
echo "built lib $(( $(date +%s) - t0 )) s"
INC="-Ilessons/10_serving_decode -Ilessons/04_fa2_warps -Ilessons/05_fa3_hopper -Ilessons/06_flash_decoding -Ilessons/07_paged_attention -Icommon"
for st in ${STAGES:-4}; do
  nvcc -O3 -std=c++17 -DPW_STAGES=$st -gencode arch=compute_90a,code=sm_90a -Xptxas -v $INC .gpu/fp8wg/proto.cu -o /tmp/proto$st \
    -Lbuild-gpu/lib -lattn_lessons -Xlinker -rpath=$PWD/build-gpu/lib 2>&1 | grep -A2 pw_kernel | grep -E "registers|spill"
done
echo "built proto $(( $(date +%s) - t0 )) s"
S=${STAGES:-4}; S=${S%% *}
CHECKS="1 1 1 0 8 0  2 1000 5 1 8 0  3 777 16 1 8 0  2 5000 8 0 1 0  1 33000 3 1 4 0  4 4100 16 0 8 0  1 70000 1 0 8 0"
timeout 120 /tmp/proto$S $CHECKS
echo "checks rc=$? $(( $(date +%s) - t0 )) s"
for st in ${STAGES:-4}; do
  echo "== stages $st"
  timeout 200 /tmp/proto$st ${TIMES:-16 8192 16 0 8 1  16 8192 8 0 8 1  64 8192 8 0 8 1  64 8192 1 0 8 1  16 32768 16 1 8 1  1 32768 8 1 8 1  16 32768 1 0 8 1}
  echo "time rc=$? $(( $(date +%s) - t0 )) s"
done
if [ -n "${SAN:-}" ]; then
  for tool in memcheck racecheck synccheck; do
    echo "-- $tool: $(timeout 150 compute-sanitizer --tool $tool /tmp/proto$S 2 1000 5 1 8 0 2 300 8 0 1 0 2>&1 | grep -E "PASS|FAIL|ERROR SUMMARY|RACECHECK SUMMARY|hazard|Invalid" | head -6 | tr '\n' ' ')"
  done
fi
echo "all $(( $(date +%s) - t0 )) s"

# call 2: bash .gpu/fp8wg/call2.sh (the same source; the first attempt of this call hung on a bare wait and was rerun)
#!/usr/bin/env bash
# Where the prototype's tile goes: stages 3/4/5, Q and P low parts dropped (diagnostics), ncu stalls.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/fp8wg-call2.log) 2>&1
date; t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" | head
INC="-Ilessons/10_serving_decode -Ilessons/04_fa2_warps -Ilessons/05_fa3_hopper -Ilessons/06_flash_decoding -Ilessons/07_paged_attention -Icommon"
mk() { n=$1; shift; nvcc -O3 -std=c++17 "$@" -gencode arch=compute_90a,code=sm_90a -Xptxas -v $INC .gpu/fp8wg/proto.cu -o /tmp/p_$n \
    -Lbuild-gpu/lib -lattn_lessons -Xlinker -rpath=$PWD/build-gpu/lib 2>&1 | grep -A2 pw_kernel | grep -E "registers|spill" | sed "s/^/$n: /"; }
pids=""; for v in "s4 -DPW_STAGES=4" "s3 -DPW_STAGES=3" "s5 -DPW_STAGES=5" "noqlo -DPW_QLO=0" "nolo -DPW_QLO=0 -DPW_PLO=0"; do mk $v & pids="$pids $!"; done; wait $pids
echo "built $(( $(date +%s) - t0 )) s"
SH="16 8192 16 0 8 1  64 8192 1 0 8 1  16 32768 8 1 8 1"
for n in s4 s3 s5 noqlo nolo s4; do echo "== $n"; timeout 60 /tmp/p_$n $SH | grep -E "time ms|FAIL" | sed 's/|.*proto\/v2/| proto\/v2/'; done
echo "timed $(( $(date +%s) - t0 )) s"
timeout 120 ncu --clock-control none -k regex:pw_kernel --launch-skip 3 --launch-count 1 --section WarpStateStats --section SchedulerStats --section SourceCounters --section ComputeWorkloadAnalysis --metrics smsp__inst_executed.sum,sm__cycles_elapsed.max --import-source no -f -o $OUT/pw \
  /tmp/p_s4 16 8192 16 0 8 1 > $L/ncu-run.txt 2>&1; echo "ncu rc $? $(( $(date +%s) - t0 )) s"
ncu --import $OUT/pw.ncu-rep --page details > $L/ncu-details.txt 2>&1
grep -E "Stall|stall|Issue|Eligible|Warp Cycles|Executed Ipc|Active Warps" $L/ncu-details.txt | head -40
ncu --import $OUT/pw.ncu-rep --page raw | grep -E "issue_stalled|inst_executed.sum|cycles_elapsed.max" | awk '$NF+0 > 0.05 || /inst_exec|cycles/' > $L/ncu-stalls.txt; cat $L/ncu-stalls.txt
ncu --import $OUT/pw.ncu-rep --page source --csv --print-source sass > $L/pw-sass.csv 2> /dev/null; gzip -f $L/pw-sass.csv; rm -f $OUT/pw.ncu-rep
echo "all $(( $(date +%s) - t0 )) s"

# call 3: bash .gpu/fp8wg/call3.sh
#!/usr/bin/env bash
# The prototype with dead warps skipping the softmax (PW_SKIP) and two tiles per fold (PW_FOLD2).
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/fp8wg-call3.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv; t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
cmake --build build-gpu -j 16 --target attn_lessons 2>&1 | grep -E "error|C75" | head
INC="-Ilessons/10_serving_decode -Ilessons/04_fa2_warps -Ilessons/05_fa3_hopper -Ilessons/06_flash_decoding -Ilessons/07_paged_attention -Icommon"
mk() { n=$1; shift; nvcc -O3 -std=c++17 "$@" -gencode arch=compute_90a,code=sm_90a -Xptxas -v $INC .gpu/fp8wg/proto.cu -o /tmp/p_$n \
    -Lbuild-gpu/lib -lattn_lessons -Xlinker -rpath=$PWD/build-gpu/lib 2>&1 | grep -A2 pw_kernel | grep -E "registers|spill" | sed "s/^/$n: /"; }
pids=""
for v in "first -DPW_SKIP=0 -DPW_FOLD2=0" "skip -DPW_SKIP=1 -DPW_FOLD2=0" "fold2 -DPW_SKIP=0 -DPW_FOLD2=1" "both" "noplo -DPW_PLO=0"; do
  mk $v & pids="$pids $!"; done
wait $pids
echo "built $(( $(date +%s) - t0 )) s"
CHECKS="1 1 1 0 8 0  2 1000 5 1 8 0  3 777 16 1 8 0  2 5000 8 0 1 0  1 33000 3 1 4 0  4 4100 16 0 8 0  1 70000 1 0 8 0  2 1100 2 1 8 0"
echo "== checks, both"; timeout 100 /tmp/p_both $CHECKS
SH="16 8192 16 0 8 1  16 8192 8 0 8 1  64 8192 1 0 8 1  16 32768 8 1 8 1"
for r in 1 2; do for n in first skip fold2 both noplo; do echo "== $n round $r"; timeout 60 /tmp/p_$n $SH | grep -E "time ms|FAIL|relL2" | sed 's/| TB\/s fp8 bytes: v2 [0-9.]* proto/| proto TB\/s/; s/| bf16: .*proto\/v2/| proto\/v2/'; done; done
echo "timed $(( $(date +%s) - t0 )) s"
for tool in memcheck racecheck synccheck; do
  echo "-- $tool: $(timeout 100 compute-sanitizer --tool $tool /tmp/p_both 2 1000 5 1 8 0 2 300 8 0 1 0 1 200 1 0 8 0 2>&1 | grep -E "FAIL|ERROR SUMMARY|RACECHECK SUMMARY|hazard|Invalid" | head -6 | tr '\n' ' ')"
done
echo "all $(( $(date +%s) - t0 )) s"
