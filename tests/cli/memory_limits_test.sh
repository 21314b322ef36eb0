#!/usr/bin/env bash
# Memory bounds (docs/reliability.md, "Memory"):
#   1. a trace request with the longest output a trace may hold (2^24 tokens) replays without
#      materializing its outputs (10^9 is refused by the reader's limits);
#   2. a pool that cannot fit in memory (--num-blocks 2^30: 80 GiB) is refused before anything
#      is allocated, with an error naming the option and the bytes.
# Usage: memory_limits_test.sh KVSIM
set -euo pipefail
kvsim=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. The longest output a trace may hold (2^24 tokens; 10^9 is refused, naming the field), capped
#    by --max-model-len: only the tokens produced are ever made. Materialized, the outputs alone
#    would take 128 MiB; the run's peak RSS may exceed a 4-token run's by less than half that.
printf '{"timestamp": 0, "input_length": 600, "output_length": 1000000000, "hash_ids": [1, 2]}\n' > "$out/huge.jsonl"
if "$kvsim" convert --from mooncake "$out/huge.jsonl" -o "$out/huge.kvtrace" > /dev/null 2> "$out/stderr"; then
  fail "output_length 10^9 was accepted"
fi
grep -q "output_length" "$out/stderr" || fail "the error does not name output_length: $(cat "$out/stderr")"
for n in 16777216 4; do
  printf '{"timestamp": 0, "input_length": 600, "output_length": %d, "hash_ids": [1, 2]}\n' "$n" > "$out/long$n.jsonl"
  "$kvsim" convert --from mooncake "$out/long$n.jsonl" -o "$out/long$n.kvtrace" > /dev/null
done
replay() {  # $1: output length; prints peak RSS in KiB
  local run=("$kvsim" replay --trace "$out/long$1.kvtrace" --max-model-len 2048 --kv-cache-tokens 100000
             --progress off --out "$out/run$1")
  /usr/bin/time -f "%M" -o "$out/rss$1" "${run[@]}" > "$out/stdout" 2> "$out/stderr" || fail "$(cat "$out/stderr")"
  tail -1 "$out/rss$1"
}
if [ -x /usr/bin/time ]; then
  long_kib=$(replay 16777216)
  short_kib=$(replay 4)
  [ $((long_kib - short_kib)) -lt $((64 * 1024)) ] ||
    fail "output_length 2^24: peak RSS $long_kib KiB against $short_kib KiB for 4 tokens"
  echo "memory_limits_test: output_length 2^24 replayed with peak RSS $((long_kib / 1024)) MiB (4 tokens: $((short_kib / 1024)) MiB)"
else
  "$kvsim" replay --trace "$out/long16777216.kvtrace" --max-model-len 2048 --kv-cache-tokens 100000 \
    --progress off --out "$out/run16777216" > "$out/stdout" 2> "$out/stderr" || fail "$(cat "$out/stderr")"
  echo "memory_limits_test: output_length 2^24 replayed (no /usr/bin/time: peak RSS not measured)"
fi
grep -q "finished_max_model_len" "$out/run16777216/requests.csv" || fail "the request did not stop at --max-model-len"

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
