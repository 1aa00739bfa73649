#!/usr/bin/env bash
# Landing call for lesson 09's causal order by work (KV tiles x dim >= 1280): A/B with checks and
# sanitizers against the threshold before, then the archive (build, lessons and bench phases).
set -u
t0=$(date +%s)
timeout 200 bash .gpu/bwork/ab.sh > /dev/null 2>&1
mkdir -p $OUT/$RUN; cp $OUT/logs/tree-ab.log $OUT/$RUN/order-threshold-ab.log
grep -E "^-- |test_lesson|checked|time " $OUT/$RUN/order-threshold-ab.log | cut -c1-220
rm -rf build-ab9 build-w9 build-o9
left=$(( 585 - ($(date +%s) - t0) ))
SKIP_CTEST=1 PART=A timeout $left bash .gpu/l09arch.sh 2>&1 | tail -12
