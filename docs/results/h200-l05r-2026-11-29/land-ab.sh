#!/usr/bin/env bash
# Landing call for version 14, both halves in one call: land-a.sh (build, lessons, ctest,
# sanitizers), then land-b.sh (the bench with cuDNN's FP8, then ab14.py), into one results folder.
set -u
export RUN=${RUN:-h200-l05r-2026-11-29}
bash .gpu/l16/land-a.sh
cp $OUT/$RUN/gpu-suite.log /tmp/suite-a.log
bash .gpu/l16/land-b.sh
cat /tmp/suite-a.log $OUT/$RUN/gpu-suite.log > /tmp/suite-ab.log && mv /tmp/suite-ab.log $OUT/$RUN/gpu-suite.log
