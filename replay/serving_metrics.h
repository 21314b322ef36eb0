// ServingMetrics: the figures `vllm bench serve` reports, computed from a replay's requests,
// with the same definitions so results can be compared side by side (docs/results.md):
//   TTFT  arrival (or, under --max-concurrency, the moment the request was sent) to first token;
//   TPOT  (E2EL - TTFT) / (output tokens - 1), per request with more than one output token;
//   ITL   every gap between two consecutive output tokens of a request, pooled over requests;
//   E2EL  arrival (or send) to last token.
// With a serving front end (replay/frontend.h) arrival and token times are the client's.
// mean, median, std (population) and percentiles (model/util/percentile.h, numpy's linear method)
// in milliseconds. Goodput: finished requests per second whose TTFT, TPOT and E2EL each meet
// the SLOs that are set.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "replay/latency_counts.h"

namespace kv::replay {

struct LatencyStats {
  std::int64_t count = 0;
  double mean = 0, median = 0, std = 0;
  std::vector<std::pair<double, double>> percentiles;  // (p, value), in the order asked
};

// Stats of `values_ms` (any order).
LatencyStats latency_stats(std::vector<double> values_ms, const std::vector<double>& percentiles);
// The same stats, bit for bit, of the samples of `us` each divided by 1000 (microseconds to ms).
LatencyStats latency_stats(const LatencyCounts& us, const std::vector<double>& percentiles);

// SLOs of --goodput, in ms; a negative value is unset.
struct GoodputSlo {
  double ttft_ms = -1, tpot_ms = -1, e2el_ms = -1;
  bool enabled() const { return ttft_ms >= 0 || tpot_ms >= 0 || e2el_ms >= 0; }
  bool met(double ttft, double tpot, double e2el) const {
    return (ttft_ms < 0 || ttft <= ttft_ms) && (tpot_ms < 0 || tpot <= tpot_ms) && (e2el_ms < 0 || e2el <= e2el_ms);
  }
};

struct ServingMetrics {
  std::int64_t completed = 0, failed = 0, good = 0;
  double duration_s = 0;
  std::int64_t total_input_tokens = 0, total_output_tokens = 0;
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  double request_goodput = -1;               // -1: no SLO given
  double max_output_tokens_per_s = 0;        // the busiest second of the clock
  std::int64_t max_concurrent_requests = 0;  // the most requests in flight during one second
  LatencyStats ttft_ms, tpot_ms, itl_ms, e2el_ms;
};

// Whether the run kept up with its arrivals (the figure that shows it, when it did not).
struct OverloadVerdict {
  bool overloaded = false;
  std::string reason;
};

// Overloaded when the median TTFT of the last fifth of requests (by arrival) is at least 4 times
// that of the first fifth and above 1 s, the last fifth having arrived after the first (an
// open-loop process; never for an offline batch whose requests all arrive at one instant), or
// the median TTFT over all requests exceeds `ttft_bound_ms`.
OverloadVerdict judge_overload(const std::vector<std::pair<std::int64_t, std::int64_t>>& arrival_and_ttft_us,
                               double ttft_bound_ms);

}  // namespace kv::replay
