#!/usr/bin/env bash
# kvsim tokenize gives exactly the ids of Hugging Face's Rust `tokenizers` library on every
# string of tests/tokenizer/strings.jsonl (expected-NAME.jsonl, written by
# scripts/tokenizer-expected). The tokenizer.json comes from scripts/fetch-tokenizers (cached;
# the first run needs the network, and without it this test fails: it never skips).
#   tests/cli/tokenizer_exact_test.sh KVSIM NAME      (run from the repository root)
set -euo pipefail
kvsim="$1" name="$2"
if ! fetched="$(scripts/fetch-tokenizers "$name")"; then
  echo "FAIL: no $name tokenizer.json: scripts/fetch-tokenizers needs the network once (then it is cached)" >&2
  exit 1
fi
file="${fetched#* }"
out="$(mktemp)"
trap 'rm -f "$out" "$out.err"' EXIT
"$kvsim" tokenize --tokenizer "$file" <tests/tokenizer/strings.jsonl >"$out"
# A line that is not a JSON string stops the run with exit status 2 and names the line.
if printf '"ok"\n42\n' | "$kvsim" tokenize --tokenizer "$file" 2>"$out.err" >/dev/null; then
  echo "FAIL: kvsim tokenize accepted a line that is not a JSON string" >&2
  exit 1
fi
grep -q "line 2: a JSON number, expected a string" "$out.err" || { cat "$out.err" >&2; echo "FAIL: the error does not name line 2" >&2; exit 1; }
python3 - "$out" "tests/tokenizer/expected-$name.jsonl" "$name" <<'PY'
import json, sys
got = open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]
want = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
texts = open("tests/tokenizer/strings.jsonl", encoding="utf-8").read().split("\n")[:-1]
if len(got) != len(want):
    sys.exit(f"FAIL: {len(got)} lines of ids for {len(want)} strings")
bad = [i for i in range(len(want)) if json.loads(got[i]) != json.loads(want[i])]
for i in bad[:10]:
    print(f"line {i + 1}: {texts[i][:80]}\n  got      {got[i][:200]}\n  expected {want[i][:200]}")
print(f"{sys.argv[3]}: {len(want) - len(bad)} of {len(want)} strings exact")
sys.exit(1 if bad else 0)
PY
