# plot.gp: written by bench/bench.c; run with `gnuplot plot.gp` in this folder.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1200,800 noenhanced font ",11"
} else {
    set terminal png size 1200,800 noenhanced
}
set output 'ratio_vs_decomp.png'
set title 'Compression ratio vs decompression speed (totals over text, logs, tables, bin)'
set logscale x
set xlabel 'decompression speed, MB/s (log scale)'
set ylabel 'compression ratio'
set grid
set key outside right top
set offsets graph 0.05, graph 0.12, graph 0.05, graph 0.05
plot \
  'ratio_vs_decomp.dat' index 0 using 2:3 with points pt 7 ps 1.6 lc rgb '#d62728' title 'glyd', \
  'ratio_vs_decomp.dat' index 0 using 2:3:1 with labels left offset char 0.8,0.4 tc rgb '#d62728' notitle, \
  'ratio_vs_decomp.dat' index 1 using 2:3 with points pt 7 ps 1.6 lc rgb '#1f77b4' title 'zstd', \
  'ratio_vs_decomp.dat' index 1 using 2:3:1 with labels left offset char 0.8,0.4 tc rgb '#1f77b4' notitle, \
  'ratio_vs_decomp.dat' index 2 using 2:3 with points pt 7 ps 1.6 lc rgb '#2ca02c' title 'lz4', \
  'ratio_vs_decomp.dat' index 2 using 2:3:1 with labels left offset char 0.8,0.4 tc rgb '#2ca02c' notitle, \
  'ratio_vs_decomp.dat' index 3 using 2:3 with points pt 7 ps 1.6 lc rgb '#9467bd' title 'snappy', \
  'ratio_vs_decomp.dat' index 3 using 2:3:1 with labels left offset char 0.8,0.4 tc rgb '#9467bd' notitle, \
  'ratio_vs_decomp.dat' index 4 using 2:3 with points pt 7 ps 1.6 lc rgb '#ff7f0e' title 'brotli', \
  'ratio_vs_decomp.dat' index 4 using 2:3:1 with labels left offset char 0.8,0.4 tc rgb '#ff7f0e' notitle, \
  'ratio_vs_decomp.dat' index 5 using 2:3 with points pt 7 ps 1.6 lc rgb '#8c564b' title 'xz', \
  'ratio_vs_decomp.dat' index 5 using 2:3:1 with labels left offset char 0.8,0.4 tc rgb '#8c564b' notitle
