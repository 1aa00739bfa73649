# A roofline: TFLOP/s against arithmetic intensity (flops per byte of HBM traffic), log-log. The
# roofs are the harness's HBM figure times the intensity, capped by its fp32 and bf16 tensor-core
# peaks; the dashed slope is the HBM read lesson 01 measured. The points are attention kernels.
#   gnuplot -e "dir='scripts/plots'; inc='l01-roofline.inc.gp'; out='l01-roofline.png'" \
#       scripts/plots/roofline.gp
# The .inc.gp sets hbm, hbmread (GB/s), fp32, bf16 (TFLOP/s) and the arrow from the first point to
# the second; dat: intensity, TFLOP/s, n, "label" (the naive attention twice, then the fused one).
load dir.'/style.gp'
set logscale xy
set xrange [1:10000]
set samples 2000
set yrange [1:3000]
set format x '%g'
set format y '%g'
set xlabel 'arithmetic intensity: flops per byte of HBM traffic (log scale)'
set ylabel 'TFLOP/s (log scale)'
set grid xtics ytics lc rgb '#dddddd'
set xtics scale 1
set key top left Left reverse samplen 2 font ',8' box lc rgb '#cccccc' opaque
set bmargin 5
load inc
roof(x, peak) = hbm * x / 1000.0 < peak ? hbm * x / 1000.0 : peak
plot roof(x, bf16) lw 2.5 lc rgb '#f58518' \
         title 'bf16 tensor cores: peak, and HBM peak x intensity', \
     roof(x, fp32) lw 2.5 lc rgb '#4c78a8' \
         title 'fp32 CUDA cores: peak, and HBM peak x intensity', \
     (hbmread * x / 1000.0 < bf16 ? hbmread * x / 1000.0 : 1/0) lw 1.5 dt 2 lc rgb '#555555' \
         title 'HBM read, measured (hbm-read-16B)', \
     dat using 1:2 every ::0::0 with points pt 7 ps 1.6 lc rgb '#d62728' notitle, \
     dat using 1:2 every ::1::1 with points pt 6 ps 1.6 lc rgb '#d62728' notitle, \
     dat using 1:2 every ::2::2 with points pt 7 ps 1.6 lc rgb '#2ca02c' notitle, \
     dat using 1:2:4 every ::0::0 with labels left offset 0.2,-1.3 font ',8' notitle, \
     dat using 1:2:4 every ::1::1 with labels right offset 0.5,1.3 font ',8' notitle, \
     dat using 1:2:4 every ::2::2 with labels right offset -1,0.9 font ',8' notitle
