#!/usr/bin/env bash
# The hit-rate collapse of a Mamba hybrid (vLLM issue 45238): every number in README.md comes
# from this script. Usage: reports/mamba-collapse/run.sh [KVSIM] (default build/default/cli/kvsim),
# run from the repository root. Writes its traces and run folders under $OUT (default
# /tmp/kvsim-mamba-collapse) and prints one line per run.
set -euo pipefail
KVSIM=${1:-build/default/cli/kvsim}
OUT=${OUT:-/tmp/kvsim-mamba-collapse}
mkdir -p "$OUT"

# 64 prompts of ~2,200 tokens: one shared prefix + a unique suffix, each prompt once.
gen() {  # SHARED UNIQUE
  "$KVSIM" gen prefix -o "$OUT/shared$1.kvtrace" --force --seed 1 --num-prompts 64 --num-prefixes 1 \
    --prefix-len "$1" --suffix-len "$2" --repeat 1 --output-len 16 >/dev/null
}

# One request at a time (--max-num-seqs 1); prints requests with a hit, of all, and the hit rate.
run() {  # NAME SHARED [OPTIONS...]
  local name=$1 shared=$2
  shift 2
  rm -rf "$OUT/$name"
  "$KVSIM" replay --trace "$OUT/shared$shared.kvtrace" --max-num-seqs 1 --verify fast \
    --progress off --out "$OUT/$name" "$@" >"$OUT/$name.log" 2>&1
  local hits total block
  hits=$(awk -F, 'NR > 1 && $9 > 0' "$OUT/$name/requests.csv" | wc -l)
  total=$(awk -F, 'NR > 1' "$OUT/$name/requests.csv" | wc -l)
  block=$(grep -o '"block_size": *"[0-9]*"' "$OUT/$name/summary.json" | grep -o '[0-9][0-9]*' || true)
  printf '%-18s shared=%-5s block=%-5s requests with hits %2d/%d  %s\n' "$name" "$shared" "$block" "$hits" \
    "$total" "$(grep -m1 -o 'hit rate *[0-9.]*%' "$OUT/$name.log" || true)"
}

gen 1600 600
gen 1500 700
M="--model qwen3.5-4b"
# vLLM as in issue 45238: no chunk end at the shared-prefix boundary, a 2,048-token budget.
OLD="--mamba-prefix-split off --max-num-batched-tokens 2048"
run issue-1600 1600 $M $OLD
run issue-1500 1500 $M $OLD
run issue-8192-1600 1600 $M --mamba-prefix-split off
run issue-8192-1500 1500 $M --mamba-prefix-split off
# kvsim's default scheduler (the later vLLM rule: a chunk also ends before the boundary).
run split-1600 1600 $M --max-num-batched-tokens 2048
run split-1500 1500 $M --max-num-batched-tokens 2048
# --mamba-cache-mode all: a state at every block boundary of every chunk.
run all-1600 1600 $M $OLD --mamba-cache-mode all
run all-1500 1500 $M $OLD --mamba-cache-mode all
# --block-size: below 528 it is raised to 528 (the page must hold a state); above, it is kept.
run block-16-1600 1600 $M $OLD --block-size 16
run block-16-1500 1500 $M $OLD --block-size 16
run block-1024-1600 1600 $M $OLD --block-size 1024
run block-1024-1500 1500 $M $OLD --block-size 1024
# The same shape with a 16-bit delta-rule state: half the state, a 272-token attention block.
C="--model-config reports/mamba-collapse/qwen3.5-4b-bf16-state.json"
run bf16-state-1600 1600 $C $OLD
run bf16-state-1500 1500 $C $OLD
run caching-off-1600 1600 $M $OLD --prefix-caching off
