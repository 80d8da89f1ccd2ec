# Clustered bars: one group per workload, one bar per configuration.
#   gnuplot -e "data='FILE'; out='PNG'; ylabel='...'; title='...'; logy=0" tools/plot/bars.gp
# FILE: whitespace-separated, a header row (workload, then one column per
# configuration), "-" where a configuration did not run the workload.
set terminal pngcairo size 1200,520 font ",10"
set output out
set title title
set ylabel ylabel
set datafile missing "-"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key outside right top vertical
set grid ytics
set yrange [0:*]
if (logy) { set logscale y; set yrange [*:*] }
ncols = system("head -1 " . data . " | wc -w") + 0
plot for [i=2:ncols] data using i:xtic(1) title columnheader(i)
