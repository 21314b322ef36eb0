#include "ops/hybrid_scenario.h"

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/block_hasher.h"
#include "model/kv_cache_manager.h"
#include "model/kv_cache_groups.h"
#include "model/request.h"

namespace kv::ops {
namespace {

using Json = nlohmann::json;

// ---- Reading fields: every problem is a Status naming the field. ----

Status field_error(const std::string& field, const std::string& problem) {
  return Status::error(field + ": " + problem);
}

Status check_keys(const Json& obj, const std::string& where,
                  std::initializer_list<std::string_view> allowed) {
  if (!obj.is_object()) return field_error(where.empty() ? "(top)" : where, "not an object");
  for (const auto& item : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      return field_error(where.empty() ? item.key() : where + "." + item.key(), "unknown field");
    }
  }
  return Status();
}

std::string join(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

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
StatusOr<std::vector<TokenId>> get_tokens(const Json& obj, const std::string& where,
                                          const std::string& key) {
  auto v = get(obj, where, key);
  if (!v.ok()) return v.status();
  const std::string field = join(where, key);
  if (!(*v)->is_array()) return field_error(field, "not a list of [start, count] segments");
  std::vector<TokenId> tokens;
  for (const Json& seg : **v) {
    if (!seg.is_array() || seg.size() != 2 || !seg[0].is_number_integer() ||
        !seg[1].is_number_integer() || seg[0].get<std::int64_t>() < 0 ||
        seg[1].get<std::int64_t>() < 0) {
      return field_error(field, "segment " + seg.dump() + " is not [start >= 0, count >= 0]");
    }
    const auto start = seg[0].get<std::int64_t>();
    for (std::int64_t i = 0; i < seg[1].get<std::int64_t>(); ++i) tokens.push_back(start + i);
  }
  return tokens;
}

// ---- The layer and group vocabulary of the format. ----

StatusOr<LayerKvCacheSpec> parse_layer(const Json& layer, const std::string& where,
                                       int block_size) {
  if (Status s = check_keys(layer, where, {"name", "type", "window", "chunk", "num_kv_heads",
                                           "head_size", "head_size_v", "dtype_bytes"});
      !s.ok()) {
    return s;
  }
  LayerKvCacheSpec out;
  auto name = get_string(layer, where, "name");
  auto type = get_string(layer, where, "type");
  if (!name.ok()) return name.status();
  if (!type.ok()) return type.status();
  out.name = *name;
  // The format's fixed layout: 2 KV heads of 64 (K and V), bfloat16.
  KvCacheSpec& spec = out.spec;
  spec = KvCacheSpec{AttentionType::kFullAttention, block_size, 2, 64, 64, 2, 0, 0};
  static const std::map<std::string, AttentionType, std::less<>> kTypes = {
      {"full", AttentionType::kFullAttention},
      {"sliding_window", AttentionType::kSlidingWindow},
      {"chunked_local", AttentionType::kChunkedLocalAttention},
      {"mamba", AttentionType::kMamba},
      {"cross_attention", AttentionType::kCrossAttention}};
  auto t = kTypes.find(*type);
  if (t == kTypes.end()) return field_error(where + ".type", "unknown layer type '" + *type + "'");
  spec.type = t->second;
  const std::pair<const char*, int*> ints[] = {{"window", &spec.window},
                                               {"chunk", &spec.chunk},
                                               {"num_kv_heads", &spec.num_kv_heads},
                                               {"head_size", &spec.head_size},
                                               {"head_size_v", &spec.head_size_v},
                                               {"dtype_bytes", &spec.dtype_bytes}};
  for (const auto& [key, dst] : ints) {
    if (!layer.contains(key)) continue;
    auto v = get_int(layer, where, key);
    if (!v.ok()) return v.status();
    *dst = static_cast<int>(*v);
  }
  if (Status s = validate_spec(spec); !s.ok()) return s.with_context(where + ": ");
  return out;
}

StatusOr<std::vector<LayerKvCacheSpec>> parse_layers(const Json& config, int block_size) {
  auto layers_json = get(config, "config", "layers");
  if (!layers_json.ok()) return layers_json.status();
  if (!(*layers_json)->is_array()) return field_error("config.layers", "not a list");
  std::vector<LayerKvCacheSpec> layers;
  for (std::size_t i = 0; i < (*layers_json)->size(); ++i) {
    auto layer = parse_layer((**layers_json)[i], "config.layers[" + std::to_string(i) + "]",
                             block_size);
    if (!layer.ok()) return layer.status();
    layers.push_back(*layer);
  }
  return layers;
}

Json group_to_json(const KvCacheGroupSpec& g) {
  Json j = {{"type", to_string(g.spec.type)}, {"layers", g.layer_names}};
  if (g.spec.window > 0) j["window"] = g.spec.window;
  if (g.spec.chunk > 0) j["chunk"] = g.spec.chunk;
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
  Status check_config_outputs(const Json& config, const std::vector<KvCacheGroupSpec>& groups);
  // Records the first mismatch; returns false when expected != got.
  bool compare(std::int64_t step, const std::string& field, const Json& expected, const Json& got);
  StatusOr<ScenarioRequest*> find(const Json& step, const std::string& where);
  Json held_of(const RequestId& id) const;
  Status run_add(const Json& step, const std::string& where, Json& got);
  Status run_on_request(const std::string& op, const Json& step, const std::string& where,
                        Json& got);
  Status run_allocate(const Json& step, const std::string& where, ScenarioRequest& r, Json& got);

  ScenarioOutcome outcome_;
  int block_size_ = 16;
  std::unique_ptr<BlockHasher> hasher_;
  std::unique_ptr<KvCacheManager> manager_;
  std::map<std::string, ScenarioRequest> requests_;
};

bool HybridScenario::compare(std::int64_t step, const std::string& field, const Json& expected,
                             const Json& got) {
  if (expected == got) return true;
  if (outcome_.ok) {
    outcome_.ok = false;
    outcome_.mismatch = {step, field, expected.dump(), got.dump()};
  }
  return false;
}

Status HybridScenario::load(const Json& config) {
  const std::string w = "config";
  if (Status s = check_keys(config, w, {"format_version", "vllm_commit", "block_size",
                                        "num_blocks", "hash", "hash_seed", "free_order",
                                        "enable_caching", "max_model_len", "max_in_flight_tokens",
                                        "scheduler_block_size", "hash_block_size", "coordinator",
                                        "page_size_bytes", "layers_per_group",
                                        "memory_budget_bytes", "layers", "groups",
                                        "lookup_order"});
      !s.ok()) {
    return s;
  }
  auto version = get_int(config, w, "format_version");
  if (!version.ok()) return version.status();
  if (*version != 1) return field_error("config.format_version", "only version 1 is known");
  auto block_size = get_int(config, w, "block_size");
  auto hash = get_string(config, w, "hash");
  auto seed = get_string(config, w, "hash_seed");
  auto order = get_string(config, w, "free_order");
  auto caching = get_bool(config, w, "enable_caching");
  auto max_model_len = get_int(config, w, "max_model_len");
  auto in_flight = get_int(config, w, "max_in_flight_tokens");
  auto budget = get_int(config, w, "memory_budget_bytes");
  for (const Status& s : {block_size.status(), hash.status(), seed.status(), order.status(),
                          caching.status(), max_model_len.status(), in_flight.status(),
                          budget.status()}) {
    if (!s.ok()) return s;
  }
  if (*block_size <= 0) return field_error("config.block_size", "must be positive");
  if (*max_model_len <= 0) return field_error("config.max_model_len", "must be positive");
  block_size_ = static_cast<int>(*block_size);
  const std::optional<HashAlgo> algo = parse_hash_algo(*hash);
  if (!algo) return field_error("config.hash", "unknown hash '" + *hash + "'");
  KvCacheConfig mc;
  if (!parse_free_order(*order, &mc.free_order)) {
    return field_error("config.free_order", "unknown free order '" + *order + "'");
  }
  auto layers = parse_layers(config, block_size_);
  if (!layers.ok()) return layers.status();
  auto groups = get_kv_cache_groups(*layers);
  if (!groups.ok()) return groups.status().with_context("config.layers: ");
  if (Status s = check_config_outputs(config, *groups); !s.ok() || !outcome_.ok) return s;
  auto size = size_pool_for_budget(*groups, *budget);
  if (!size.ok()) return size.status().with_context("config.memory_budget_bytes: ");
  hasher_ = std::make_unique<BlockHasher>(*algo, *seed);
  mc.groups = std::move(*groups);
  mc.block_size = block_size_;
  mc.num_blocks = size->num_blocks;
  mc.enable_caching = *caching;
  mc.max_model_len = *max_model_len;
  mc.max_in_flight_tokens = *in_flight;
  if (Status valid = mc.validate(); !valid.ok()) return valid.with_context("config: ");
  manager_ = std::make_unique<KvCacheManager>(mc);
  return Status();
}

Status HybridScenario::check_config_outputs(const Json& config,
                                            const std::vector<KvCacheGroupSpec>& groups) {
  auto budget = get_int(config, "config", "memory_budget_bytes");
  auto size = size_pool_for_budget(groups, *budget);
  if (!size.ok()) return size.status().with_context("config.memory_budget_bytes: ");
  Json got_groups = Json::array();
  for (const KvCacheGroupSpec& g : groups) got_groups.push_back(group_to_json(g));
  const Json got = {
      {"groups", got_groups},
      {"lookup_order", lookup_sets(groups)},
      {"num_blocks", size->num_blocks},
      {"page_size_bytes", size->page_size_bytes},
      {"layers_per_group", size->layers_per_group},
      {"scheduler_block_size", scheduler_block_size(groups)},
      {"hash_block_size", hash_block_size(groups)},
      {"coordinator",
       groups.size() == 1 ? "UnitaryKVCacheCoordinator" : "HybridKVCacheCoordinator"}};
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

Status HybridScenario::run_allocate(const Json& step, const std::string& where,
                                    ScenarioRequest& r, Json& got) {
  auto n = get_int(step, where, "num_new_tokens");
  if (!n.ok()) return n.status();
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
  std::vector<bool> had_hash;
  for (BlockId b = 0; b < manager_->pool().num_blocks(); ++b) {
    had_hash.push_back(!manager_->pool().block(b).hash.empty());
  }
  auto fresh = manager_->allocate_slots(req, *n, hit, 0, must_fit);
  const Json after = held_of(req.id());
  int window_freed = 0;
  for (std::size_t g = 0; g < before.size(); ++g) {
    for (std::size_t i = 0; i < before[g].size() && i < after[g].size(); ++i) {
      window_freed += before[g][i] != 0 && after[g][i] == 0 ? 1 : 0;
    }
  }
  Json evicted = Json::array();
  got["ok"] = fresh.has_value();
  if (fresh) {
    req.num_computed_tokens += hit.num_tokens + *n;
    got["new_blocks"] = *fresh;
    for (const auto& blocks : *fresh) {
      for (BlockId b : blocks) {
        if (had_hash[static_cast<std::size_t>(b)]) evicted.push_back(b);
      }
    }
  }
  got["num_computed_tokens"] = req.num_computed_tokens;
  got["held"] = after;
  got["window_freed"] = window_freed;
  got["evicted"] = evicted;
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
      {"get_computed", {{"op", "req", "expect"}, {"hit_tokens", "blocks"}}},
      {"allocate",
       {{"op", "req", "num_new_tokens", "full_sequence_must_fit", "expect"},
        {"ok", "new_blocks", "num_computed_tokens", "held", "window_freed"}}},
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
  r.request = std::make_unique<Request>(*id, *prompt, HashExtras{}, hasher_.get(), block_size_);
  got["num_tokens"] = r.request->num_tokens();
  got["num_block_hashes"] = r.request->block_hashes().size();
  return Status();
}

Status HybridScenario::run_on_request(const std::string& op, const Json& step,
                                      const std::string& where, Json& got) {
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
    (*r)->pending_hit = manager_->get_computed_blocks(req);
    got["hit_tokens"] = (*r)->pending_hit->num_tokens;
    got["blocks"] = (*r)->pending_hit->blocks;
  } else if (op == "allocate") {
    return run_allocate(step, where, **r, got);
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

  Json got = {{"evicted", Json::array()}};
  Status s = *op == "add" ? run_add(step, where, got) : run_on_request(*op, step, where, got);
  if (!s.ok()) return s;
  got["free"] = manager_->num_free_blocks();
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
