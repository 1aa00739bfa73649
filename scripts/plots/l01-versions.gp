# Lesson 01's versions at its default shape, in two panels: the bandwidth probes (GB/s, log scale)
# and the two versions that count flops (TFLOP/s). Over the bars, short lines: the harness's
# ceiling of each group of probes (named) and PyTorch on the same bytes (over the version it
# matches).
#   gnuplot -e "dir='scripts/plots'; inc='l01-versions.inc.gp'; out='l01-versions.png'" \
#       scripts/plots/l01-versions.gp
# The .inc.gp holds the multiplot title; l01-versions-1.inc.gp and -2.inc.gp each panel's settings,
# as versions.gp reads them.
load dir.'/style.gp'
set xtics rotate by 40 right
set bmargin 8
load inc
base = inc[1:strlen(inc) - 7]
set size 0.74, 0.93
set origin 0, 0
set key top left Left reverse samplen 1.5 font ',8' box lc rgb '#cccccc' opaque maxrows 3
set rmargin 1
set format y '%.0s%c'
load base.'-1.inc.gp'
plot dat index 0 using 1:2:(barwidth):(10 + $3) with boxes lc variable notitle, \
     for [i = 1:|cls|] NaN with boxes lt (10 + i) title cls[i], \
     NaN with lines lw llw[2] dt ldt[2] lc rgb lcol[2] title 'PyTorch, same bytes', \
     NaN with lines lw llw[1] dt ldt[1] lc rgb lcol[1] title "the harness's ceiling", \
     for [k in kinds] dat index 1 using 1:($4 == k ? $3 : NaN):($2 - $1):(0) with vectors nohead \
         lw llw[int(k)] dt ldt[int(k)] lc rgb lcol[int(k)] notitle, \
     dat index 0 using 1:(1.4):4 with labels rotate by 90 left font ',7.5' notitle
unset arrow
unset label
unset logscale y
set format y '%g'
set size 0.26, 0.93
set origin 0.74, 0
set lmargin 9
set key top right samplen 1.5 font ',8' box lc rgb '#cccccc' opaque
load base.'-2.inc.gp'
plot dat index 0 using 1:2:(barwidth):(10 + $3) with boxes lc variable notitle, \
     NaN with lines lw llw[2] dt ldt[2] lc rgb lcol[2] title 'PyTorch, same steps', \
     for [k in kinds] dat index 1 using 1:($4 == k ? $3 : NaN):($2 - $1):(0) with vectors nohead \
         lw llw[int(k)] dt ldt[int(k)] lc rgb lcol[int(k)] notitle, \
     dat index 0 using 1:2:4 with labels boxed offset 0,0.75 font ',7.5' notitle
unset multiplot
