// result.json: a replay's results in the shape of `vllm bench serve --save-result` (the keys,
// names and units of its saved result for a serving run), plus kvsim's own figures under
// "kvsim". docs/results.md lists every field. Deterministic: kvsim never reads the wall clock
// for it; "date" is the injected date (SOURCE_DATE_EPOCH on the command line).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "replay/replayer.h"
#include "reports/run_folder.h"

namespace kv::reports {

// vLLM's keys of one latency metric, in its order: mean_<name>_ms, median_<name>_ms,
// std_<name>_ms, then p<P>_<name>_ms for each percentile asked (p99, p99.9, ...).
std::vector<std::pair<std::string, double>> latency_keys(const std::string& name, const replay::LatencyStats& st);

// Speculative decoding's figures (vLLM's spec-decoding metrics): num_drafts, num_draft_tokens,
// num_accepted_tokens, acceptance_rate, mean_acceptance_length, acceptance_rate_per_position.
// Written only when speculation was on (s.spec.num_speculative_tokens > 0).
nlohmann::ordered_json spec_decoding_json(const replay::SpecDecodingFigures& s);

// `date` is vLLM's "%Y%m%d-%H%M%S" text.
std::string result_json(const RunConfig& config, const replay::ReplaySummary& s, const std::string& date);

// "%Y%m%d-%H%M%S" of the SOURCE_DATE_EPOCH environment variable, or of the epoch when unset.
std::string result_date_from_environment();

}  // namespace kv::reports
