#!/usr/bin/env bash
# The bench with its rows taking turns (a warm run at each visit) into $RUN, then the comparison of
# blocks and turns on the same kernels.
set -u
RUN=${RUN:-h200-l05p-2026-11-29}
bash .gpu/l14b/call-bench.sh > /dev/null 2>&1
tail -16 $OUT/$RUN/gpu-suite.log
bash .gpu/l14b/call-tvb.sh > /dev/null 2>&1
cp $OUT/logs/turns-vs-blocks.log $OUT/$RUN/; cat $OUT/$RUN/turns-vs-blocks.log | tail -24
