# One lesson's versions at one shape: a bar per version (its rate in lessons.csv, the colour its
# class), and horizontal lines (the harness's ceiling, the peers of peers.csv) labelled on the
# right.
#   gnuplot -e "dir='scripts/plots'; inc='NAME.inc.gp'; out='NAME.png'" scripts/plots/versions.gp
# NAME.inc.gp (scripts/plot-data.py) sets the title, ranges, tics, the lines' labels, the class
# names (array cls), the kinds of line present, and dat: block 0 the bars (x, value, class,
# "value as printed"), block 1 the lines (x0, x1, y, kind).
load dir.'/style.gp'
set key top left Left reverse samplen 1.5 font ',8' box lc rgb '#cccccc' opaque
set xtics rotate by 25 right
set rmargin 30
set bmargin 7.5
load inc
plot dat index 0 using 1:2:(barwidth):(10 + $3) with boxes lc variable notitle, \
     for [i = 1:|cls|] NaN with boxes lt (10 + i) title cls[i], \
     for [k in kinds] dat index 1 using 1:($4 == k ? $3 : NaN):($2 - $1):(0) with vectors nohead \
         lw llw[int(k)] dt ldt[int(k)] lc rgb lcol[int(k)] notitle, \
     dat index 0 using 1:2:4 with labels boxed offset 0,0.75 font ',8' notitle
