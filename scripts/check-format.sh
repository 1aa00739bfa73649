#!/usr/bin/env bash
# Every C and CUDA source of the course, formatted by the repository's .clang-format.
#
#   scripts/check-format.sh          list the files clang-format would change, exit 1 if any (CI)
#   scripts/check-format.sh --fix    format them in place
set -u
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (Debian: apt-get install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null ||
                     find common lessons tests drills -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not clang-format clean (run scripts/check-format.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check-format: ${#files[@]} files clean ($(clang-format --version | head -n 1))"
