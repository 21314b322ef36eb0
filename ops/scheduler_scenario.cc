#include "ops/scheduler_scenario.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/util/check.h"
#include "model/sched/scheduler.h"

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
      fail(join(where, key), "must be from " + std::to_string(min) + " to " + std::to_string(max) + ", got " +
                                  v->dump());
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
  json expect;
};

struct Scenario {
  SchedulerConfig config;
  bool valid_vllm_config = true;
  std::map<std::string, RequestSpec> requests;  // by id; consumed when they arrive
  std::map<std::string, std::int64_t> arrival_step;  // by id; erased when a step lists it
  std::vector<ScenarioStep> steps;
};

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
  sc.num_lookahead_tokens = static_cast<int>(in.integer(c, where, "num_lookahead_tokens", 0, 1 << 20));
  if (in.boolean(c, where, "async_scheduling")) in.fail(where + ".async_scheduling", "kvsim supports only false");
}

void parse_config(FieldReader& in, const json& c, Scenario& s) {
  if (!c.is_object()) return in.fail("config", "must be an object");
  in.only_keys(c, "config",
               {"format_version", "vllm_commit", "block_size", "num_blocks", "hash", "hash_seed", "free_order",
                "max_num_batched_tokens", "max_num_seqs", "max_model_len", "enable_chunked_prefill",
                "long_prefill_token_threshold", "policy", "enable_prefix_caching", "scheduler_reserve_full_isl",
                "watermark", "num_lookahead_tokens", "async_scheduling", "valid_vllm_config", "invalid_because"});
  if (in.integer(c, "config", "format_version", 0) != 1 && in.ok()) {
    in.fail("config.format_version", "kvsim reads format 1, got " + c["format_version"].dump());
  }
  in.text(c, "config", "vllm_commit");
  parse_cache_options(in, c, s.config);
  parse_scheduler_options(in, c, s.config);
  s.valid_vllm_config = in.boolean(c, "config", "valid_vllm_config");
  if (c.contains("invalid_because")) in.strings(c, "config", "invalid_because");
}

// Prompt segments [start, count] concatenated; the k-th output is output_start + k.
void parse_request(FieldReader& in, const json& r, const std::string& where, Scenario& s) {
  if (!r.is_object()) return in.fail(where, "must be an object");
  in.only_keys(r, where, {"id", "arrival_step", "arrival_time", "priority", "prompt", "prompt_len", "max_tokens",
                          "output_start"});
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
  if (in.ok() && s.requests.count(spec.id)) return in.fail(where + ".id", "'" + spec.id + "' used twice");
  s.arrival_step[spec.id] = arrival_step;
  s.requests.emplace(spec.id, std::move(spec));
}

void parse_step(FieldReader& in, const json& st, std::size_t index, Scenario& s) {
  const std::string where = "steps[" + std::to_string(index) + "]";
  if (!st.is_object()) return in.fail(where, "must be an object");
  in.only_keys(st, where, {"step", "arrivals", "aborts", "expect"});
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
  const json* expect = in.get(st, where, "expect");
  if (expect != nullptr && !expect->is_object()) in.fail(where + ".expect", "must be an object");
  if (expect != nullptr && expect->is_object()) {
    in.only_keys(*expect, where + ".expect", {std::begin(kSchedulerExpectKeys), std::end(kSchedulerExpectKeys)});
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
              {"total_tokens", plan.total_tokens},  {"preempted", plan.preempted},
              {"finished", json::array()},
              {"free_blocks_after_schedule", sched.kv_cache().num_free_blocks()}};
  for (const ScheduledRequest& sr : plan.requests) {
    const auto tokens = static_cast<std::int64_t>(sr.token_ids.size());
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

// The queues and the per-request counters after update_from_output.
void observe_after_step(const Scheduler& sched, json& got) {
  got["waiting"] = sched.waiting_ids();
  got["running"] = sched.running_ids();
  got["num_computed_tokens"] = json::object();
  got["num_output_tokens"] = json::object();
  for (const auto& ids : {sched.waiting_ids(), sched.running_ids()}) {
    for (const RequestId& id : ids) {
      const Request* r = sched.find(id);
      got["num_computed_tokens"][id] = r->num_computed_tokens;
      got["num_output_tokens"][id] = r->num_output_tokens();
    }
  }
  got["free_blocks"] = sched.kv_cache().num_free_blocks();
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
  const StepPlan plan = sched.schedule();
  json got = observe_schedule(sched, plan);
  StepResult executed;  // the instant executor: the teacher-forced token of each sampler
  for (const ScheduledRequest& sr : plan.requests) {
    if (sr.samples) executed.sampled.emplace_back(sr.id, sr.next_token);
  }
  for (const TokenEvent& ev : sched.update_from_output(plan, executed)) {
    if (ev.finished) got["finished"].push_back({ev.id, "length"});  // both stops are vLLM's "length"
  }
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
  Scheduler sched(s.config);
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const auto step = static_cast<std::int64_t>(i);
    StatusOr<json> got = run_step(sched, s, s.steps[i]);
    if (!got.ok()) return mismatch(step, "arrivals", "accepted", "refused: " + got.status().message());
    std::string why;
    if (!sched.check_invariants(&why)) return mismatch(step, "invariants", "hold", why);
    for (const char* key : kSchedulerExpectKeys) {
      const json& expect = s.steps[i].expect;
      if (expect.contains(key) && expect[key] != (*got)[key]) {
        return mismatch(step, std::string("expect.") + key, expect[key].dump(), (*got)[key].dump());
      }
    }
  }
  return ScenarioOutcome{};
}

}  // namespace kv::ops
