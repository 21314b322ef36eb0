// KV events out of a replay: the msgpack layout of vLLM's KVEventBatch, the JSONL writer, and
// the promise that turning events on changes no decision (same digest), including after
// evictions in a small pool.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "replay/kv_event_sink.h"
#include "replay/replay_builder.h"
#include "replay/replay_config.h"

namespace kv::replay {
namespace {

namespace fs = std::filesystem;

const char* kTrace = "traces/data/sharegpt_sample.kvtrace";

BlockHash hash_of(std::uint8_t first) {
  BlockHash h;
  h.size = 32;
  h.bytes[0] = first;
  return h;
}

TEST(KvEventsTest, BatchIsVllmsArrayLikeTaggedLayout) {
  BlockStored stored;
  stored.block_hashes = {hash_of(1), hash_of(2)};
  stored.parent_block_hash = hash_of(9);
  stored.token_ids = {1, 2, 3, 4};
  stored.block_size = 2;
  stored.extra_keys = {std::nullopt, std::nullopt};  // a plain request: None per block
  const std::vector<KvEvent> events = {stored, BlockRemoved{{hash_of(1)}, "GPU"}, AllBlocksCleared{}};
  const std::string bytes = encode_kv_event_batch(1.5, events, 0);
  msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& batch = oh.get();
  ASSERT_EQ(batch.type, msgpack::type::ARRAY);
  ASSERT_EQ(batch.via.array.size, 3u);  // ts, events, data_parallel_rank
  EXPECT_EQ(batch.via.array.ptr[0].as<double>(), 1.5);
  EXPECT_EQ(batch.via.array.ptr[2].as<int>(), 0);
  const msgpack::object& evs = batch.via.array.ptr[1];
  ASSERT_EQ(evs.via.array.size, 3u);
  const msgpack::object& s = evs.via.array.ptr[0];
  ASSERT_EQ(s.via.array.size, 10u);
  EXPECT_EQ(s.via.array.ptr[0].as<std::string>(), "BlockStored");
  ASSERT_EQ(s.via.array.ptr[1].via.array.size, 2u);
  EXPECT_EQ(s.via.array.ptr[1].via.array.ptr[0].type, msgpack::type::BIN);
  EXPECT_EQ(s.via.array.ptr[1].via.array.ptr[0].via.bin.size, 32u);
  EXPECT_EQ(static_cast<int>(s.via.array.ptr[2].via.bin.ptr[0]), 9);  // parent
  EXPECT_EQ(s.via.array.ptr[3].as<std::vector<int>>(), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(s.via.array.ptr[4].as<int>(), 2);                // block_size
  EXPECT_TRUE(s.via.array.ptr[5].is_nil());                  // lora_id
  EXPECT_EQ(s.via.array.ptr[6].as<std::string>(), "GPU");    // medium
  EXPECT_TRUE(s.via.array.ptr[7].is_nil());                  // lora_name
  ASSERT_EQ(s.via.array.ptr[8].type, msgpack::type::ARRAY);  // extra_keys: one per block
  ASSERT_EQ(s.via.array.ptr[8].via.array.size, 2u);
  EXPECT_TRUE(s.via.array.ptr[8].via.array.ptr[0].is_nil());
  EXPECT_TRUE(s.via.array.ptr[8].via.array.ptr[1].is_nil());
  EXPECT_EQ(s.via.array.ptr[9].as<int>(), 0);  // group_idx
  const msgpack::object& r = evs.via.array.ptr[1];
  ASSERT_EQ(r.via.array.size, 4u);
  EXPECT_EQ(r.via.array.ptr[0].as<std::string>(), "BlockRemoved");
  EXPECT_EQ(r.via.array.ptr[2].as<std::string>(), "GPU");
  const msgpack::object& c = evs.via.array.ptr[2];
  ASSERT_EQ(c.via.array.size, 1u);
  EXPECT_EQ(c.via.array.ptr[0].as<std::string>(), "AllBlocksCleared");
}

// extra_keys as msgspec encodes list[tuple | None] | None: per block nil or an array whose
// strings are LoRA names and salts and whose pairs are (identifier, offset); nil as a whole
// when no block is listed. The JSONL sink writes the same structure.
TEST(KvEventsTest, ExtraKeysArePerBlockTuplesOrNil) {
  BlockStored stored;
  stored.block_hashes = {hash_of(1), hash_of(2), hash_of(3)};
  stored.block_size = 4;
  stored.lora_name = "l1";
  stored.extra_keys = {std::vector<ExtraKey>{"l1", MultiModalKey{"img", 3}, "s1"},
                       std::vector<ExtraKey>{"l1", MultiModalKey{"img", -1}}, std::nullopt};
  BlockStored empty;  // a hybrid group whose new blocks were all null
  empty.block_size = 4;
  const std::string bytes = encode_kv_event_batch(0, {stored, empty}, 0);
  msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& evs = oh.get().via.array.ptr[1];
  const msgpack::object& keys = evs.via.array.ptr[0].via.array.ptr[8];
  ASSERT_EQ(keys.via.array.size, 3u);
  const msgpack::object& first = keys.via.array.ptr[0];
  ASSERT_EQ(first.via.array.size, 3u);
  EXPECT_EQ(first.via.array.ptr[0].as<std::string>(), "l1");
  EXPECT_EQ(first.via.array.ptr[1].via.array.ptr[0].as<std::string>(), "img");
  EXPECT_EQ(first.via.array.ptr[1].via.array.ptr[1].as<int>(), 3);
  EXPECT_EQ(first.via.array.ptr[2].as<std::string>(), "s1");
  const msgpack::object& second = keys.via.array.ptr[1];
  ASSERT_EQ(second.via.array.size, 2u);
  EXPECT_EQ(second.via.array.ptr[1].via.array.ptr[1].as<int>(), -1);
  EXPECT_TRUE(keys.via.array.ptr[2].is_nil());
  EXPECT_TRUE(evs.via.array.ptr[1].via.array.ptr[8].is_nil());

  const fs::path file = fs::temp_directory_path() / ("kvsim_extra_keys_" + std::to_string(::getpid()) + ".jsonl");
  auto sink = make_jsonl_event_sink(file.string(), /*overwrite=*/true);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  ASSERT_TRUE((*sink)->publish(0, 0.0, {stored, empty}).ok());
  ASSERT_TRUE((*sink)->close().ok());
  std::ifstream in(file);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const auto batch = nlohmann::json::parse(line);
  EXPECT_EQ(batch["events"][0]["extra_keys"],
            nlohmann::json::parse(R"([["l1", ["img", 3], "s1"], ["l1", ["img", -1]], null])"));
  EXPECT_TRUE(batch["events"][1]["extra_keys"].is_null());
  fs::remove(file);
}

struct Outcome {
  std::string digest;
  std::int64_t evictions = 0;
  std::vector<std::string> cached;
};

using Options = std::vector<std::pair<std::string, std::string>>;

Outcome replay_with(const std::string& events_file, const Options& options) {
  ReplayConfig c;
  for (const auto& [name, value] : options) EXPECT_TRUE(set_option(c, name, value).ok()) << name;
  c.scheduler.cache.num_blocks = 400;  // small: blocks are evicted
  c.run.limit = 60;
  c.run.replay.keep_decision_text = false;
  c.events.file = events_file;
  auto run = build_replay(c, kTrace);
  EXPECT_TRUE(run.ok()) << run.status().message();
  auto summary = run->make_replayer(c)->run();
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  if (run->events) {
    EXPECT_TRUE(run->events->close().ok());
  }
  return {summary->digest, summary->evictions, cached_block_hashes(*run->scheduler)};
}

// Replays the events of a JSONL file into the multiset of cached blocks, keyed as
// cached_block_hashes lists them ("HEX GROUP" when `with_group`).
std::vector<std::string> rebuild_from_jsonl(const fs::path& file, bool with_group, int* batches) {
  std::map<std::string, int> cache;  // key -> blocks cached under it
  std::ifstream in(file);
  std::string line;
  double last_ts = -1;
  while (std::getline(in, line)) {
    const auto batch = nlohmann::json::parse(line);
    EXPECT_GE(batch["ts"].get<double>(), last_ts);
    last_ts = batch["ts"].get<double>();
    ++*batches;
    for (const auto& e : batch["events"]) {
      const std::string type = e["type"];
      if (type == "AllBlocksCleared") cache.clear();
      const std::string group = with_group ? " " + std::to_string(e.value("group_idx", -1)) : "";
      for (const auto& h : e.value("block_hashes", nlohmann::json::array())) {
        const std::string key = h.get<std::string>() + group;
        if (type == "BlockStored")
          ++cache[key];
        else if (--cache[key] == 0)
          cache.erase(key);
      }
    }
  }
  std::vector<std::string> rebuilt;
  for (const auto& [h, n] : cache) rebuilt.insert(rebuilt.end(), static_cast<std::size_t>(n), h);
  return rebuilt;
}

// Replays with and without events: the same digest and cache, evictions, and a cache rebuilt
// from the events that equals the pool's. `groups`: the group ids the cache holds blocks of
// (empty for one full-attention group, whose keys carry no group). Returns every event.
std::vector<nlohmann::json> check_events_rebuild_the_cache(const Options& options,
                                                           const std::set<std::string>& groups) {
  const fs::path file = fs::temp_directory_path() / ("kvsim_events_" + std::to_string(::getpid()) + ".jsonl");
  const Outcome off = replay_with("", options);
  const Outcome on = replay_with(file.string(), options);
  EXPECT_EQ(off.digest, on.digest);
  EXPECT_GT(on.evictions, 0);
  EXPECT_EQ(off.cached, on.cached);
  int batches = 0;
  EXPECT_EQ(rebuild_from_jsonl(file, !groups.empty(), &batches), on.cached);
  EXPECT_GT(batches, 10);
  if (!groups.empty()) {  // blocks of every group are cached, each listed with its group
    std::set<std::string> cached_groups;
    for (const std::string& entry : on.cached) cached_groups.insert(entry.substr(entry.find(' ') + 1));
    EXPECT_EQ(cached_groups, groups);
  }
  std::vector<nlohmann::json> events;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const auto batch = nlohmann::json::parse(line);
    for (const auto& e : batch["events"]) events.push_back(e);
  }
  fs::remove(file);
  return events;
}

TEST(KvEventsTest, EventsChangeNoDecisionAndRebuildTheCache) {
  check_events_rebuild_the_cache({{"model", "llama3-8b"}}, {});
}

// gpt-oss-20b: a full-attention group and a sliding-window group; every event names its group
// and no null block is ever listed.
TEST(KvEventsTest, HybridEventsCarryTheGroupAndRebuildTheCache) {
  check_events_rebuild_the_cache({{"model", "gpt-oss-20b"}}, {"0", "1"});
}

// Qwen3-Next: three Mamba groups and one full-attention group (ids 0-2 and 3), 544-token
// blocks. In align mode a Mamba table keeps only the states of chunk ends, with null entries
// before them: as vLLM's cache_full_blocks, a group's BlockStored lists its real blocks only,
// while parent_block_hash and token_ids cover the whole range from its cached blocks to its
// full ones. A full-attention group never skips one. In both caching modes every event names
// its group and block size, and the events rebuild the cache.
TEST(KvEventsTest, MambaGroupsSendTheirStatesAndRebuildTheCache) {
  for (const char* mode : {"align", "all"}) {
    SCOPED_TRACE(mode);
    const auto events = check_events_rebuild_the_cache({{"model", "qwen3-next-80b-a3b"}, {"mamba-cache-mode", mode}},
                                                       {"0", "1", "2", "3"});
    std::map<int, int> stored, skipping;  // per group: BlockStored events, those that skip nulls
    for (const auto& e : events) {
      if (e["type"] != "BlockStored") continue;
      EXPECT_EQ(e["medium"], "GPU");
      const int group = e["group_idx"];
      EXPECT_EQ(e["block_size"], 544);
      const std::size_t range = e["token_ids"].size() / 544;
      EXPECT_EQ(e["token_ids"].size() % 544, 0u);
      EXPECT_EQ(e["extra_keys"].size(), e["block_hashes"].size());
      ++stored[group];
      skipping[group] += e["block_hashes"].size() < range;
    }
    EXPECT_EQ(stored.size(), 4u);
    EXPECT_EQ(skipping[3], 0);
    if (std::string(mode) == "align") {
      EXPECT_GT(skipping[0] + skipping[1] + skipping[2], 0);
    } else {  // all: a state at every block boundary, nothing skipped when cached
      EXPECT_EQ(skipping[0] + skipping[1] + skipping[2], 0);
    }
  }
}

TEST(KvEventsTest, BadOptionsNameTheOption) {
  ReplayConfig c;
  c.events.zmq.replay_endpoint = "tcp://127.0.0.1:1";
  EXPECT_EQ(c.validate().message(), "--kv-events-replay: needs --kv-events-zmq");
  ReplayConfig d;
  d.events.file = "/nonexistent-dir/x.jsonl";
  auto run = build_replay(d, kTrace);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message(), "--kv-events: cannot create /nonexistent-dir/x.jsonl.tmp-" +
                                        std::to_string(::getpid()) + ": No such file or directory");
}

std::string read_all(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// PATH.tmp-* files beside `file`.
int temporaries_beside(const fs::path& file) {
  int n = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(file.parent_path())) {
    n += e.path().filename().string().rfind(file.filename().string() + ".tmp-", 0) == 0;
  }
  return n;
}

// The events file is a files::AtomicFile: a run that ends without close() (a failed or aborted
// replay) leaves nothing under the final name, and an existing file is kept unless the caller
// asks to overwrite it (kvsim replay --force).
TEST(KvEventsTest, FileAppearsWholeOnCloseAndIsNeverOverwrittenUnasked) {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_events_atomic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "events.jsonl";
  ReplayConfig c;
  c.scheduler.cache.num_blocks = 400;
  c.run.limit = 30;
  c.run.replay.keep_decision_text = false;
  c.events.file = file.string();
  {  // aborted: the replay runs, the sink is dropped without close()
    auto run = build_replay(c, kTrace);
    ASSERT_TRUE(run.ok()) << run.status().message();
    ASSERT_TRUE(run->make_replayer(c)->run().ok());
    EXPECT_FALSE(fs::exists(file));
    EXPECT_EQ(temporaries_beside(file), 1);  // the partial events are under PATH.tmp-<pid> only
  }
  EXPECT_FALSE(fs::exists(file));
  EXPECT_EQ(temporaries_beside(file), 0);

  std::ofstream(file, std::ios::binary) << "the user's file\n";
  auto refused = build_replay(c, kTrace);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "--kv-events: " + file.string() + " exists (use --force to replace it)");
  EXPECT_EQ(read_all(file), "the user's file\n");

  c.events.overwrite_file = true;
  auto run = build_replay(c, kTrace);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_TRUE(run->make_replayer(c)->run().ok());
  EXPECT_EQ(read_all(file), "the user's file\n");  // untouched until close()
  ASSERT_TRUE(run->events->close().ok());
  const std::string events = read_all(file);
  EXPECT_EQ(events.rfind("{\"step\":", 0), 0u) << events.substr(0, 80);
  EXPECT_EQ(events.back(), '\n');
  EXPECT_EQ(temporaries_beside(file), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kv::replay
