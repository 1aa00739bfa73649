#!/usr/bin/env bash
# Run every lesson's PyTorch peer comparison (needs a GPU and PyTorch with CUDA).
# A script that cannot run here (exit 77: no torch, no GPU, no lesson in the library; lesson 09's
# bench/lesson09_peers.py says which) is reported as skipped, not as a failure.
set -u
cd "$(dirname "$0")/.."
status=0
for py in bench/lesson*_peers.py; do
  [ -f "$py" ] || continue
  echo "== $py"
  python3 "$py"
  rc=$?
  if [ "$rc" -eq 77 ]; then
    echo "== $py: skipped"
  elif [ "$rc" -ne 0 ]; then
    status=1
  fi
done
exit $status
