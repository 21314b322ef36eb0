#include "reports/result_json.h"

#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

namespace kv::reports {

namespace {

using nlohmann::ordered_json;

std::string value_of(const RunConfig& config, const std::string& key) {
  for (const auto& [k, v] : config) {
    if (k == key) return v;
  }
  return "";
}

ordered_json number_or_inf(const std::string& text) {
  if (text == "inf") return "inf";
  return std::strtod(text.c_str(), nullptr);
}

void add_latency(ordered_json& j, const std::string& name, const replay::LatencyStats& st) {
  for (const auto& [key, value] : latency_keys(name, st)) j[key] = value;
}

ordered_json kvsim_block(const RunConfig& config, const replay::ReplaySummary& s) {
  ordered_json k;
  k["device"] = value_of(config, "device");
  k["prefix_cache_hit_rate"] = s.request_hit_rate;
  k["prefix_cache_lookup_hit_rate"] = s.hit_rate;
  k["prefix_cache_hit_tokens"] = s.admitted_hit_tokens;
  k["prefix_cache_queried_tokens"] = s.admitted_prompt_tokens;
  k["evictions"] = s.evictions;
  k["preemptions"] = s.preemptions;
  k["steps"] = s.steps;
  k["overloaded"] = s.overload.overloaded;
  k["overload_reason"] = s.overload.reason;
  k["decision_log_sha256"] = s.digest;
  if (!s.tiers.empty()) {  // docs/tiers.md
    ordered_json tiers = ordered_json::array();
    for (const TierFigures& t : s.tiers) {
      tiers.push_back({{"tier", t.name},
                       {"hit_rate", s.admitted_prompt_tokens > 0 ? static_cast<double>(t.first_hit_tokens) /
                                                                       static_cast<double>(s.admitted_prompt_tokens)
                                                                 : 0.0},
                       {"hit_tokens", t.first_hit_tokens},
                       {"loaded_bytes", t.loaded_bytes},
                       {"stored_bytes", t.stored_bytes}});
    }
    k["kv_tiers"] = tiers;
    k["combined_hit_rate"] = s.combined_hit_rate;
    k["tier_load_ms"] = static_cast<double>(s.tier_load_ns) / 1e6;
    k["tier_stall_ms"] = static_cast<double>(s.tier_stall_ns) / 1e6;
  }
  if (s.spec.num_speculative_tokens > 0) k["spec_decoding"] = spec_decoding_json(s.spec);
  return k;
}

}  // namespace

ordered_json spec_decoding_json(const replay::SpecDecodingFigures& s) {
  ordered_json per_position = ordered_json::array();
  for (std::size_t i = 0; i < s.accepted_per_position.size(); ++i) per_position.push_back(s.position_rate(i));
  ordered_json accepted = ordered_json::array();
  for (std::int64_t n : s.accepted_per_position) accepted.push_back(n);
  return {{"num_speculative_tokens", s.num_speculative_tokens},
          {"num_drafts", s.num_drafts},
          {"num_draft_tokens", s.num_draft_tokens},
          {"num_accepted_tokens", s.num_accepted_tokens},
          {"num_accepted_tokens_per_position", accepted},
          {"acceptance_rate", s.acceptance_rate()},
          {"acceptance_rate_per_position", per_position},
          {"mean_acceptance_length", s.mean_acceptance_length()}};
}

std::vector<std::pair<std::string, double>> latency_keys(const std::string& name, const replay::LatencyStats& st) {
  std::vector<std::pair<std::string, double>> out = {
      {"mean_" + name + "_ms", st.mean}, {"median_" + name + "_ms", st.median}, {"std_" + name + "_ms", st.std}};
  for (const auto& [p, v] : st.percentiles) {
    const bool whole = p == static_cast<double>(static_cast<long long>(p));
    std::string word = whole ? std::to_string(static_cast<long long>(p)) : nlohmann::json(p).dump();
    out.emplace_back("p" + word + "_" + name + "_ms", v);
  }
  return out;
}

std::string result_json(const RunConfig& config, const replay::ReplaySummary& s, const std::string& date) {
  const replay::ServingMetrics& m = s.serving;
  ordered_json j;
  j["date"] = date;
  j["endpoint_type"] = "kvsim";
  j["backend"] = "kvsim";
  j["label"] = nullptr;
  j["model_id"] = value_of(config, "model");
  j["tokenizer_id"] = value_of(config, "model");
  j["num_prompts"] = s.requests_total;
  const std::string rate = value_of(config, "request_rate");
  j["request_rate"] = rate == "0" ? ordered_json("trace") : number_or_inf(rate);
  j["burstiness"] = std::strtod(value_of(config, "burstiness").c_str(), nullptr);
  const std::string conc = value_of(config, "max_concurrency");
  j["max_concurrency"] = conc == "0" || conc.empty() ? ordered_json(nullptr) : ordered_json(std::stoll(conc));
  j["duration"] = m.duration_s;
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["total_input_tokens"] = m.total_input_tokens;
  j["total_output_tokens"] = m.total_output_tokens;
  j["request_throughput"] = m.request_throughput;
  j["request_goodput"] = m.request_goodput >= 0 ? ordered_json(m.request_goodput) : ordered_json(nullptr);
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  j["max_output_tokens_per_s"] = m.max_output_tokens_per_s;
  j["max_concurrent_requests"] = m.max_concurrent_requests;
  add_latency(j, "ttft", m.ttft_ms);
  add_latency(j, "tpot", m.tpot_ms);
  add_latency(j, "itl", m.itl_ms);
  add_latency(j, "e2el", m.e2el_ms);
  j["kvsim"] = kvsim_block(config, s);
  return j.dump(2) + "\n";
}

std::string result_date_from_environment() {
  std::time_t t = 0;
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"))
    t = static_cast<std::time_t>(std::strtoll(epoch, nullptr, 10));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

}  // namespace kv::reports
