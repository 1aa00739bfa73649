#!/usr/bin/env bash
# Draw lesson 05's pipeline timeline (the CSV `l05-timeline` prints) with gnuplot:
#
#   scripts/plot-timeline.sh TIMELINE.csv OUT.svg [BLOCK]      (OUT.png: a PNG instead)
#
# One panel per version, block BLOCK (default 0) of its launch; the x axis is SM cycles since the
# block's first stamp. Rows: the producer warpgroup (a tick per TMA issue: K up, V down) and the two
# consumer warpgroups, with, per KV tile (or turn), a bar from the start of its GEMMs to S in
# registers ("GEMM"), then the softmax, then the wait for P V to land in O where there is one.
set -eu
csv=$1 out=$2 block=${3:-0}
command -v gnuplot >/dev/null || { echo "plot-timeline: gnuplot not found (Debian: apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# segments: version, x0, x1, y, kind (1 GEMM, 2 softmax, 3 P V); ticks: version, x, y, kind (4 K, 5 V)
awk -F, -v blk="$block" -v dir="$tmp" '
  NR == 1 { next }
  $3 != blk { next }
  { v = $1; name[v] = $2; t[v, $4, $5, $6] = $7; roles[v, $4] = 1; tiles[v] = ($5 > tiles[v] ? $5 : tiles[v]); vs[v] = 1 }
  END {
    for (v in vs) {
      print v, name[v] > (dir "/names")
      for (r = 1; r <= 2; ++r) for (j = 0; j <= tiles[v]; ++j) {
        y = 3 - r
        a = t[v, r, j, "turn"]; s = t[v, r, j, "s_ready"]; m = t[v, r, j, "softmax"]; p = t[v, r, j, "pv_done"]
        if (a != "" && s != "" && s + 0 >= a + 0) print v, a / 1000, s / 1000, y, 1 > (dir "/seg")
        if (s != "" && m != "" && m + 0 >= s + 0) print v, s / 1000, m / 1000, y, 2 > (dir "/seg")
        if (m != "" && p != "" && p + 0 > m + 0) print v, m / 1000, p / 1000, y, 3 > (dir "/seg")
      }
      for (j = 0; j <= tiles[v]; ++j) {
        if (t[v, 0, j, "issue_k"] != "") print v, t[v, 0, j, "issue_k"] / 1000, 3.15, 4 > (dir "/tick")
        if (t[v, 0, j, "issue_v"] != "") print v, t[v, 0, j, "issue_v"] / 1000, 2.85, 5 > (dir "/tick")
      }
    }
  }' "$csv"
[ -s "$tmp/seg" ] || { echo "plot-timeline: no stamps of block $block in $csv" >&2; exit 1; }
versions=$(sort -n "$tmp/names" | awk '{print $1}')
n=$(echo "$versions" | wc -w)
{
  case "$out" in
    *.png) echo "set terminal pngcairo size 1100,$((220 * n + 60)) font 'sans,10'" ;;
    *) echo "set terminal svg size 1100,$((220 * n + 60)) font 'sans,11' background rgb 'white'" ;;
  esac
  echo "set output '$out'"
  echo "set multiplot layout $n,1 title 'lesson 05: one block of each version (block $block), SM cycles x 1000 since its first stamp'"
  echo "set yrange [0.4:3.6]; set ytics ('consumer 1' 1, 'consumer 0' 2, 'producer (TMA)' 3)"
  echo "set xlabel 'kilocycles'; set grid xtics; set key outside right top"
  for v in $versions; do
    nm=$(awk -v v="$v" '$1 == v {print $2}' "$tmp/names")
    echo "set title 'version $v: $nm'"
    echo "plot '$tmp/seg' using (\$1 == $v && \$5 == 1 ? \$2 : 1/0):4:(\$3-\$2):(0) with vectors nohead lw 14 lc rgb '#3b6fb6' title 'GEMMs issued -> S ready', \\"
    echo "     '$tmp/seg' using (\$1 == $v && \$5 == 2 ? \$2 : 1/0):4:(\$3-\$2):(0) with vectors nohead lw 14 lc rgb '#e0892b' title 'softmax', \\"
    echo "     '$tmp/seg' using (\$1 == $v && \$5 == 3 ? \$2 : 1/0):4:(\$3-\$2):(0) with vectors nohead lw 14 lc rgb '#4c9a52' title 'until P V is in O', \\"
    echo "     '$tmp/tick' using (\$1 == $v && \$4 == 4 ? \$2 : 1/0):3 with points pt 9 ps 0.8 lc rgb '#555555' title 'TMA K issued', \\"
    echo "     '$tmp/tick' using (\$1 == $v && \$4 == 5 ? \$2 : 1/0):3 with points pt 11 ps 0.8 lc rgb '#999999' title 'TMA V issued'"
  done
  echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "plot-timeline: $out"
