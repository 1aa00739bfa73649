# Shared by the figures of `make plots`: the terminal, the fonts and the colours. Fixed size and
# fonts, no date, so that the same data draws the same bytes.
set terminal pngcairo size 900,500 font 'DejaVu Sans,9' noenhanced
set output out
set style fill solid 0.85 border rgb '#333333'
set style textbox opaque noborder margins 1,1
set border 3 lc rgb '#333333'
set xtics nomirror scale 0
set ytics nomirror
set grid ytics lc rgb '#dddddd' lw 1
# Bar colours: linetype 10 + the bar's class.
set linetype 11 lc rgb '#4c78a8'
set linetype 12 lc rgb '#f58518'
set linetype 13 lc rgb '#54a24b'
set linetype 14 lc rgb '#b279a2'
set linetype 15 lc rgb '#9d755d'
# Reference lines, by kind: 1 the harness's ceiling, 2 a peer (peers.csv), 3 another reference
# from the same run. scripts/plot-data.py colours their labels alike.
array lcol[3] = ['#c0392b', '#222222', '#6f6f6f']
array ldt[3] = [1, 2, 4]
array llw[3] = [2.0, 1.6, 1.6]
