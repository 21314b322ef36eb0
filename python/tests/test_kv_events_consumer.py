"""An independent consumer of kvsim's KV events (--kv-events JSONL), written from the
specification in docs/semantics.md section 2 and vLLM's event fields, checks every field:

  - every stored hash is recomputed here (canonical CBOR and SHA-256 written in this file) from
    the event's parent, token ids and extra keys, block by block along the chain;
  - a parent is a block stored earlier and still cached in the same group; a removed hash is
    one that is cached; the cache never holds more blocks than the pool. A hash may be stored
    again while cached: a second block under it, as vLLM keeps (a prompt whose every block is
    cached recomputes its last block, since a hit stops one token short), and each block's
    removal is announced;
  - token ids (block_size per block), extra keys (one entry per block: the LoRA name on every
    block, the salt on block 0 only), lora_name, medium, group ids and block sizes;
  - timestamps: seconds on the replay clock, at the end of the step that made them
    (steps.csv: start_us + duration_ns, to the microsecond start_us keeps), non-decreasing.
Run on requests with salts and LoRA adapters, on one KV-cache group and on a hybrid model,
with a pool small enough to evict. Multimodal items, which traces do not carry, are driven
through the Python module's manager: each stored event is compared field by field with the
request it came from (hashes, parent, token ids, every block's extra keys: the LoRA name, one
(identifier, offset from the block's start) per item meeting the block, the salt on block 0).
"""
import collections
import csv
import hashlib
import json
import os
import random
import struct
import subprocess

import pytest

import kvsim

KVSIM = os.environ.get("KVSIM_BIN", "build/default/cli/kvsim")
BLOCK = 16


# ---- canonical CBOR (RFC 8949), the few types the hash uses
def _head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    for extra, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if n < 1 << (8 * struct.calcsize(fmt)):
            return bytes([major << 5 | extra]) + struct.pack(fmt, n)
    raise ValueError(n)


def cbor(value):
    if value is None:
        return b"\xf6"
    if isinstance(value, bool):
        raise TypeError("no booleans in a block hash")
    if isinstance(value, int):
        return _head(0, value) if value >= 0 else _head(1, -1 - value)
    if isinstance(value, bytes):
        return _head(2, len(value)) + value
    if isinstance(value, str):
        data = value.encode()
        return _head(3, len(data)) + data
    if isinstance(value, list):
        return _head(4, len(value)) + b"".join(cbor(v) for v in value)
    raise TypeError(type(value))


NONE_HASH = hashlib.sha256(cbor("0")).digest()


def block_hash(parent, tokens, extra_keys):
    return hashlib.sha256(cbor([parent, list(tokens), extra_keys])).digest()


def test_cbor_and_hash_match_the_specifications_vectors():
    assert NONE_HASH.hex() == "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e"
    h0 = block_hash(NONE_HASH, [1, 2, 3, 4], None)
    assert h0.hex() == "c9d58ba695280d69b243e1e0df813136ca9196b286fb1a021e0b2e028ef071cb"
    assert block_hash(h0, [5, 6, 7, 8], None).hex() == \
        "24125b23e68883b5c2141db2959d48433fe6bde2f26bd914efad121d154ab2d6"
    assert block_hash(NONE_HASH, [1, 2, 3, 4], ["tenant-a"]).hex() == \
        "5188afdf425172363edc325e9600bdb55cfc0950138d1c11b71ec2ac150962f4"
    assert block_hash(NONE_HASH, [1000, 70000, 5000000000, 0], None).hex() == \
        "78ee659871810941ecda9562acd29f5b723e2c394afb50db36efcc8af2d237c9"


# ---- the workload: shared prefixes, two tenants' salts, a LoRA adapter
def write_requests(path, seed=7, n=60):
    rng = random.Random(seed)
    prefixes = [[rng.randrange(1, 50000) for _ in range(rng.choice([40, 64, 100]))] for _ in range(4)]
    with open(path, "w") as f:
        for i in range(n):
            prompt = list(rng.choice(prefixes)) + [rng.randrange(1, 50000) for _ in range(rng.randrange(5, 90))]
            if i % 12 in (0, 4):  # a block-aligned prompt seen just before: its last block is stored again
                prompt = (prefixes[1] * 2)[:64]
            line = {"prompt_token_ids": prompt, "output_len": rng.randrange(2, 40), "timestamp": i * 0.05,
                    "id": "r%d" % i}
            kind = i % 4
            if kind == 1:
                line["cache_salt"] = "tenant-a"
            elif kind == 2:
                line["lora_name"] = "adapter1"
            elif kind == 3:
                line["cache_salt"], line["lora_name"] = "tenant-b", "adapter1"
            f.write(json.dumps(line) + "\n")


def replay(tmp_path, model, num_blocks):
    source, trace = tmp_path / "requests.jsonl", tmp_path / "requests.kvtrace"
    write_requests(source)
    done = subprocess.run([KVSIM, "convert", "--from", "tokens", "--input", str(source), "-o", str(trace)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    events = tmp_path / "events.jsonl"
    done = subprocess.run([KVSIM, "replay", "--trace", str(trace), "--model", model, "--num-blocks", str(num_blocks),
                           "--progress", "off", "--out", str(tmp_path / "run"), "--kv-events", str(events)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open(events) as f:
        batches = [json.loads(line) for line in f]
    with open(tmp_path / "run" / "steps.csv", newline="") as f:
        steps = {int(r["step"]): r for r in csv.DictReader(f)}
    with open(tmp_path / "run" / "summary.json") as f:
        summary = json.load(f)
    return batches, steps, summary


class Consumer:
    """Rebuilds the cache's content from the events alone, checking each one."""

    def __init__(self, num_blocks):
        self.cached = collections.defaultdict(collections.Counter)  # group -> hash -> blocks
        self.num_blocks = num_blocks
        self.stored = self.removed = 0
        self.seen = collections.Counter()  # blocks with a LoRA name, with a salt

    def store(self, e):
        group = self.cached[e["group_idx"]]
        n = len(e["block_hashes"])
        assert e["medium"] == "GPU" and e["lora_id"] is None
        assert e["block_size"] == BLOCK and len(e["token_ids"]) == n * BLOCK and len(e["extra_keys"]) == n
        parent = NONE_HASH
        if e["parent_block_hash"] is not None:
            assert group[e["parent_block_hash"]] > 0, "parent not cached in its group"
            parent = bytes.fromhex(e["parent_block_hash"])
        for j, hexhash in enumerate(e["block_hashes"]):
            extra = e["extra_keys"][j]
            self.check_extra_keys(extra, e["lora_name"], first_block=(parent == NONE_HASH))
            parent = block_hash(parent, e["token_ids"][j * BLOCK:(j + 1) * BLOCK], extra)
            assert parent.hex() == hexhash, "hash %d of the event is not the chain's" % j
            self.seen["again"] += group[hexhash] > 0
            group[hexhash] += 1
            self.stored += 1

    def check_extra_keys(self, extra, lora_name, first_block):
        keys = extra or []
        self.seen["lora"] += lora_name is not None
        self.seen["salt"] += any(k in ("tenant-a", "tenant-b") for k in keys)
        if lora_name is not None:
            assert keys[:1] == [lora_name], "the LoRA name leads every block's extra keys"
            keys = keys[1:]
        if first_block:
            assert all(k in ("tenant-a", "tenant-b") for k in keys) and len(keys) <= 1
        else:
            assert keys == [], "a salt on a block other than the first"
        assert extra != [], "empty extra keys are null"

    def remove(self, e):
        assert e["medium"] == "GPU"
        group = self.cached[e["group_idx"]]
        for hexhash in e["block_hashes"]:
            assert group[hexhash] > 0, "removed a hash that is not cached"
            group[hexhash] -= 1
            self.removed += 1

    def size(self):
        return sum(sum(g.values()) for g in self.cached.values())


@pytest.mark.parametrize("model,num_blocks,groups", [("llama3-8b", 60, {0}), ("gpt-oss-20b", 60, {0, 1})])
def test_every_event_field_rebuilt(tmp_path, model, num_blocks, groups):
    batches, steps, summary = replay(tmp_path, model, num_blocks)
    consumer = Consumer(num_blocks)
    last_ts = 0.0
    kinds = collections.Counter()
    for batch in batches:
        step = steps[batch["step"]]
        # steps.csv's start is the step's start in whole microseconds (rounded down).
        end_ns = int(step["start_us"]) * 1000 + int(step["duration_ns"])
        assert end_ns - 1 <= batch["ts"] * 1e9 <= end_ns + 1000, "ts: seconds at the end of the step"
        assert batch["ts"] >= last_ts
        last_ts = batch["ts"]
        for e in batch["events"]:
            kinds[e["type"]] += 1
            assert e["group_idx"] in groups
            if e["type"] == "BlockStored":
                consumer.store(e)
            elif e["type"] == "BlockRemoved":
                consumer.remove(e)
            else:
                assert e["type"] == "AllBlocksCleared"
                consumer.cached.clear()
            assert consumer.size() <= (num_blocks - 1) * len(groups)
    assert kinds["BlockStored"] > 0 and kinds["BlockRemoved"] > 0, kinds  # the pool evicted
    assert consumer.removed == summary["prefix_cache"]["evictions"]
    assert consumer.seen["lora"] > 0 and consumer.seen["salt"] > 0 and consumer.seen["again"] > 0, consumer.seen
    assert {g for g in consumer.cached} == groups


# ---- multimodal items: kvsim's traces carry no multimodal input, so the manager is driven
# request by request through the Python module (kvsim.KvCacheManager), whose events are the
# pool's own (the dicts give a multimodal key as the tuple (identifier, offset)).
def expected_extra_keys(request, j):
    """Block j's extra keys by docs/semantics.md section 2.2, from the request's description."""
    keys = [request["lora_name"]] if request["lora_name"] else []
    for identifier, offset, length in request["mm_items"]:
        if offset < (j + 1) * BLOCK and offset + length > j * BLOCK:
            keys.append((identifier, offset - j * BLOCK))
    if j == 0 and request["cache_salt"]:
        keys.append(request["cache_salt"])
    return tuple(keys) if keys else None


def as_cbor_keys(extra):
    return None if extra is None else [list(k) if isinstance(k, tuple) else k for k in extra]


def expected_chain(request):
    chain, parent = [], NONE_HASH
    tokens = request["tokens"]
    for j in range(len(tokens) // BLOCK):
        parent = block_hash(parent, tokens[j * BLOCK:(j + 1) * BLOCK], as_cbor_keys(expected_extra_keys(request, j)))
        chain.append(parent.hex())
    return chain


IMAGE_TOKEN = 32000  # every image's placeholder tokens are the same id: only the items tell them apart


def mm_requests(seed=5, n=48):
    """Shared text prefixes, then images (placeholder runs) at offsets that start and end on block
    boundaries and inside blocks, two items in one block, images spanning several blocks; some
    requests repeat another's tokens with a different image, some a block-aligned prompt whole;
    salts and a LoRA adapter."""
    rng = random.Random(seed)
    texts = [[rng.randrange(1, 30000) for _ in range(k)] for k in (16, 23, 40)]
    out = []
    for i in range(n):
        tokens, items = list(rng.choice(texts)), []
        for _ in range(rng.choice([1, 2, 3])):
            length = rng.choice([1, 5, 16, 20, 16 - len(tokens) % 16 or 16, 37])
            items.append(("img-%d" % rng.randrange(4), len(tokens), length))
            tokens += [IMAGE_TOKEN] * length
            tokens += [rng.randrange(1, 30000) for _ in range(rng.choice([0, 0, 3, 16]))]
        request = {"id": "m%d" % i, "tokens": tokens, "mm_items": items, "cache_salt": "", "lora_name": "",
                   "output": [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 30))]}
        if i % 5 == 2:
            request["cache_salt"] = "tenant-a"
        if i % 3 == 1:
            request["lora_name"] = "adapter1"
        if i % 8 == 4:  # block-aligned and asked twice: the second stores its last block again
            request["tokens"] += [rng.randrange(1, 30000) for _ in range(-len(tokens) % BLOCK)]
            out.append(dict(request, id="m%dd" % i))
        out.append(request)
        if i % 6 == 0:  # the same tokens and adapter, other images
            twin = dict(request, id="m%dx" % i, mm_items=[("img-9", o, k) for _, o, k in items])
            out.append(twin)
    return out


@pytest.mark.parametrize("layers,groups", [("", {0}), ("full,sliding_window:32", {0, 1})])
def test_multimodal_events_rebuilt_field_by_field(layers, groups):
    num_blocks = 48
    m = kvsim.KvCacheManager(num_blocks=num_blocks, block_size=BLOCK, enable_kv_events=True, layers=layers)
    consumer = Consumer(num_blocks)
    seen = collections.Counter()

    def consume(request):
        for e in m.take_events():
            assert e["group_idx"] in groups
            if e["type"] == "BlockRemoved":
                consumer.remove(e)
                seen["removed"] += len(e["block_hashes"])
                continue
            assert e["type"] == "BlockStored"
            chain = expected_chain(request)
            tokens = request["tokens"]
            start = chain.index(e["block_hashes"][0])
            n = len(e["block_hashes"])
            assert e["block_hashes"] == chain[start:start + n], "the request's hash chain, block by block"
            assert e["parent_block_hash"] == (chain[start - 1] if start else None)
            assert list(e["token_ids"]) == tokens[start * BLOCK:(start + n) * BLOCK]
            assert e["extra_keys"] == [expected_extra_keys(request, j) for j in range(start, start + n)]
            assert e["lora_name"] == (request["lora_name"] or None)
            # and the chain again from the event's own fields, as a consumer without the request
            parent = bytes.fromhex(e["parent_block_hash"]) if e["parent_block_hash"] else NONE_HASH
            for j, hexhash in enumerate(e["block_hashes"]):
                extra = e["extra_keys"][j]
                parent = block_hash(parent, [int(t) for t in e["token_ids"][j * BLOCK:(j + 1) * BLOCK]],
                                    as_cbor_keys(extra))
                assert parent.hex() == hexhash, "hash %d of the event is not the chain's" % j
                mm_keys = [k for k in extra or () if isinstance(k, tuple)]
                seen["mm_blocks"] += bool(mm_keys)
                seen["mm_continued"] += any(offset < 0 for _, offset in mm_keys)
                seen["mm_two_in_a_block"] += len(mm_keys) >= 2
            group = consumer.cached[e["group_idx"]]
            if e["parent_block_hash"] is not None:
                assert group[e["parent_block_hash"]] > 0, "parent not cached in its group"
            for hexhash in e["block_hashes"]:
                seen["again"] += group[hexhash] > 0
                group[hexhash] += 1
            assert consumer.size() <= (num_blocks - 1) * len(groups)

    stored_by_id = {}
    for request in mm_requests():
        m.add_request(request["id"], request["tokens"], cache_salt=request["cache_salt"],
                      lora_name=request["lora_name"], mm_items=request["mm_items"])
        _, hit = m.lookup(request["id"])
        seen["hit_tokens"] += hit
        if m.allocate(request["id"], len(request["tokens"]) - hit) is None:
            seen["refused"] += 1
            continue
        consume(request)
        stored_by_id[request["id"]] = (list(m.block_hashes(request["id"])), request["mm_items"][0][1] // BLOCK)
        request["tokens"] = request["tokens"] + request["output"]  # outputs: LoRA keys only, no items
        m.append_tokens(request["id"], request["output"])
        if m.allocate(request["id"], len(request["output"])) is not None:
            consume(request)
        m.free(request["id"])
        consume(request)
        m.check_invariants()
    # Equal tokens with other images: the blocks before the first image are shared, none after.
    twins = 0
    for rid, (hashes, first_image_block) in stored_by_id.items():
        if rid.endswith("x") and rid[:-1] in stored_by_id:
            original = stored_by_id[rid[:-1]][0]
            assert hashes[:first_image_block] == original[:first_image_block]
            assert not set(hashes[first_image_block:]) & set(original)
            twins += 1
    assert twins > 0
    assert seen["mm_blocks"] and seen["mm_continued"] and seen["mm_two_in_a_block"], seen
    assert seen["removed"] and seen["hit_tokens"] and seen["again"], seen
