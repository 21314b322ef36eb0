#!/usr/bin/env bash
# Memory bounds (docs/reliability.md, "Memory"):
#   1. a trace request with output_length 10^9 replays without materializing its outputs (the
#      run's peak RSS stays far below the 4 GB that 10^9 token ids would take);
#   2. a pool that cannot fit in memory (--num-blocks 2^30: 80 GiB) is refused before anything
#      is allocated, with an error naming the option and the bytes.
# Usage: memory_limits_test.sh KVSIM
set -euo pipefail
kvsim=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. output_length 10^9, capped by --max-model-len: only the tokens produced are ever made.
printf '{"timestamp": 0, "input_length": 600, "output_length": 1000000000, "hash_ids": [1, 2]}\n' > "$out/long.jsonl"
"$kvsim" convert --from mooncake "$out/long.jsonl" -o "$out/long.kvtrace" > /dev/null
run=("$kvsim" replay --trace "$out/long.kvtrace" --max-model-len 2048 --kv-cache-tokens 100000 --progress off
     --out "$out/run")
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f "%M" -o "$out/rss" "${run[@]}" > "$out/stdout" 2> "$out/stderr" || fail "$(cat "$out/stderr")"
  kib=$(tail -1 "$out/rss")
  [ "$kib" -lt $((2 * 1024 * 1024)) ] || fail "output_length 1e9: peak RSS $kib KiB"
  echo "memory_limits_test: output_length 10^9 replayed with peak RSS $((kib / 1024)) MiB"
else
  "${run[@]}" > "$out/stdout" 2> "$out/stderr" || fail "$(cat "$out/stderr")"
  echo "memory_limits_test: output_length 10^9 replayed (no /usr/bin/time: peak RSS not measured)"
fi
grep -q "finished_max_model_len" "$out/run/requests.csv" || fail "the request did not stop at --max-model-len"

# 2. A pool larger than memory.
avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
if [ "${avail_kib:-0}" -lt $((80 * 1024 * 1024)) ]; then
  if "$kvsim" replay --trace traces/data/sharegpt_sample.kvtrace --limit 5 --num-blocks 1073741824 --progress off \
       --out "$out/huge" > /dev/null 2> "$out/stderr"; then
    fail "--num-blocks 2^30 was accepted with $((avail_kib / 1024)) MiB available"
  fi
  grep -q -- "--num-blocks: a pool of 1073741824 blocks needs [0-9]* bytes" "$out/stderr" || fail "$(cat "$out/stderr")"
  test ! -e "$out/huge" || fail "a refused run left $out/huge"
  echo "memory_limits_test: --num-blocks 2^30 refused: $(cat "$out/stderr")"
else
  echo "memory_limits_test: $((avail_kib / 1024)) MiB available: a 2^30-block pool fits; refusal not checked"
fi
