#!/usr/bin/env bash
# The HTML report of a caching on/off pair fits a 1280-px window in headless Chromium.
# Usage: report_html_test.sh KVSIM
set -euo pipefail
kvsim=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for c in on off; do
  "$kvsim" replay --trace traces/data/sharegpt_sample.kvtrace --model llama3-8b --limit 150 --prefix-caching $c \
    --progress off --out "$out/caching-$c" > /dev/null
done
"$kvsim" report "$out/caching-on" "$out/caching-off" --out "$out/report" > /dev/null
scripts/check-report-html "$out/report/report.html"
