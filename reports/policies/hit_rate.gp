# rendered by kvsim: reports/policies/hit_rate.png and reports/policies/hit_rate.svg
set terminal pngcairo size 1000,640 enhanced font 'sans,10'
set output 'reports/policies/hit_rate.png'
set title 'Prefix-cache hit rate vs KV-cache capacity (sequence mode)' noenhanced
set xlabel 'KV-cache capacity (tokens, log scale)'
set ylabel 'prefix-cache hit rate (hit tokens / prompt tokens)'
set logscale x
set format x '10^{%T}'
set grid xtics ytics mxtics
set yrange [0:1]
set ytics 0.1
set key inside left top opaque box
plot 'reports/policies/hit_rate.dat' index 0 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mooncake_conversation, lru, block 16' noenhanced, \
     'reports/policies/hit_rate.dat' index 1 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mooncake_conversation, lfu, block 16' noenhanced, \
     'reports/policies/hit_rate.dat' index 2 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mooncake_conversation, slru, block 16' noenhanced, \
     'reports/policies/hit_rate.dat' index 3 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mooncake_conversation, leaf-lru, block 16' noenhanced, \
     'reports/policies/hit_rate.dat' index 4 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mooncake_conversation, priority, block 16' noenhanced, \
     'reports/policies/hit_rate.dat' index 5 using 1:2 with linespoints dt 2 lw 3 lc rgb 'black' pt 6 ps 0.8 title 'mooncake_conversation, optimum, block 16' noenhanced

unset output
set terminal svg size 1000,640 enhanced font 'sans,10' background rgb 'white'
set output 'reports/policies/hit_rate.svg'
replot
unset output
