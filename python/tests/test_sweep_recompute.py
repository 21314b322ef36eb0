"""Every column of `kvsim sweep`'s sweep.csv, recomputed independently.

Sequence mode (the prefix cache alone): an LRU free queue and hash map written here from
vLLM's description (docs/semantics.md section 3: a lookup hits the longest run of cached full
blocks among the first (n - 1) // B, an allocation needs its new blocks plus its free hit
blocks free, pops the rest from the queue head evicting their hashes, caches the full blocks,
and a free queues the request's blocks last first), and the offline optimum written from
docs/policies.md ("The optimum"); the other policies' rows against the Python module's manager
driven request by request. Pool sizes: ceil(C / B) + 1 blocks, capped at one more than
the blocks the trace's prompts (sequence) or prompts and outputs (serving) allocate.

Serving mode: each point replayed again with `kvsim replay` at the same pool, policy and block
size; its row recomputed from that run's requests.csv and steps.csv (latency percentiles as
summary.json's whole-microsecond linear percentiles, in milliseconds; throughputs over the
simulated time of the last finish) and summary.json's lookup counters.

The workload has shared prefixes, two tenants' salts and a LoRA adapter; the capacities reach
from below the longest prompt (unfit requests in sequence mode, rejected ones in serving mode,
preemptions) to past the cap. A difference beyond the CSV's rounding fails.
"""
import csv
import json
import math
import os
import random
import subprocess

import numpy as np
import pytest

import kvsim

KVSIM = os.environ.get("KVSIM_BIN", "build/default/cli/kvsim")
BLOCK = 16
SEQUENCE_CAPACITIES = [100, 600, 2000, 5000, 1000000]
SERVING_CAPACITIES = [200, 400, 1000000]


def write_requests(path, seed=11, n=70):
    rng = random.Random(seed)
    prefixes = [[rng.randrange(1, 30000) for _ in range(rng.choice([31, 48, 100, 160]))] for _ in range(5)]
    requests = []
    for i in range(n):
        tail = rng.choice([0, 1, 15, 16, 40, 90])
        prompt = list(rng.choice(prefixes)) + [rng.randrange(1, 30000) for _ in range(tail)]
        line = {"prompt_token_ids": prompt, "output_len": rng.randrange(2, 30), "timestamp": i * 0.004, "id": "r%d" % i}
        if i % 5 == 1:
            line["cache_salt"] = "tenant-%d" % (i % 2)
        if i % 7 == 3:
            line["lora_name"] = "adapter1"
        requests.append(line)
    with open(path, "w") as f:
        for line in requests:
            f.write(json.dumps(line) + "\n")
    return requests


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    requests = write_requests(d / "shared.jsonl")
    trace = d / "shared.kvtrace"
    done = subprocess.run([KVSIM, "convert", "--from", "tokens", "--input", str(d / "shared.jsonl"), "-o", str(trace)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return d, trace, requests


def sweep(d, trace, name, args):
    out = d / name
    done = subprocess.run([KVSIM, "sweep", "--trace", str(trace), "--no-plot", "--progress", "off", "--jobs", "1",
                           "--out", str(out)] + args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open(out / "sweep.csv", newline="") as f:
        return list(csv.DictReader(f))


# ---- block identities: equal ids exactly when the chained hashes are equal (same parent, tokens
# and extra keys: the LoRA name on every block, the salt on block 0)
class Chains:
    def __init__(self):
        self.ids = {}

    def blocks(self, request, block_size):
        out, parent = [], None
        prompt = request["prompt_token_ids"]
        for j in range(len(prompt) // block_size):
            keys = ((request.get("lora_name"),) + ((request.get("cache_salt"),) if j == 0 else ()))
            key = (parent, tuple(prompt[j * block_size:(j + 1) * block_size]), keys)
            parent = self.ids.setdefault(key, len(self.ids))
            out.append(parent)
        return out


def pool_blocks(capacity, block_size, requests, with_outputs):
    need = sum(-(-(len(r["prompt_token_ids"]) + (r["output_len"] if with_outputs else 0)) // block_size)
               for r in requests)
    return min(-(-capacity // block_size) + 1, max(need + 1, 2))


def lru_sequence(requests, num_blocks, block_size):
    """vLLM's free queue and hash map, request by request: lookup, allocate the prompt, free."""
    chains = Chains()
    queue = {b: None for b in range(1, num_blocks)}  # insertion-ordered: head first
    block_hash = [None] * num_blocks
    cached = {}  # hash -> blocks under it, oldest first
    counts = dict(lookups=0, queries=0, hits=0, evictions=0, requests=0, unfit_requests=0)
    for r in requests:
        n = len(r["prompt_token_ids"])
        hashes = chains.blocks(r, block_size)
        hit = []
        for h in hashes[:(n - 1) // block_size]:
            if h not in cached:
                break
            hit.append(cached[h][0])
        counts["lookups"] += 1
        counts["requests"] += 1
        counts["queries"] += n
        counts["hits"] += len(hit) * block_size
        new = -(-n // block_size) - len(hit)
        if new + sum(b in queue for b in hit) > len(queue):
            counts["unfit_requests"] += 1
            continue
        for b in hit:
            queue.pop(b, None)
        blocks = list(hit)
        for _ in range(new):
            b = next(iter(queue))
            del queue[b]
            if block_hash[b] is not None:
                cached[block_hash[b]].remove(b)
                if not cached[block_hash[b]]:
                    del cached[block_hash[b]]
                block_hash[b] = None
                counts["evictions"] += 1
            blocks.append(b)
        for j in range(len(hit), len(hashes)):
            block_hash[blocks[j]] = hashes[j]
            cached.setdefault(hashes[j], []).append(blocks[j])
        for b in reversed(blocks):
            queue[b] = None
    return counts


def optimum(requests, capacity_blocks, block_size):
    """Belady adapted to prefix chains, as docs/policies.md states it."""
    chains = Chains()
    held = [chains.blocks(r, block_size) for r in requests]
    countable = [(len(r["prompt_token_ids"]) - 1) // block_size for r in requests]
    uses = {}  # block -> [(request, countable there)]
    for i, blocks in enumerate(held):
        for depth, b in enumerate(blocks):
            uses.setdefault(b, []).append((i, depth < countable[i]))
    depth_of = {b: d for blocks in held for d, b in enumerate(blocks)}
    kept, hits, queries = set(), 0, 0
    for i, blocks in enumerate(held):
        queries += len(requests[i]["prompt_token_ids"])
        run = 0
        while run < countable[i] and blocks[run] in kept:
            run += 1
        hits += run * block_size

        def key(b):
            later = [(j, c) for j, c in uses[b] if j > i]
            soonest = later[0][0] if later and later[0][1] else math.inf
            return (soonest, depth_of[b])  # equal keys: the deeper block goes

        kept = set(sorted(kept | set(blocks), key=key)[:capacity_blocks])
    return hits, queries


def test_sequence_rows_and_optimum(workload):
    d, trace, requests = workload
    caps = ",".join(str(c) for c in SEQUENCE_CAPACITIES)
    rows = sweep(d, trace, "sequence", ["--capacity", caps, "--policy", "lru", "--block-size", "16,32"])
    assert len(rows) == 2 * 2 * len(SEQUENCE_CAPACITIES)  # lru, then optimum; two block sizes each
    expected_order = [(p, b, c) for p in ("lru", "optimum") for b in (16, 32) for c in SEQUENCE_CAPACITIES]
    assert [(r["policy"], int(r["block_size"]), int(r["capacity_tokens"])) for r in rows] == expected_order
    lru_hits = {}
    unfit_seen = evicted_seen = 0
    for row in rows:
        b, c = int(row["block_size"]), int(row["capacity_tokens"])
        assert row["trace"] == "shared" and row["mode"] == "sequence"
        assert all(row[k] == "" for k in list(row)[13:]), "serving columns are empty in sequence mode"
        if row["policy"] == "lru":
            pool = pool_blocks(c, b, requests, with_outputs=False)
            expect = lru_sequence(requests, pool, b)
            lru_hits[(b, c)] = expect["hits"]
            unfit_seen += expect["unfit_requests"]
            evicted_seen += expect["evictions"]
        else:
            pool = -(-c // b) + 1  # the optimum's set: the usable blocks of the uncapped pool
            hits, queries = optimum(requests, pool - 1, b)
            expect = dict(lookups=len(requests), queries=queries, hits=hits, evictions=0, requests=len(requests),
                          unfit_requests=0)
            assert hits >= lru_hits[(b, c)], "the optimum below a policy"
        assert int(row["pool_blocks"]) == pool, row
        for k, v in expect.items():
            assert int(row[k]) == v, (row["policy"], b, c, k)
        assert float(row["hit_rate"]) == pytest.approx(expect["hits"] / expect["queries"], abs=5e-7 + 1e-12)
    assert unfit_seen > 0 and evicted_seen > 0  # the capacities reach both regimes


def test_sequence_rows_of_other_policies_against_the_modules_manager(workload):
    """lfu, slru and lru-unhashed-first rows against kvsim.KvCacheManager driven request by
    request (lookup, allocate the prompt, free) on the pool computed here; evictions are the
    hashes its events remove."""
    d, trace, requests = workload
    caps = ",".join(str(c) for c in SEQUENCE_CAPACITIES)
    policies = ["lfu", "slru", "lru-unhashed-first"]
    rows = sweep(d, trace, "policies", ["--capacity", caps, "--policy", ",".join(policies), "--no-optimum"])
    assert [(r["policy"], int(r["capacity_tokens"])) for r in rows] == \
        [(p, c) for p in policies for c in SEQUENCE_CAPACITIES]
    for row in rows:
        c, policy = int(row["capacity_tokens"]), row["policy"]
        pool = pool_blocks(c, BLOCK, requests, with_outputs=False)
        kwargs = dict(free_order="unhashed_first") if policy == "lru-unhashed-first" else dict(eviction_policy=policy)
        m = kvsim.KvCacheManager(num_blocks=pool, block_size=BLOCK, max_model_len=1 << 40, enable_kv_events=True,
                                 **kwargs)
        unfit = evictions = 0
        for r in requests:
            m.add_request(r["id"], r["prompt_token_ids"], cache_salt=r.get("cache_salt", ""),
                          lora_name=r.get("lora_name", ""))
            _, hit = m.lookup(r["id"])
            if m.allocate(r["id"], len(r["prompt_token_ids"]) - hit) is None:
                unfit += 1
            else:
                m.free(r["id"])
            # each cached block popped for reuse is one removed hash
            evictions += sum(len(e["block_hashes"]) for e in m.take_events() if e["type"] == "BlockRemoved")
        st = m.stats
        expect = dict(pool_blocks=pool, lookups=st["lookups"], queries=st["queries"], hits=st["hits"],
                      evictions=evictions, requests=len(requests), unfit_requests=unfit)
        for k, v in expect.items():
            assert int(row[k]) == v, (policy, c, k)
        assert float(row["hit_rate"]) == pytest.approx(st["hits"] / st["queries"], abs=5e-7 + 1e-12)


def whole_us_percentile(values, q):
    return int(np.floor(np.percentile(values, q) + 0.5)) if len(values) else 0


def test_serving_rows_against_replays(workload):
    d, trace, requests = workload
    caps = ",".join(str(c) for c in SERVING_CAPACITIES)
    rows = sweep(d, trace, "serving", ["--mode", "serving", "--model", "llama3-8b", "--capacity", caps, "--policy",
                                       "lru,lfu"])
    assert [(r["policy"], int(r["capacity_tokens"])) for r in rows] == \
        [(p, c) for p in ("lru", "lfu") for c in SERVING_CAPACITIES]
    preempted = rejected = 0
    for row in rows:
        c, policy = int(row["capacity_tokens"]), row["policy"]
        pool = pool_blocks(c, BLOCK, requests, with_outputs=True)
        assert row["trace"] == "shared" and row["mode"] == "serving" and int(row["block_size"]) == BLOCK
        assert int(row["pool_blocks"]) == pool
        run = d / ("replay-%s-%d" % (policy, c))
        done = subprocess.run([KVSIM, "replay", "--trace", str(trace), "--model", "llama3-8b", "--num-blocks",
                               str(pool), "--eviction-policy", policy, "--verify", "off", "--progress", "off",
                               "--out", str(run)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        with open(run / "requests.csv", newline="") as f:
            reqs = list(csv.DictReader(f))
        with open(run / "steps.csv", newline="") as f:
            steps = list(csv.DictReader(f))
        with open(run / "summary.json") as f:
            pc = json.load(f)["prefix_cache"]
        done_reqs = [r for r in reqs if r["status"].startswith("finished")]
        arrival = np.array([int(r["arrival_us"]) for r in done_reqs])
        first = np.array([int(r["first_token_us"]) for r in done_reqs])
        finish = np.array([int(r["finish_us"]) for r in done_reqs])
        out = np.array([int(r["output_tokens"]) for r in done_reqs])
        many = out > 1
        ttft, e2e = first - arrival, finish - arrival
        tpot = (finish[many] - first[many]) // (out[many] - 1)
        sim_s = finish.max() / 1e6
        assert len(reqs) == len(requests)
        integers = dict(lookups=pc["lookups"], queries=pc["queries"], hits=pc["hits"],
                        evictions=int(steps[-1]["evictions_total"]), requests=len(reqs),
                        unfit_requests=len(reqs) - len(done_reqs), requests_finished=len(done_reqs),
                        requests_rejected=len(reqs) - len(done_reqs),
                        preemptions=sum(int(r["preemptions"]) for r in reqs))
        for k, v in integers.items():
            assert int(row[k]) == v, (policy, c, k)
        assert float(row["hit_rate"]) == pytest.approx(pc["hits"] / pc["queries"], abs=5e-7 + 1e-12)
        for name, values in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e)):
            for q in (50, 90):
                assert row["%s_p%d_ms" % (name, q)] == "%.3f" % (whole_us_percentile(values, q) / 1000.0), (name, q)
        assert float(row["output_tokens_per_s"]) == pytest.approx(out.sum() / sim_s, abs=0.05 + 1e-9)
        assert float(row["requests_per_s"]) == pytest.approx(len(done_reqs) / sim_s, abs=5e-4 + 1e-9)
        preempted += integers["preemptions"]
        rejected += integers["requests_rejected"]
    assert preempted > 0 and rejected > 0  # the small pools preempt, the smallest rejects
