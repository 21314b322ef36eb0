#!/usr/bin/env python3
"""Reproduces the benchmark tables of vLLM PR #9668 ("[V1] Prefix caching") with kvsim.

Usage: reports/published/vllm-pr-9668/reproduce.py [--kvsim BIN] [--work DIR] [--out FILE]

Published figures: published.json (next to this script), from the PR's "Benchmark" comment:
Meta-Llama-3-8B-Instruct-FP8 on one L40S, an offline prefix-caching benchmark and a serving
benchmark, each with prefix caching off and on.

Workloads (kvsim gen prefix: synthetic token ids, so no tokenizer is involved):
  offline  200 distinct prompts of 369 tokens (the mean the published input and output token
           rates imply: 10 * input tok/s / output tok/s), each twice, shuffled, all at t = 0,
           10 output tokens each (the script's default output length).
  serving  500 prompts of a shared 330-token prefix + 550 random tokens, 150 output tokens,
           Poisson arrivals at 8 requests/s (--request-rate 8 --seed 0).
Model and GPU: --model llama3-8b --dtype fp8 --kv-cache-dtype bf16 (vLLM's auto KV dtype is the
activation dtype, bf16) --gpu l40s.

Calibration: two parameters, fitted on the caching-off rows only: the GPU's compute efficiency
(to the offline time, by bisection) and the host's fixed time per step (to the serving mean TTFT
and mean TPOT, least squared log error by golden-section search), alternated until neither
moves. The caching-on rows are predictions.

Deterministic: the same kvsim gives the same report bytes.
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
COMMON = ["--model", "llama3-8b", "--dtype", "fp8", "--kv-cache-dtype", "bf16", "--verify", "off",
          "--progress", "off", "--decision-log", "digest"]
OFFLINE_GEN = ["--num-prompts", "200", "--num-prefixes", "1", "--prefix-len", "0", "--suffix-len", "369",
               "--repeat", "2", "--output-len", "10", "--prefix-rate", "0", "--seed", "0"]
SERVING_GEN = ["--num-prompts", "500", "--num-prefixes", "1", "--prefix-len", "330", "--suffix-len", "550",
               "--repeat", "1", "--output-len", "150", "--prefix-rate", "0", "--seed", "0"]
SERVING_LOAD = ["--request-rate", "8", "--seed", "0"]


def run(cmd):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + done.stderr)
    return done.stdout


class Kvsim:
    def __init__(self, binary, work):
        self.binary, self.work = binary, work
        os.makedirs(work, exist_ok=True)
        self.offline = os.path.join(work, "offline.kvtrace")
        self.serving = os.path.join(work, "serving.kvtrace")
        run([binary, "gen", "prefix", "-o", self.offline, "--force"] + OFFLINE_GEN)
        run([binary, "gen", "prefix", "-o", self.serving, "--force"] + SERVING_GEN)
        self.cache = {}

    def preset(self, compute_pct, host_step_ns):
        path = os.path.join(self.work, "l40s-c%d-h%d.gpu" % (compute_pct, host_step_ns))
        with open(path, "w") as f:
            f.write("name = l40s-fit\nbase = l40s\ncompute_efficiency_pct = %d\nhost_step_ns = %d\n"
                    % (compute_pct, host_step_ns))
        return path

    def replay(self, workload, caching, compute_pct, host_step_ns):
        key = (workload, caching, compute_pct, host_step_ns)
        if key in self.cache:
            return self.cache[key]
        out = os.path.join(self.work, "run-%s-%s-c%d-h%d" % (workload, "on" if caching else "off", compute_pct,
                                                              host_step_ns))
        trace = self.offline if workload == "offline" else self.serving
        load = [] if workload == "offline" else SERVING_LOAD
        run([self.binary, "replay", "--trace", trace, "--out", out, "--force",
             "--gpu-preset-file", self.preset(compute_pct, host_step_ns),
             "--prefix-caching", "on" if caching else "off"] + COMMON + load)
        with open(os.path.join(out, "result.json")) as f:
            result = json.load(f)
        self.cache[key] = result
        return result


def offline_figures(r):
    t = r["duration"]
    return {"time_s": t, "input_tok_s": r["total_input_tokens"] / t, "output_tok_s": r["total_output_tokens"] / t}


SERVING_KEYS = ["duration_s", "request_throughput", "output_throughput", "mean_ttft_ms", "median_ttft_ms",
                "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms",
                "p99_itl_ms"]


def serving_figures(r):
    out = {k: r[k] for k in SERVING_KEYS if k in r}
    out["duration_s"] = r["duration"]
    return out


def loss(k, published, compute_pct, host_step_ns):
    off = [r for r in published["offline"]["rows"] if not r["prefix_caching"]][0]
    srv = [r for r in published["serving"]["rows"] if not r["prefix_caching"]][0]
    o = offline_figures(k.replay("offline", False, compute_pct, host_step_ns))
    s = serving_figures(k.replay("serving", False, compute_pct, host_step_ns))
    pairs = [(o["time_s"], off["time_s"]), (s["mean_ttft_ms"], srv["mean_ttft_ms"]),
             (s["mean_tpot_ms"], srv["mean_tpot_ms"])]
    return sum(math.log(max(a, 1e-9) / b) ** 2 for a, b in pairs)


def bisect_compute(k, published, host_step_ns):
    """The compute efficiency whose offline caching-off time is nearest the published one
    (the time falls as the efficiency rises)."""
    want = [r for r in published["offline"]["rows"] if not r["prefix_caching"]][0]["time_s"]
    lo, hi = 1, 100
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if offline_figures(k.replay("offline", False, mid, host_step_ns))["time_s"] > want:
            lo = mid
        else:
            hi = mid
    return min((lo, hi), key=lambda c: abs(math.log(offline_figures(k.replay("offline", False, c, host_step_ns))
                                                     ["time_s"] / want)))


def golden_host(k, published, compute_pct, lo=0, hi=40000000, resolution=50000):
    """The host time per step minimizing the loss at this compute efficiency (golden section)."""
    ratio = (math.sqrt(5) - 1) / 2
    snap = lambda x: int(round(x / resolution)) * resolution
    a, b = lo, hi
    while b - a > 2 * resolution:
        c, d = snap(b - ratio * (b - a)), snap(a + ratio * (b - a))
        if loss(k, published, compute_pct, c) <= loss(k, published, compute_pct, d):
            b = d
        else:
            a = c
    return min({snap(a), snap((a + b) / 2), snap(b)}, key=lambda h: loss(k, published, compute_pct, h))


def fit(k, published):
    """Alternates the two one-dimensional fits (offline time pins the compute efficiency, the
    serving latencies the host time) until neither moves, at most four rounds."""
    compute, host = 70, 0
    for _ in range(4):
        new_compute = bisect_compute(k, published, host)
        new_host = golden_host(k, published, new_compute)
        if (new_compute, new_host) == (compute, host):
            break
        compute, host = new_compute, new_host
    return loss(k, published, compute, host), compute, host


def pct_error(kvsim, published):
    return 100.0 * (kvsim - published) / published


def table(rows):
    out = ["| figure | published | kvsim | error |", "|---|---:|---:|---:|"]
    for name, pub, sim in rows:
        out.append("| %s | %.2f | %.2f | %+.1f%% |" % (name, pub, sim, pct_error(sim, pub)))
    return out


def report(k, published, best):
    value, c, h = best
    lines = ["# vLLM PR #9668 reproduced by kvsim", "",
             "Generated by `reports/published/vllm-pr-9668/reproduce.py`; do not edit by hand.", "",
             "Source: " + published["source"] + ".", "",
             "kvsim: `--model llama3-8b --dtype fp8 --kv-cache-dtype bf16 --gpu l40s` (one GPU), synthetic",
             "token ids from `kvsim gen prefix` (no tokenizer; the offline prompts are 369 tokens, the mean",
             "the published token rates imply, where ShareGPT's lie between 256 and 512).", "",
             "Workloads as the PR ran them: the model is Llama-3-8B (not 3.1) in FP8; the offline",
             "benchmark repeats each of 200 ShareGPT prompts twice (no system prompt); the serving benchmark",
             "is vLLM's random dataset, a 330-token prefix shared by every prompt plus 550 random tokens,",
             "150 output tokens, Poisson arrivals at 8 requests/s. Token ids are synthetic, so kvsim's",
             "word-hash tokenizer plays no part (a BPE tokenizer would not change these traces). Not",
             "modelled: the PR's engine details (its V1 prototype's chunked-prefill budget is taken as",
             "kvsim's default 8192 tokens), EOS before 150 tokens (vLLM generated 74,812 of 75,000",
             "tokens), and vLLM's client-side arrival draws (kvsim draws its own Poisson gaps).", "",
             "## Fit (caching-off rows only)", "",
             "Two parameters: the compute efficiency fitted to the caching-off offline time, the host time",
             "per step to the caching-off serving mean TTFT and mean TPOT (least squared log error),",
             "alternated until neither moves:", "",
             "- compute efficiency: **%d%%** of the L40S's dense FP8 peak (preset default 70%%)" % c,
             "- host time per step: **%.2f ms** (`host_step_ns = %d`; preset default 0.04 ms)" % (h / 1e6, h),
             "- residual: %.4f (sum of squared log errors over 3 figures)" % value, "",
             "Caching-on rows below are predictions with the same two parameters.", ""]
    for workload in ("offline", "serving"):
        lines += ["## " + workload.capitalize(), "", "Published: `" + published[workload]["command"] + "`", ""]
        for row in published[workload]["rows"]:
            r = k.replay(workload, row["prefix_caching"], c, h)
            figures = offline_figures(r) if workload == "offline" else serving_figures(r)
            kind = "fitted" if not row["prefix_caching"] else "predicted"
            hit = r["kvsim"]["prefix_cache_hit_rate"] * 100
            lines += ["### %s (%s; kvsim hit rate %.1f%%)" % (row["name"], kind, hit), ""]
            keys = [key for key in row if key not in ("name", "prefix_caching") and key in figures]
            lines += table([(key, row[key], figures[key]) for key in keys]) + [""]
    lines += ["## Regenerate", "", "    cmake --build --preset default --target kvsim",
              "    reports/published/vllm-pr-9668/reproduce.py", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kvsim", default=os.path.join(ROOT, "build", "default", "cli", "kvsim"))
    ap.add_argument("--work", default="/tmp/kvsim-vllm-pr-9668")
    ap.add_argument("--out", default=os.path.join(HERE, "report.md"))
    args = ap.parse_args()
    with open(os.path.join(HERE, "published.json")) as f:
        published = json.load(f)
    k = Kvsim(args.kvsim, args.work)
    best = fit(k, published)
    text = report(k, published, best)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    print("fit: compute_efficiency_pct=%d host_step_ns=%d residual=%.4f (%d replays)" %
          (best[1], best[2], best[0], len(k.cache)))


if __name__ == "__main__":
    main()
