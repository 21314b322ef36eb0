#!/usr/bin/env python3
"""Compares kvsim with the online serving benchmark of Falcon-H1R-7B (a Mamba2 hybrid) on an H200.

Usage: reports/published/falcon-h1r-h200/reproduce.py [--kvsim BIN] [--work DIR] [--out FILE]

Published figures: published.json (next to this script): TII's and NVIDIA's Falcon-H1R-FP8 blog,
online vLLM on one H200, 1k input and 1k output tokens, concurrency 1 to 64, BF16 and FP8; per
concurrency the output token throughput, the output token throughput per user, the P50
inter-token latency and the mean time to first token, as NVIDIA AIPerf measured them.

kvsim, as shipped (no fitting): --model-config falcon-h1r-7b-config.json (the model's published
shape; Falcon-H1's parallel blocks read as an attention and a Mamba2 mixer layer each,
replay/model_config.h) --gpu h200 (the preset measured on an H200, reports/gpu/2026-11-27-h200/),
--dtype bf16, or --dtype fp8 --kv-cache-dtype fp8; the serving front end --frontend vllm-v1 with
--max-concurrency C (a closed-loop client: each user sends its next request when the last token
of the previous one arrives). Workload: kvsim gen prefix, 10 x C requests of 1000 synthetic
prompt tokens (no shared prefix) and 1000 output tokens each.

Deterministic: the same kvsim gives the same report bytes.
"""
import csv
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from published_common import (arguments, load_published, pct_error, regenerate_lines, run,  # noqa: E402
                              write_report)

CONFIG = os.path.join(HERE, "falcon-h1r-7b-config.json")
PRECISIONS = {"bf16": ["--dtype", "bf16"], "fp8": ["--dtype", "fp8", "--kv-cache-dtype", "fp8"]}
REQUESTS_PER_USER = 10
FIGURES = (("output_tok_s", "output tok/s"), ("per_user_tok_s", "tok/s per user"), ("p50_itl_ms", "P50 ITL ms"),
           ("mean_ttft_ms", "mean TTFT ms"))
BANDS = (15.0, 20.0, 30.0)


class Kvsim:
    def __init__(self, binary, work, most_users):
        self.binary, self.work = binary, work
        os.makedirs(work, exist_ok=True)
        self.trace = os.path.join(work, "falcon-1k-1k.kvtrace")
        run([binary, "gen", "prefix", "-o", self.trace, "--force", "--num-prompts", str(REQUESTS_PER_USER * most_users),
             "--num-prefixes", "1", "--prefix-len", "0", "--suffix-len", "1000", "--repeat", "1", "--output-len",
             "1000", "--prefix-rate", "0", "--seed", "0"])
        self.cache = {}

    def run_dir(self, precision, users, frontend, config, per_user):
        return os.path.join(self.work, "%s-c%d-%s-%s-r%d" % (precision, users, frontend, os.path.basename(config),
                                                             per_user))

    def replay(self, precision, users, frontend="vllm-v1", config=CONFIG, per_user=REQUESTS_PER_USER):
        """The run folder of one replay (made once): `per_user` requests for each of `users`."""
        key = (precision, users, frontend, config, per_user)
        if key not in self.cache:
            out = self.run_dir(*key)
            run([self.binary, "replay", "--trace", self.trace, "--out", out, "--force", "--model-config", config,
                 "--gpu", "h200", "--frontend", frontend, "--max-concurrency", str(users), "--limit",
                 str(per_user * users), "--verify", "off", "--progress", "off", "--decision-log", "digest"]
                + PRECISIONS[precision])
            self.cache[key] = out
        return self.cache[key]

    def result(self, *key, **kw):
        with open(os.path.join(self.replay(*key, **kw), "result.json")) as f:
            return json.load(f)

    def table(self, name, *key, **kw):
        with open(os.path.join(self.replay(*key, **kw), name)) as f:
            return list(csv.DictReader(f))


def figures(k, precision, users):
    """kvsim's four figures, as AIPerf defines them: the output token throughput; AIPerf's
    inter-token latency is a figure of each request (the time after its first token over its
    tokens after the first), the throughput per user its inverse averaged over requests, and the
    P50 ITL its median over requests; the mean TTFT."""
    r = k.result(precision, users)
    itl_ms = [(int(q["e2e_us"]) - int(q["ttft_us"])) / 1e3 / (int(q["output_tokens"]) - 1)
              for q in k.table("requests.csv", precision, users) if int(q["output_tokens"]) > 1]
    return {"output_tok_s": r["output_throughput"], "per_user_tok_s": statistics.mean(1e3 / x for x in itl_ms),
            "p50_itl_ms": statistics.median(itl_ms), "mean_ttft_ms": r["mean_ttft_ms"]}


def collect(k, published):
    rows = []
    for row in published["rows"]:
        sim = figures(k, row["precision"], row["concurrency"])
        for key, label in FIGURES:
            rows.append({"precision": row["precision"], "users": row["concurrency"], "figure": label,
                         "key": key, "published": row[key], "kvsim": sim[key],
                         "error": pct_error(sim[key], row[key])})
    return rows


def headline(rows):
    lines = ["| precision | concurrency | figure | published | kvsim | error |", "|---|---:|---|---:|---:|---:|"]
    for x in rows:
        lines.append("| %s | %d | %s | %.2f | %.2f | %+.1f%% |" % (x["precision"], x["users"], x["figure"],
                                                                  x["published"], x["kvsim"], x["error"]))
    return lines + [""]


def summary(rows):
    lines = ["| figure | " + " | ".join("within %.0f%%" % b for b in BANDS) + " | largest error |",
             "|---|" + "---:|" * (len(BANDS) + 1)]
    for key, label in FIGURES:
        mine = [x for x in rows if x["key"] == key]
        worst = max(mine, key=lambda x: abs(x["error"]))
        counts = ["%d of %d" % (sum(abs(x["error"]) <= b for x in mine), len(mine)) for b in BANDS]
        lines.append("| %s | %s | %+.1f%% (%s, concurrency %d) |" % (label, " | ".join(counts), worst["error"],
                                                                     worst["precision"], worst["users"]))
    return lines + [""]


def decode_step_ms(k, precision, users, config=CONFIG):
    """Mean decode-only step of the run (steps.csv), in ms."""
    steps = k.table("steps.csv", precision, users, config=config)
    return statistics.mean(int(s["duration_ns"]) / 1e6 for s in steps if int(s["prefill_tokens"]) == 0)


def dense_config(work):
    """The same model without its Mamba2 mixers: the attention half of every block and its MLP."""
    with open(CONFIG) as f:
        shape = json.load(f)
    shape = {key: v for key, v in shape.items() if key != "model_type" and not key.startswith("mamba_")}
    shape["_name_or_path"] += " without Mamba"
    path = os.path.join(work, "falcon-h1r-7b-attention-only.json")
    with open(path, "w") as f:
        json.dump(shape, f, indent=1)
    return path


def itl_section(k, published, work):
    """The decode step against the published P50 ITL, and what the Mamba mixers add to it."""
    dense = dense_config(work)
    lines = ["### The decode step", "",
             "Between two tokens of a request lies one engine step, so the published P50 ITL is the",
             "measured length of a step at that concurrency. kvsim: the mean decode-only step (steps.csv),",
             "and the same step of the model without its Mamba2 mixers (the attention half of each block",
             "and its MLP): the difference is what kvsim charges the Mamba mixers (their projections and",
             "the state they read and write each step).", "",
             "| precision | concurrency | published P50 ITL ms | kvsim decode step ms | error | without Mamba ms "
             "| Mamba's part |", "|---|---:|---:|---:|---:|---:|---:|"]
    for row in published["rows"]:
        p, users = row["precision"], row["concurrency"]
        step = decode_step_ms(k, p, users)
        k.replay(p, users, config=dense)
        plain = decode_step_ms(k, p, users, config=dense)
        lines.append("| %s | %d | %.2f | %.2f | %+.1f%% | %.2f | %.1f%% |" % (
            p, users, row["p50_itl_ms"], step, pct_error(step, row["p50_itl_ms"]), plain, 100 * (step - plain) / step))
    return lines + [""]


def ttft_section(k, published):
    """TTFT: the engine alone, the front end's part, and what is still missing."""
    lines = ["### Time to first token", "",
             "kvsim's mean TTFT with the engine alone (`--frontend none`: the request reaches the",
             "scheduler when it is sent), what vLLM's front end adds (`--frontend vllm-v1`: tokenization,",
             "the process hops, detokenization; docs/fidelity.md), and what the published figure holds",
             "beyond both. The client is a closed loop, so the front end also moves when requests reach",
             "the engine and which steps they share: its part is not a constant, and can be negative.", "",
             "| precision | concurrency | published ms | kvsim, engine ms | front end adds ms | still missing ms |",
             "|---|---:|---:|---:|---:|---:|"]
    for row in published["rows"]:
        p, users = row["precision"], row["concurrency"]
        engine = k.result(p, users, frontend="none")["mean_ttft_ms"]
        full = k.result(p, users)["mean_ttft_ms"]
        lines.append("| %s | %d | %.2f | %.2f | %.2f | %.2f |" % (p, users, row["mean_ttft_ms"], engine,
                                                                   full - engine, row["mean_ttft_ms"] - full))
    return lines + [""] + wave_lines(k, published)


def wave_lines(k, published):
    """TTFT against the number of requests each user sends, which the blog does not state."""
    lines = ["How many requests each user sent is not stated, and TTFT depends on it: all users start",
             "together, so the first requests' prompts arrive at once and queue for the 8192-token",
             "steps, while later ones arrive spread out. kvsim's mean TTFT (front end on) with one",
             "request per user, a single wave, against the %d per user above:" % REQUESTS_PER_USER, "",
             "| precision | concurrency | published ms | kvsim, 1 per user | error | kvsim, %d per user | error |"
             % REQUESTS_PER_USER, "|---|---:|---:|---:|---:|---:|---:|"]
    for row in published["rows"]:
        p, users, pub = row["precision"], row["concurrency"], row["mean_ttft_ms"]
        wave = k.result(p, users, per_user=1)["mean_ttft_ms"]
        steady = k.result(p, users)["mean_ttft_ms"]
        lines.append("| %s | %d | %.2f | %.2f | %+.1f%% | %.2f | %+.1f%% |" % (
            p, users, pub, wave, pct_error(wave, pub), steady, pct_error(steady, pub)))
    return lines + [""]


def in_short(k, published):
    """The two measured causes, in numbers."""
    lines = ["In short:", ""]
    for p in PRECISIONS:
        mine = [r for r in published["rows"] if r["precision"] == p]
        lo, hi = mine[0], mine[-1]
        step_lo, step_hi = decode_step_ms(k, p, lo["concurrency"]), decode_step_ms(k, p, hi["concurrency"])
        lines.append("- %s: from %d to %d users the published P50 ITL grows by %.2f ms, kvsim's decode step by"
                     % (p.upper(), lo["concurrency"], hi["concurrency"], hi["p50_itl_ms"] - lo["p50_itl_ms"]))
        lines.append("  %.2f ms (%+.0f%%): kvsim's step is %+.1f%% off at %d user and %+.1f%% at %d."
                     % (step_hi - step_lo, pct_error(step_hi - step_lo, hi["p50_itl_ms"] - lo["p50_itl_ms"]),
                        pct_error(step_lo, lo["p50_itl_ms"]), lo["concurrency"], pct_error(step_hi, hi["p50_itl_ms"]),
                        hi["concurrency"]))
    one = [r for r in published["rows"] if r["concurrency"] == 1]
    missing = [r["mean_ttft_ms"] - k.result(r["precision"], 1)["mean_ttft_ms"] for r in one]
    lines += ["- TTFT: with one user, whose request never waits for another, the published TTFT holds",
              "  %.1f ms (BF16) and %.1f ms (FP8) beyond kvsim's engine and front end: time outside the"
              % tuple(missing),
              "  engine that no shipped term models (the client, HTTP, the server's request handling),",
              "  of the same order as the 67.5 and 84.5 ms per request fitted to vLLM PR #9668's serving",
              "  run (reports/published/vllm-pr-9668/).",
              "- TTFT with more users: the missing part grows, to hundreds of ms at 64 users with %d"
              % REQUESTS_PER_USER,
              "  requests each. The blog does not say how many each user sent; with one (a single wave of",
              "  prompts arriving together, the last table below) kvsim's TTFT is %s (BF16) and %s (FP8)"
              % tuple(wave_errors(k, published, p) for p in PRECISIONS),
              "  off at 32 and 64 users. The wave explains most of the gap at high concurrency, the time",
              "  outside the engine most of it at low.", ""]
    return lines


def wave_errors(k, published, precision):
    """TTFT errors at 32 and 64 users with one request per user, as 'a% / b%'."""
    rows = [r for r in published["rows"] if r["precision"] == precision and r["concurrency"] in (32, 64)]
    return " / ".join("%+.1f%%" % pct_error(k.result(precision, r["concurrency"], per_user=1)["mean_ttft_ms"],
                                            r["mean_ttft_ms"]) for r in rows)


def weights_line(published):
    """kvsim's weights for the shape, from the config (ModelShape::weight_bytes's terms: the
    projections and MLP per block in the weights' dtype, embeddings and lm_head in 16 bits)."""
    with open(CONFIG) as f:
        s = json.load(f)
    h, hd = s["hidden_size"], s["head_dim"]
    attention = h * (s["num_attention_heads"] + 2 * s["num_key_value_heads"]) * hd + s["num_attention_heads"] * hd * h
    inner = s["mamba_n_heads"] * s["mamba_d_head"]
    mamba = h * (2 * inner + 2 * s["mamba_n_groups"] * s["mamba_d_state"] + s["mamba_n_heads"]) + inner * h
    block = attention + mamba + 3 * h * s["intermediate_size"]
    params = s["num_hidden_layers"] * block + 2 * s["vocab_size"] * h
    return ("The shape holds %.2f B parameters, %.1f GiB in 16 bits; the blog gives the BF16 weights as "
            "%.1f GB." % (params / 1e9, params * 2 / 2 ** 30, published["weights_gb"]["bf16"]))


def report(k, published, work):
    rows = collect(k, published)
    lines = ["# Falcon-H1R-7B on one H200 (vLLM, online) compared with kvsim", "",
             "Generated by `reports/published/falcon-h1r-h200/reproduce.py`; do not edit by hand.", "",
             "Source: %s, %s (%s). The figures are the data points of the blog's charts, as its page" % (
                 published["source"], published["url"], published["date"]),
             "source holds them (%s)." % published["page_source"], "",
             "Setup, as published: \"%s\" Client: %s." % (published["setup_quote"], published["client"]), "",
             "Models: BF16 %s; FP8 %s." % (published["model"]["bf16"], published["model"]["fp8"]), "",
             "Not stated, assumed here:", ""]
    lines += ["- " + item for item in published["not_stated"]] + [""]
    lines += ["kvsim, as shipped: `--model-config falcon-h1r-7b-config.json` (%s) `--gpu h200` `--frontend"
              % published["model_shape"]["source"],
              "vllm-v1 --max-concurrency C`, BF16 `--dtype bf16`, FP8 `--dtype fp8 --kv-cache-dtype fp8`; no",
              "parameter fitted. Falcon-H1 runs attention and a Mamba2 mixer side by side in every block;",
              "kvsim reads each block as an attention layer and a Mamba layer with half the MLP each (the same",
              "weights, FLOPs and caches; replay/model_config.h). " + weights_line(published), "",
              "## As shipped, no fitting", ""]
    lines += headline(rows) + summary(rows)
    lines += ["## Where the error comes from", "", "Each figure below is measured from this script's kvsim runs.", ""]
    lines += in_short(k, published) + itl_section(k, published, work) + ttft_section(k, published)
    lines += regenerate_lines("falcon-h1r-h200")
    return "\n".join(lines)


def main():
    args = arguments(__doc__, HERE, "/tmp/kvsim-falcon-h1r-h200")
    published = load_published(HERE)
    text = report(Kvsim(args.kvsim, args.work, max(published["concurrency"])), published, args.work)
    write_report(args.out, text)


if __name__ == "__main__":
    main()
