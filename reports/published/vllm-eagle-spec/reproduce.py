#!/usr/bin/env python3
"""Compares kvsim's speculative-decoding cost model with vLLM issue #20780 (EAGLE-1 vs EAGLE-3).

Usage: reports/published/vllm-eagle-spec/reproduce.py [--kvsim BIN] [--work DIR] [--out FILE]

Published figures: published.json (next to this script): mean acceptance length (AL) and mean
TPOT of Llama-3.1-8B-Instruct at batch size 1 on 80 single-turn MT-Bench prompts, vanilla and
with EAGLE-1 and EAGLE-3 drafts for K = 2..7 speculative tokens.

Workload (kvsim gen prefix: synthetic token ids): 80 distinct prompts of 75 tokens (an
assumption, published.json), 256 output tokens each (vLLM's MT-Bench default), all at t = 0;
replayed with --max-concurrency 1, so one request runs at a time.
Model and GPU: --model llama3-8b (Llama-3.1-8B's shapes) --dtype bf16 --gpu h100-sxm.

AL is the input, TPOT the output: for each (method, K) one conditional acceptance rate r solves
1 + r + ... + r^K = AL (bisection), given K times as --acceptance-rates, so the modelled mean
acceptance length equals the published one; the run's spec_decoding block shows the AL kvsim
realised. TPOT and the speed-up over vanilla are then kvsim's predictions, compared as shipped
(no fitting). The error breakdown is measured from the runs' steps.csv and kernels.csv.

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

COMMON = ["--model", "llama3-8b", "--gpu", "h100-sxm", "--dtype", "bf16", "--max-concurrency", "1",
          "--verify", "off", "--progress", "off", "--decision-log", "digest"]
GEN = ["--num-prompts", "80", "--num-prefixes", "1", "--prefix-len", "0", "--suffix-len", "75",
       "--repeat", "1", "--output-len", "256", "--prefix-rate", "0", "--seed", "0"]
METHODS = [("eagle", "EAGLE-1"), ("eagle3", "EAGLE-3")]
WITHIN = 20.0  # percent: the band the summary counts


def acceptance_length(r, k):
    return sum(r ** i for i in range(k + 1))


def rate_for(al, k):
    """The conditional acceptance rate r with 1 + r + ... + r^k = al (bisection on [0, 1])."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if acceptance_length(mid, k) < al:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


class Kvsim:
    def __init__(self, binary, work):
        self.binary, self.work = binary, work
        os.makedirs(work, exist_ok=True)
        self.trace = os.path.join(work, "mt-bench.kvtrace")
        run([binary, "gen", "prefix", "-o", self.trace, "--force"] + GEN)
        self.cache = {}

    def run_dir(self, method, k, frontend="none"):
        return os.path.join(self.work, "run-%s-k%d-%s" % (method, k, frontend))

    def replay(self, method, k, al=None, frontend="none"):
        """result.json of one replay; method 'none' (k 0) is vanilla."""
        key = (method, k, frontend)
        if key in self.cache:
            return self.cache[key]
        spec = []
        if method != "none":
            rates = ",".join(["%.6f" % rate_for(al, k)] * k)
            spec = ["--speculative-method", method, "--num-speculative-tokens", str(k), "--acceptance-rates", rates]
        out = self.run_dir(method, k, frontend)
        run([self.binary, "replay", "--trace", self.trace, "--out", out, "--force", "--frontend", frontend]
            + COMMON + spec)
        with open(os.path.join(out, "result.json")) as f:
            self.cache[key] = json.load(f)
        return self.cache[key]

    def steps(self, method, k):
        with open(os.path.join(self.run_dir(method, k), "steps.csv")) as f:
            return list(csv.DictReader(f))

    def kernels(self, method, k):
        with open(os.path.join(self.run_dir(method, k), "kernels.csv")) as f:
            return {r["kernel"]: (int(r["launches"]), int(r["total_ns"])) for r in csv.DictReader(f)}


def realised_al(result):
    return result["kvsim"]["spec_decoding"]["mean_acceptance_length"]


def collect(k, published):
    """One row per (method, K): published and kvsim AL, TPOT and speed-up."""
    vanilla = k.replay("none", 0)["mean_tpot_ms"]
    rows = []
    for method, label in METHODS:
        for row in published["rows"]:
            al, tpot = row["al_" + method], row["tpot_%s_ms" % method]
            r = k.replay(method, row["k"], al)
            rows.append({"method": method, "label": label, "k": row["k"], "al": al, "rate": rate_for(al, row["k"]),
                         "al_sim": realised_al(r), "tpot": tpot, "tpot_sim": r["mean_tpot_ms"],
                         "speedup": published["vanilla_tpot_ms"] / tpot, "speedup_sim": vanilla / r["mean_tpot_ms"]})
    return vanilla, rows


def headline(published, vanilla, rows):
    lines = ["| run | K | r | AL published | AL kvsim | TPOT published ms | TPOT kvsim ms | error "
             "| speed-up published | speed-up kvsim | error |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
             "| vanilla | 0 | - | 1.00 | 1.00 | %.2f | %.2f | %+.1f%% | 1.00x | 1.00x | - |"
             % (published["vanilla_tpot_ms"], vanilla, pct_error(vanilla, published["vanilla_tpot_ms"]))]
    for x in rows:
        lines.append("| %s | %d | %.4f | %.2f | %.3f | %.2f | %.2f | %+.1f%% | %.2fx | %.2fx | %+.1f%% |" % (
            x["label"], x["k"], x["rate"], x["al"], x["al_sim"], x["tpot"], x["tpot_sim"],
            pct_error(x["tpot_sim"], x["tpot"]), x["speedup"], x["speedup_sim"],
            pct_error(x["speedup_sim"], x["speedup"])))
    return lines


def summary(published, vanilla, rows):
    tpot_in = sum(abs(pct_error(x["tpot_sim"], x["tpot"])) <= WITHIN for x in rows)
    tpot_in += abs(pct_error(vanilla, published["vanilla_tpot_ms"])) <= WITHIN
    speed_in = sum(abs(pct_error(x["speedup_sim"], x["speedup"])) <= WITHIN for x in rows)
    worst = max(rows, key=lambda x: abs(pct_error(x["tpot_sim"], x["tpot"])))
    lines = ["Within %.0f%%: mean TPOT in **%d of %d** rows (vanilla included), the speed-up over vanilla in"
             % (WITHIN, tpot_in, len(rows) + 1),
             "**%d of %d** speculative rows. Largest TPOT error: %s K=%d, %+.1f%%." % (
                 speed_in, len(rows), worst["label"], worst["k"], pct_error(worst["tpot_sim"], worst["tpot"])), "",
             "Best K (lowest mean TPOT) per method:", "",
             "| method | published best K | TPOT ms | kvsim best K | TPOT ms |", "|---|---:|---:|---:|---:|"]
    for method, label in METHODS:
        mine = [x for x in rows if x["method"] == method]
        pub, sim = min(mine, key=lambda x: x["tpot"]), min(mine, key=lambda x: x["tpot_sim"])
        lines.append("| %s | %d | %.2f | %d | %.2f |" % (label, pub["k"], pub["tpot"], sim["k"], sim["tpot_sim"]))
    return lines + [""]


GROUPS = (("host (scheduler, inputs)", ["host_schedule"]),
          ("copies and launches", ["h2d_block_table", "h2d_inputs", "graph_launch", "d2h_sampled", "slot_mapping"]),
          ("GEMMs qkv, o, gate_up, down", ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]),
          ("LM head", ["lm_head"]),
          ("attention", ["attention"]),
          ("elementwise (norms, rotary, SiLU, cache write)",
           ["input_norm", "rotary", "cache_write", "post_attention_norm", "silu_mul", "final_norm"]),
          ("drafter", ["drafter"]))


def decode_step_ms(k, method, kk):
    return statistics.mean(int(s["duration_ns"]) / 1e6 for s in k.steps(method, kk) if int(s["prefill_tokens"]) == 0)


def vanilla_section(k, published):
    step = decode_step_ms(k, "none", 0)
    nodes = k.kernels("none", 0)
    total = sum(ns for _, ns in nodes.values())
    steps = len(k.steps("none", 0))
    lines = ["### 1. The vanilla decode step", "",
             "At batch size 1 every step after the prompt's decodes one token, so the published vanilla TPOT",
             "(%.2f ms) is the measured decode step. kvsim's mean decode-only step (steps.csv) is **%.2f ms**"
             % (published["vanilla_tpot_ms"], step),
             "(%+.1f%%); its mean TPOT %.2f ms. Where the vanilla step goes (kernels.csv, all %d steps;"
             % (pct_error(step, published["vanilla_tpot_ms"]), k.replay("none", 0)["mean_tpot_ms"], steps),
             "ms per step is the node's total over the run / steps):", "",
             "| part | share | ms per step |", "|---|---:|---:|"]
    for name, members in GROUPS[:-1]:
        ns = sum(nodes.get(n, (0, 0))[1] for n in members)
        lines.append("| %s | %.1f%% | %.3f |" % (name, 100.0 * ns / total, ns / 1e6 / steps))
    lines += ["", "Every speculative row divides a step like this one (plus the verify tokens and the drafter) by",
              "the acceptance length, so the vanilla shortfall carries into every row's TPOT.", ""]
    return lines


def spec_step_rows(k, published, rows):
    out = []
    for x in rows:
        nodes = k.kernels(x["method"], x["k"])
        launches, ns = nodes["drafter"]
        total = sum(int(s["duration_ns"]) for s in k.steps(x["method"], x["k"]))
        step = decode_step_ms(k, x["method"], x["k"])
        drafter = ns / 1e6 / launches
        out.append((x, step, drafter, step - drafter, 100.0 * ns / total, x["tpot"] * x["al"]))
    return out


def spec_section(k, published, rows):
    data = spec_step_rows(k, published, rows)
    lines = ["### 2. The speculative step: verify and drafter", "",
             "kvsim: mean decode-only step (steps.csv); the drafter's time per step (kernels.csv `drafter`,",
             "total / steps with a drafter forward) and its share of all step time; the target's part (step",
             "minus drafter: the verify forward of 1 + K tokens with host and launches). Published: the step",
             "that TPOT x AL implies (at batch size 1 a step yields AL tokens on average; TPOT excludes the",
             "first token, so this is approximate).", "",
             "| run | K | kvsim step ms | target (verify) ms | drafter ms | drafter per forward ms "
             "| drafter share | published TPOT x AL ms | step error |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x, step, drafter, target, share, implied in data:
        lines.append("| %s | %d | %.2f | %.2f | %.3f | %.3f | %.1f%% | %.2f | %+.1f%% |" % (
            x["label"], x["k"], step, target, drafter, drafter / x["k"], share, implied, pct_error(step, implied)))
    lines += [""] + growth_lines(data) + drafter_lines(k) + [""]
    return lines


def growth_lines(data):
    lines = []
    for method, label in METHODS:
        mine = [d for d in data if d[0]["method"] == method]
        first, last = mine[0], mine[-1]
        dk = last[0]["k"] - first[0]["k"]
        lines.append("- %s, K=%d to K=%d: the published implied step grows by %.2f ms (%.2f ms per extra draft);"
                     % (label, first[0]["k"], last[0]["k"], last[5] - first[5], (last[5] - first[5]) / dk))
        lines.append("  kvsim's step by %.2f ms (%.3f ms per extra draft: target %.3f, drafter %.3f)." % (
            last[1] - first[1], (last[1] - first[1]) / dk, (last[3] - first[3]) / dk, (last[2] - first[2]) / dk))
    e1 = [d for d in data if d[0]["method"] == "eagle"]
    e3 = [d for d in data if d[0]["method"] == "eagle3"]
    gaps = [b[5] - a[5] for a, b in zip(e1, e3)]
    lines += ["- At the same K the published implied EAGLE-3 step is %.2f to %.2f ms longer than EAGLE-1's;"
              % (min(gaps), max(gaps)),
              "  kvsim costs both drafters with the same shape (one decoder layer of the target plus its LM",
              "  head), so its EAGLE-1 and EAGLE-3 steps at the same K agree within %.3f ms."
              % max(abs(b[1] - a[1]) for a, b in zip(e1, e3))]
    for method, label in METHODS:
        mine = [d for d in data if d[0]["method"] == method]
        first, last = mine[0], mine[-1]
        slope_pub = (last[5] - first[5]) / (last[0]["k"] - first[0]["k"])
        slope_sim = (last[1] - first[1]) / (last[0]["k"] - first[0]["k"])
        lines.append("- %s, the line through K=%d and K=%d extrapolated to K=0: published %.2f ms, kvsim %.2f ms."
                     % (label, first[0]["k"], last[0]["k"], first[5] - slope_pub * first[0]["k"],
                        first[1] - slope_sim * first[0]["k"]))
    return lines


def drafter_lines(k):
    """kvsim's drafter forward against one layer of the vanilla target plus its LM head."""
    nodes, steps = k.kernels("none", 0), len(k.steps("none", 0))
    per_step = lambda names: sum(nodes[n][1] for n in names) / 1e6 / steps
    layer = per_step(["input_norm", "qkv_proj", "rotary", "cache_write", "attention", "o_proj",
                      "post_attention_norm", "gate_up_proj", "silu_mul", "down_proj"]) / 32
    head = per_step(["final_norm", "lm_head"])
    launches, ns = k.kernels("eagle", 2)["drafter"]
    return ["- In the vanilla run one decoder layer costs %.3f ms per step and the LM head %.3f ms: %.3f ms,"
            % (layer, head, layer + head),
            "  against kvsim's %.3f ms per drafter forward (EAGLE-1, K=2): the LM head is %.0f%% of each forward."
            % (ns / 1e6 / launches / 2, 100.0 * head / (ns / 1e6 / launches / 2))]


def fidelity_lines():
    return ["### 3. What kvsim does not model (docs/fidelity.md, \"Speculative decoding\")", "",
            "- The drafter's weights and KV in GPU memory (the pool is sized as without speculation).",
            "- The EAGLE head's forward over prefill chunks (vLLM runs it to fill the head's KV).",
            "- Any difference between the EAGLE-1 and EAGLE-3 heads: both are costed as one decoder layer of",
            "  the target plus the target's LM head, with no host work of the drafter's own.",
            "- Acceptance: drafts are accepted by kvsim's synthetic per-position model with the rates above,",
            "  not by a real draft and target; the acceptance length is an input here.",
            "- The serving front end (detokenizing and streaming each step's tokens): these runs leave it",
            "  out (`--frontend none`), so their TPOTs are the engine's alone.",
            "- EOS before 256 tokens (vLLM's benchmark does not ignore EOS) and the real prompt lengths",
            "  (75 tokens assumed).", ""]


def causes(k, published):
    """Three measured terms: the vanilla step, the cost per extra draft, the fixed cost of a
    speculative step beyond the vanilla one (published: the K=2..7 line at K=0)."""
    step = decode_step_ms(k, "none", 0)
    _, rows = collect(k, published)
    data = spec_step_rows(k, published, rows)
    lines = ["In short:", "",
             "1. kvsim's vanilla decode step is %+.1f%% off the published vanilla TPOT (section 1)."
             % pct_error(step, published["vanilla_tpot_ms"])]
    for number, (method, label) in enumerate(METHODS, 2):
        mine = [d for d in data if d[0]["method"] == method]
        first, last = mine[0], mine[-1]
        dk = last[0]["k"] - first[0]["k"]
        slope_pub, slope_sim = (last[5] - first[5]) / dk, (last[1] - first[1]) / dk
        fixed_pub = first[5] - slope_pub * first[0]["k"] - published["vanilla_tpot_ms"]
        fixed_sim = first[1] - slope_sim * first[0]["k"] - step
        lines.append("%d. %s: each extra draft costs %.2f ms published (TPOT x AL), %.2f ms in kvsim (%+.0f%%); a"
                     % (number, label, slope_pub, slope_sim, pct_error(slope_sim, slope_pub)))
        lines.append("   speculative step's fixed cost beyond the vanilla step (the K=2..7 line at K=0)")
        lines.append("   is %.2f ms published, %.2f ms in kvsim (section 2)."
                     % (fixed_pub, fixed_sim))
    return lines


def report(k, published):
    vanilla, rows = collect(k, published)
    lines = ["# vLLM issue #20780 (EAGLE-1 vs EAGLE-3) compared with kvsim", "",
             "Generated by `reports/published/vllm-eagle-spec/reproduce.py`; do not edit by hand.", "",
             "Source: " + published["source"] + ", " + published["url"] + " (" + published["date"] + ").", "",
             "GPU: " + published["gpu"]["evidence"], "",
             "Published command: `" + published["command"]["text"] + "` (" + published["command"]["url"] + ").", "",
             "kvsim: `--model llama3-8b` (Llama-3.1-8B's shapes: 32 layers, hidden 4096, 32 query and 8 KV heads,",
             "MLP 14336, vocabulary 128256) `--dtype bf16 --gpu h100-sxm --max-concurrency 1`, front end off",
             "(kvsim's default), 80 prompts of 75 synthetic tokens (assumed; published.json) and 256 output",
             "tokens (vLLM's MT-Bench default output length), all at t = 0.", "",
             "AL is the input and TPOT and the speed-up are the outputs: for each (method, K) one conditional",
             "acceptance rate r, solving 1 + r + ... + r^K = published AL by bisection, is given K times as",
             "`--acceptance-rates`. The \"AL kvsim\" column is the mean acceptance length the run realised",
             "(result.json `spec_decoding`; drafts cut short near the end of a request lower it a little).", "",
             "## As shipped, no fitting", ""]
    lines += headline(published, vanilla, rows) + [""] + summary(published, vanilla, rows)
    lines += ["## Where the error comes from", "", "Each figure below is measured from this script's kvsim runs.", ""]
    lines += causes(k, published) + [""]
    lines += vanilla_section(k, published) + spec_section(k, published, rows) + fidelity_lines()
    lines += regenerate_lines("vllm-eagle-spec")
    return "\n".join(lines)


def main():
    args = arguments(__doc__, HERE, "/tmp/kvsim-vllm-eagle-spec")
    published = load_published(HERE)
    text = report(Kvsim(args.kvsim, args.work), published)
    write_report(args.out, text)


if __name__ == "__main__":
    main()
