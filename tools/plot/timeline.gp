# Lines over a run: one line per configuration, from kvbench --timeline files.
#   gnuplot -e "files='A B'; titles='a b'; col=7; out='PNG'; ylabel='...'; title='...'" tools/plot/timeline.gp
# col is the timeline column to plot against operations completed (column 4);
# optional: xcol=3 xlabel='seconds' to plot against time instead, scale=0.001
# to multiply the values (e.g. microseconds to milliseconds).
if (!exists("xcol")) xcol = 4
if (!exists("xlabel")) xlabel = "operations completed"
if (!exists("scale")) scale = 1
set terminal pngcairo size 1000,480 font ",10"
set output out
set title title
set xlabel xlabel
set ylabel ylabel
set datafile separator ","
set key outside right top vertical
set grid
set yrange [0:*]
plot for [i=1:words(files)] word(files, i) skip 1 using xcol:(column(col) * scale) with linespoints pt 7 ps 0.5 title word(titles, i)
