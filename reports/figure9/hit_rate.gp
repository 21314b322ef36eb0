# rendered by kvsim: reports/figure9/hit_rate.png and reports/figure9/hit_rate.svg
set terminal pngcairo size 1000,640 enhanced font 'sans,10'
set output 'reports/figure9/hit_rate.png'
set title 'Mooncake traces: prefix-cache hit rate vs cache capacity (global LRU, request sequence)' noenhanced
set xlabel 'KV-cache capacity (tokens, log scale)'
set ylabel 'prefix-cache hit rate (hit tokens / prompt tokens)'
set logscale x
set format x '10^{%T}'
set grid xtics ytics mxtics
set yrange [0:1]
set ytics 0.1
set key inside right bottom opaque box
plot 'reports/figure9/hit_rate.dat' index 0 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mooncake_conversation, lru, block 16' noenhanced, \
     'reports/figure9/hit_rate.dat' index 1 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mooncake_conversation, lru, block 512' noenhanced, \
     'reports/figure9/hit_rate.dat' index 2 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mooncake_synthetic, lru, block 16' noenhanced, \
     'reports/figure9/hit_rate.dat' index 3 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mooncake_synthetic, lru, block 512' noenhanced

unset output
set terminal svg size 1000,640 enhanced font 'sans,10' background rgb 'white'
set output 'reports/figure9/hit_rate.svg'
replot
unset output
