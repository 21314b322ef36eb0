"""The kvsim Python module: the core's manager request by request, ops scripts, and replays
with the same options, digests and error messages as `kvsim replay`."""
import os
import subprocess
import tempfile

import numpy as np
import pytest

import kvsim

TRACE = "traces/data/sharegpt_sample.kvtrace"
KVSIM = os.environ.get("KVSIM_BIN", "build/default/cli/kvsim")


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


def test_manager_request_extras_hash_as_the_ops_shell_and_bad_items_raise():
    m = kvsim.KvCacheManager(num_blocks=8, block_size=4)
    m.add_request("a", list(range(10)), cache_salt="s", lora_name="l", mm_items=[("img", 2, 5), ("aud", 6, 1)])
    out = kvsim.run_ops("config blocks=8 block_size=4\n"
                        "request a tokens=0:10 salt=s lora=l mm=img@2+5,aud@6+1\nhashes a\n")
    assert out == ["hashes a [%s]" % ",".join(m.block_hashes("a"))]
    m.add_request("b", list(range(10)))
    assert not set(m.block_hashes("a")) & set(m.block_hashes("b"))
    for items, why in (([("x", 3, 1), ("y", 2, 1)], "offset order"), ([("", 0, 1)], "identifier"),
                       ([("x", 0, 0)], "length >= 1"), ([("x", -1, 2)], "offset >= 0")):
        with pytest.raises(ValueError, match=why):
            m.add_request("c", list(range(10)), mm_items=items)


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
    assert s["digest"] == "ced7dc72353a834473166db0a3907edf97afbc7eda18bdba853be534eb60aab7"
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


def test_mamba_manager_hits_a_state_only_after_new_step():
    # As the ops shell's OpsMambaTest: a full-attention layer and a Mamba layer (align mode).
    m = kvsim.KvCacheManager(num_blocks=16, block_size=4, layers="full,mamba", enable_kv_events=True)
    assert m.num_groups == 2
    assert [(g["type"], g.get("mamba_cache_mode")) for g in m.groups] == [("full", None), ("mamba", "align")]
    m.add_request("a", list(range(10)))
    assert m.lookup("a") == ([[], []], 0)
    assert m.allocate("a", 8) == [[1, 2], [0, 3]]
    events = m.take_events()
    assert [(e["type"], e["group_idx"], len(e["block_hashes"])) for e in events] == [
        ("BlockStored", 0, 2), ("BlockStored", 1, 1)]
    assert events[1]["token_ids"].tolist() == list(range(8))  # the null position's tokens too
    m.add_request("b", list(range(10)))
    assert m.lookup("b") == ([[1, 2], [0, 3]], 8)
    assert m.allocate("b", 2) is None  # state 3 was cached in this step
    m.new_step()
    assert m.lookup("b") == ([[1, 2], [0, 3]], 8)
    assert m.allocate("b", 2) == [[4], [5]]
    assert m.block_table("b", group=1).tolist() == [0, 3, 5]
    m.check_invariants()


def test_draft_tokens_rollback_and_speculative_blocks():
    m = kvsim.KvCacheManager(num_blocks=32, block_size=4, layers="full,mamba", num_speculative_tokens=2)
    assert m.groups[1]["num_speculative_blocks"] == 2
    m.add_request("a", list(range(9)))
    assert m.allocate("a", 8, num_lookahead_tokens=2) == [[1, 2, 3], [0, 4, 5, 6]]
    assert m.allocate("a", 1, num_lookahead_tokens=2, num_draft_tokens=2) == [[7], [8]]
    assert m.num_computed_tokens("a") == 11
    m.rollback("a", 1)
    m.append_tokens("a", [100, 101])
    m.new_step()
    assert m.allocate("a", 1, num_lookahead_tokens=2, num_draft_tokens=2) == [[], [9]]
    assert m.block_table("a", group=1).tolist() == [0, 0, 5, 6, 8, 9]
    m.check_invariants()


def test_mode_none_cross_attention_and_bad_layouts():
    m = kvsim.KvCacheManager(num_blocks=16, block_size=4, enable_caching=False, layers="full,mamba")
    assert m.groups[1]["mamba_cache_mode"] == "none" and m.groups[1]["block_size"] == 1 << 20
    m.add_request("a", list(range(6)))
    assert m.allocate("a", 6) == [[1, 2], [3]]
    x = kvsim.KvCacheManager(num_blocks=16, block_size=4, enable_caching=False, layers="full,cross_attention")
    x.add_request("a", list(range(6)))
    assert x.allocate("a", 6, num_encoder_tokens=10) == [[1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="^mamba_cache_mode: must be one of none, align, all, got 'fast'$"):
        kvsim.KvCacheManager(num_blocks=16, layers="mamba", mamba_cache_mode="fast")
    with pytest.raises(ValueError, match="^KV-cache group 0: Mamba mode none with prefix caching on"):
        kvsim.KvCacheManager(num_blocks=16, layers="mamba", mamba_cache_mode="none")
    with pytest.raises(ValueError, match="^layers: layer 'window:4' is not full"):
        kvsim.KvCacheManager(num_blocks=16, layers="full,window:4")
    with pytest.raises(ValueError, match="^mamba_cache_mode and num_speculative_tokens need layers$"):
        kvsim.KvCacheManager(num_blocks=16, num_speculative_tokens=2)
    with pytest.raises(ValueError, match="^num_rejected: must be 0..6$"):
        m.rollback("a", 7)


def test_replay_of_a_mamba_model_with_speculative_decoding():
    options = {"model": "qwen3-next-80b-a3b", "num_blocks": 400, "limit": 20, "speculative_method": "mtp",
               "num_speculative_tokens": 2, "acceptance_rates": "0.8,0.5", "mamba_cache_mode": "align"}
    s = kvsim.Replay(TRACE, options).run()
    spec = s["spec"]
    assert spec["num_speculative_tokens"] == 2 and spec["num_drafts"] > 0
    assert spec["num_draft_tokens"] == 2 * spec["num_drafts"]
    assert sum(spec["accepted_per_position"]) == spec["num_accepted_tokens"]
    assert spec["acceptance_rate"] == pytest.approx(spec["num_accepted_tokens"] / spec["num_draft_tokens"])
    assert [g["spec"] for g in s["groups"]] == ["mamba(align, 1130496 B, 2 speculative)"] * 3 + ["full"]
    assert kvsim.Replay(TRACE, {"limit": 5}).run()["spec"] is None
    cli = subprocess.run([KVSIM, "replay", "--trace", TRACE, "--model", "qwen3-next-80b-a3b", "--num-blocks", "400",
                          "--limit", "20", "--speculative-method", "mtp", "--num-speculative-tokens", "2",
                          "--acceptance-rates", "0.8,0.5", "--decision-log", "digest", "--out",
                          tempfile.mkdtemp() + "/run"], capture_output=True, text=True, check=True)
    assert s["digest"] in cli.stdout


def test_replay_takes_typed_keywords_as_the_command_line_options():
    r = kvsim.Replay(TRACE, model="llama3-8b", limit=100, prefix_caching=True, gpu_memory_utilization=0.9)
    s = r.run()
    assert s["requests_finished"] == 100
    assert s["digest"] == kvsim.Replay(TRACE, {"model": "llama3-8b", "limit": "100"}).run()["digest"]
    steps, requests = r.steps, r.requests
    assert isinstance(steps["predicted_ns"], np.ndarray) and len(steps["step"]) == s["steps"]
    assert steps["step"].tolist() == list(range(s["steps"]))
    assert len(requests["id"]) == 100 and int(requests["prompt_tokens"].sum()) == s["prompt_tokens"]


def test_replay_keyword_errors_name_the_option():
    with pytest.raises(TypeError, match=r"^--limit \(limit\): takes int, float or its text, got bool$"):
        kvsim.Replay(TRACE, limit=True)
    with pytest.raises(TypeError, match=r"^--prefix-caching \(prefix_caching\): takes bool or 'on'/'off', got int$"):
        kvsim.Replay(TRACE, prefix_caching=1)
    with pytest.raises(TypeError, match=r"^--model \(model\): takes str, got float$"):
        kvsim.Replay(TRACE, model=8.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'frobnicate'"):
        kvsim.Replay(TRACE, frobnicate=1)
    with pytest.raises(ValueError, match=r"^--block-size: must be in 1\.\.1024, got 0$"):
        kvsim.Replay(TRACE, block_size=0)
    with pytest.raises(ValueError, match=r"^--limit: 'x' is not an integer"):
        kvsim.Replay(TRACE, limit="x")


def test_replay_tables_as_data_frames_or_a_clear_import_error():
    r = kvsim.Replay(TRACE, limit=10)
    r.run()
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas is not installed: Replay.steps holds the same columns"):
            r.steps_frame()
        return
    frame = r.requests_frame()
    assert list(frame.columns)[:2] == ["id", "status"] and len(frame) == 10
    assert len(r.steps_frame()) == len(r.steps["step"])


def test_the_stub_and_the_docstring_list_every_option():
    stub_path = os.path.join(os.path.dirname(kvsim.__file__), "kvsim.pyi")
    with open(stub_path) as f:
        stub = f.read()
    for name in kvsim.options():
        keyword = name.replace("-", "_")
        assert "        %s: " % keyword in stub, keyword
        assert "\n  %s (" % keyword in kvsim.Replay.__doc__, keyword
    assert "        prefix_caching: bool | str = ...," in stub
    assert "        limit: int | float | str = ...," in stub
