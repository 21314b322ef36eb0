#include "ops/hybrid_scenario.h"

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/block_hasher.h"
#include "model/kv_cache_groups.h"
#include "model/kv_cache_manager.h"
#include "model/mamba_cache_mode.h"
#include "model/request.h"

namespace kv::ops {
namespace {

using Json = nlohmann::json;

// ---- Reading fields: every problem is a Status naming the field. ----

Status field_error(const std::string& field, const std::string& problem) {
  return Status::error(field + ": " + problem);
}

Status check_keys(const Json& obj, const std::string& where, std::initializer_list<std::string_view> allowed) {
  if (!obj.is_object()) return field_error(where.empty() ? "(top)" : where, "not an object");
  for (const auto& item : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      return field_error(where.empty() ? item.key() : where + "." + item.key(), "unknown field");
    }
  }
  return Status();
}

std::string join(const std::string& where, const std::string& key) { return where.empty() ? key : where + "." + key; }

StatusOr<const Json*> get(const Json& obj, const std::string& where, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end()) return field_error(join(where, key), "missing");
  return &*it;
}

StatusOr<std::int64_t> get_int(const Json& obj, const std::string& where, const std::string& key) {
  auto v = get(obj, where, key);
  if (!v.ok()) return v.status();
  if (!(*v)->is_number_integer()) return field_error(join(where, key), "not an integer");
  return (*v)->get<std::int64_t>();
}

StatusOr<std::string> get_string(const Json& obj, const std::string& where, const std::string& key) {
  auto v = get(obj, where, key);
  if (!v.ok()) return v.status();
  if (!(*v)->is_string()) return field_error(join(where, key), "not a string");
  return (*v)->get<std::string>();
}

StatusOr<bool> get_bool(const Json& obj, const std::string& where, const std::string& key) {
  auto v = get(obj, where, key);
  if (!v.ok()) return v.status();
  if (!(*v)->is_boolean()) return field_error(join(where, key), "not a boolean");
  return (*v)->get<bool>();
}

// Token ids as [[start, count], ...]: start, start+1, ..., start+count-1 per segment.
StatusOr<std::vector<TokenId>> get_tokens(const Json& obj, const std::string& where, const std::string& key) {
  auto v = get(obj, where, key);
  if (!v.ok()) return v.status();
  const std::string field = join(where, key);
  if (!(*v)->is_array()) return field_error(field, "not a list of [start, count] segments");
  std::vector<TokenId> tokens;
  for (const Json& seg : **v) {
    if (!seg.is_array() || seg.size() != 2 || !seg[0].is_number_integer() || !seg[1].is_number_integer() ||
        seg[0].get<std::int64_t>() < 0 || seg[1].get<std::int64_t>() < 0) {
      return field_error(field, "segment " + seg.dump() + " is not [start >= 0, count >= 0]");
    }
    const auto start = seg[0].get<std::int64_t>();
    for (std::int64_t i = 0; i < seg[1].get<std::int64_t>(); ++i) tokens.push_back(start + i);
  }
  return tokens;
}

// ---- The layer and group vocabulary of the format. ----

// What a layer's spec takes from the config rather than from the layer.
struct LayerDefaults {
  int block_size = 16;             // attention layers and Mamba align/all
  std::int64_t max_model_len = 0;  // Mamba none: one block holds the whole request
  int num_speculative_blocks = 0;  // Mamba: the number of speculative tokens
};

const std::map<std::string, AttentionType, std::less<>>& layer_types() {
  static const std::map<std::string, AttentionType, std::less<>> kTypes = {
      {"full", AttentionType::kFullAttention},
      {"sliding_window", AttentionType::kSlidingWindow},
      {"chunked_local", AttentionType::kChunkedLocalAttention},
      {"mamba", AttentionType::kMamba},
      {"cross_attention", AttentionType::kCrossAttention},
      {"rswa", AttentionType::kRSwa}};
  return kTypes;
}

// The fields a layer of `type` may carry besides name and type.
std::vector<std::string_view> layer_fields(AttentionType type) {
  std::vector<std::string_view> keys = {"name", "type"};
  switch (type) {
    case AttentionType::kSlidingWindow:
      keys.push_back("window");
      break;
    case AttentionType::kChunkedLocalAttention:
      keys.push_back("chunk");
      break;
    case AttentionType::kRSwa:
      keys.push_back("rswa_window");
      break;
    case AttentionType::kMamba:
      keys.insert(keys.end(), {"mode", "state_bytes", "page_size_padded"});
      return keys;  // a state, not a KV layout
    default:
      break;
  }
  keys.insert(keys.end(), {"num_kv_heads", "head_size", "head_size_v", "dtype_bytes"});
  return keys;
}

Status parse_mamba_fields(const Json& layer, const std::string& where, const LayerDefaults& d, KvCacheSpec& spec) {
  auto mode = get_string(layer, where, "mode");
  if (!mode.ok()) return mode.status();
  const std::optional<MambaCacheMode> m = parse_mamba_cache_mode(*mode);
  if (!m) return field_error(where + ".mode", "unknown Mamba mode '" + *mode + "'");
  auto state = get_int(layer, where, "state_bytes");
  if (!state.ok()) return state.status();
  spec.mamba_mode = *m;
  spec.mamba_state_bytes = *state;
  if (layer.contains("page_size_padded")) {
    auto padded = get_int(layer, where, "page_size_padded");
    if (!padded.ok()) return padded.status();
    spec.mamba_page_bytes = *padded;
  }
  spec.num_speculative_blocks = d.num_speculative_blocks;
  if (spec.mamba_mode == MambaCacheMode::kNone) {
    if (d.max_model_len > std::numeric_limits<int>::max()) {
      return field_error(where, "max_model_len is too large for a Mamba block");
    }
    spec.block_size = static_cast<int>(d.max_model_len);
  }
  return Status();
}

Status parse_int_fields(const Json& layer, const std::string& where, KvCacheSpec& spec) {
  const std::pair<const char*, int*> ints[] = {{"window", &spec.window},
                                               {"rswa_window", &spec.window},
                                               {"chunk", &spec.chunk},
                                               {"num_kv_heads", &spec.num_kv_heads},
                                               {"head_size", &spec.head_size},
                                               {"head_size_v", &spec.head_size_v},
                                               {"dtype_bytes", &spec.dtype_bytes}};
  for (const auto& [key, dst] : ints) {
    if (!layer.contains(key)) continue;
    auto v = get_int(layer, where, key);
    if (!v.ok()) return v.status();
    if (*v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
      return field_error(join(where, key), "out of range");
    }
    *dst = static_cast<int>(*v);
  }
  return Status();
}

StatusOr<LayerKvCacheSpec> parse_layer(const Json& layer, const std::string& where, const LayerDefaults& defaults) {
  if (!layer.is_object()) return field_error(where, "not an object");
  auto name = get_string(layer, where, "name");
  auto type = get_string(layer, where, "type");
  if (!name.ok()) return name.status();
  if (!type.ok()) return type.status();
  auto t = layer_types().find(*type);
  if (t == layer_types().end()) {
    return field_error(where + ".type", "unknown layer type '" + *type + "'");
  }
  for (const auto& item : layer.items()) {
    const auto allowed = layer_fields(t->second);
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      return field_error(where + "." + item.key(), "unknown field for a " + *type + " layer");
    }
  }
  LayerKvCacheSpec out;
  out.name = *name;
  // The format's fixed layout: 2 KV heads of 64 (K and V), bfloat16.
  out.spec = KvCacheSpec{t->second, defaults.block_size, 2, 64, 64, 2, 0, 0};
  Status s = t->second == AttentionType::kMamba ? parse_mamba_fields(layer, where, defaults, out.spec)
                                                : parse_int_fields(layer, where, out.spec);
  if (!s.ok()) return s;
  if (Status v = validate_spec(out.spec); !v.ok()) return v.with_context(where + ": ");
  return out;
}

StatusOr<std::vector<LayerKvCacheSpec>> parse_layers(const Json& config, const LayerDefaults& defaults) {
  auto layers_json = get(config, "config", "layers");
  if (!layers_json.ok()) return layers_json.status();
  if (!(*layers_json)->is_array()) return field_error("config.layers", "not a list");
  std::vector<LayerKvCacheSpec> layers;
  for (std::size_t i = 0; i < (*layers_json)->size(); ++i) {
    auto layer = parse_layer((**layers_json)[i], "config.layers[" + std::to_string(i) + "]", defaults);
    if (!layer.ok()) return layer.status();
    layers.push_back(*layer);
  }
  return layers;
}

// A group as the file states it; `extended` (golden-mamba's format) adds the block and page
// sizes and Mamba's mode and speculative blocks.
Json group_to_json(const KvCacheGroupSpec& g, bool extended) {
  const KvCacheSpec& spec = g.spec;
  Json j = {{"type", to_string(spec.type)}, {"layers", g.layer_names}};
  if (spec.window > 0) j[spec.type == AttentionType::kRSwa ? "rswa_window" : "window"] = spec.window;
  if (spec.chunk > 0) j["chunk"] = spec.chunk;
  if (!extended) return j;
  j["block_size"] = spec.block_size;
  j["page_size_bytes"] = spec.page_size_bytes();
  if (spec.type == AttentionType::kMamba) {
    j["mode"] = to_string(spec.mamba_mode);
    j["num_speculative_blocks"] = spec.num_speculative_blocks;
  }
  return j;
}

// ---- The scenario. ----

struct ScenarioRequest {
  std::unique_ptr<Request> request;
  std::optional<CacheHit> pending_hit;  // from get_computed, used up by allocate
};

class HybridScenario {
 public:
  // Builds the manager from the config; a config that disagrees with kvsim's grouping or
  // sizing is a mismatch (step -1), recorded in outcome().
  Status load(const Json& config);
  // Runs one step; a mismatch is recorded in outcome().
  Status run_step(std::int64_t index, const Json& step);
  Status check_final(const Json& final_state);
  const ScenarioOutcome& outcome() const { return outcome_; }

 private:
  // The cache settings of the config (everything but the groups and the pool size).
  Status read_settings(const Json& config, KvCacheConfig& mc, LayerDefaults& defaults);
  Status check_config_outputs(const Json& config, const KvCacheConfig& mc, const KvCachePoolSize& size);
  // Records the first mismatch; returns false when expected != got.
  bool compare(std::int64_t step, const std::string& field, const Json& expected, const Json& got);
  StatusOr<ScenarioRequest*> find(const Json& step, const std::string& where);
  Json held_of(const RequestId& id) const;
  Status run_add(const Json& step, const std::string& where, Json& got);
  Status run_on_request(const std::string& op, const Json& step, const std::string& where, Json& got);
  Status run_allocate(const Json& step, const std::string& where, ScenarioRequest& r, Json& got);
  Status run_rollback(const Json& step, const std::string& where, Request& req, Json& got);

  ScenarioOutcome outcome_;
  bool extended_ = false;                // golden-mamba's format (speculative decoding in the config)
  int hash_block_size_ = 16;             // the requests' hash chains
  std::unique_ptr<BlockHasher> hasher_;  // null with caching off: no hashes
  std::unique_ptr<KvCacheManager> manager_;
  std::map<std::string, ScenarioRequest> requests_;
};

bool HybridScenario::compare(std::int64_t step, const std::string& field, const Json& expected, const Json& got) {
  if (expected == got) return true;
  if (outcome_.ok) {
    outcome_.ok = false;
    outcome_.mismatch = {step, field, expected.dump(), got.dump()};
  }
  return false;
}

Status HybridScenario::read_settings(const Json& config, KvCacheConfig& mc, LayerDefaults& defaults) {
  const std::string w = "config";
  auto block_size = get_int(config, w, "block_size");
  auto order = get_string(config, w, "free_order");
  auto caching = get_bool(config, w, "enable_caching");
  auto max_model_len = get_int(config, w, "max_model_len");
  auto in_flight = get_int(config, w, "max_in_flight_tokens");
  for (const Status& s :
       {block_size.status(), order.status(), caching.status(), max_model_len.status(), in_flight.status()}) {
    if (!s.ok()) return s;
  }
  if (*block_size <= 0 || *block_size > (1 << 20)) {
    return field_error("config.block_size", "must be in 1 .. 2^20");
  }
  if (*max_model_len <= 0) return field_error("config.max_model_len", "must be positive");
  if (!parse_free_order(*order, &mc.free_order)) {
    return field_error("config.free_order", "unknown free order '" + *order + "'");
  }
  defaults.block_size = static_cast<int>(*block_size);
  defaults.max_model_len = *max_model_len;
  mc.enable_caching = *caching;
  mc.max_model_len = *max_model_len;
  mc.max_in_flight_tokens = *in_flight;
  // Speculative decoding: golden-mamba's format has both fields, golden-hybrid's neither.
  extended_ = config.contains("use_eagle") || config.contains("num_speculative_tokens");
  if (!extended_) return Status();
  auto eagle = get_bool(config, w, "use_eagle");
  auto num_spec = get_int(config, w, "num_speculative_tokens");
  if (!eagle.ok()) return eagle.status();
  if (!num_spec.ok()) return num_spec.status();
  if (*num_spec < 0 || *num_spec > 1024) {
    return field_error("config.num_speculative_tokens", "must be in 0 .. 1024");
  }
  mc.use_eagle = *eagle;
  defaults.num_speculative_blocks = static_cast<int>(*num_spec);
  return Status();
}

Status HybridScenario::load(const Json& config) {
  const std::string w = "config";
  if (Status s = check_keys(config, w, {"format_version",
                                        "vllm_commit",
                                        "block_size",
                                        "num_blocks",
                                        "hash",
                                        "hash_seed",
                                        "free_order",
                                        "enable_caching",
                                        "use_eagle",
                                        "num_speculative_tokens",
                                        "max_model_len",
                                        "max_in_flight_tokens",
                                        "scheduler_block_size",
                                        "hash_block_size",
                                        "coordinator",
                                        "page_size_bytes",
                                        "layers_per_group",
                                        "memory_budget_bytes",
                                        "layers",
                                        "groups",
                                        "lookup_order"});
      !s.ok()) {
    return s;
  }
  auto version = get_int(config, w, "format_version");
  if (!version.ok()) return version.status();
  if (*version != 1) return field_error("config.format_version", "only version 1 is known");
  auto hash = get_string(config, w, "hash");
  auto seed = get_string(config, w, "hash_seed");
  auto budget = get_int(config, w, "memory_budget_bytes");
  for (const Status& s : {hash.status(), seed.status(), budget.status()}) {
    if (!s.ok()) return s;
  }
  const std::optional<HashAlgo> algo = parse_hash_algo(*hash);
  if (!algo) return field_error("config.hash", "unknown hash '" + *hash + "'");
  KvCacheConfig mc;
  LayerDefaults defaults;
  if (Status s = read_settings(config, mc, defaults); !s.ok()) return s;
  auto layers = parse_layers(config, defaults);
  if (!layers.ok()) return layers.status();
  auto groups = get_kv_cache_groups(*layers);
  if (!groups.ok()) return groups.status().with_context("config.layers: ");
  auto size = size_pool_for_budget(*groups, *budget);
  if (!size.ok()) return size.status().with_context("config.memory_budget_bytes: ");
  mc.groups = std::move(*groups);
  mc.block_size = cache_block_size(mc.groups);
  mc.num_blocks = size->num_blocks;
  if (Status s = check_config_outputs(config, mc, *size); !s.ok() || !outcome_.ok) return s;
  if (Status valid = mc.validate(); !valid.ok()) return valid.with_context("config: ");
  hash_block_size_ = mc.hash_block_size();
  if (mc.enable_caching) hasher_ = std::make_unique<BlockHasher>(*algo, *seed);
  manager_ = std::make_unique<KvCacheManager>(mc);
  manager_->set_record_evictions(true);
  return Status();
}

const char* coordinator_name(const KvCacheConfig& mc) {
  if (!mc.enable_caching) return "KVCacheCoordinatorNoPrefixCache";
  return mc.groups.size() == 1 ? "UnitaryKVCacheCoordinator" : "HybridKVCacheCoordinator";
}

Status HybridScenario::check_config_outputs(const Json& config, const KvCacheConfig& mc, const KvCachePoolSize& size) {
  Json got_groups = Json::array();
  for (const KvCacheGroupSpec& g : mc.groups) got_groups.push_back(group_to_json(g, extended_));
  const Json got = {{"groups", got_groups},
                    {"lookup_order", mc.enable_caching ? Json(lookup_sets(mc.groups)) : Json::array()},
                    {"block_size", mc.block_size},
                    {"num_blocks", size.num_blocks},
                    {"page_size_bytes", size.page_size_bytes},
                    {"layers_per_group", size.layers_per_group},
                    {"scheduler_block_size", mc.scheduler_block_size()},
                    {"hash_block_size", mc.hash_block_size()},
                    {"coordinator", coordinator_name(mc)}};
  for (const auto& item : got.items()) {
    auto expected = get(config, "config", item.key());
    if (!expected.ok()) return expected.status();
    if (!compare(-1, "config." + item.key(), **expected, item.value())) return Status();
  }
  return Status();
}

StatusOr<ScenarioRequest*> HybridScenario::find(const Json& step, const std::string& where) {
  auto id = get_string(step, where, "req");
  if (!id.ok()) return id.status();
  auto it = requests_.find(*id);
  if (it == requests_.end()) return field_error(where + ".req", "no request '" + *id + "'");
  return &it->second;
}

Json HybridScenario::held_of(const RequestId& id) const {
  Json held = Json::array();
  for (std::size_t g = 0; g < manager_->num_groups(); ++g) {
    const auto blocks = manager_->blocks_of(id, g);
    held.push_back(std::vector<BlockId>(blocks.begin(), blocks.end()));
  }
  return held;
}

// An optional non-negative integer field (0 when absent).
StatusOr<std::int64_t> get_count(const Json& step, const std::string& where, const std::string& key) {
  if (!step.contains(key)) return std::int64_t{0};
  auto v = get_int(step, where, key);
  if (!v.ok()) return v.status();
  if (*v < 0) return field_error(where + "." + key, "must be >= 0");
  return *v;
}

Status HybridScenario::run_allocate(const Json& step, const std::string& where, ScenarioRequest& r, Json& got) {
  auto n = get_int(step, where, "num_new_tokens");
  auto lookahead = get_count(step, where, "num_lookahead_tokens");
  auto encoder = get_count(step, where, "num_encoder_tokens");
  for (const Status& s : {n.status(), lookahead.status(), encoder.status()}) {
    if (!s.ok()) return s;
  }
  if (*n <= 0) return field_error(where + ".num_new_tokens", "must be positive");
  bool must_fit = false;
  if (step.contains("full_sequence_must_fit")) {
    auto b = get_bool(step, where, "full_sequence_must_fit");
    if (!b.ok()) return b.status();
    must_fit = *b;
  }
  Request& req = *r.request;
  const CacheHit hit = r.pending_hit.value_or(CacheHit{});
  r.pending_hit.reset();
  const Json before = held_of(req.id());
  auto fresh = manager_->allocate_slots(req, *n, hit, *lookahead, must_fit, *encoder);
  const Json after = held_of(req.id());
  int window_freed = 0;
  for (std::size_t g = 0; g < before.size(); ++g) {
    for (std::size_t i = 0; i < before[g].size() && i < after[g].size(); ++i) {
      window_freed += before[g][i] != 0 && after[g][i] == 0 ? 1 : 0;
    }
  }
  got["ok"] = fresh.has_value();
  if (fresh) {
    req.num_computed_tokens += hit.num_tokens + *n;
    got["new_blocks"] = *fresh;
  }
  got["num_computed_tokens"] = req.num_computed_tokens;
  got["held"] = after;
  got["window_freed"] = window_freed;
  return Status();
}

Status HybridScenario::run_rollback(const Json& step, const std::string& where, Request& req, Json& got) {
  auto rejected = get_int(step, where, "num_rejected");
  if (!rejected.ok()) return rejected.status();
  if (*rejected < 0 || *rejected > req.num_computed_tokens) {
    return field_error(where + ".num_rejected",
                       "must be in 0 .. num_computed_tokens (" + std::to_string(req.num_computed_tokens) + ")");
  }
  req.num_computed_tokens -= *rejected;
  got["num_computed_tokens"] = req.num_computed_tokens;
  return Status();
}

// Per op: the step's fields and, in comparison order, the expect fields besides free/evicted.
struct OpFields {
  std::vector<std::string_view> step;
  std::vector<std::string_view> expect;
};

const std::map<std::string, OpFields, std::less<>>& op_fields() {
  static const std::map<std::string, OpFields, std::less<>> kOps = {
      {"add", {{"op", "req", "prompt", "expect"}, {"num_tokens", "num_block_hashes"}}},
      {"append", {{"op", "req", "tokens", "expect"}, {"num_tokens", "num_block_hashes"}}},
      {"get_computed", {{"op", "req", "expect"}, {"hit_tokens", "blocks", "shared_prefix_boundary"}}},
      {"allocate",
       {{"op", "req", "num_new_tokens", "num_lookahead_tokens", "num_encoder_tokens", "full_sequence_must_fit",
         "expect"},
        {"ok", "new_blocks", "num_computed_tokens", "held", "window_freed"}}},
      {"rollback", {{"op", "req", "num_rejected", "expect"}, {"num_computed_tokens"}}},
      {"new_step", {{"op", "expect"}, {}}},
      {"free", {{"op", "req", "expect"}, {}}},
      {"preempt", {{"op", "req", "expect"}, {}}}};
  return kOps;
}

Status check_names(const Json& obj, const std::string& where, const std::string& op,
                   const std::vector<std::string_view>& allowed) {
  for (const auto& item : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      return field_error(where + "." + item.key(), "unknown field for op '" + op + "'");
    }
  }
  return Status();
}

Status HybridScenario::run_add(const Json& step, const std::string& where, Json& got) {
  auto id = get_string(step, where, "req");
  auto prompt = get_tokens(step, where, "prompt");
  if (!id.ok()) return id.status();
  if (!prompt.ok()) return prompt.status();
  if (requests_.count(*id)) return field_error(where + ".req", "request '" + *id + "' exists");
  ScenarioRequest& r = requests_[*id];
  r.request = std::make_unique<Request>(*id, *prompt, HashExtras{}, hasher_.get(), hash_block_size_);
  got["num_tokens"] = r.request->num_tokens();
  got["num_block_hashes"] = r.request->block_hashes().size();
  return Status();
}

Status HybridScenario::run_on_request(const std::string& op, const Json& step, const std::string& where, Json& got) {
  auto r = find(step, where);
  if (!r.ok()) return r.status();
  Request& req = *(*r)->request;
  if (op == "append") {
    auto tokens = get_tokens(step, where, "tokens");
    if (!tokens.ok()) return tokens.status();
    req.append_tokens(*tokens);
    got["num_tokens"] = req.num_tokens();
    got["num_block_hashes"] = req.block_hashes().size();
  } else if (op == "get_computed") {
    if (req.num_computed_tokens != 0 || manager_->holds_blocks(req.id())) {
      return field_error(where + ".op", "get_computed of '" + req.id() + "', which has started");
    }
    const CacheHit& hit = *((*r)->pending_hit = manager_->get_computed_blocks(req));
    got["hit_tokens"] = hit.num_tokens;
    // Nothing looked up (caching off): an empty list per group.
    got["blocks"] = hit.blocks.empty() ? GroupBlockIds(manager_->num_groups()) : hit.blocks;
    got["shared_prefix_boundary"] = hit.shared_prefix_boundary;
  } else if (op == "allocate") {
    return run_allocate(step, where, **r, got);
  } else if (op == "rollback") {
    return run_rollback(step, where, req, got);
  } else if (op == "free") {
    manager_->free(req);
    requests_.erase(req.id());
  } else {  // preempt: the request keeps its tokens and hashes and starts over
    manager_->free(req);
    req.num_computed_tokens = 0;
    ++req.num_preemptions;
    (*r)->pending_hit.reset();
  }
  return Status();
}

Status HybridScenario::run_step(std::int64_t index, const Json& step) {
  const std::string where = "steps[" + std::to_string(index) + "]";
  auto op = get_string(step, where, "op");
  if (!op.ok()) return op.status();
  auto fields = op_fields().find(*op);
  if (fields == op_fields().end()) return field_error(where + ".op", "unknown op '" + *op + "'");
  if (Status s = check_names(step, where, *op, fields->second.step); !s.ok()) return s;
  std::vector<std::string_view> expect_keys = fields->second.expect;
  expect_keys.insert(expect_keys.end(), {"free", "evicted"});
  const Json no_expect = Json::object();
  const Json& expect = step.contains("expect") ? step["expect"] : no_expect;
  if (!expect.is_object()) return field_error(where + ".expect", "not an object");
  if (Status s = check_names(expect, where + ".expect", *op, expect_keys); !s.ok()) return s;

  Json got = Json::object();
  Status s = *op == "add"        ? run_add(step, where, got)
             : *op == "new_step" ? (manager_->new_step(), Status())
                                 : run_on_request(*op, step, where, got);
  if (!s.ok()) return s;
  got["free"] = manager_->num_free_blocks();
  Json evicted = Json::array();
  for (const EvictedBlock& e : manager_->take_evicted()) evicted.push_back(e.block);
  got["evicted"] = evicted;
  for (std::string_view key : expect_keys) {
    const std::string k(key);
    if (!expect.contains(k)) continue;
    if (!compare(index, "expect." + k, expect[k], got.contains(k) ? got[k] : Json())) break;
  }
  std::string why;
  if (outcome_.ok && !manager_->check_invariants(&why)) compare(index, "invariants", "ok", why);
  return Status();
}

Status HybridScenario::check_final(const Json& final_state) {
  if (Status s = check_keys(final_state, "final", {"free_queue", "cached", "held"}); !s.ok()) {
    return s;
  }
  const BlockPool& pool = manager_->pool();
  // Every (hash, group) key once, its blocks oldest first.
  std::vector<std::tuple<int, BlockId, std::string, std::vector<BlockId>>> keys;
  for (BlockId b = 1; b < pool.num_blocks(); ++b) {
    const Block& blk = pool.block(b);
    if (blk.hash.empty() || pool.get_cached_block(blk.hash, blk.group) != b) continue;
    std::vector<BlockId> ids;
    for (BlockId id = b; id != kNoBlock; id = pool.block(id).next_cached) ids.push_back(id);
    keys.emplace_back(blk.group, *std::min_element(ids.begin(), ids.end()), blk.hash.hex(), ids);
  }
  std::sort(keys.begin(), keys.end());
  Json cached = Json::array();
  for (const auto& [group, min_id, hex, ids] : keys) cached.push_back(Json{hex, group, ids});
  Json held = Json::object();
  for (const auto& [id, r] : requests_) {
    if (manager_->holds_blocks(id)) held[id] = held_of(id);
  }
  const Json got = {{"free_queue", pool.policy().order()}, {"cached", cached}, {"held", held}};
  for (const char* key : {"free_queue", "cached", "held"}) {
    if (!final_state.contains(key)) continue;
    if (!compare(-1, std::string("final.") + key, final_state[key], got[key])) break;
  }
  return Status();
}

StatusOr<ScenarioOutcome> run(const Json& root) {
  if (Status s = check_keys(root, "", {"name", "doc", "config", "steps", "final"}); !s.ok()) {
    return s;
  }
  auto config = get(root, "", "config");
  auto steps = get(root, "", "steps");
  if (!config.ok()) return config.status();
  if (!steps.ok()) return steps.status();
  if (!(*steps)->is_array()) return field_error("steps", "not a list");
  HybridScenario scenario;
  if (Status s = scenario.load(**config); !s.ok()) return s;
  if (!scenario.outcome().ok) return scenario.outcome();
  for (std::size_t i = 0; i < (*steps)->size(); ++i) {
    if (!(**steps)[i].is_object()) {
      return field_error("steps[" + std::to_string(i) + "]", "not an object");
    }
    if (Status s = scenario.run_step(static_cast<std::int64_t>(i), (**steps)[i]); !s.ok()) return s;
    if (!scenario.outcome().ok) return scenario.outcome();
  }
  if (root.contains("final")) {
    if (Status s = scenario.check_final(root["final"]); !s.ok()) return s;
  }
  return scenario.outcome();
}

}  // namespace

StatusOr<ScenarioOutcome> run_hybrid_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::error(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  const Json root = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Status::error(path + ": not valid JSON");
  auto outcome = run(root);
  if (!outcome.ok()) return outcome.status().with_context(path + ": ");
  return outcome;
}

}  // namespace kv::ops
