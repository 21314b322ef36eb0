"""Every figure of a run's summary.json and result.json, recomputed independently from the
run's raw per-request and per-step tables (requests.csv, steps.csv) and its KV events, with
numpy's definitions, for one KV-cache group and several, eviction policies, a host tier,
caching off and a Poisson arrival process. A difference beyond float rounding fails.

Definitions (those of vLLM's `vllm bench serve`, which result.json mirrors):
  TTFT = first_token - arrival; E2EL = finish - arrival; TPOT = (E2EL - TTFT) / (output - 1)
  over requests with more than one output token; mean, median (np.median), std (np.std,
  population) and p99 (np.percentile, linear); summary.json's latency_us percentiles are the
  same linear percentiles rounded to whole microseconds, over whole-microsecond values (a
  request's TPOT there is (finish - first token) // (output - 1), rounded down); the duration
  is the simulated time of the last finish; throughputs are totals over it.
"""
import csv
import json
import os
import subprocess

import numpy as np
import pytest

KVSIM = os.environ.get("KVSIM_BIN", "build/default/cli/kvsim")
TRACE = "traces/data/sharegpt_sample.kvtrace"

CONFIGS = {
    "dense-lru": ["--model", "llama3-8b"],
    "dense-lfu-host-tier": ["--model", "llama3-8b", "--num-blocks", "3000", "--eviction-policy", "lfu",
                            "--host-cache-bytes", "20000000000"],
    "hybrid-slru": ["--model", "gpt-oss-20b", "--num-blocks", "3000", "--eviction-policy", "slru"],
    "dense-caching-off": ["--model", "llama3-8b", "--prefix-caching", "off"],
    "dense-poisson-small-pool": ["--model", "llama3-8b", "--num-blocks", "1200", "--request-rate", "12",
                                 "--seed", "3"],
}


def run(name, tmp_path_factory):
    out = tmp_path_factory.mktemp(name)
    events = out / "events.jsonl"
    args = [KVSIM, "replay", "--trace", TRACE, "--limit", "150", "--progress", "off", "--force",
            "--out", str(out / "run")] + CONFIGS[name]
    if "off" not in CONFIGS[name]:  # events need prefix caching
        args += ["--kv-events", str(events)]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run_dir = out / "run"
    with open(run_dir / "requests.csv", newline="") as f:
        requests = list(csv.DictReader(f))
    with open(run_dir / "steps.csv", newline="") as f:
        steps = list(csv.DictReader(f))
    with open(run_dir / "summary.json") as f:
        summary = json.load(f)
    with open(run_dir / "result.json") as f:
        result = json.load(f)
    batches = []
    if events.exists():
        with open(events) as f:
            batches = [json.loads(line) for line in f]
    return requests, steps, summary, result, batches


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def outputs(request, tmp_path_factory):
    return run(request.param, tmp_path_factory)


def column(rows, name, rows_filter=None):
    return np.array([int(r[name]) for r in rows if rows_filter is None or rows_filter(r)], dtype=np.int64)


def latencies(requests):
    done = [r for r in requests if r["status"].startswith("finished")]
    arrival = column(done, "arrival_us")
    ttft = column(done, "first_token_us") - arrival
    e2e = column(done, "finish_us") - arrival
    out = column(done, "output_tokens")
    many = out > 1
    tpot = (e2e[many] - ttft[many]) / (out[many] - 1)
    tpot_whole_us = (e2e[many] - ttft[many]) // (out[many] - 1)
    assert np.array_equal(ttft, column(done, "ttft_us")) and np.array_equal(e2e, column(done, "e2e_us"))
    return {"ttft": (ttft.astype(float), ttft), "tpot": (tpot, tpot_whole_us), "e2e": (e2e.astype(float), e2e)}


def close(a, b):
    return a == pytest.approx(b, rel=1e-9, abs=1e-9)


def test_latency_statistics(outputs):
    requests, _, summary, result, _ = outputs
    lat = latencies(requests)
    for name, (values, whole_us) in lat.items():
        us = summary["latency_us"][name]
        assert us["count"] == len(values)
        assert close(us["mean"], values.mean()) and close(us["std"], values.std())
        assert us["max"] == whole_us.max()
        for q in (50, 90, 99):
            assert us["p%d" % q] == int(np.floor(np.percentile(whole_us, q) + 0.5)), (name, q)
        key = "e2el" if name == "e2e" else name
        for stat, value in (("mean", values.mean()), ("median", np.median(values)), ("std", values.std()),
                            ("p99", np.percentile(values, 99))):
            field = "%s_%s_ms" % (stat, key)
            assert close(summary["latency_ms"][field], value / 1000.0), field
            assert close(result[field], value / 1000.0), field


def test_totals_throughput_and_duration(outputs):
    requests, steps, summary, result, _ = outputs
    done = [r for r in requests if r["status"].startswith("finished")]
    prompt, output = column(done, "prompt_tokens").sum(), column(done, "output_tokens").sum()
    duration_s = column(done, "finish_us").max() / 1e6
    assert summary["requests"]["finished"] == len(done) == result["completed"]
    assert summary["requests"]["total"] == len(requests)
    assert summary["requests"]["rejected"] == len(requests) - len(done) == result["failed"]
    assert summary["tokens"]["prompt"] == prompt == result["total_input_tokens"]
    assert summary["tokens"]["output"] == output == result["total_output_tokens"]
    # Prompt positions computed: at least the steps' pure-prefill tokens, at most all computed
    # tokens (a resumed request recomputes prompt and output tokens in one chunk, which the
    # step table counts as decode), and exactly the former without preemptions.
    prefill, computed = column(steps, "prefill_tokens").sum(), column(steps, "tokens_computed").sum()
    assert prefill <= summary["tokens"]["prompt_computed"] <= computed
    if summary["scheduler"]["preemptions"] == 0:
        assert summary["tokens"]["prompt_computed"] == prefill
    assert close(result["duration"], duration_s) and summary["time"]["simulated_us"] == duration_s * 1e6
    assert close(result["request_throughput"], len(done) / duration_s)
    assert close(result["output_throughput"], output / duration_s)
    assert close(result["total_token_throughput"], (prompt + output) / duration_s)
    assert close(summary["throughput"]["prompt_tokens_per_s"], prompt / duration_s)
    assert close(summary["throughput"]["output_tokens_per_s"], output / duration_s)


def test_prefix_cache_and_scheduler_counters(outputs):
    requests, steps, summary, result, batches = outputs
    pc = summary["prefix_cache"]
    hits = column(requests, "cached_tokens").sum()  # each request's hit when first scheduled
    queries = column(requests, "prompt_tokens").sum()
    assert pc["admitted_hit_tokens"] == hits == result["kvsim"]["prefix_cache_hit_tokens"]
    assert pc["admitted_prompt_tokens"] == queries == result["kvsim"]["prefix_cache_queried_tokens"]
    assert close(pc["request_hit_rate"], hits / queries) and close(result["kvsim"]["prefix_cache_hit_rate"], hits / queries)
    # vLLM's lookup counter counts every lookup, a request retried while it waits included.
    assert close(pc["hit_rate"], pc["hits"] / pc["queries"] if pc["queries"] else 0.0)
    assert close(result["kvsim"]["prefix_cache_lookup_hit_rate"], pc["hit_rate"])
    if summary["config"]["prefix_caching"] == "off":
        assert pc["lookups"] == pc["queries"] == pc["hits"] == hits == 0
    else:
        assert pc["lookups"] >= len(requests) and pc["queries"] >= queries
        assert pc["preempted_lookups"] <= pc["lookups"] and pc["preempted_hits"] <= pc["hits"]
    assert summary["scheduler"]["steps"] == len(steps) == result["kvsim"]["steps"]
    assert summary["scheduler"]["preemptions"] == column(requests, "preemptions").sum()
    assert result["kvsim"]["preemptions"] == summary["scheduler"]["preemptions"]
    evictions = int(steps[-1]["evictions_total"]) if steps else 0
    assert pc["evictions"] == evictions == result["kvsim"]["evictions"]
    # Every eviction from GPU memory is one BlockRemoved hash of medium GPU in the events.
    removed = sum(len(e["block_hashes"]) for b in batches for e in b["events"]
                  if e["type"] == "BlockRemoved" and e.get("medium") == "GPU")
    assert removed == evictions
    # With caching off nothing is stored, so nothing is announced.
    if summary["config"]["prefix_caching"] == "off":
        assert not any(b["events"] for b in batches)


def test_step_table_adds_up(outputs):
    _, steps, _, _, _ = outputs
    starts = column(steps, "start_us")
    assert np.all(np.diff(starts) >= 0)
    for s in steps:
        assert int(s["tokens_computed"]) == int(s["prefill_tokens"]) + int(s["decode_tokens"])
        assert int(s["duration_ns"]) == int(s["predicted_ns"])  # the simulator: predicted drives the clock
    evictions = column(steps, "evictions_total")
    assert np.all(np.diff(evictions) >= 0)
