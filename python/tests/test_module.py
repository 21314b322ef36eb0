"""The kvsim Python module: the core's manager request by request, ops scripts, and replays
with the same options, digests and error messages as `kvsim replay`."""
import numpy as np
import pytest

import kvsim

TRACE = "traces/data/sharegpt_sample.kvtrace"


def test_manager_hits_block_tables_and_events():
    m = kvsim.KvCacheManager(num_blocks=11, block_size=4, enable_kv_events=True)
    m.add_request("a", list(range(10)))
    assert m.lookup("a") == ([], 0)
    assert m.allocate("a", 10) == [1, 2, 3]
    table = m.block_table("a")
    assert isinstance(table, np.ndarray) and table.tolist() == [1, 2, 3]
    events = m.take_events()
    assert [e["type"] for e in events] == ["BlockStored"]
    assert events[0]["block_hashes"] == m.block_hashes("a") and len(events[0]["block_hashes"]) == 2
    assert events[0]["token_ids"].tolist() == list(range(8)) and events[0]["parent_block_hash"] is None
    assert events[0]["extra_keys"] == [None, None]  # no LoRA, salt or multimodal input
    m.free("a")
    m.add_request("b", list(range(9)))
    assert m.lookup("b") == ([1, 2], 8)
    assert m.allocate("b", 1) is not None
    assert m.stats["hits"] == 8 and m.num_free_blocks == 7
    assert sorted(m.cached_hashes()) == sorted(events[0]["block_hashes"])
    m.check_invariants()


def test_manager_short_pool_returns_none_and_bad_arguments_raise():
    m = kvsim.KvCacheManager(num_blocks=3, block_size=4)
    m.add_request("a", list(range(12)))
    assert m.allocate("a", 12) is None
    with pytest.raises(ValueError, match="unknown request zz"):
        m.lookup("zz")
    with pytest.raises(ValueError, match="hash: must be one of sha256_cbor, xxhash_cbor, got 'md5'"):
        kvsim.KvCacheManager(num_blocks=4, hash="md5")


def test_run_ops_matches_the_golden_output():
    with open("tests/golden/01_prefill.ops") as f:
        out = kvsim.run_ops(f.read())
    with open("tests/golden/01_prefill.classic.expected") as f:
        assert out == f.read().splitlines()
    with pytest.raises(ValueError, match="^line 2: unexpected argument '3'$"):
        kvsim.run_ops("config blocks=11 block_size=16 seed=0\nnum_free 3\n")


def test_replay_matches_the_command_digest():
    r = kvsim.Replay(TRACE, {"prefix-caching": True, "gpu": "h100-sxm", "model": "llama3-8b"})
    s = r.run()
    assert s["digest"] == "7ef6641f8a5f1a0ad99008a927d0c8d0ab01fdae0f9892e509fb6c5774ac2b35"
    m = r.metrics
    assert len(m["id"]) == s["requests_total"]
    assert isinstance(m["prompt_tokens"], np.ndarray) and m["prompt_tokens"].dtype == np.int64
    assert int(m["output_tokens"].sum()) == s["output_tokens"]


def test_replay_events_rebuild_the_cache_after_evictions():
    r = kvsim.Replay(TRACE, {"num_blocks": 400, "limit": 60}, collect_events=True)
    s = r.run()
    assert s["evictions"] > 0
    cache = {}
    for batch in r.events:
        for e in batch["events"]:
            for h in e.get("block_hashes", []):
                cache[h] = cache.get(h, 0) + (1 if e["type"] == "BlockStored" else -1)
            if e["type"] == "AllBlocksCleared":
                cache.clear()
    rebuilt = sorted(h for h, n in cache.items() for _ in range(n))
    assert rebuilt == r.cached_hashes()
    plain = kvsim.Replay(TRACE, {"num_blocks": 400, "limit": 60}).run()
    assert plain["digest"] == s["digest"]


def test_replay_events_file_is_replaced_only_with_force(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text("kept\n")
    options = {"num_blocks": 400, "limit": 5, "kv_events": str(events)}
    with pytest.raises(ValueError, match="exists"):
        kvsim.Replay(TRACE, options)
    assert events.read_text() == "kept\n"
    r = kvsim.Replay(TRACE, options, force=True)
    assert events.read_text() == "kept\n"  # replaced only when the run closes it
    r.run()
    assert events.read_text().startswith("{")


def test_replay_bad_options_raise_the_command_messages():
    with pytest.raises(ValueError, match=r"^--block-size: must be in 1\.\.1024, got 0$"):
        kvsim.Replay(TRACE, {"block_size": 0})
    with pytest.raises(ValueError, match="^unknown option --frobnicate$"):
        kvsim.Replay(TRACE, {"frobnicate": 1})
    with pytest.raises(ValueError, match="nonexistent.kvtrace"):
        kvsim.Replay("nonexistent.kvtrace")
