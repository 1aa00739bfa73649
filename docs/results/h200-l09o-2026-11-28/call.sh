#!/usr/bin/env bash
# Landing call for lesson 09's causal order: the A/B with checks and sanitizers, then the archive
# (build, lessons and bench phases; ctest's SASS and CPU cases run on the machine without a GPU).
set -u
bash .gpu/bhead/ab.sh > /dev/null 2>&1
mkdir -p $OUT/$RUN; cp $OUT/logs/tree-ab.log $OUT/$RUN/causal-order-ab.log
grep -E "^-- |test_lesson|checked|time " $OUT/$RUN/causal-order-ab.log | cut -c1-200
rm -rf build-ab9 build-w9 build-o9
SKIP_CTEST=1 PART=A timeout 420 bash .gpu/l09arch.sh 2>&1 | tail -12
