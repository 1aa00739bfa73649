#!/usr/bin/env bash
# Draw the figures of the lesson READMEs from the archived runs in docs/results/ (`make plots`):
#
#   scripts/plots.sh [OUTDIR]       (default docs/figures; OUTDIR is created)
#
# scripts/plot-data.py picks each lesson's run as scripts/results-tables.py does and writes the data
# and settings of every figure; gnuplot draws them with the scripts in scripts/plots/ (lesson 05's
# timeline with scripts/plot-timeline.sh). The PNGs have a fixed size and fonts and no date: the
# same archive and the same gnuplot draw the same bytes, and CI (.ci/run) fails when the committed
# ones differ from what this script draws.
set -eu
cd "$(dirname "$0")/.."
out=${1:-docs/figures}
if ! command -v gnuplot >/dev/null 2>&1; then
  echo "plots: gnuplot not found (Debian: apt-get install gnuplot-nox); no figure drawn" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 scripts/plot-data.py "$tmp"
mkdir -p "$out"
while read -r script a b; do
  case "$script" in
    timeline)
      bash scripts/plot-timeline.sh "$a" "$out/$b.png" >/dev/null
      name=$b ;;
    *)
      gnuplot -e "dir='scripts/plots'; inc='$tmp/$a.inc.gp'; out='$out/$a.png'" \
              "scripts/plots/$script.gp"
      name=$a ;;
  esac
  echo "plots: $out/$name.png"
done < "$tmp/jobs"
