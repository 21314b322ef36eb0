#!/usr/bin/env bash
# Write errors, --force and the output lock (docs/reliability.md, "Outputs"):
#   1. under a file-size limit (ulimit -f), kvsim replay, sweep, gen and convert exit non-zero
#      naming the file, and leave no output (and any earlier output as it was);
#   2. into an unwritable folder they exit non-zero naming it (as root a read-only folder does
#      not stop writes, so the test then writes under a regular file);
#   3. a failed gen or convert with --force keeps the trace that was already at OUT;
#   4. a second run into a folder that a first run is writing is refused; --force replaces the
#      folder as a whole (no file of the earlier run survives);
#   5. --kv-events FILE: an existing FILE is refused without --force, and a failed run (with or
#      without --force) leaves FILE as it was, never a partial events file under its name; an
#      existing --dump-cache FILE is refused without --force before the run.
# Usage: output_errors_test.sh KVSIM
set -euo pipefail
kvsim=$(realpath "$1")
out=$(mktemp -d)
trap 'chmod -R u+w "$out" 2> /dev/null; rm -rf "$out"' EXIT
export KVSIM_GNUPLOT=/nonexistent
trace=traces/data/sharegpt_sample.kvtrace
replay=(replay --trace "$trace" --limit 200 --kv-cache-tokens 20000 --progress off)

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_failure NAME_IN_MESSAGE CMD...: CMD exits non-zero and its stderr names the file.
expect_failure() {
  local name=$1; shift
  if "$@" > "$out/stdout" 2> "$out/stderr"; then fail "$* succeeded"; fi
  grep -q -- "$name" "$out/stderr" || fail "$* did not name $name: $(cat "$out/stderr")"
}

# 1. File-size limit: 64 blocks of 512 bytes = 32 KiB, less than any of these outputs.
limited() { (ulimit -f 64; "$@"); }
expect_failure "steps.csv\|requests.csv\|decisions.log" limited "$kvsim" "${replay[@]}" --out "$out/limited"
grep -q "File too large" "$out/stderr" || fail "ulimit -f: expected EFBIG, got: $(cat "$out/stderr")"
test ! -e "$out/limited" || fail "a failed replay left $out/limited"
ls -d "$out"/limited.tmp-* 2> /dev/null && fail "a failed replay left its staging folder"
expect_failure "$out/big.kvtrace" limited "$kvsim" gen prefix -o "$out/big.kvtrace" --num-prompts 2000
test ! -e "$out/big.kvtrace" || fail "a failed gen left $out/big.kvtrace"
grid=(sweep --trace "$trace" --vary request-rate=2,8 --limit 200 --kv-cache-tokens 20000 --jobs 1 --progress off
      --no-plot)
expect_failure "steps.csv\|requests.csv" limited "$kvsim" "${grid[@]}" --out "$out/grid"
test ! -e "$out/grid" || fail "a failed sweep left $out/grid"
echo "output_errors_test: ulimit -f 64 (KiB): replay, sweep and gen exit non-zero naming the file, leaving nothing"

# 2. An unwritable folder.
if [ "$(id -u)" -eq 0 ]; then
  method="a path under a regular file (running as root, a read-only folder would not stop writes)"
  touch "$out/plain-file"
  target="$out/plain-file/run"
else
  method="a read-only folder (chmod 555)"
  mkdir "$out/readonly" && chmod 555 "$out/readonly"
  target="$out/readonly/run"
fi
expect_failure "$out/" "$kvsim" "${replay[@]}" --out "$target"
expect_failure "$target" "$kvsim" gen prefix -o "$target" --num-prompts 10
echo "output_errors_test: unwritable output via $method: replay and gen exit non-zero naming it"

# 3. --force never loses the trace already at OUT.
"$kvsim" gen prefix -o "$out/good.kvtrace" --num-prompts 10 > /dev/null
cp "$out/good.kvtrace" "$out/good.copy"
printf '{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}\nnot json\n' > "$out/bad.jsonl"
expect_failure "bad.jsonl" "$kvsim" convert --from mooncake "$out/bad.jsonl" -o "$out/good.kvtrace" --force
cmp "$out/good.kvtrace" "$out/good.copy" || fail "a failed convert --force changed the trace at OUT"
expect_failure "good.kvtrace" limited "$kvsim" gen prefix -o "$out/good.kvtrace" --num-prompts 2000 --force
cmp "$out/good.kvtrace" "$out/good.copy" || fail "a failed gen --force changed the trace at OUT"
ls "$out"/good.kvtrace.tmp-* 2> /dev/null && fail "a failed gen left its temporary file"
echo "output_errors_test: failed convert --force and gen --force keep the trace at OUT byte for byte"

# 4. The lock, and --force replacing the whole folder.
"$kvsim" "${replay[@]}" --out "$out/run" > /dev/null 2>&1
touch "$out/run/stale-from-earlier.txt"
"$kvsim" "${replay[@]}" --out "$out/run" --force --decision-log digest > /dev/null 2>&1
test ! -e "$out/run/decisions.log" || fail "--force kept the earlier run's decisions.log"
test ! -e "$out/run/stale-from-earlier.txt" || fail "--force kept a file of the earlier folder"
expect_failure "is not empty" "$kvsim" "${replay[@]}" --out "$out/run"
# The lock is an flock on DIR.lock: a holder (here flock(1), then a kvsim run) keeps others out.
flock -o "$out/held.lock" sleep 30 &  # -o: the lock stays with flock, not with sleep
holder=$!
for _ in $(seq 1 200); do  # until the holder has the lock (flock -n fails while it is held)
  flock -n "$out/held.lock" true || break
  sleep 0.05
done
flock -n "$out/held.lock" true && fail "flock(1) did not take $out/held.lock within 10 s"
expect_failure "being written by another kvsim process" "$kvsim" "${replay[@]}" --out "$out/held" --force
expect_failure "being written by another kvsim process" "$kvsim" "${grid[@]}" --out "$out/held" --force
kill "$holder"; wait "$holder" 2> /dev/null || true
test ! -e "$out/held" || fail "a refused run created $out/held"
"$kvsim" "${replay[@]}" --out "$out/held" > /dev/null 2>&1 || fail "the lock outlived its holder"
slow=(replay --trace traces/data/mooncake_conversation.kvtrace --model llama3-8b --kv-cache-tokens 1000000
      --limit 2000 --progress off)
"$kvsim" "${slow[@]}" --out "$out/locked" > "$out/first.log" 2>&1 &
first=$!
for _ in $(seq 1 200); do  # wait until the first run has taken the lock (its staging folder exists)
  ls -d "$out"/locked.tmp-* > /dev/null 2>&1 && break
  sleep 0.05
done
if "$kvsim" "${replay[@]}" --out "$out/locked" --force > /dev/null 2> "$out/second.err"; then
  kill -0 "$first" 2> /dev/null && fail "a second run into a folder being written succeeded"
  echo "output_errors_test: (the first run ended before the second started: no concurrent check)"
else
  grep -q "being written by another kvsim process" "$out/second.err" || fail "$(cat "$out/second.err")"
fi
wait "$first" || fail "the first run failed: $(cat "$out/first.log")"
test -f "$out/locked/summary.json" || fail "the first run's folder is missing"
echo "output_errors_test: runs into a locked folder are refused; --force leaves no earlier file"

# 5. --kv-events FILE is written like gen's and convert's outputs.
events=(--kv-events "$out/events.jsonl")
"$kvsim" "${replay[@]}" --out "$out/ev1" "${events[@]}" > /dev/null 2>&1 || fail "replay --kv-events failed"
test -s "$out/events.jsonl" || fail "replay --kv-events wrote no events"
cp "$out/events.jsonl" "$out/events.copy"
expect_failure "events.jsonl exists (use --force" "$kvsim" "${replay[@]}" --out "$out/ev2" "${events[@]}"
cmp "$out/events.jsonl" "$out/events.copy" || fail "replay without --force changed the events file"
test ! -e "$out/ev2" || fail "a refused replay created its run folder"
expect_failure "steps.csv\|requests.csv\|decisions.log\|events.jsonl" limited "$kvsim" "${replay[@]}" --out "$out/ev3" \
  "${events[@]}" --force
cmp "$out/events.jsonl" "$out/events.copy" || fail "a failed replay --force changed the events file"
expect_failure "steps.csv\|requests.csv\|decisions.log\|new-events.jsonl" limited "$kvsim" "${replay[@]}" \
  --out "$out/ev4" --kv-events "$out/new-events.jsonl"
test ! -e "$out/new-events.jsonl" || fail "a failed replay left a partial events file"
ls "$out"/*events.jsonl.tmp-* 2> /dev/null && fail "a failed replay left its temporary events file"
"$kvsim" replay --trace "$trace" --limit 20 --kv-cache-tokens 20000 --progress off --out "$out/ev5" "${events[@]}" --force > /dev/null 2>&1 || fail "replay --force failed"
cmp -s "$out/events.jsonl" "$out/events.copy" && fail "replay --kv-events --force did not replace the events file"
echo mine > "$out/dump.txt"
expect_failure "dump.txt exists (use --force" "$kvsim" "${replay[@]}" --out "$out/ev6" --dump-cache "$out/dump.txt"
test "$(cat "$out/dump.txt")" = mine || fail "replay --dump-cache without --force replaced the file"
test ! -e "$out/ev6" || fail "a replay refused for --dump-cache created its run folder"
echo "output_errors_test: --kv-events FILE: refused without --force, kept whole by failed runs, replaced by --force;"
echo "output_errors_test: --dump-cache FILE: refused without --force"
