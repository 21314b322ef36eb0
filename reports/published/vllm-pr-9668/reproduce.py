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

As shipped ("As shipped, no fitting"): every figure of the PR against kvsim with `--gpu l40s` and
no preset file, with the serving front end off (`--frontend none`) and on (`--frontend vllm-v1`),
how many are within 30%, and a breakdown of the rest from the runs' steps.csv and kernels.csv.

Calibration: two parameters, fitted on the caching-off rows only: the GPU's compute efficiency
(to the offline time, by bisection) and the host's fixed time per step (to the serving mean TTFT
and mean TPOT, least squared log error by golden-section search), alternated until neither
moves. The caching-on rows are predictions.

Diagnosis ("Where the serving error comes from"): a scan of the host time per step (mean TTFT
and mean TPOT miss on opposite sides), the serving run's steps.csv split into steps with prompt
tokens and decode-only ones, a scan of --max-num-batched-tokens at the host time that fits TPOT,
and the TTFT left over once step times match (a per-request latency kvsim does not model). These
runs explain the errors; the headline tables keep the two fitted parameters.

Deterministic: the same kvsim gives the same report bytes.
"""
import argparse
import csv
import json
import math
import os
import statistics
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

    def run_dir(self, workload, caching, compute_pct, host_step_ns, budget=None):
        return os.path.join(self.work, "run-%s-%s-c%d-h%d%s" % (workload, "on" if caching else "off", compute_pct,
                                                                 host_step_ns, "-b%d" % budget if budget else ""))

    def replay(self, workload, caching, compute_pct, host_step_ns, budget=None):
        """result.json of one replay; `budget` sets --max-num-batched-tokens (default: kvsim's)."""
        key = (workload, caching, compute_pct, host_step_ns, budget)
        if key in self.cache:
            return self.cache[key]
        out = self.run_dir(workload, caching, compute_pct, host_step_ns, budget)
        trace = self.offline if workload == "offline" else self.serving
        load = [] if workload == "offline" else SERVING_LOAD
        run([self.binary, "replay", "--trace", trace, "--out", out, "--force",
             "--gpu-preset-file", self.preset(compute_pct, host_step_ns),
             "--prefix-caching", "on" if caching else "off"] + COMMON + load +
            (["--max-num-batched-tokens", str(budget)] if budget else []))
        with open(os.path.join(out, "result.json")) as f:
            result = json.load(f)
        self.cache[key] = result
        return result


    def shipped_dir(self, workload, caching, frontend):
        return os.path.join(self.work, "shipped-%s-%s-%s" % (workload, "on" if caching else "off", frontend))

    def shipped(self, workload, caching, frontend):
        """result.json of one replay with the presets as shipped (`--gpu l40s`, no fitting) and
        the serving front end `frontend` (none or vllm-v1)."""
        key = ("shipped", workload, caching, frontend)
        if key in self.cache:
            return self.cache[key]
        out = self.shipped_dir(workload, caching, frontend)
        trace = self.offline if workload == "offline" else self.serving
        load = [] if workload == "offline" else SERVING_LOAD
        run([self.binary, "replay", "--trace", trace, "--out", out, "--force", "--gpu", "l40s",
             "--frontend", frontend, "--prefix-caching", "on" if caching else "off"] + COMMON + load)
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


LATENCY = ["mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_itl_ms", "p99_itl_ms"]
HOST_SCAN_MS = [0, 3, 6, 12, 18, 24]
BUDGETS = [512, 1024, 2048, 8192]


def serving_row(published, caching):
    return [r for r in published["serving"]["rows"] if r["prefix_caching"] == caching][0]


def bisect_host(k, published, c, key, resolution=50000):
    """The host time per step (0..40 ms, to `resolution`) at which kvsim's caching-off `key`
    meets the published one (every serving latency rises with the host time)."""
    want = serving_row(published, False)[key]
    lo, hi = 0, 40000000 // resolution
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if k.replay("serving", False, c, mid * resolution)[key] > want:
            hi = mid
        else:
            lo = mid
    return min((lo * resolution, hi * resolution),
               key=lambda h: abs(k.replay("serving", False, c, h)[key] - want))


def error_cells(r, row, keys):
    return " | ".join("%+.1f%%" % pct_error(r[key], row[key]) for key in keys)


def host_scan(k, published, c, h):
    row = serving_row(published, False)
    out = ["| host time per step | " + " | ".join(LATENCY) + " |", "|---:|" + "---:|" * len(LATENCY)]
    for ns in sorted(set([ms * 1000000 for ms in HOST_SCAN_MS] + [h])):
        mark = " (fit)" if ns == h else ""
        out.append("| %.2f ms%s | %s |" % (ns / 1e6, mark, error_cells(k.replay("serving", False, c, ns), row,
                                                                         LATENCY)))
    return out


def step_breakdown(k, c, h, budget=None):
    """Simulated steps of the caching-off serving run split into those with prompt tokens and
    decode-only ones: (name, steps, mean and largest prompt tokens, mean and p99 ms, share of
    inter-token gaps, the kind's part of mean ITL in ms). A step ends one inter-token gap per decode token it holds, so
    mean ITL is the decode-token-weighted mean step time; the two parts sum to it."""
    k.replay("serving", False, c, h, budget)
    with open(os.path.join(k.run_dir("serving", False, c, h, budget), "steps.csv")) as f:
        steps = list(csv.DictReader(f))
    gaps = sum(int(s["decode_tokens"]) for s in steps)
    out = []
    for name, chosen in (("with prompt tokens", [s for s in steps if int(s["prefill_tokens"]) > 0]),
                         ("decode only", [s for s in steps if int(s["prefill_tokens"]) == 0])):
        share = sum(int(s["decode_tokens"]) for s in chosen) / gaps
        part = sum(int(s["duration_ns"]) / 1e6 * int(s["decode_tokens"]) for s in chosen) / gaps
        ms = sorted(int(s["duration_ns"]) / 1e6 for s in chosen)
        tokens = [int(s["prefill_tokens"]) for s in chosen]
        out.append((name, len(chosen), statistics.mean(tokens), max(tokens), statistics.mean(ms),
                    ms[min(len(ms) - 1, int(0.99 * len(ms)))], share, part))
    return out


def breakdown_table(k, c, settings):
    out = ["| host ms per step | token budget | steps | count | prompt tokens mean | max | ms mean | p99 "
           "| share of ITL gaps | part of mean ITL ms |", "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for h, budget in settings:
        for name, count, tokens, most, mean_ms, p99_ms, share, part in step_breakdown(k, c, h, budget):
            out.append("| %.2f | %d | %s | %d | %.0f | %d | %.2f | %.2f | %.1f%% | %.2f |" % (
                h / 1e6, budget or 8192, name, count, tokens, most, mean_ms, p99_ms, 100 * share, part))
    return out


def budget_scan(k, published, c, h):
    out = ["| caching | token budget | " + " | ".join(LATENCY) + " |", "|---|---:|" + "---:|" * len(LATENCY)]
    for caching in (False, True):
        for budget in BUDGETS:
            r = k.replay("serving", caching, c, h, budget)
            out.append("| %s | %d | %s |" % ("on" if caching else "off", budget,
                                             error_cells(r, serving_row(published, caching), LATENCY)))
    return out


def outside(k, published, c, h, limit=15.0):
    """Headline figures whose error exceeds `limit` percent: (row name, figure, error)."""
    found = []
    for workload in ("offline", "serving"):
        for row in published[workload]["rows"]:
            r = k.replay(workload, row["prefix_caching"], c, h)
            figures = offline_figures(r) if workload == "offline" else serving_figures(r)
            for key in row:
                if key in figures and abs(pct_error(figures[key], row[key])) > limit:
                    found.append((row["name"], key, pct_error(figures[key], row[key])))
    return found


def best_budget(k, published, c, h):
    """The token budget whose step-time figures (mean TPOT, median and p99 ITL, both rows) are
    nearest the published ones (least squared log error)."""
    def score(budget):
        return sum(math.log(k.replay("serving", caching, c, h, budget)[key] / serving_row(published, caching)[key])
                   ** 2 for caching in (False, True) for key in ("mean_tpot_ms", "median_itl_ms", "p99_itl_ms"))
    return min(BUDGETS, key=score)


def serving_error_section(k, published, c, h):
    h_tpot = bisect_host(k, published, c, "mean_tpot_ms")
    h_ttft = bisect_host(k, published, c, "mean_ttft_ms")
    tpot_at_ttft = pct_error(k.replay("serving", False, c, h_ttft)["mean_tpot_ms"],
                             serving_row(published, False)["mean_tpot_ms"])
    ttft_at_tpot = pct_error(k.replay("serving", False, c, h_tpot)["mean_ttft_ms"],
                             serving_row(published, False)["mean_ttft_ms"])
    off = serving_row(published, False)
    lines = ["## Where the serving error comes from", "",
             "Headline figures outside 15%:", ""]
    lines += ["- %s: %s %+.1f%%" % item for item in outside(k, published, c, h)] + [""]
    lines += ["Measured causes (sections below): (1) one host time per step cannot fit both TTFT and",
              "TPOT, so the fit under-shoots TTFT and over-shoots TPOT and ITL; (2, 3) with the host time",
              "set by TPOT alone, the p99 ITL excess comes from steps that pack whole prompts under",
              "kvsim's 8192-token budget, and a smaller budget removes it; (4) what remains is a",
              "near-constant TTFT shortfall per request, latency outside the engine's steps that kvsim",
              "does not model. The offline figures are all within 15%.", ""]
    lines += ["Each measurement below is a kvsim run made by this script (compute efficiency %d%%)." % c, "",
              "### 1. No single host time per step fits both mean TTFT and mean TPOT", "",
              "Errors of the caching-off serving row as the host time per step varies:", ""]
    lines += host_scan(k, published, c, h) + [""]
    lines += ["Both latencies rise with the host time, but from opposite sides of the published figures:",
              "mean TPOT meets the published %.2f ms at **%.2f ms** per step, where mean TTFT is %+.1f%%;"
              % (off["mean_tpot_ms"], h_tpot / 1e6, ttft_at_tpot),
              "mean TTFT meets the published %.2f ms only at **%.2f ms** per step, where mean TPOT is %+.1f%%."
              % (off["mean_ttft_ms"], h_ttft / 1e6, tpot_at_ttft),
              "The 2-parameter fit sits between the two, so both miss.", "",
              "### 2. Where the simulated step time goes (caching off)", ""]
    budget = best_budget(k, published, c, h_tpot)
    lines += breakdown_table(k, c, [(h, None), (h_tpot, None), (h_tpot, budget)])
    lines += ["", "Published mean ITL %.2f ms, median ITL %.2f ms, p99 ITL %.2f ms. Decode-only steps are"
              % (off["mean_itl_ms"], off["median_itl_ms"], off["p99_itl_ms"]),
              "most of the gaps and set the median ITL; the steps that carry prompt tokens set the p99 ITL.",
              "At the fit, the extra host time (bought to raise TTFT) is paid by every step and inflates",
              "both kinds. At the host time that fits TPOT with kvsim's 8192-token budget, the steps with",
              "prompt tokens can pack several whole prompts (max above) and the longest run long, hence",
              "the p99 ITL excess; a budget of %d caps them (their p99 falls, next table)." % budget, "",
              "### 3. Prefill chunking (`--max-num-batched-tokens`) at the host time that fits TPOT (%.2f ms)"
              % (h_tpot / 1e6), ""]
    lines += budget_scan(k, published, c, h_tpot) + [""]
    worst = max(abs(pct_error(k.replay("serving", caching, c, h_tpot, budget)[key],
                              serving_row(published, caching)[key]))
                for caching in (False, True) for key in ("mean_tpot_ms", "median_itl_ms", "p99_itl_ms"))
    lines += ["With a token budget of **%d** (the budget nearest on mean TPOT, median and p99 ITL, both rows)"
              % budget,
              "those step-time figures come within %.1f%% in both rows: the published p99 ITL points to" % worst,
              "smaller prefill chunks than the 8192 tokens this report assumes for the PR's prototype.",
              "Chunking does not close the mean TTFT gap: budgets small enough to raise it push p99 TTFT",
              "and p99 ITL far off (rows 512 and 1024).", ""]
    lines += residual_section(k, published, c, h_tpot, budget)
    return lines


def residual_section(k, published, c, h, budget):
    gaps, rows = {}, []
    for caching in (False, True):
        row, r = serving_row(published, caching), k.replay("serving", caching, c, h, budget)
        gaps[caching] = {key: row[key] - r[key] for key in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms")}
        rows.append("| %s | %.1f | %.1f | %.1f | %+.1f%% |" % (
            "on" if caching else "off", gaps[caching]["mean_ttft_ms"], gaps[caching]["median_ttft_ms"],
            gaps[caching]["p99_ttft_ms"], pct_error(r["mean_tpot_ms"], row["mean_tpot_ms"])))
    offset = (gaps[False]["mean_ttft_ms"] + gaps[True]["mean_ttft_ms"]) / 2
    lines = ["### 4. What is left: a fixed latency per request outside the engine's steps", "",
             "Published minus kvsim TTFT, host time %.2f ms per step, token budget %d:" % (h / 1e6, budget), "",
             "| caching | mean TTFT gap ms | median TTFT gap ms | p99 TTFT gap ms | mean TPOT error |",
             "|---|---:|---:|---:|---:|"] + rows + [""]
    lines += ["With step times matched, kvsim's TTFT is short by a near-constant amount per request (mean",
              "and median gaps agree within %.1f ms in each row): the signature of latency that every request"
              % max(abs(g["mean_ttft_ms"] - g["median_ttft_ms"]) for g in gaps.values()),
              "pays once, outside the scheduler's steps (HTTP, tokenizing the 880-token prompt, the V1",
              "prototype's hand-off between its front-end and engine processes, detokenizing the first",
              "token). kvsim models none of it. That is the third parameter: a fixed per-request latency of",
              "about **%.0f ms** (the mean of the two rows' mean gaps; they differ by %.1f ms, which one"
              % (offset, abs(gaps[False]["mean_ttft_ms"] - gaps[True]["mean_ttft_ms"])),
              "constant cannot absorb). A constant delay before the engine sees a request shifts every",
              "arrival alike, so it adds exactly that much to each TTFT and leaves TPOT and ITL unchanged.",
              "The p99 gaps (%.1f ms off, %.1f ms on) differ from each other and from the mean gaps: the"
              % (gaps[False]["p99_ttft_ms"], gaps[True]["p99_ttft_ms"]),
              "TTFT tail is not explained by the constant alone. With it added the TTFT errors would be:", ""]
    for caching in (False, True):
        row, r = serving_row(published, caching), k.replay("serving", caching, c, h, budget)
        lines.append("- caching %s: mean TTFT %+.1f%%, median %+.1f%%, p99 %+.1f%%" % (
            "on" if caching else "off", pct_error(r["mean_ttft_ms"] + offset, row["mean_ttft_ms"]),
            pct_error(r["median_ttft_ms"] + offset, row["median_ttft_ms"]),
            pct_error(r["p99_ttft_ms"] + offset, row["p99_ttft_ms"])))
    lines += ["", "These three settings (host time fitted to TPOT, token budget, per-request latency) are a",
              "diagnosis, not the headline: the tables above keep the 2 fitted parameters.", ""]
    return lines


SHIPPED_OFFLINE = ["time_s"]
SHIPPED_SERVING = ["mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
                   "mean_itl_ms", "median_itl_ms", "p99_itl_ms"]
FRONTENDS = ["none", "vllm-v1"]
WITHIN = 30.0  # percent: the band the summary counts


def shipped_rows(k, published):
    """(row name, figure, published, {frontend: kvsim}) for every figure of the as-shipped table."""
    rows = []
    for workload, keys in (("offline", SHIPPED_OFFLINE), ("serving", SHIPPED_SERVING)):
        for row in published[workload]["rows"]:
            label = "%s, caching %s" % (workload, "on" if row["prefix_caching"] else "off")
            for key in keys:
                sims = {}
                for fe in FRONTENDS:
                    r = k.shipped(workload, row["prefix_caching"], fe)
                    sims[fe] = (offline_figures(r) if workload == "offline" else serving_figures(r))[key]
                rows.append((label, key, row[key], sims))
    return rows


def node_groups():
    return (("host (scheduler, inputs)", ["host_schedule"]),
            ("copies and launches", ["h2d_block_table", "h2d_inputs", "graph_launch", "d2h_sampled"]),
            ("GEMMs (qkv, o, gate_up, down, lm_head)", ["qkv_proj", "o_proj", "gate_up_proj", "down_proj",
                                                         "lm_head"]),
            ("attention", ["attention"]),
            ("elementwise (norms, rotary, SiLU, cache write, slot mapping)",
             ["input_norm", "rotary", "cache_write", "post_attention_norm", "silu_mul", "final_norm",
              "slot_mapping"]))


def shipped_breakdown(k, published):
    """Where the serving error comes from, measured on the as-shipped runs."""
    lines = ["### Where the remaining error comes from (as shipped)", "",
             "Decode-only steps set the median ITL (one step between two tokens of a request), so the",
             "published median ITL is the measured length of a decode step with its batch; the kvsim",
             "column is the mean simulated decode-only step (steps.csv, front end none). TTFT: the part the",
             "front end adds (vllm-v1 minus none) and what is still missing.", "",
             "| caching | published median ITL ms | kvsim decode step ms | ratio | published mean TTFT ms "
             "| kvsim, none | front end adds | still missing |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    shares = {}
    for caching in (False, True):
        row = serving_row(published, caching)
        k.shipped("serving", caching, "none")
        with open(os.path.join(k.shipped_dir("serving", caching, "none"), "steps.csv")) as f:
            steps = list(csv.DictReader(f))
        decode = [int(s["duration_ns"]) / 1e6 for s in steps if int(s["prefill_tokens"]) == 0]
        step_ms = statistics.mean(decode)
        none = k.shipped("serving", caching, "none")["mean_ttft_ms"]
        v1 = k.shipped("serving", caching, "vllm-v1")["mean_ttft_ms"]
        lines.append("| %s | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2f | %.2f |" % (
            "on" if caching else "off", row["median_itl_ms"], step_ms, row["median_itl_ms"] / step_ms,
            row["mean_ttft_ms"], none, v1 - none, row["mean_ttft_ms"] - v1))
        with open(os.path.join(k.shipped_dir("serving", caching, "none"), "kernels.csv")) as f:
            nodes = {r["kernel"]: int(r["total_ns"]) for r in csv.DictReader(f)}
        total = sum(nodes.values())
        shares[caching] = [(name, sum(nodes.get(n, 0) for n in members) / total) for name, members in node_groups()]
    lines += ["", "Where kvsim's step time goes (share of the summed node times over the serving run,",
              "kernels.csv; the nodes overlap only where the step DAG runs them side by side):", "",
              "| part | caching off | caching on |", "|---|---:|---:|"]
    for i, (name, _) in enumerate(shares[False]):
        lines.append("| %s | %.1f%% | %.1f%% |" % (name, 100 * shares[False][i][1], 100 * shares[True][i][1]))
    lines.append("")
    return lines


def shipped_section(k, published):
    rows = shipped_rows(k, published)
    lines = ["## As shipped, no fitting", "",
             "Every figure of the PR's tables against kvsim with the presets exactly as shipped:",
             "`--gpu l40s` and no preset file, no fitted parameter. Two columns: the engine alone",
             "(`--frontend none`, kvsim's default) and with vLLM's serving front end (`--frontend vllm-v1`:",
             "tokenization, the ZMQ hops and detokenization from public measurements, docs/fidelity.md).",
             "The offline benchmark runs in one process (`LLM.generate`), which tokenizes and detokenizes",
             "too; the front end's terms apply to it as to the serving run.", "",
             "| run | figure | published | kvsim, none | error | kvsim, vllm-v1 | error |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for label, key, pub, sims in rows:
        lines.append("| %s | %s | %.2f | %.2f | %+.1f%% | %.2f | %+.1f%% |" % (
            label, key, pub, sims["none"], pct_error(sims["none"], pub), sims["vllm-v1"],
            pct_error(sims["vllm-v1"], pub)))
    within = [(label, key) for label, key, pub, sims in rows if abs(pct_error(sims["vllm-v1"], pub)) <= WITHIN]
    outside = [(label, key, pct_error(sims["vllm-v1"], pub)) for label, key, pub, sims in rows
               if abs(pct_error(sims["vllm-v1"], pub)) > WITHIN]
    lines += ["", "With the front end, %d of %d figures are within %.0f%%%s" % (
        len(within), len(rows), WITHIN, ":" if within else "."), ""]
    lines += ["- %s: %s" % item for item in within] + ([""] if within else [])
    lines += ["Outside %.0f%%:" % WITHIN, ""] + ["- %s: %s %+.1f%%" % item for item in outside] + [""]
    lines += shipped_breakdown(k, published)
    return lines


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
             "tokens), and vLLM's client-side arrival draws (kvsim draws its own Poisson gaps).", ""]
    lines += shipped_section(k, published)
    lines += ["## Fit (caching-off rows only)", "",
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
    lines += serving_error_section(k, published, c, h)
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
