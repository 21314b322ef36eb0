"""End to end: `kvsim replay --kv-events-zmq` seen by a subscriber that knows only vLLM's wire
format (vllm/distributed/kv_events.py), decoded with python3-msgpack, not kvsim's encoder.

The subscriber listens on the PUB socket while the replay runs, asks the ROUTER replay socket
for everything again (the same bytes must come back), rebuilds the multiset of cached block hashes from BlockStored /
BlockRemoved / AllBlocksCleared, and compares it with `--dump-cache` at the end of a run whose
small pool evicts blocks.
"""
import collections
import json
import os
import pathlib
import socket
import subprocess
import time

import msgpack
import zmq

KVSIM = os.environ.get("KVSIM_BIN", "build/default/cli/kvsim")
TRACE = "traces/data/sharegpt_sample.kvtrace"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collect_live(sub, proc, dump, deadline):
    """Batches received on the PUB socket until the replay has written its cache dump."""
    live = {}
    while time.time() < deadline:
        if sub.poll(50):
            topic, seq, payload = sub.recv_multipart()
            assert topic == b"kvsim"
            live[int.from_bytes(seq, "big", signed=True)] = payload
        elif dump.exists() and proc.poll() is None:
            time.sleep(0.2)  # the run is over; let the last frames arrive
            while sub.poll(50):
                topic, seq, payload = sub.recv_multipart()
                live[int.from_bytes(seq, "big", signed=True)] = payload
            return live
        elif proc.poll() is not None:
            raise AssertionError("kvsim ended before the cache dump: " + proc.stderr.read().decode())
    raise AssertionError("timed out waiting for the replay")


def request_replay(ctx, endpoint, start):
    """vLLM's replay protocol: send the start seq (8 bytes big-endian), read (seq, payload) until -1."""
    dealer = ctx.socket(zmq.DEALER)
    dealer.connect(endpoint)
    dealer.send_multipart([b"", start.to_bytes(8, "big")])
    out = {}
    while True:
        assert dealer.poll(5000), "no answer from the replay socket"
        empty, seq, payload = dealer.recv_multipart()
        assert empty == b""
        n = int.from_bytes(seq, "big", signed=True)
        if n == -1:
            assert payload == b""
            break
        out[n] = payload
    dealer.close(0)
    return out


def key(block_hash, group, hybrid):
    return f"{block_hash.hex()} {group}" if hybrid else block_hash.hex()


def rebuild(batches, hybrid=False):
    """The cached blocks the events describe, keyed as --dump-cache writes them ("HEX GROUP"
    for a hybrid model, whose events carry the KV-cache group as group_idx)."""
    cache = collections.Counter()
    last_ts = -1.0
    for seq in sorted(batches):
        ts, events, dp_rank = msgpack.unpackb(batches[seq], raw=False)
        assert dp_rank == 0 and ts >= last_ts
        last_ts = ts
        for ev in events:
            tag = ev[0]
            if tag == "BlockStored":
                hashes, parent, tokens, block_size, lora_id, medium, lora_name, extra, group = ev[1:]
                assert block_size == 16 and len(tokens) == 16 * len(hashes)
                assert medium == "GPU" and lora_id is None
                assert group in ((0, 1) if hybrid else (0,))
                assert parent is None or isinstance(parent, bytes)
                for h in hashes:
                    assert isinstance(h, bytes) and len(h) == 32
                    cache[key(h, group, hybrid)] += 1
            elif tag == "BlockRemoved":
                hashes, medium, group = ev[1:]
                for h in hashes:
                    assert cache[key(h, group, hybrid)] > 0, "removed a hash never stored"
                    cache[key(h, group, hybrid)] -= 1
            else:
                assert ev == ["AllBlocksCleared"]
                cache.clear()
    return sorted(cache.elements())


def test_subscriber_rebuilds_the_cache(tmp_path):
    check_subscriber_rebuilds_the_cache(tmp_path, "llama3-8b", hybrid=False)


def test_subscriber_rebuilds_a_hybrid_cache_with_group_ids(tmp_path):
    """gpt-oss-20b: a full-attention and a sliding-window group share the pool; every event
    names its group, and the subscriber's (hash, group) set equals the cache's."""
    check_subscriber_rebuilds_the_cache(tmp_path, "gpt-oss-20b", hybrid=True)


def subscribe(ctx, pub):
    """A SUB socket on topic "kvsim" that keeps every batch however fast the replay runs."""
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"kvsim")
    sub.setsockopt(zmq.RCVHWM, 0)
    sub.connect(f"tcp://127.0.0.1:{pub}")
    return sub


def check_subscriber_rebuilds_the_cache(tmp_path, model, hybrid):
    pub, rep = free_port(), free_port()
    dump = tmp_path / "cache.txt"
    jsonl = tmp_path / "events.jsonl"
    ctx = zmq.Context()
    sub = subscribe(ctx, pub)
    cmd = [KVSIM, "replay", "--trace", TRACE, "--model", model, "--num-blocks", "400", "--limit", "80",
           "--progress", "off", "--decision-log", "digest", "--out", str(tmp_path / "run"),
           "--kv-events-zmq", f"tcp://*:{pub}", "--kv-events-replay", f"tcp://127.0.0.1:{rep}",
           "--kv-events-topic", "kvsim", "--kv-events-linger-ms", "5000", "--kv-events-startup-ms", "1000",
           "--kv-events", str(jsonl), "--dump-cache", str(dump)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        live = collect_live(sub, proc, dump, time.time() + 120)
        replayed = request_replay(ctx, f"tcp://127.0.0.1:{rep}", 0)
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert sorted(replayed) == list(range(len(replayed))) and len(replayed) > 10
    # The subscriber joined during the startup wait: every batch came live, and the replay
    # socket resends the same bytes.
    assert live == replayed
    evictions = json.loads((tmp_path / "run" / "summary.json").read_text())["prefix_cache"]["evictions"]
    assert evictions > 0
    expected = dump.read_text().splitlines()
    assert rebuild(replayed, hybrid) == expected and len(expected) > 0
    if hybrid:
        assert {line.split()[1] for line in expected} == {"0", "1"}
    # The JSONL file tells the same story, batch for batch.
    lines = [json.loads(l) for l in jsonl.read_text().splitlines()]
    assert len(lines) == len(replayed)
    for line, seq in zip(lines, sorted(replayed)):
        ts, events, _ = msgpack.unpackb(replayed[seq], raw=False)
        assert line["ts"] == ts and [e["type"] for e in line["events"]] == [e[0] for e in events]
    sub.close(0)
    ctx.term()


def extras_trace(tmp_path):
    """A kvtrace of requests with a cache salt, a LoRA adapter, both, or neither. Request k's
    prompt tokens are 1000 * k + position, so a block's first token names its request and index."""
    kinds = [("tenant-a", ""), ("", "adapter1"), ("tenant-b", "adapter2"), ("", "")]
    lines = []
    for k in range(12):
        salt, lora = kinds[k % len(kinds)]
        tokens = [1000 * (k + 1) + i for i in range(16 * (2 + k % 3) + 5)]
        lines.append(json.dumps({"prompt_token_ids": tokens, "output_len": 2, "timestamp": 0.05 * k,
                                 "cache_salt": salt, "lora_name": lora}))
    src = tmp_path / "extras.jsonl"
    src.write_text("\n".join(lines) + "\n")
    trace = tmp_path / "extras.kvtrace"
    subprocess.run([KVSIM, "convert", "--from", "tokens", "--input", str(src), "-o", str(trace)], check=True)
    return trace, kinds


def test_subscriber_reads_the_extra_keys_of_each_block(tmp_path):
    """vLLM's BlockStored.extra_keys: one entry per stored block, None or a tuple of the keys
    the block was hashed with: the LoRA name on every block, the salt on block 0 only."""
    trace, kinds = extras_trace(tmp_path)
    pub, rep = free_port(), free_port()
    dump = tmp_path / "cache.txt"
    jsonl = tmp_path / "events.jsonl"
    ctx = zmq.Context()
    sub = subscribe(ctx, pub)
    try:
        cmd = [KVSIM, "replay", "--trace", str(trace), "--model", "llama3-8b", "--progress", "off",
               "--decision-log", "digest", "--out", str(tmp_path / "run"), "--kv-events-zmq", f"tcp://*:{pub}",
               "--kv-events-replay", f"tcp://127.0.0.1:{rep}", "--kv-events-topic", "kvsim",
               "--kv-events-startup-ms", "1000", "--kv-events-linger-ms", "5000",
               "--kv-events", str(jsonl), "--dump-cache", str(dump)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            live = collect_live(sub, proc, dump, time.time() + 120)
        finally:
            out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
        assert sorted(live) == list(range(len(live))) and live
        seen = collections.Counter()
        for seq in sorted(live):
            _, events, _ = msgpack.unpackb(live[seq], raw=False)
            for ev in events:
                if ev[0] != "BlockStored":
                    continue
                hashes, _, tokens, block_size, _, _, lora_name, extra, _ = ev[1:]
                assert isinstance(extra, list) and len(extra) == len(hashes)
                for j, keys in enumerate(extra):
                    first = tokens[j * block_size]
                    k, index = first // 1000 - 1, (first % 1000) // block_size
                    salt, lora = kinds[k % len(kinds)]
                    expected = ([lora] if lora else []) + ([salt] if salt and index == 0 else [])
                    assert keys == (expected or None), (k, index, keys)
                    assert lora_name == (lora or None)
                    seen[(bool(salt), bool(lora), index == 0)] += 1
        # Every kind of block was stored: salted first blocks, LoRA blocks, plain blocks.
        assert {(True, False, True), (True, False, False), (False, True, True), (True, True, True),
                (True, True, False), (False, False, False)} <= set(seen)
        # The JSONL file carries the same extra keys.
        stored = [e for l in jsonl.read_text().splitlines() for e in json.loads(l)["events"] if e["type"] == "BlockStored"]
        assert any(e["extra_keys"] and e["extra_keys"][0] == ["tenant-a"] for e in stored)
    finally:  # a failed assertion must not leave the context waiting on an open socket
        ctx.destroy(linger=0)
