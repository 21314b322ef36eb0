#include "replay/kv_event_sink.h"

#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "files/output_file.h"

namespace kv::replay {

namespace {

// ---- msgpack, as msgspec encodes vLLM's structs (vllm/distributed/kv_events.py) -----------
// Every struct there is `array_like=True, omit_defaults=True, tag=True`: a struct is a msgpack
// array whose first element is the tag (the class name) followed by the fields in declaration
// order; trailing fields equal to their defaults may be left out. ExternalBlockHash is `bytes`:
// a hash is a bin of its digest's bytes. (vLLM's newest main encodes these structs as maps, no
// longer array_like, and adds kv_cache_spec_kind / kv_cache_spec_sliding_window to BlockStored;
// this is the array_like layout that the fields lora_name, extra_keys and group_idx came with.)
using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_hash(Packer& p, const BlockHash& h) {
  p.pack_bin(h.size);
  p.pack_bin_body(reinterpret_cast<const char*>(h.bytes.data()), h.size);
}

void pack_hashes(Packer& p, const std::vector<BlockHash>& hashes) {
  p.pack_array(static_cast<std::uint32_t>(hashes.size()));
  for (const BlockHash& h : hashes) pack_hash(p, h);
}

void pack_str(Packer& p, const std::string& s) {
  p.pack_str(static_cast<std::uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

// extra_keys: None when no block is listed; else one entry per block, None or a tuple (an array)
// of its keys: a LoRA name or salt as a str, a multimodal item as the tuple (identifier, offset).
void pack_extra_keys(Packer& p, const std::vector<BlockExtraKeys>& extra_keys) {
  if (extra_keys.empty()) {
    p.pack_nil();
    return;
  }
  p.pack_array(static_cast<std::uint32_t>(extra_keys.size()));
  for (const BlockExtraKeys& block : extra_keys) {
    if (!block) {
      p.pack_nil();
      continue;
    }
    p.pack_array(static_cast<std::uint32_t>(block->size()));
    for (const ExtraKey& key : *block) {
      if (const auto* text = std::get_if<std::string>(&key)) {
        pack_str(p, *text);
      } else {
        const auto& mm = std::get<MultiModalKey>(key);
        p.pack_array(2);
        pack_str(p, mm.identifier);
        p.pack(mm.offset);
      }
    }
  }
}

// BlockStored: block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
// lora_name, extra_keys, group_idx.
void pack_event(Packer& p, const BlockStored& e) {
  p.pack_array(10);
  pack_str(p, "BlockStored");
  pack_hashes(p, e.block_hashes);
  if (e.parent_block_hash)
    pack_hash(p, *e.parent_block_hash);
  else
    p.pack_nil();
  p.pack_array(static_cast<std::uint32_t>(e.token_ids.size()));
  for (TokenId t : e.token_ids) p.pack(static_cast<std::int64_t>(t));
  p.pack(e.block_size);
  p.pack_nil();  // lora_id: deprecated, no LoRA ids here
  pack_str(p, e.medium);
  if (e.lora_name.empty())
    p.pack_nil();
  else
    pack_str(p, e.lora_name);
  pack_extra_keys(p, e.extra_keys);
  p.pack(static_cast<std::uint32_t>(e.group_idx));
}

// BlockRemoved: block_hashes, medium, group_idx.
void pack_event(Packer& p, const BlockRemoved& e) {
  p.pack_array(4);
  pack_str(p, "BlockRemoved");
  pack_hashes(p, e.block_hashes);
  pack_str(p, e.medium);
  p.pack(static_cast<std::uint32_t>(e.group_idx));
}

void pack_event(Packer& p, const AllBlocksCleared&) {
  p.pack_array(1);
  pack_str(p, "AllBlocksCleared");
}

// ---- JSON ------------------------------------------------------------------------------------
nlohmann::ordered_json hashes_json(const std::vector<BlockHash>& hashes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const BlockHash& h : hashes) out.push_back(h.hex());
  return out;
}

// As msgspec's JSON encoder writes them: null, or per block null or an array of keys.
nlohmann::ordered_json extra_keys_json(const std::vector<BlockExtraKeys>& extra_keys) {
  if (extra_keys.empty()) return nullptr;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const BlockExtraKeys& block : extra_keys) {
    if (!block) {
      out.push_back(nullptr);
      continue;
    }
    nlohmann::ordered_json keys = nlohmann::ordered_json::array();
    for (const ExtraKey& key : *block) {
      if (const auto* text = std::get_if<std::string>(&key))
        keys.push_back(*text);
      else
        keys.push_back({std::get<MultiModalKey>(key).identifier, std::get<MultiModalKey>(key).offset});
    }
    out.push_back(std::move(keys));
  }
  return out;
}

nlohmann::ordered_json event_json(const KvEvent& event) {
  return std::visit(
      [](const auto& e) -> nlohmann::ordered_json {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, BlockStored>) {
          return {{"type", "BlockStored"},
                  {"block_hashes", hashes_json(e.block_hashes)},
                  {"parent_block_hash", e.parent_block_hash ? nlohmann::ordered_json(e.parent_block_hash->hex())
                                                            : nlohmann::ordered_json(nullptr)},
                  {"token_ids", e.token_ids},
                  {"block_size", e.block_size},
                  {"lora_id", nullptr},
                  {"medium", e.medium},
                  {"lora_name",
                   e.lora_name.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.lora_name)},
                  {"extra_keys", extra_keys_json(e.extra_keys)},
                  {"group_idx", e.group_idx}};
        } else if constexpr (std::is_same_v<E, BlockRemoved>) {
          return {{"type", "BlockRemoved"},
                  {"block_hashes", hashes_json(e.block_hashes)},
                  {"medium", e.medium},
                  {"group_idx", e.group_idx}};
        } else {
          return {{"type", "AllBlocksCleared"}};
        }
      },
      event);
}

// Written to PATH.tmp-<pid> and renamed onto PATH by close(): a run that fails or is killed
// never leaves a partial events file under PATH, nor replaces the one there.
class JsonlSink : public KvEventSink {
 public:
  explicit JsonlSink(files::AtomicFile file) : file_(std::move(file)) {}

  Status publish(std::int64_t step, double ts_seconds, const std::vector<KvEvent>& events) override {
    if (closed_) return Status::error("--kv-events: " + file_.path() + " is closed");
    nlohmann::ordered_json batch = {{"step", step}, {"ts", ts_seconds}, {"events", nlohmann::ordered_json::array()}};
    for (const KvEvent& e : events) batch["events"].push_back(event_json(e));
    file_.out().write(batch.dump() + "\n");
    return file_.out().status().with_context("--kv-events: ");
  }

  Status close() override {
    if (closed_) return {};
    closed_ = true;
    return file_.commit().with_context("--kv-events: ");
  }

 private:
  files::AtomicFile file_;  // abandoned (its temporary removed) if never closed
  bool closed_ = false;
};

class FanoutSink : public KvEventSink {
 public:
  explicit FanoutSink(std::vector<std::unique_ptr<KvEventSink>> sinks) : sinks_(std::move(sinks)) {}

  Status publish(std::int64_t step, double ts_seconds, const std::vector<KvEvent>& events) override {
    for (auto& s : sinks_) {
      if (Status st = s->publish(step, ts_seconds, events); !st.ok()) return st;
    }
    return {};
  }

  Status close() override {
    Status first;
    for (auto& s : sinks_) {
      Status st = s->close();
      if (first.ok() && !st.ok()) first = st;
    }
    return first;
  }

 private:
  std::vector<std::unique_ptr<KvEventSink>> sinks_;
};

}  // namespace

std::string encode_kv_event_batch(double ts_seconds, const std::vector<KvEvent>& events, int data_parallel_rank) {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_array(3);  // KVEventBatch: ts, events, data_parallel_rank
  p.pack_double(ts_seconds);
  p.pack_array(static_cast<std::uint32_t>(events.size()));
  for (const KvEvent& e : events) std::visit([&p](const auto& ev) { pack_event(p, ev); }, e);
  p.pack(data_parallel_rank);
  return std::string(buf.data(), buf.size());
}

StatusOr<std::unique_ptr<KvEventSink>> make_jsonl_event_sink(const std::string& path, bool overwrite) {
  StatusOr<files::AtomicFile> file = files::AtomicFile::create(path, overwrite);
  if (!file.ok()) return file.status().with_context("--kv-events: ");
  return std::unique_ptr<KvEventSink>(std::make_unique<JsonlSink>(std::move(file.value())));
}

std::unique_ptr<KvEventSink> make_fanout_event_sink(std::vector<std::unique_ptr<KvEventSink>> sinks) {
  return std::make_unique<FanoutSink>(std::move(sinks));
}

Status KvEventOptions::validate() const {
  if (!zmq.replay_endpoint.empty() && zmq.endpoint.empty()) {
    return Status::error("--kv-events-replay: needs --kv-events-zmq");
  }
  return {};
}

}  // namespace kv::replay
