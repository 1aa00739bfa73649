#!/usr/bin/env bash
# Run every lesson's PyTorch peer comparison (needs a GPU and PyTorch with CUDA).
set -u
cd "$(dirname "$0")/.."
status=0
for py in bench/lesson*_peers.py; do
  [ -f "$py" ] || continue
  echo "== $py"
  python3 "$py" || status=1
done
exit $status
