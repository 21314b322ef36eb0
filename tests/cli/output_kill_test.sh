#!/usr/bin/env bash
# kill -9 at random moments never leaves a folder that `kvsim report` reads as complete unless
# it is (docs/reliability.md, "Outputs"). 20 kills of a `kvsim replay --force` over an earlier
# run, 20 of a grid `kvsim sweep --force`; after each, every run folder `kvsim report` accepts
# must be whole and of one run: its decisions.log hashes to summary.json's digest and its CSVs
# have the rows summary.json counts; and the output folder holds a whole result or none.
# Usage: output_kill_test.sh KVSIM [KILLS]
set -euo pipefail
kvsim=$1
kills=${2:-20}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export KVSIM_GNUPLOT=/nonexistent  # no plots: the test is about the files
RANDOM=7                            # the same kill moments at every run of the test

# The run folder's files agree with its summary.json (python3: JSON and sha256).
consistent() {
  python3 - "$1" <<'EOF'
import csv, hashlib, json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "summary.json")))
assert s.get("complete") is True, "summary.json without complete: true"
log = os.path.join(d, "decisions.log")
if os.path.exists(log):
    digest = hashlib.sha256(open(log, "rb").read()).hexdigest()
    assert digest == s["decision_log_sha256"], f"{log} does not hash to the summary's digest"
steps = sum(1 for _ in csv.reader(open(os.path.join(d, "steps.csv"), newline=""))) - 1
assert steps == s["scheduler"]["steps"], f"steps.csv has {steps} rows, summary says {s['scheduler']['steps']}"
reqs = sum(1 for _ in csv.reader(open(os.path.join(d, "requests.csv"), newline=""))) - 1
assert reqs == s["requests"]["total"], f"requests.csv has {reqs} rows, summary says {s['requests']['total']}"
EOF
}

# Every run folder under $1 that `kvsim report` accepts is consistent; returns how many it accepted.
check_folders() {
  local accepted=0 d
  while IFS= read -r d; do
    if "$kvsim" report "$d" --out "$out/report" --force > /dev/null 2> "$out/report.err"; then
      consistent "$d" || { echo "FAIL: kvsim report accepted $d, which is not a whole run" >&2; exit 1; }
      accepted=$((accepted + 1))
    elif ! grep -q "incomplete run folder\|not a run folder" "$out/report.err"; then
      echo "FAIL: kvsim report refused $d for another reason:" >&2; cat "$out/report.err" >&2; exit 1
    fi
  done < <(find "$out" -mindepth 1 -type d \( -name 'run*' -o -path '*/points/*' \) -not -name report | sort)
  echo "$accepted"
}

# Runs "$@" in the background and kill -9's it after a random delay in [0, $1 ms].
kill_at_random() {
  local max_ms=$1; shift
  "$@" > /dev/null 2>&1 &
  local pid=$!
  local ms=$((RANDOM % max_ms))
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
}

elapsed_ms() {
  local t0 t1
  t0=$(date +%s%N); "$@" > /dev/null 2>&1; t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000 + 1))
}

replay=(replay --trace traces/data/sharegpt_sample.kvtrace --limit 300 --kv-cache-tokens 20000 --progress off)
# The first run is complete; the killed ones alternate prefix caching, so that a folder mixing
# two runs' files cannot pass as one.
ms=$(elapsed_ms "$kvsim" "${replay[@]}" --out "$out/run")
consistent "$out/run"
finished=0
for i in $(seq 1 "$kills"); do
  caching=$([ $((i % 2)) -eq 0 ] && echo on || echo off)
  before=$(stat -c %i "$out/run")
  kill_at_random $((ms * 5 / 4)) "$kvsim" "${replay[@]}" --prefix-caching "$caching" --out "$out/run" --force
  test -d "$out/run" || { echo "FAIL: kill $i of kvsim replay lost the previous run folder"; exit 1; }
  consistent "$out/run" || { echo "FAIL: after kill $i, $out/run is not one whole run"; exit 1; }
  [ "$(stat -c %i "$out/run")" != "$before" ] && finished=$((finished + 1))  # a new folder took its place
done
accepted=$(check_folders)
echo "output_kill_test: $kills kills of kvsim replay within its ${ms} ms ($finished finished first): the run folder always held one whole run; $accepted staged folder(s) accepted by kvsim report, all whole"

sweep=(sweep --trace traces/data/sharegpt_sample.kvtrace --vary request-rate=2,8 --vary block-size=16,32
       --limit 100 --kv-cache-tokens 20000 --jobs 1 --progress off --no-plot)
ms=$(elapsed_ms "$kvsim" "${sweep[@]}" --out "$out/grid")
for i in $(seq 1 "$kills"); do
  kill_at_random $((ms * 5 / 4)) "$kvsim" "${sweep[@]}" --out "$out/grid" --force
  test "$(wc -l < "$out/grid/sweep.csv")" -eq 5 || { echo "FAIL: kill $i of kvsim sweep cut sweep.csv"; exit 1; }
  test "$(find "$out/grid/points" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 4 ||
    { echo "FAIL: kill $i of kvsim sweep left a partial points/ folder"; exit 1; }
done
accepted=$(check_folders)
echo "output_kill_test: $kills kills of kvsim sweep within its ${ms} ms: the sweep folder stayed whole; $accepted run folder(s) accepted by kvsim report, all whole"
# A later run clears the staging folders that killed runs left.
"$kvsim" "${replay[@]}" --out "$out/run" --force > /dev/null 2>&1
if ls -d "$out"/run.tmp-* 2> /dev/null; then echo "FAIL: stale staging folders left"; exit 1; fi
echo "output_kill_test: a later run removed the staging folders of the killed ones"
