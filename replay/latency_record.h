// LatencyRecord: what a client of the engine would have measured over a run -- each request's
// TTFT, TPOT and E2E, every inter-token latency, the output tokens of each second of the clock
// and the requests live in each second -- and the figures computed from it: the summary's
// latency percentiles, vllm bench serve's metrics (replay/serving_metrics.h) and the overload
// verdict. The records of a fleet's engines merge into the fleet's (replay/fleet_replay.h).
// Invariants:
//   1. Exact: every sample is kept (the inter-token latencies as counts, replay/latency_counts.h);
//      the figures are those of the full sample lists.
//   2. merge(b) leaves the record a single engine would have kept had it seen the samples of
//      both; figures built from merged records are deterministic in the order of the merges.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "replay/latency_counts.h"
#include "replay/replay_summary.h"
#include "replay/serving_metrics.h"

namespace kv::replay {

// How the figures are computed: the percentiles asked for, --goodput, the overload bound.
struct LatencyFigureOptions {
  std::vector<double> percentiles = {99};
  GoodputSlo goodput;
  double overload_ttft_ms = 60000;
};

class LatencyRecord {
 public:
  // A request that ran to its end (not a rejected one); `m` has its token times.
  void add_request(const RequestMetrics& m, const GoodputSlo& goodput);
  // An output token that reached the client at `now_us`.
  void add_token(std::int64_t now_us) {
    ++tokens_per_second_[std::max<std::int64_t>(now_us / 1000000, 0)];
    last_token_us_ = std::max(last_token_us_, now_us);
  }
  // The gap since the request's previous output chunk (an inter-token latency).
  void add_itl(std::int64_t gap_us) { itl_.add(gap_us); }
  void merge(const LatencyRecord& other);

  // Fills sum.ttft_us, tpot_us, e2e_us, serving and overload; reads sum's counts
  // (requests_finished, requests_rejected, prompt_tokens, output_tokens) and sim_time_us. The
  // serving duration lasts until the client has the last token (a front end delays it past
  // the engine's clock, replay/frontend.h).
  void summarize(ReplaySummary& sum, const LatencyFigureOptions& options) const;

 private:
  void serving_metrics(ReplaySummary& sum, const LatencyFigureOptions& options) const;

  std::vector<std::int64_t> ttft_, tpot_, e2e_;  // microseconds, one per request
  LatencyCounts itl_;                            // microseconds, one per output token after the first
  std::vector<double> tpot_ms_;                  // vLLM's per-request TPOT
  std::vector<std::pair<std::int64_t, std::int64_t>> arrival_ttft_;  // for the overload verdict
  std::int64_t good_ = 0;                                            // requests within --goodput
  std::int64_t last_token_us_ = 0;                                   // the client's last token
  // By second of the clock; sparse, so a trace with years between arrivals costs nothing.
  std::map<std::int64_t, std::int64_t> tokens_per_second_;
  // Requests live in a second: +1 at a request's first second, -1 after its last (the running
  // sum over seconds is the count), so a long request costs two entries, not one per second.
  std::map<std::int64_t, std::int64_t> live_changes_;
};

}  // namespace kv::replay
