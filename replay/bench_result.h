// BenchResult: the figures of a `vllm bench serve --save-result` file (benchmark_serving.py's
// JSON before it), as a replay's result.json also writes them (docs/results.md): the means,
// medians and percentiles of TTFT, TPOT, ITL and E2EL in ms, plus the run's counts.
// Invariants:
//   1. read_bench_result() accepts a JSON object whose mean_ttft_ms and mean_tpot_ms are
//      finite numbers >= 0; every other figure is optional, and one that is present must be
//      such a number too. Errors name the file and the key.
//   2. Keys the reader does not know (per-request lists, texts, the run's settings) are
//      ignored; `figures` keeps the known ones that are present, in vLLM's key names.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/util/status.h"
#include "replay/serving_metrics.h"

namespace kv::replay {

struct BenchResult {
  std::string path;
  std::map<std::string, double> figures;  // e.g. "mean_ttft_ms" -> 199.42
  std::optional<double> completed;        // requests that finished
  std::optional<double> request_rate;     // absent when the file has "inf" or none

  double figure(const std::string& key) const { return figures.at(key); }
  bool has(const std::string& key) const { return figures.count(key) > 0; }
};

// The latency keys compared, in the order vLLM prints them: {mean, median, p99} x {ttft,
// tpot, itl, e2el}, then duration.
const std::vector<std::string>& bench_result_keys();

StatusOr<BenchResult> read_bench_result(const std::string& path);
// The same from the file's text; `path` names it in errors.
StatusOr<BenchResult> parse_bench_result(const std::string& path, const std::string& text);

// The figure `key` (one of bench_result_keys()) of a replay's metrics; nullopt for a
// percentile the replay did not compute (--metric-percentiles without 99).
std::optional<double> serving_figure(const ServingMetrics& m, const std::string& key);

}  // namespace kv::replay
