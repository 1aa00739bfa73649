#!/usr/bin/env bash
# A stand-in for version 5's source that holds version 9 ($1) under version 5's d64 launcher name and
# a d128 stub, for .gpu/mklib05.sh:  .gpu/lpt/wrap9.sh V9SRC OUT.cu
set -e
{ echo '#if HEAD_DIM == 128'
  echo 'extern "C" int l05_overlap_d128(void) { return 1; }'
  echo '#else'
  echo '#undef HEAD_DIM'
  sed 's/#define FA_LAUNCH l05_persist_d64/#define FA_LAUNCH l05_overlap_d64/' "$1"
  echo '#endif'; } > "$2"
