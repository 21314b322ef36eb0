set title 'Figure 9 reproduced: prefix-cache hit rate vs KV-cache capacity (LRU, block size 16)'
set xlabel 'KV-cache capacity (tokens, log scale)'
set ylabel 'prefix-cache hit rate (hit tokens / prompt tokens)'
set logscale x
set format x '10^{%T}'
set xrange [1e4:1e9]
set yrange [0:0.8]
set ytics 0.1
set grid xtics ytics mxtics
set key left top
set arrow from 5e7,0.40 to 1e9,0.40 nohead dt 2 lw 1.5 lc rgb '#1f77b4'
set arrow from 5e7,0.66 to 1e9,0.66 nohead dt 2 lw 1.5 lc rgb '#d62728'
$paper_conversation << EOD
3e6 0.164
1e7 0.33
EOD
$paper_synthetic << EOD
3e6 0.304
1e7 0.59
EOD
plot 'reports/figure9/hit_rate.dat' index 0 using 1:2 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#1f77b4' title 'conversation (kvsim)', \
     'reports/figure9/hit_rate.dat' index 2 using 1:2 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#d62728' title 'synthetic (kvsim)', \
     $paper_conversation using 1:2 with points pt 6 ps 2 lw 2 lc rgb '#1f77b4' title 'conversation (paper: 3M, 10M; dashed: plateau 0.40)', \
     $paper_synthetic using 1:2 with points pt 4 ps 2 lw 2 lc rgb '#d62728' title 'synthetic (paper: 3M, 10M; dashed: plateau 0.66)'
