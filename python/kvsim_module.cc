// The `kvsim` Python module (pybind11): a front end like cli/, over the same layers.
//   kvsim.KvCacheManager   the core's manager, request by request (lookup / allocate / free,
//                          new_step / rollback for Mamba and drafts), for one full-attention
//                          group or the groups of a layer list (the ops shell's `layers=`), its
//                          block tables as numpy arrays and its KV events as dicts;
//   kvsim.Replay           a replay configured by keyword arguments generated from the command
//                          line's option table (python/replay_keywords.h) or a dict of option
//                          texts; its summary, per-request and per-step tables (numpy arrays,
//                          or pandas DataFrames), events, cache;
//   kvsim.run_ops(script)  an ops script (ops/ops_interpreter.h), its output lines.
// Invariants:
//   1. Bad input raises ValueError with the message the command prints (without "kvsim ...: ").
//   2. Nothing here decides: a replay run from Python has the digest `kvsim replay` prints.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>

#include "model/kv_cache_manager.h"
#include "model/mamba_cache_mode.h"
#include "ops/ops_interpreter.h"
#include "python/replay_keywords.h"
#include "replay/replay_builder.h"

namespace py = pybind11;

namespace kv::python {

namespace {

[[noreturn]] void raise(const std::string& message) { throw py::value_error(message); }

template <typename T>
T value_or_raise(StatusOr<T> v) {
  if (!v.ok()) raise(v.status().message());
  return std::move(v).value();
}

py::list hashes_list(const std::vector<BlockHash>& hashes) {
  py::list out;
  for (const BlockHash& h : hashes) out.append(h.hex());
  return out;
}

// As vLLM's BlockStored.extra_keys: None, or per block None or a tuple of its keys (a LoRA name
// or salt as str, a multimodal item as (identifier, offset)).
py::object extra_keys_object(const std::vector<BlockExtraKeys>& extra_keys) {
  if (extra_keys.empty()) return py::none();
  py::list out;
  for (const BlockExtraKeys& block : extra_keys) {
    if (!block) {
      out.append(py::none());
      continue;
    }
    py::list keys;
    for (const ExtraKey& key : *block) {
      if (const auto* text = std::get_if<std::string>(&key))
        keys.append(py::str(*text));
      else
        keys.append(py::make_tuple(std::get<MultiModalKey>(key).identifier, std::get<MultiModalKey>(key).offset));
    }
    out.append(py::tuple(keys));
  }
  return out;
}

py::dict event_dict(const KvEvent& event) {
  return std::visit(
      [](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        py::dict d;
        if constexpr (std::is_same_v<E, BlockStored>) {
          d["type"] = "BlockStored";
          d["block_hashes"] = hashes_list(e.block_hashes);
          d["parent_block_hash"] = e.parent_block_hash ? py::object(py::str(e.parent_block_hash->hex())) : py::none();
          d["token_ids"] = py::array_t<TokenId>(static_cast<py::ssize_t>(e.token_ids.size()), e.token_ids.data());
          d["block_size"] = e.block_size;
          d["medium"] = e.medium;
          d["lora_name"] = e.lora_name.empty() ? py::object(py::none()) : py::object(py::str(e.lora_name));
          d["extra_keys"] = extra_keys_object(e.extra_keys);
          d["group_idx"] = e.group_idx;
        } else if constexpr (std::is_same_v<E, BlockRemoved>) {
          d["type"] = "BlockRemoved";
          d["block_hashes"] = hashes_list(e.block_hashes);
          d["medium"] = e.medium;
          d["group_idx"] = e.group_idx;
        } else {
          d["type"] = "AllBlocksCleared";
        }
        return d;
      },
      event);
}

py::list events_list(const std::vector<KvEvent>& events) {
  py::list out;
  for (const KvEvent& e : events) out.append(event_dict(e));
  return out;
}

template <typename T>
py::array_t<T> to_array(const std::vector<T>& v) {
  return py::array_t<T>(static_cast<py::ssize_t>(v.size()), v.data());
}

py::dict stats_dict(const PrefixCacheStats& s) {
  py::dict d;
  d["lookups"] = s.lookups;
  d["queries"] = s.queries;
  d["hits"] = s.hits;
  d["preempted_lookups"] = s.preempted_lookups;
  d["preempted_queries"] = s.preempted_queries;
  d["preempted_hits"] = s.preempted_hits;
  return d;
}

// ---- KvCacheManager --------------------------------------------------------------------------

// What a manager is built from, as the constructor's keyword arguments.
struct ManagerOptions {
  int num_blocks = 0;
  int block_size = 16;
  bool enable_caching = true;
  bool enable_kv_events = false;
  std::string hash = "sha256_cbor", free_order = "classic", eviction_policy = "lru";
  std::string layers;            // the ops shell's `layers=` LIST; empty: one full-attention group
  std::string mamba_cache_mode;  // none | align | all; empty: align with caching, none without
  int num_speculative_tokens = 0;
  bool use_eagle = false;
  std::int64_t max_model_len = 1 << 20;
};

// The groups of a layer list, with the Mamba mode and speculative blocks of the options.
std::vector<KvCacheGroupSpec> groups_of(const ManagerOptions& o) {
  if (o.layers.empty()) {
    if (!o.mamba_cache_mode.empty() || o.num_speculative_tokens != 0) {
      raise("mamba_cache_mode and num_speculative_tokens need layers");
    }
    return {};
  }
  LayerListDefaults d;
  d.block_size = o.block_size;
  d.max_model_len = o.max_model_len;
  d.mamba_mode = o.enable_caching ? MambaCacheMode::kAlign : MambaCacheMode::kNone;
  if (!o.mamba_cache_mode.empty()) {
    const std::optional<MambaCacheMode> mode = parse_mamba_cache_mode(o.mamba_cache_mode);
    if (!mode) raise("mamba_cache_mode: must be one of none, align, all, got '" + o.mamba_cache_mode + "'");
    d.mamba_mode = *mode;
  }
  if (o.num_speculative_tokens < 0 || o.num_speculative_tokens > 1024) {
    raise("num_speculative_tokens: must be 0..1024");
  }
  d.num_speculative_blocks = o.num_speculative_tokens;
  auto layers = parse_layers_spec(o.layers, d);
  if (!layers.ok()) raise("layers: " + layers.status().message());
  auto groups = get_kv_cache_groups(*layers);
  if (!groups.ok()) raise("layers: " + groups.status().message());
  return std::move(*groups);
}

// One list of block ids for one group, a list of lists (one per group) for several.
py::object per_group(const GroupBlockIds& blocks, std::size_t num_groups) {
  if (num_groups == 1) return py::cast(blocks.empty() ? std::vector<BlockId>{} : blocks.front());
  std::vector<std::vector<BlockId>> all(blocks.begin(), blocks.end());
  all.resize(num_groups);  // caching off: no hit, one empty list each
  return py::cast(all);
}

// The core's manager with the requests it serves, addressed by id from Python.
class PyKvCacheManager {
 public:
  explicit PyKvCacheManager(const ManagerOptions& o) {
    if (o.num_blocks < 2) raise("num_blocks: the pool needs at least 2 blocks (the null block and one more)");
    if (o.block_size < 1 || o.block_size > 1024) raise("block_size: must be 1..1024");
    if (o.max_model_len < 1) raise("max_model_len: must be at least 1");
    KvCacheConfig c;
    c.num_blocks = o.num_blocks;
    c.block_size = o.block_size;
    c.enable_caching = o.enable_caching;
    c.enable_kv_events = o.enable_kv_events;
    c.use_eagle = o.use_eagle;
    c.max_model_len = o.max_model_len;
    if (!parse_free_order(o.free_order, &c.free_order)) {
      raise("free_order: must be one of classic, unhashed_first, got '" + o.free_order + "'");
    }
    if (!parse_eviction_policy(o.eviction_policy, &c.eviction_policy)) {
      raise("eviction_policy: must be one of " + std::string(eviction_policy_names()) + ", got '" + o.eviction_policy +
            "'");
    }
    const std::optional<HashAlgo> algo = parse_hash_algo(o.hash);
    if (!algo) raise("hash: must be one of sha256_cbor, xxhash_cbor, got '" + o.hash + "'");
    c.groups = groups_of(o);
    if (!c.groups.empty()) c.block_size = cache_block_size(c.groups);
    if (Status s = c.validate(); !s.ok()) raise(s.message());
    hasher_ = std::make_unique<BlockHasher>(*algo);
    manager_ = std::make_unique<KvCacheManager>(c);
  }

  // mm_items: (identifier, offset, length) per multimodal item, in offset order (the ops
  // shell's mm=ID@OFFSET+LENGTH,...).
  void add_request(const std::string& id, std::vector<TokenId> tokens, std::string cache_salt, std::string lora_name,
                   const std::vector<std::tuple<std::string, std::int64_t, std::int64_t>>& mm_items) {
    if (requests_.count(id) != 0) raise("request " + id + " already exists");
    HashExtras extras;
    extras.cache_salt = std::move(cache_salt);
    extras.lora_name = std::move(lora_name);
    for (const auto& [identifier, offset, length] : mm_items) {
      if (identifier.empty()) raise("mm_items: an item needs an identifier");
      if (offset < 0 || length < 1) raise("mm_items: '" + identifier + "' needs offset >= 0 and length >= 1");
      if (!extras.mm_items.empty() && offset < extras.mm_items.back().offset) {
        raise("mm_items: items must be in offset order, '" + identifier + "' is not");
      }
      extras.mm_items.push_back(MultiModalItem{identifier, offset, length});
    }
    const KvCacheConfig& c = manager_->config();
    requests_.emplace(id, std::make_unique<Request>(id, std::move(tokens), std::move(extras),
                                                    c.enable_caching ? hasher_.get() : nullptr, c.hash_block_size()));
  }

  // (hit block ids, hit tokens); remembered for the next allocate of this request.
  std::pair<py::object, std::int64_t> lookup(const std::string& id) {
    Request& r = find(id);
    if (r.num_computed_tokens != 0) raise("request " + id + ": lookup after tokens were computed");
    CacheHit hit = manager_->get_computed_blocks(r);
    pending_hits_[id] = hit;
    return {per_group(hit.blocks, manager_->num_groups()), hit.num_tokens};
  }

  // The new block ids, or None when the pool is short. Advances the computed tokens by the hit,
  // the new tokens and the drafts (scheduled past the request's tokens, never cached).
  py::object allocate(const std::string& id, std::int64_t num_new_tokens, std::int64_t num_lookahead_tokens,
                      std::int64_t num_draft_tokens, std::int64_t num_encoder_tokens) {
    Request& r = find(id);
    if (num_new_tokens < 0) raise("num_new_tokens: must be >= 0");
    for (const auto& [name, n] :
         {std::pair{"num_lookahead_tokens", num_lookahead_tokens}, std::pair{"num_draft_tokens", num_draft_tokens},
          std::pair{"num_encoder_tokens", num_encoder_tokens}}) {
      if (n < 0 || n > (1 << 24)) raise(std::string(name) + ": must be 0..16777216");
    }
    CacheHit hit;
    if (auto it = pending_hits_.find(id); it != pending_hits_.end()) hit = it->second;
    if (r.num_computed_tokens + hit.num_tokens + num_new_tokens > r.num_tokens()) {
      raise("request " + id + ": allocating past its " + std::to_string(r.num_tokens()) + " tokens");
    }
    if (num_new_tokens + num_draft_tokens == 0) raise("request " + id + ": allocating 0 tokens");
    auto blocks = manager_->allocate_slots(r, num_new_tokens + num_draft_tokens, hit, num_lookahead_tokens, false,
                                           num_encoder_tokens);
    if (!blocks) return py::none();
    pending_hits_.erase(id);
    r.num_computed_tokens += hit.num_tokens + num_new_tokens + num_draft_tokens;
    return per_group(*blocks, manager_->num_groups());
  }

  // Rejected draft tokens: the computed tokens go down, the blocks stay.
  void rollback(const std::string& id, std::int64_t num_rejected) {
    Request& r = find(id);
    if (num_rejected < 0 || num_rejected > r.num_computed_tokens) {
      raise("num_rejected: must be 0.." + std::to_string(r.num_computed_tokens));
    }
    r.num_computed_tokens -= num_rejected;
  }

  void append_tokens(const std::string& id, const std::vector<TokenId>& tokens) { find(id).append_tokens(tokens); }

  void free(const std::string& id) {
    manager_->free(find(id));
    requests_.erase(id);
    pending_hits_.erase(id);
  }

  py::array_t<BlockId> block_table(const std::string& id, std::size_t group) {
    find(id);
    if (group >= manager_->num_groups()) {
      raise("group: must be 0.." + std::to_string(manager_->num_groups() - 1) + ", got " + std::to_string(group));
    }
    const std::span<const BlockId> blocks = manager_->blocks_of(id, group);
    return py::array_t<BlockId>(static_cast<py::ssize_t>(blocks.size()), blocks.data());
  }

  std::int64_t num_computed_tokens(const std::string& id) { return find(id).num_computed_tokens; }

  std::vector<std::string> block_hashes(const std::string& id) {
    std::vector<std::string> out;
    for (const BlockHash& h : find(id).block_hashes()) out.push_back(h.hex());
    return out;
  }

  // The KV-cache groups: type, layers, block size, and for Mamba the mode and speculative blocks.
  py::list groups() const {
    py::list out;
    for (const KvCacheGroupSpec& g : manager_->config().effective_groups()) {
      py::dict d;
      d["type"] = to_string(g.spec.type);
      d["layers"] = g.layer_names;
      d["block_size"] = g.spec.block_size;
      if (g.spec.window > 0) d["window"] = g.spec.window;
      if (g.spec.chunk > 0) d["chunk"] = g.spec.chunk;
      if (g.spec.type == AttentionType::kMamba) {
        d["mamba_cache_mode"] = to_string(g.spec.mamba_mode);
        d["num_speculative_blocks"] = g.spec.num_speculative_blocks;
      }
      out.append(d);
    }
    return out;
  }

  KvCacheManager& manager() { return *manager_; }

 private:
  Request& find(const std::string& id) {
    auto it = requests_.find(id);
    if (it == requests_.end()) raise("unknown request " + id);
    return *it->second;
  }

  std::unique_ptr<BlockHasher> hasher_;
  std::unique_ptr<KvCacheManager> manager_;
  std::map<std::string, std::unique_ptr<Request>> requests_;
  std::map<std::string, CacheHit> pending_hits_;  // from lookup, consumed by allocate
};

void bind_manager(py::module_& m) {
  py::class_<PyKvCacheManager>(m, "KvCacheManager",
                               "vLLM v1's KVCacheManager (model/kv_cache_manager.h): one full-attention group, or "
                               "the groups of `layers` (the ops shell's layer list: full, sliding_window:W, "
                               "chunked_local:C, mamba, cross_attention, rswa:W, each optionally *COUNT). With "
                               "several groups, block lists are one list per group")
      .def(py::init([](int num_blocks, int block_size, bool enable_caching, bool enable_kv_events,
                       const std::string& hash, const std::string& free_order, const std::string& eviction_policy,
                       const std::string& layers, const std::string& mamba_cache_mode, int num_speculative_tokens,
                       bool use_eagle, std::int64_t max_model_len) {
             return std::make_unique<PyKvCacheManager>(ManagerOptions{
                 num_blocks, block_size, enable_caching, enable_kv_events, hash, free_order, eviction_policy, layers,
                 mamba_cache_mode, num_speculative_tokens, use_eagle, max_model_len});
           }),
           py::arg("num_blocks"), py::arg("block_size") = 16, py::arg("enable_caching") = true,
           py::arg("enable_kv_events") = false, py::arg("hash") = "sha256_cbor", py::arg("free_order") = "classic",
           py::arg("eviction_policy") = "lru", py::arg("layers") = "", py::arg("mamba_cache_mode") = "",
           py::arg("num_speculative_tokens") = 0, py::arg("use_eagle") = false, py::arg("max_model_len") = 1 << 20)
      .def("add_request", &PyKvCacheManager::add_request, py::arg("id"), py::arg("tokens"), py::arg("cache_salt") = "",
           py::arg("lora_name") = "",
           py::arg("mm_items") = std::vector<std::tuple<std::string, std::int64_t, std::int64_t>>{},
           "a request; its cache salt, LoRA name and multimodal items (identifier, offset, length) enter its block "
           "hashes and its KV events' extra keys")
      .def("lookup", &PyKvCacheManager::lookup, py::arg("id"), "(hit block ids, hit tokens)")
      .def("allocate", &PyKvCacheManager::allocate, py::arg("id"), py::arg("num_new_tokens"),
           py::arg("num_lookahead_tokens") = 0, py::arg("num_draft_tokens") = 0, py::arg("num_encoder_tokens") = 0,
           "new block ids, or None when the pool is short; draft tokens are scheduled past the request's tokens, "
           "encoder tokens give cross-attention groups their blocks")
      .def(
          "new_step", [](PyKvCacheManager& p) { p.manager().new_step(); },
          "a scheduler step starts: Mamba groups may now hit the states cached in the last one")
      .def("rollback", &PyKvCacheManager::rollback, py::arg("id"), py::arg("num_rejected"),
           "rejected draft tokens: the request's computed tokens go down, its blocks stay")
      .def("append_tokens", &PyKvCacheManager::append_tokens, py::arg("id"), py::arg("tokens"))
      .def("free", &PyKvCacheManager::free, py::arg("id"))
      .def("block_table", &PyKvCacheManager::block_table, py::arg("id"), py::arg("group") = 0)
      .def("block_hashes", &PyKvCacheManager::block_hashes, py::arg("id"))
      .def("num_computed_tokens", &PyKvCacheManager::num_computed_tokens, py::arg("id"))
      .def("reset_prefix_cache", [](PyKvCacheManager& p) { return p.manager().reset_prefix_cache(); })
      .def("take_events", [](PyKvCacheManager& p) { return events_list(p.manager().take_events()); })
      .def("cached_hashes", [](PyKvCacheManager& p) { return replay::cached_block_hashes(p.manager().pool()); })
      .def("check_invariants",
           [](PyKvCacheManager& p) {
             std::string why;
             if (!p.manager().check_invariants(&why)) throw std::runtime_error(why);
           })
      .def_property_readonly("groups", &PyKvCacheManager::groups)
      .def_property_readonly("num_groups", [](PyKvCacheManager& p) { return p.manager().num_groups(); })
      .def_property_readonly("num_free_blocks", [](PyKvCacheManager& p) { return p.manager().num_free_blocks(); })
      .def_property_readonly("usage", [](PyKvCacheManager& p) { return p.manager().usage(); })
      .def_property_readonly("stats", [](PyKvCacheManager& p) { return stats_dict(p.manager().stats()); });
}

// ---- Replay ----------------------------------------------------------------------------------

// Keeps every event batch for Python and passes it on to the run's own sink, if any.
class CollectingSink : public replay::KvEventSink {
 public:
  explicit CollectingSink(replay::KvEventSink* next) : next_(next) {}
  Status publish(std::int64_t step, double ts, const std::vector<KvEvent>& events) override {
    batches_.push_back({step, ts, events});
    return next_ ? next_->publish(step, ts, events) : Status();
  }
  Status close() override { return next_ ? next_->close() : Status(); }

  struct Batch {
    std::int64_t step;
    double ts;
    std::vector<KvEvent> events;
  };
  std::vector<Batch> batches_;

 private:
  replay::KvEventSink* next_;
};

// An option value as the command line spells it: True/False -> on/off, numbers as text.
std::string option_text(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "on" : "off";
  return py::str(v).cast<std::string>();
}

// Per-request metrics as columns: ids and statuses as lists, numbers as numpy arrays.
py::dict metrics_dict(const std::vector<replay::RequestMetrics>& ms) {
  std::vector<std::int64_t> arrival, first, finish, prompt, output, cached, preempt;
  py::list ids, status;
  for (const replay::RequestMetrics& m : ms) {
    ids.append(m.id);
    status.append(m.status);
    arrival.push_back(m.arrival_us);
    first.push_back(m.first_token_us);
    finish.push_back(m.finish_us);
    prompt.push_back(m.prompt_tokens);
    output.push_back(m.output_tokens);
    cached.push_back(m.cached_tokens);
    preempt.push_back(m.preemptions);
  }
  py::dict d;
  d["id"] = ids;
  d["status"] = status;
  d["arrival_us"] = to_array(arrival);
  d["first_token_us"] = to_array(first);
  d["finish_us"] = to_array(finish);
  d["prompt_tokens"] = to_array(prompt);
  d["output_tokens"] = to_array(output);
  d["cached_tokens"] = to_array(cached);
  d["preemptions"] = to_array(preempt);
  return d;
}

// Per-step records as columns (numpy arrays), the columns of steps.csv (docs/results.md).
py::dict steps_dict(const std::vector<replay::StepRecord>& rs) {
  const auto column = [&](auto field) {
    using T = std::decay_t<decltype(field(rs.front()))>;
    std::vector<T> v;
    v.reserve(rs.size());
    for (const replay::StepRecord& r : rs) v.push_back(field(r));
    return to_array(v);
  };
  py::dict d;
  if (rs.empty()) return d;
  d["step"] = column([](const auto& r) { return r.step; });
  d["start_us"] = column([](const auto& r) { return r.start_us; });
  d["duration_ns"] = column([](const auto& r) { return r.duration_ns; });
  d["predicted_ns"] = column([](const auto& r) { return r.predicted_ns; });
  d["measured_ns"] = column([](const auto& r) { return r.measured_ns; });
  d["num_requests"] = column([](const auto& r) { return std::int64_t{r.num_requests}; });
  d["prefill_tokens"] = column([](const auto& r) { return r.prefill_tokens; });
  d["decode_tokens"] = column([](const auto& r) { return r.decode_tokens; });
  d["cached_tokens"] = column([](const auto& r) { return r.cached_tokens; });
  d["running"] = column([](const auto& r) { return std::int64_t{r.running}; });
  d["waiting"] = column([](const auto& r) { return std::int64_t{r.waiting}; });
  d["preempted"] = column([](const auto& r) { return std::int64_t{r.preempted}; });
  d["finished"] = column([](const auto& r) { return std::int64_t{r.finished}; });
  d["kv_usage"] = column([](const auto& r) { return r.kv_usage; });
  d["free_blocks"] = column([](const auto& r) { return r.free_blocks; });
  d["evictions_total"] = column([](const auto& r) { return r.evictions_total; });
  return d;
}

// Speculative decoding's figures (vLLM's spec-decode metrics); None without speculation.
py::object spec_dict(const replay::SpecDecodingFigures& f) {
  if (f.num_speculative_tokens == 0) return py::none();
  py::dict d;
  d["num_speculative_tokens"] = f.num_speculative_tokens;
  d["num_drafts"] = f.num_drafts;
  d["num_draft_tokens"] = f.num_draft_tokens;
  d["num_accepted_tokens"] = f.num_accepted_tokens;
  d["accepted_per_position"] = f.accepted_per_position;
  d["acceptance_rate"] = f.acceptance_rate();
  d["mean_acceptance_length"] = f.mean_acceptance_length();
  return d;
}

py::dict summary_dict(const replay::ReplaySummary& s) {
  py::dict d;
  d["requests_total"] = s.requests_total;
  d["requests_finished"] = s.requests_finished;
  d["requests_rejected"] = s.requests_rejected;
  d["prompt_tokens"] = s.prompt_tokens;
  d["output_tokens"] = s.output_tokens;
  d["steps"] = s.steps;
  d["preemptions"] = s.preemptions;
  d["evictions"] = s.evictions;
  d["hit_rate"] = s.hit_rate;
  d["request_hit_rate"] = s.request_hit_rate;
  d["sim_time_us"] = s.sim_time_us;
  d["cache"] = stats_dict(s.cache);
  d["violations"] = s.violations;
  d["digest"] = s.digest;
  py::list groups;  // hybrid runs only, in group order
  for (const replay::GroupFigures& g : s.groups) {
    py::dict gd;
    gd["spec"] = g.spec;
    gd["peak_blocks_in_use"] = g.peak_blocks_in_use;
    gd["mean_blocks_in_use"] = g.mean_blocks_in_use;
    gd["hit_tokens"] = g.hit_tokens;
    groups.append(gd);
  }
  d["groups"] = groups;
  d["spec"] = spec_dict(s.spec);
  return d;
}

// One replay: configured like `kvsim replay` (option names as on its command line), run once.
class PyReplay {
 public:
  PyReplay(const std::string& trace, const py::dict& options, bool collect_events, bool force,
           const py::kwargs& keywords) {
    for (const auto& [key, value] : options) {
      std::string name = py::str(key).cast<std::string>();
      for (char& c : name) c = c == '_' ? '-' : c;
      if (Status s = replay::set_option(config_, name, option_text(value)); !s.ok()) raise(s.message());
    }
    for (const auto& [key, value] : keywords) set_keyword(config_, py::str(key).cast<std::string>(), value);
    config_.events.observed = collect_events;
    config_.events.overwrite_file = force;
    run_ = value_or_raise(replay::build_replay(config_, trace));
    replayer_ = run_.make_replayer(config_);
    if (collect_events) {
      collector_ = std::make_unique<CollectingSink>(run_.events.get());
      replayer_->set_event_sink(collector_.get());
    }
    replayer_->on_request_done = [this](const replay::RequestMetrics& m) { metrics_.push_back(m); };
    replayer_->on_step = [this](const replay::StepRecord& r) { steps_.push_back(r); };
  }

  py::dict run() {
    if (summary_) raise("this replay has run already");
    summary_ = value_or_raise(replayer_->run());
    if (run_.events) {
      if (Status s = run_.events->close(); !s.ok()) raise(s.message());
    }
    return summary_dict(*summary_);
  }

  py::list events() const {
    py::list out;
    if (!collector_) return out;
    for (const CollectingSink::Batch& b : collector_->batches_) {
      py::dict d;
      d["step"] = b.step;
      d["ts"] = b.ts;
      d["events"] = events_list(b.events);
      out.append(d);
    }
    return out;
  }

  py::dict metrics() const { return metrics_dict(metrics_); }
  py::dict steps() const { return steps_dict(steps_); }
  std::vector<std::string> cached_hashes() const { return replay::cached_block_hashes(*run_.scheduler); }
  std::string decision_log() const { return replayer_->log().text(); }
  std::vector<std::pair<std::string, std::string>> config() const { return run_.description; }

 private:
  replay::ReplayConfig config_;
  replay::ReplayRun run_;
  std::unique_ptr<replay::Replayer> replayer_;
  std::unique_ptr<CollectingSink> collector_;
  std::vector<replay::RequestMetrics> metrics_;
  std::vector<replay::StepRecord> steps_;
  std::optional<replay::ReplaySummary> summary_;
};

// A pandas DataFrame of a table of columns, or ImportError saying what to use without pandas.
py::object data_frame(const py::dict& columns, const char* table) {
  py::module_ pandas;
  try {
    pandas = py::module_::import("pandas");
  } catch (const py::error_already_set&) {
    throw py::import_error(std::string("pandas is not installed: Replay.") + table +
                           " holds the same columns as numpy arrays");
  }
  return pandas.attr("DataFrame")(columns);
}

void bind_replay(py::module_& m) {
  static const std::string doc =
      "Replay(trace, options=None, *, collect_events=False, force=False, **keywords)\n\n"
      "A replay of a trace, configured as `kvsim replay` is: each keyword is an option of its\n"
      "command line with '-' as '_' (model='llama3-8b', limit=100, prefix_caching=False), or\n"
      "`options` maps command-line names to their texts. A wrong type raises TypeError, a bad\n"
      "value ValueError, each naming the option. collect_events keeps the KV events for\n"
      "`events`; force replaces an existing kv_events file as `kvsim replay --force` does.\n"
      "run() returns the summary; `requests` and `steps` hold the per-request and per-step\n"
      "tables as numpy arrays, requests_frame() and steps_frame() as pandas DataFrames.\n"
      "Options (docs/semantics.md for the rules they select):\n" +
      keywords_doc();
  py::class_<PyReplay>(m, "Replay", doc.c_str())
      .def(py::init<const std::string&, const py::dict&, bool, bool, const py::kwargs&>(), py::arg("trace"),
           py::arg("options") = py::dict(), py::kw_only(), py::arg("collect_events") = false, py::arg("force") = false)
      .def("run", &PyReplay::run, "runs the replay; its summary (a dict)")
      .def_property_readonly("events", &PyReplay::events, "the KV event batches (collect_events=True)")
      .def_property_readonly("metrics", &PyReplay::metrics, "the per-request table (same as requests)")
      .def_property_readonly("requests", &PyReplay::metrics, "the per-request table: column -> numpy array")
      .def_property_readonly("steps", &PyReplay::steps, "the per-step table: column -> numpy array")
      .def(
          "requests_frame", [](const PyReplay& r) { return data_frame(r.metrics(), "requests"); },
          "the per-request table as a pandas DataFrame")
      .def(
          "steps_frame", [](const PyReplay& r) { return data_frame(r.steps(), "steps"); },
          "the per-step table as a pandas DataFrame")
      .def_property_readonly("decision_log", &PyReplay::decision_log)
      .def_property_readonly("config", &PyReplay::config, "every option's value, as the run folder lists it")
      .def("cached_hashes", &PyReplay::cached_hashes);
  m.def(
      "options",
      [] {
        std::vector<std::string> names;
        for (const replay::ConfigOption& o : replay::config_options()) {
          if (!replay::fleet_option_names().count(std::string(o.name))) names.emplace_back(o.name);
        }
        return names;
      },
      "the replay's option names, as on the command line");
  m.def("_stub_keywords", &stub_keywords, "the keyword lines of Replay.__init__ in kvsim.pyi (the build writes it)");
}

}  // namespace

}  // namespace kv::python

PYBIND11_MODULE(kvsim, m) {
  m.doc() = "kvsim: vLLM v1's KV-cache manager and scheduler, exact, with a simulated device";
  kv::python::bind_manager(m);
  kv::python::bind_replay(m);
  m.def(
      "run_ops",
      [](const std::string& script) {
        std::istringstream in(script);
        std::ostringstream out, err;
        const int rc = kv::OpsInterpreter::run_script(in, out, err);
        std::string message = err.str();
        if (!message.empty() && message.back() == '\n') message.pop_back();
        if (rc == 1) throw std::runtime_error(message);
        if (rc != 0) throw py::value_error(message);
        std::vector<std::string> lines;
        std::istringstream text(out.str());
        for (std::string line; std::getline(text, line);) lines.push_back(line);
        return lines;
      },
      py::arg("script"),
      "runs an ops script; its output lines (ValueError on a bad line, RuntimeError on a failed check)");
}
