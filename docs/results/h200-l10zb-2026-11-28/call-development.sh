#!/usr/bin/env bash
# Version 3's prefix pass on lesson 05's version 5 (prefill.cu) against the tree: build both, the GPU
# suite's cascade case, checks on awkward shapes, then the cascade shapes taking turns.
set -u
R=$PWD; L=$OUT/logs; mkdir -p $L
W=$R/build-wp; B=$R/build-bp; O=$R/build-op
rm -rf $W $O; mkdir -p $O/new $O/old $W && (git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t $W)
if ! pkg-config --exists check 2>/dev/null && ls .carry/*.deb >/dev/null 2>&1; then
  for f in .carry/*.deb; do dpkg -x "$f" /opt/check; done
  export PKG_CONFIG_SYSROOT_DIR=/opt/check
  export PKG_CONFIG_PATH=/opt/check/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/opt/check/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cd $W; git init -q .
exec > >(tee $L/${CALL:-call1}.log) 2>&1
date; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 > $L/cmake.log 2>&1 || { echo cmake failed; tail $L/cmake.log; exit 1; }
cmake --build $B -j 16 --target lesson-10 lesson-5 test_lesson10_gpu 2>&1 | grep -E "error|C75|spill|warning"
cp $B/bin/lesson-10 $B/bin/lesson-5 $O/new/
git apply -R $R/.gpu/pf/pf.patch || { echo "patch -R failed"; exit 1; }
cmake --build $B -j 16 --target lesson-10 lesson-5 2>&1 | grep -E "error|C75"
cp $B/bin/lesson-10 $B/bin/lesson-5 $O/old/
git apply $R/.gpu/pf/pf.patch || { echo "patch failed"; exit 1; }
echo "built $(el) s"
P=$O/new/lesson-10
if [ "${PART:-1}" = 1 ]; then
echo "== test_lesson10_gpu cascade: $(CK_RUN_CASE=cascade timeout 200 $B/bin/test_lesson10_gpu 2>&1 | grep -E 'cascade case|^[0-9]+%|FAIL|rror' | tr '\n' '|') $(el) s"
S1="--batch 32 --kv-seq 33792 --seq 1"
rm -f $L/ncu-new.csv
timeout 120 ncu --clock-control none --print-units base --print-kernel-base function --launch-count 60 --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --log-file $L/ncu-new.csv $P 4 $S1 --no-check --iters 2 > /dev/null 2>&1
echo "== ncu new [$S1]: $(grep -E "prefill|wg_|merge|cascade" $L/ncu-new.csv | awk -F'","' '{print $5, $13, $15}' | tail -6 | tr '\n' '|') $(el) s"
echo "== checks (new)"
for vs in "4|--batch 6 --kv-seq 3000 --seq 5 --causal" "4|--batch 5 --kv-seq 2100 --seq 3 --dim 64 --heads 32 --kv-heads 4" "4|--batch 40 --kv-seq 1500 --seq 4 --heads 16 --kv-heads 1 --dim 64" "4|--batch 3 --kv-seq 1300 --seq 1 --block-size 256" "4|--batch 9 --kv-seq 5000 --seq 16 --block-size 8 --causal"; do
  v=${vs%%|*}; s=${vs#*|}; echo "v$v [$s] $($P $v $s --check-only 2>&1 | grep -E "^ *$v |rror|skip" | head -2 | tr -s ' ')"
done
echo "checked $(el) s"
ROUNDS="1"; SH=("4|--batch 32 --kv-seq 33792 --seq 1" "4|--batch 32 --kv-seq 33792 --seq 4 --causal" "4|--batch 32 --kv-seq 33792 --seq 1 --dim 64" "4|--batch 32 --kv-seq 9216 --seq 1" "4|--batch 16 --kv-seq 8192")
else
ROUNDS="2 3"; SH=("4|--batch 32 --kv-seq 33792 --seq 1" "4|--batch 32 --kv-seq 33792 --seq 4 --causal" "4|--batch 32 --kv-seq 33792 --seq 1 --dim 64")
fi
echo "== new against old, taking turns (version, name, dtype, check, -, -, ms, ...)"
for r in $ROUNDS; do
  for vs in "${SH[@]}"; do
    [ $(el) -gt ${TSTOP:-480} ] && { echo "stop timing at $(el) s"; break 2; }
    v=${vs%%|*}; s=${vs#*|}; line="r$r v$v [$s]"
    for b in $( [ $((r % 2)) = 1 ] && echo "old new" || echo "new old"); do
      line="$line $b $($O/$b/lesson-10 $v $s --no-check --iters 20 2>&1 | grep -E "^ *$v " | head -1 | tr -s ' ')"
    done
    echo "$line"
  done
done
echo "timed $(el) s"
if [ "${PART:-1}" = 2 ]; then
  echo "== lesson 05 version 5 (overlap_turns() now a function), new against old"
  for r in 1 2; do for s in "" "--dim 64 --heads 32" "--causal --seq 8192 --batch 2"; do
    line="r$r [$s]"; for b in old new; do line="$line $b $($O/$b/lesson-5 5 $s --no-check --iters 30 2>&1 | grep -E '^ *5 ' | head -1 | tr -s ' ')"; done; echo "$line"; done; done
  for t in racecheck synccheck memcheck; do
    [ $(el) -gt 520 ] && break
    echo "$t: $(timeout $(( 570 - $(el) )) compute-sanitizer --tool $t $P 4 --batch 6 --kv-seq 1200 --seq 5 --causal --check-only 2>&1 | grep -E 'SUMMARY|cascade' | tr -s ' ' | tr '\n' ' ') $(el) s"
  done
  echo "memcheck test: $(ATTN_TEST_SANITIZER=1 CK_RUN_CASE=cascade timeout $(( 575 - $(el) )) compute-sanitizer --tool memcheck $B/bin/test_lesson10_gpu 2>&1 | grep -E 'SUMMARY|^[0-9]+%' | tr '\n' ' ') $(el) s"
fi
echo "all $(el) s"
cd $R; rm -rf $W $B $O
