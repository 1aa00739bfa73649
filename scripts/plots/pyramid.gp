# Lesson 01's memory hierarchy: one bar per level, its measured bandwidth on a log scale, fastest on
# top; a red tick at the harness's ceiling of the level where lessons.csv has one, and between two
# levels how many times faster the upper one is.
#   gnuplot -e "dir='scripts/plots'; inc='l01-pyramid.inc.gp'; out='l01-pyramid.png'" \
#       scripts/plots/pyramid.gp
# dat: y, GB/s, "level", "bar text", ceiling GB/s (NaN: none), "x the level below".
load dir.'/style.gp'
set logscale x
set format x '%.0s%c'
set xlabel 'GB/s (log scale; k = thousand, M = million)'
set grid xtics noytics lc rgb '#dddddd'
set border 3
set ytics scale 0
set key bottom right samplen 1.5 font ',8' box lc rgb '#cccccc' opaque
set bmargin 5
load inc
xmin = 10
plot dat using (xmin):1:(xmin):2:($1 - 0.32):($1 + 0.32):ytic(3) with boxxyerror \
         lc rgb '#4c78a8' notitle, \
     dat using 5:($1 - 0.42):(0):(0.84) with vectors nohead lw 2.5 lc rgb '#c0392b' \
         title "the harness's ceiling", \
     dat using 2:1:4 with labels left offset 0.6,0 font ',8' notitle, \
     dat using (xmin * 1.25):($1 - 0.5):6 with labels left font ',8' tc rgb '#555555' notitle
