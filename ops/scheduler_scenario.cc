#include "ops/scheduler_scenario.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <span>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/sched/scheduler.h"
#include "model/util/check.h"

namespace kv::ops {
namespace {

using nlohmann::json;

// Reads the fields of JSON objects. The first problem found becomes status(), naming the
// file and the field ("f.json: requests[2].prompt: ..."); later reads return defaults.
class FieldReader {
 public:
  explicit FieldReader(std::string file) : file_(std::move(file)) {}

  const Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }
  // "config" + "block_size" -> "config.block_size"; a top-level field is named alone.
  static std::string join(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }

  void fail(const std::string& field, const std::string& what) {
    if (status_.ok()) status_ = Status::error(file_ + ": " + field + ": " + what);
  }

  // Every key of `obj` must be one of `known`.
  void only_keys(const json& obj, const std::string& where, const std::vector<std::string_view>& known) {
    for (const auto& [key, value] : obj.items()) {
      bool found = false;
      for (std::string_view k : known) found = found || k == key;
      if (!found) fail(join(where, key), "unknown field");
    }
  }

  const json* get(const json& obj, const std::string& where, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      fail(join(where, key), "missing");
      return nullptr;
    }
    return &*it;
  }

  std::int64_t integer(const json& obj, const std::string& where, const char* key, std::int64_t min,
                       std::int64_t max = std::numeric_limits<std::int32_t>::max()) {
    const json* v = get(obj, where, key);
    if (v == nullptr) return min;
    if (!v->is_number_integer()) {
      fail(join(where, key), "must be an integer, got " + v->dump());
      return min;
    }
    const auto value = v->get<std::int64_t>();
    if (value < min || value > max || (v->is_number_unsigned() && v->get<std::uint64_t>() > 1ULL << 62)) {
      fail(join(where, key),
           "must be from " + std::to_string(min) + " to " + std::to_string(max) + ", got " + v->dump());
      return min;
    }
    return value;
  }

  double number(const json& obj, const std::string& where, const char* key) {
    const json* v = get(obj, where, key);
    if (v == nullptr) return 0;
    if (!v->is_number() || !std::isfinite(v->get<double>())) {
      fail(join(where, key), "must be a number, got " + v->dump());
      return 0;
    }
    return v->get<double>();
  }

  bool boolean(const json& obj, const std::string& where, const char* key) {
    const json* v = get(obj, where, key);
    if (v == nullptr) return false;
    if (!v->is_boolean()) fail(join(where, key), "must be true or false, got " + v->dump());
    return v->is_boolean() && v->get<bool>();
  }

  std::string text(const json& obj, const std::string& where, const char* key) {
    const json* v = get(obj, where, key);
    if (v == nullptr) return "";
    if (!v->is_string()) {
      fail(join(where, key), "must be a string, got " + v->dump());
      return "";
    }
    return v->get<std::string>();
  }

  const json& array(const json& obj, const std::string& where, const char* key) {
    static const json kEmpty = json::array();
    const json* v = get(obj, where, key);
    if (v == nullptr) return kEmpty;
    if (!v->is_array()) {
      fail(join(where, key), "must be an array, got " + v->dump());
      return kEmpty;
    }
    return *v;
  }

  std::vector<std::string> strings(const json& obj, const std::string& where, const char* key) {
    std::vector<std::string> out;
    for (const json& item : array(obj, where, key)) {
      if (!item.is_string()) {
        fail(join(where, key), "must hold strings, got " + item.dump());
        return {};
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  }

 private:
  std::string file_;
  Status status_;
};

struct ScenarioStep {
  std::vector<std::string> aborts, arrivals;
  std::map<std::string, int> accepted, drafts;  // speculative files: inputs by request id
  json expect;
};

struct Scenario {
  SchedulerConfig config;
  bool valid_vllm_config = true;
  bool speculative = false;                          // the golden-spec format (config.spec_method)
  json derived;                                      // speculative: what vLLM derived, by config key
  std::map<std::string, RequestSpec> requests;       // by id; consumed when they arrive
  std::map<std::string, std::int64_t> arrival_step;  // by id; erased when a step lists it
  std::map<std::string, TokenId> output_start;       // by id: its k-th output is output_start + k
  std::vector<ScenarioStep> steps;
};

// The speculative format's config keys beyond the scheduler format's.
const std::vector<std::string_view> kSpecConfigKeys = {"spec_method",
                                                       "num_speculative_tokens",
                                                       "parallel_drafting",
                                                       "use_eagle",
                                                       "drafting_slots_per_seq",
                                                       "max_num_scheduled_tokens",
                                                       "acceptance_rates",
                                                       "drafter",
                                                       "no_match_probability",
                                                       "mamba_cache_mode",
                                                       "kv_cache_groups"};
// The derived values a speculative file records, compared with kvsim's before the first step.
const char* const kDerivedKeys[] = {"parallel_drafting", "use_eagle", "num_lookahead_tokens", "drafting_slots_per_seq",
                                    "max_num_scheduled_tokens"};

// The option names of the file's `config` and what kvsim runs them as.
void parse_cache_options(FieldReader& in, const json& c, SchedulerConfig& sc) {
  const std::string where = "config";
  KvCacheConfig& cache = sc.cache;
  cache.block_size = static_cast<int>(in.integer(c, where, "block_size", 1, 1 << 20));
  cache.num_blocks = static_cast<int>(in.integer(c, where, "num_blocks", 1, 1 << 26));
  cache.max_model_len = in.integer(c, where, "max_model_len", 1, 1 << 30);
  cache.enable_caching = in.boolean(c, where, "enable_prefix_caching");
  const std::string hash = in.text(c, where, "hash");
  if (auto algo = parse_hash_algo(hash)) {
    sc.hash_algo = *algo;
  } else {
    in.fail(where + ".hash", "must be sha256_cbor or xxhash_cbor, got '" + hash + "'");
  }
  sc.hash_seed = in.text(c, where, "hash_seed");
  const std::string order = in.text(c, where, "free_order");
  if (!parse_free_order(order, &cache.free_order)) {
    in.fail(where + ".free_order", "must be classic or unhashed_first, got '" + order + "'");
  }
  if (in.number(c, where, "watermark") != 0.0) in.fail(where + ".watermark", "kvsim supports only 0.0 (vLLM v1)");
}

void parse_scheduler_options(FieldReader& in, const json& c, SchedulerConfig& sc) {
  const std::string where = "config";
  sc.max_num_batched_tokens = in.integer(c, where, "max_num_batched_tokens", 0, 1 << 30);
  sc.max_num_seqs = static_cast<int>(in.integer(c, where, "max_num_seqs", 0));
  sc.enable_chunked_prefill = in.boolean(c, where, "enable_chunked_prefill");
  sc.long_prefill_token_threshold = in.integer(c, where, "long_prefill_token_threshold", 0, 1 << 30);
  const std::string policy = in.text(c, where, "policy");
  if (policy == "fcfs" || policy == "priority") {
    sc.policy = policy == "fcfs" ? SchedulingPolicy::kFcfs : SchedulingPolicy::kPriority;
  } else {
    in.fail(where + ".policy", "must be fcfs or priority, got '" + policy + "'");
  }
  sc.full_sequence_gate = in.boolean(c, where, "scheduler_reserve_full_isl");
  if (in.boolean(c, where, "async_scheduling")) in.fail(where + ".async_scheduling", "kvsim supports only false");
}

// The speculative format's KV-cache groups: full attention, and Mamba in align mode with one
// speculative block per speculative token.
void parse_kv_cache_groups(FieldReader& in, const json& c, Scenario& s) {
  const std::string where = "config";
  if (in.text(c, where, "mamba_cache_mode") != "align" && in.ok()) {
    in.fail(where + ".mamba_cache_mode", "kvsim reads only align, got " + c["mamba_cache_mode"].dump());
  }
  const json& groups = in.array(c, where, "kv_cache_groups");
  for (std::size_t g = 0; g < groups.size() && in.ok(); ++g) {
    const std::string at = where + ".kv_cache_groups[" + std::to_string(g) + "]";
    if (!groups[g].is_object()) return in.fail(at, "must be an object");
    const std::string type = in.text(groups[g], at, "type");
    KvCacheGroupSpec group;
    group.spec.block_size = static_cast<int>(in.integer(groups[g], at, "block_size", 1, 1 << 20));
    group.layer_names = {"layer." + std::to_string(g)};
    if (type == "full_attention") {
      in.only_keys(groups[g], at, {"type", "block_size"});
    } else if (type == "mamba") {
      in.only_keys(groups[g], at, {"type", "block_size", "mamba_cache_mode", "num_speculative_blocks"});
      group.spec.type = AttentionType::kMamba;
      group.spec.mamba_mode = MambaCacheMode::kAlign;
      if (in.text(groups[g], at, "mamba_cache_mode") != "align" && in.ok()) {
        in.fail(at + ".mamba_cache_mode", "kvsim reads only align");
      }
      const std::int64_t k = s.config.speculative.num_speculative_tokens;
      if (in.integer(groups[g], at, "num_speculative_blocks", 0) != k && in.ok()) {
        in.fail(at + ".num_speculative_blocks", "must equal num_speculative_tokens (" + std::to_string(k) + ")");
      }
      group.spec.num_speculative_blocks = static_cast<int>(k);
      // The scheduler's files give groups, not layers: the state is sized as one attention page.
      KvCacheSpec attention;
      attention.block_size = group.spec.block_size;
      group.spec.mamba_state_bytes = attention.page_size_bytes();
    } else if (in.ok()) {
      in.fail(at + ".type", "must be full_attention or mamba, got '" + type + "'");
    }
    s.config.cache.groups.push_back(std::move(group));
  }
}

// spec_method, K and parallel drafting are inputs; the rest is what vLLM derived from them
// (kept to be compared) and how the file's inputs were drawn (checked, not used).
void parse_speculative_options(FieldReader& in, const json& c, Scenario& s) {
  const std::string where = "config";
  SpeculativeConfig& spec = s.config.speculative;
  const std::string method = in.text(c, where, "spec_method");
  if (auto m = parse_spec_method(method); m && *m != SpecMethod::kNone) {
    spec.method = *m;
  } else if (in.ok()) {
    in.fail(where + ".spec_method",
            "must be eagle, eagle3, mtp, dspark, dflash, draft_model, ngram, suffix or "
            "medusa, got '" +
                method + "'");
  }
  spec.num_speculative_tokens = static_cast<int>(in.integer(c, where, "num_speculative_tokens", 1, 1 << 10));
  spec.parallel_drafting = in.boolean(c, where, "parallel_drafting");
  s.derived = {{"parallel_drafting", spec.parallel_drafting},
               {"use_eagle", in.boolean(c, where, "use_eagle")},
               {"num_lookahead_tokens", in.integer(c, where, "num_lookahead_tokens", 0, 1 << 20)},
               {"drafting_slots_per_seq", in.integer(c, where, "drafting_slots_per_seq", 0, 1 << 20)},
               {"max_num_scheduled_tokens", in.integer(c, where, "max_num_scheduled_tokens", -(1 << 30), 1 << 30)}};
  for (const json& rate : in.array(c, where, "acceptance_rates")) {
    if (!rate.is_number()) return in.fail(where + ".acceptance_rates", "must hold numbers, got " + rate.dump());
  }
  in.text(c, where, "drafter");
  if (c.contains("no_match_probability")) in.number(c, where, "no_match_probability");
  if (c.contains("kv_cache_groups") || c.contains("mamba_cache_mode")) parse_kv_cache_groups(in, c, s);
}

void parse_config(FieldReader& in, const json& c, Scenario& s) {
  if (!c.is_object()) return in.fail("config", "must be an object");
  std::vector<std::string_view> known = {"format_version",
                                         "vllm_commit",
                                         "block_size",
                                         "num_blocks",
                                         "hash",
                                         "hash_seed",
                                         "free_order",
                                         "max_num_batched_tokens",
                                         "max_num_seqs",
                                         "max_model_len",
                                         "enable_chunked_prefill",
                                         "long_prefill_token_threshold",
                                         "policy",
                                         "enable_prefix_caching",
                                         "scheduler_reserve_full_isl",
                                         "watermark",
                                         "num_lookahead_tokens",
                                         "async_scheduling",
                                         "valid_vllm_config",
                                         "invalid_because"};
  s.speculative = c.contains("spec_method");
  if (s.speculative) known.insert(known.end(), kSpecConfigKeys.begin(), kSpecConfigKeys.end());
  in.only_keys(c, "config", known);
  if (in.integer(c, "config", "format_version", 0) != 1 && in.ok()) {
    in.fail("config.format_version", "kvsim reads format 1, got " + c["format_version"].dump());
  }
  in.text(c, "config", "vllm_commit");
  parse_cache_options(in, c, s.config);
  parse_scheduler_options(in, c, s.config);
  if (s.speculative) {
    parse_speculative_options(in, c, s);
  } else {
    s.config.num_lookahead_tokens = static_cast<int>(in.integer(c, "config", "num_lookahead_tokens", 0, 1 << 20));
  }
  s.valid_vllm_config = in.boolean(c, "config", "valid_vllm_config");
  if (c.contains("invalid_because")) in.strings(c, "config", "invalid_because");
}

// Prompt segments [start, count] concatenated; the k-th output is output_start + k.
void parse_request(FieldReader& in, const json& r, const std::string& where, Scenario& s) {
  if (!r.is_object()) return in.fail(where, "must be an object");
  std::vector<std::string_view> known = {"id",     "arrival_step", "arrival_time", "priority",
                                         "prompt", "prompt_len",   "max_tokens",   "output_start"};
  if (s.speculative) known.push_back("stop_token_ids");
  in.only_keys(r, where, known);
  RequestSpec spec;
  spec.id = in.text(r, where, "id");
  const std::int64_t arrival_step = in.integer(r, where, "arrival_step", 0, 1 << 30);
  spec.arrival_time_us = std::llround(in.number(r, where, "arrival_time") * 1e6);
  spec.priority = static_cast<int>(in.integer(r, where, "priority", -(1 << 30), 1 << 30));
  for (const json& seg : in.array(r, where, "prompt")) {
    if (!seg.is_array() || seg.size() != 2 || !seg[0].is_number_integer() || !seg[1].is_number_integer() ||
        seg[0].get<std::int64_t>() < 0 || seg[1].get<std::int64_t>() < 0 || seg[1].get<std::int64_t>() > 1 << 24) {
      return in.fail(where + ".prompt", "segments must be [start, count] with 0 <= count <= 2^24, got " + seg.dump());
    }
    for (std::int64_t k = 0; k < seg[1].get<std::int64_t>(); ++k) spec.prompt.push_back(seg[0].get<std::int64_t>() + k);
  }
  const std::int64_t prompt_len = in.integer(r, where, "prompt_len", 0, 1 << 30);
  if (in.ok() && prompt_len != static_cast<std::int64_t>(spec.prompt.size())) {
    in.fail(where + ".prompt_len", std::to_string(prompt_len) + " differs from the prompt's " +
                                       std::to_string(spec.prompt.size()) + " tokens");
  }
  const std::int64_t max_tokens = in.integer(r, where, "max_tokens", 1, 1 << 24);
  const std::int64_t output_start = in.integer(r, where, "output_start", 0, std::int64_t{1} << 40);
  for (std::int64_t k = 0; in.ok() && k < max_tokens; ++k) spec.outputs.push_back(output_start + k);
  if (r.contains("stop_token_ids")) {
    for (const json& id : in.array(r, where, "stop_token_ids")) {
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0) {
        return in.fail(where + ".stop_token_ids", "must hold token ids (integers >= 0), got " + id.dump());
      }
      spec.stop_token_ids.push_back(id.get<TokenId>());
    }
  }
  if (in.ok() && s.requests.count(spec.id)) return in.fail(where + ".id", "'" + spec.id + "' used twice");
  s.arrival_step[spec.id] = arrival_step;
  s.output_start[spec.id] = output_start;
  s.requests.emplace(spec.id, std::move(spec));
}

// A speculative step's `accepted` or `drafts`: request id -> count from 0 to K.
std::map<std::string, int> parse_counts(FieldReader& in, const json& st, const std::string& where, const char* key,
                                        const Scenario& s) {
  std::map<std::string, int> counts;
  const json* obj = in.get(st, where, key);
  if (obj == nullptr) return counts;
  if (!obj->is_object()) {
    in.fail(FieldReader::join(where, key), "must be an object, got " + obj->dump());
    return counts;
  }
  const std::string at = FieldReader::join(where, key);
  for (const auto& [id, value] : obj->items()) {
    if (!s.output_start.count(id)) {
      in.fail(at + "." + id, "unknown request");
      break;
    }
    counts[id] = static_cast<int>(in.integer(*obj, at, id.c_str(), 0, s.config.speculative.num_speculative_tokens));
  }
  return counts;
}

void parse_step(FieldReader& in, const json& st, std::size_t index, Scenario& s) {
  const std::string where = "steps[" + std::to_string(index) + "]";
  if (!st.is_object()) return in.fail(where, "must be an object");
  if (s.speculative) {
    in.only_keys(st, where, {"step", "arrivals", "aborts", "accepted", "drafts", "expect"});
  } else {
    in.only_keys(st, where, {"step", "arrivals", "aborts", "expect"});
  }
  if (in.integer(st, where, "step", 0, 1 << 30) != static_cast<std::int64_t>(index) && in.ok()) {
    in.fail(where + ".step", "must be " + std::to_string(index) + ", got " + st["step"].dump());
  }
  ScenarioStep step;
  step.arrivals = in.strings(st, where, "arrivals");
  step.aborts = in.strings(st, where, "aborts");
  for (const std::string& id : step.arrivals) {
    auto it = s.arrival_step.find(id);
    if (it == s.arrival_step.end() || it->second != static_cast<std::int64_t>(index)) {
      in.fail(where + ".arrivals", "request '" + id + "' is unknown, arrives twice or not at its arrival_step");
    } else {
      s.arrival_step.erase(it);
    }
  }
  if (s.speculative) {
    step.accepted = parse_counts(in, st, where, "accepted", s);
    step.drafts = parse_counts(in, st, where, "drafts", s);
  }
  const json* expect = in.get(st, where, "expect");
  if (expect != nullptr && !expect->is_object()) in.fail(where + ".expect", "must be an object");
  if (expect != nullptr && expect->is_object()) {
    if (s.speculative) {
      in.only_keys(*expect, where + ".expect", {std::begin(kSpecExpectKeys), std::end(kSpecExpectKeys)});
    } else {
      in.only_keys(*expect, where + ".expect", {std::begin(kSchedulerExpectKeys), std::end(kSchedulerExpectKeys)});
    }
    step.expect = *expect;
  }
  s.steps.push_back(std::move(step));
}

StatusOr<Scenario> parse_scenario(const std::string& path) {
  std::ifstream file(path);
  if (!file) return Status::error(path + ": cannot open");
  json doc = json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::error(path + ": not valid JSON");
  FieldReader in(path);
  if (!doc.is_object()) return Status::error(path + ": must be a JSON object");
  in.only_keys(doc, "", {"name", "doc", "config", "requests", "steps"});
  in.text(doc, "", "name");
  in.text(doc, "", "doc");
  Scenario s;
  if (const json* c = in.get(doc, "", "config")) parse_config(in, *c, s);
  const json& requests = in.array(doc, "", "requests");
  for (std::size_t i = 0; i < requests.size() && in.ok(); ++i) {
    parse_request(in, requests[i], "requests[" + std::to_string(i) + "]", s);
  }
  const json& steps = in.array(doc, "", "steps");
  for (std::size_t i = 0; i < steps.size() && in.ok(); ++i) parse_step(in, steps[i], i, s);
  if (in.ok() && !s.arrival_step.empty()) {
    in.fail("steps", "request '" + s.arrival_step.begin()->first + "' never arrives");
  }
  if (!in.ok()) return in.status();
  return s;
}

// What kvsim's scheduler did in one step, in the file's `expect` shape.
json observe_schedule(const Scheduler& sched, const StepPlan& plan) {
  json got = {{"scheduled_running", json::array()}, {"scheduled_new", json::array()},
              {"scheduled_resumed", json::array()}, {"admission_order", json::array()},
              {"total_tokens", plan.total_tokens},  {"scheduled_spec_decode_tokens", json::array()},
              {"preempted", plan.preempted},        {"new_tokens", json::array()},
              {"finished", json::array()},          {"free_blocks_after_schedule", sched.kv_cache().num_free_blocks()}};
  for (const ScheduledRequest& sr : plan.requests) {
    const auto tokens = static_cast<std::int64_t>(sr.token_ids.size());
    if (!sr.spec_token_ids.empty()) got["scheduled_spec_decode_tokens"].push_back({sr.id, sr.spec_token_ids});
    if (!sr.is_new) {
      got["scheduled_running"].push_back({sr.id, tokens});
      continue;
    }
    const bool resumed = sched.find(sr.id)->num_preemptions > 0;
    got[resumed ? "scheduled_resumed" : "scheduled_new"].push_back({sr.id, tokens, sr.num_computed_tokens});
    got["admission_order"].push_back(sr.id);
  }
  return got;
}

// The blocks a request holds: a count, or for a hybrid (full attention + Mamba) layout
// [full-attention blocks, length of the Mamba list, real blocks in it].
json blocks_held(const KvCacheManager& kv, const RequestId& id) {
  if (!kv.tables_per_group()) return kv.blocks_of(id).size();
  const auto mamba = kv.blocks_of(id, 1);
  return json::array({kv.blocks_of(id, 0).size(), mamba.size(),
                      std::count_if(mamba.begin(), mamba.end(), [](BlockId b) { return b != 0; })});
}

// The queues and the per-request counters after update_from_output (and the drafts).
void observe_after_step(const Scheduler& sched, json& got) {
  got["waiting"] = sched.waiting_ids();
  got["running"] = sched.running_ids();
  for (const char* key : {"num_computed_tokens", "num_output_tokens", "num_spec_token_ids", "num_blocks"}) {
    got[key] = json::object();
  }
  for (const auto& ids : {sched.waiting_ids(), sched.running_ids()}) {
    for (const RequestId& id : ids) {
      const Request* r = sched.find(id);
      got["num_computed_tokens"][id] = r->num_computed_tokens;
      got["num_output_tokens"][id] = r->num_output_tokens();
      got["num_spec_token_ids"][id] = r->spec_token_ids.size();
      got["num_blocks"][id] = blocks_held(sched.kv_cache(), id);
    }
  }
  got["free_blocks"] = sched.kv_cache().num_free_blocks();
}

// The executor of the README's step 4: a request that reaches its last known token gets its
// accepted drafts (the file's count; none for a request without drafts) and the output after
// them. A count beyond kvsim's drafts is cut to them: the expects then show the difference.
StepResult execute(const Scheduler& sched, const Scenario& s, const ScenarioStep& step, const StepPlan& plan) {
  StepResult executed;
  for (const ScheduledRequest& sr : plan.requests) {
    if (!sr.samples) continue;
    int accepted = 0;
    if (!sr.spec_token_ids.empty()) {
      const auto real =
          std::find(sr.spec_token_ids.begin(), sr.spec_token_ids.end(), kPaddingDraft) - sr.spec_token_ids.begin();
      auto it = step.accepted.find(sr.id);
      accepted = it == step.accepted.end() ? 0 : static_cast<int>(std::min<std::int64_t>(it->second, real));
      executed.num_accepted.emplace_back(sr.id, accepted);
    }
    const TokenId next = s.output_start.at(sr.id) + sched.find(sr.id)->num_output_tokens() + accepted;
    executed.sampled.emplace_back(sr.id, next);
  }
  return executed;
}

// The README's step 6: the worker's drafts, the request's next outputs.
void propose_drafts(Scheduler& sched, const Scenario& s, const ScenarioStep& step) {
  std::vector<TokenId> drafts;
  for (const auto& [id, count] : step.drafts) {
    const Request* r = sched.find(id);
    if (r == nullptr) continue;  // finished
    drafts.clear();
    for (int k = 0; k < count; ++k) drafts.push_back(s.output_start.at(id) + r->num_output_tokens() + k);
    sched.update_draft_token_ids(id, drafts);
  }
}

// vLLM's per-step speculative statistics: [drafts, draft tokens, accepted], null without any.
json spec_stats(const SchedulerStats& before, const SchedulerStats& after) {
  if (after.spec_num_drafts == before.spec_num_drafts) return nullptr;
  return json::array({after.spec_num_drafts - before.spec_num_drafts,
                      after.spec_num_draft_tokens - before.spec_num_draft_tokens,
                      after.spec_num_accepted_tokens - before.spec_num_accepted_tokens});
}

// Runs one step as the README's "One step"; returns what kvsim did, or the arrival it refused.
StatusOr<json> run_step(Scheduler& sched, Scenario& s, const ScenarioStep& step) {
  for (const std::string& id : step.aborts) sched.abort(id);  // unknown or finished: ignored
  for (const std::string& id : step.arrivals) {
    auto it = s.requests.find(id);
    KV_CHECK(it != s.requests.end(), "parse_step lets each request arrive once");
    Status added = sched.add_request(std::move(it->second));
    s.requests.erase(it);
    if (!added.ok()) return added;
  }
  const SchedulerStats before = sched.stats();
  const StepPlan plan = sched.schedule();
  json got = observe_schedule(sched, plan);
  json& appended = got["new_tokens"];
  for (const TokenEvent& ev : sched.update_from_output(plan, execute(sched, s, step, plan))) {
    if (appended.empty() || appended.back()[0] != ev.id) appended.push_back({ev.id, 0});
    appended.back()[1] = appended.back()[1].get<std::int64_t>() + 1;
    if (ev.finished)
      got["finished"].push_back({ev.id, ev.status == RequestStatus::kFinishedStopped ? "stop" : "length"});
  }
  got["spec_stats"] = spec_stats(before, sched.stats());
  if (plan.total_tokens > 0) propose_drafts(sched, s, step);
  observe_after_step(sched, got);
  return got;
}

ScenarioOutcome mismatch(std::int64_t step, std::string field, std::string expected, std::string got) {
  ScenarioOutcome o;
  o.ok = false;
  o.mismatch = {step, std::move(field), std::move(expected), std::move(got)};
  return o;
}

}  // namespace

StatusOr<ScenarioOutcome> run_scheduler_scenario(const std::string& path) {
  StatusOr<Scenario> parsed = parse_scenario(path);
  if (!parsed.ok()) return parsed.status();
  Scenario& s = parsed.value();
  const Status valid = s.config.validate();
  if (!s.valid_vllm_config) {
    if (valid.ok()) return mismatch(-1, "config.valid_vllm_config", "a refused configuration", "accepted");
    ScenarioOutcome refused;
    refused.refused = true;
    refused.refusal_reason = valid.message();
    return refused;
  }
  if (!valid.ok()) return mismatch(-1, "config", "a valid configuration", "refused: " + valid.message());
  if (s.speculative) {
    const SchedulerConfig& c = s.config;
    const json ours = {{"parallel_drafting", c.speculative.drafts_in_parallel()},
                       {"use_eagle", c.speculative.use_eagle()},
                       {"num_lookahead_tokens", c.lookahead_tokens()},
                       {"drafting_slots_per_seq", c.speculative.drafting_slots_per_seq()},
                       {"max_num_scheduled_tokens", c.max_num_scheduled_tokens()}};
    for (const char* key : kDerivedKeys) {
      if (s.derived[key] != ours[key]) {
        return mismatch(-1, std::string("config.") + key, s.derived[key].dump(), ours[key].dump());
      }
    }
  }
  Scheduler sched(s.config);
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const auto step = static_cast<std::int64_t>(i);
    StatusOr<json> got = run_step(sched, s, s.steps[i]);
    if (!got.ok()) return mismatch(step, "arrivals", "accepted", "refused: " + got.status().message());
    std::string why;
    if (!sched.check_invariants(&why)) return mismatch(step, "invariants", "hold", why);
    for (const char* key : s.speculative ? std::span<const char* const>(kSpecExpectKeys)
                                         : std::span<const char* const>(kSchedulerExpectKeys)) {
      const json& expect = s.steps[i].expect;
      if (expect.contains(key) && expect[key] != (*got)[key]) {
        return mismatch(step, std::string("expect.") + key, expect[key].dump(), (*got)[key].dump());
      }
    }
  }
  return ScenarioOutcome{};
}

}  // namespace kv::ops
