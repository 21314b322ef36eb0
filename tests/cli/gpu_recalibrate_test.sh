#!/usr/bin/env bash
# scripts/gpu-recalibrate on the committed H200 run (reports/gpu/2026-11-26-h200/run2-raw.tar.gz):
# it fits the profile, replays the three offline runs with the global pair and with the per-class
# terms, and every replay's decisions equal the GPU run's (6 rows, each "equal"), so its step
# errors compare the same steps. The figures themselves are in per-class-recalibrate.md.
# Usage: gpu_recalibrate_test.sh KVSIM
set -euo pipefail
kvsim=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf reports/gpu/2026-11-26-h200/run2-raw.tar.gz -C "$work"
scripts/gpu-recalibrate "$work/raw" --kvsim "$kvsim" --work "$work/replays" >"$work/out.md"
rows=$(grep -cE '^\| (prefix50-on|prefix50-off|mooncake) \| (global pair|per-class) \| [0-9]+ \| equal \|' "$work/out.md")
if [ "$rows" != 6 ] || grep -q differ "$work/out.md"; then
  echo "gpu_recalibrate_test: expected 6 replay rows with equal decisions, got $rows:"
  cat "$work/out.md"
  exit 1
fi
echo "gpu_recalibrate_test: 6 replays, decisions equal to the GPU runs"
