// Capacity search: the highest request rate (Poisson arrivals, or gamma with the config's
// burstiness) at which a model on a GPU serves a trace within a latency SLO -- the question a
// capacity planner asks. Each probe is a full replay at one rate; the search brackets the
// answer by doubling or halving from a start rate, then bisects geometrically until the
// bracket is within `precision`.
// Invariants:
//   1. Deterministic: the same config, trace and SLO give the same probes and the same answer.
//   2. The answer meets the SLO (it was probed); the bracket's upper end, at most
//      (1 + precision) times the answer, does not.
//   3. A probe meets the SLO only if at least one request finished and none was rejected.
#pragma once

#include <string>
#include <vector>

#include "model/util/status.h"
#include "replay/replay_config.h"
#include "replay/serving_metrics.h"

namespace kv::replay {

// One bound of the SLO: `metric-stat=MS`, metric in ttft, tpot, itl, e2el and stat in mean,
// median or pNN (e.g. ttft-p99=500).
struct SloBound {
  std::string metric, stat;
  double percentile = -1;  // for pNN
  double limit_ms = 0;
  std::string text() const;
};

// "ttft-p99=500,tpot-p99=50" -> bounds; errors name the bad item.
StatusOr<std::vector<SloBound>> parse_slo(const std::string& text);

// The figure a bound limits, from a run's metrics (the percentile must have been computed).
double slo_figure(const ServingMetrics& m, const SloBound& b);

struct CapacityProbe {
  double rate = 0;
  bool meets = false;
  std::vector<double> figures;  // per bound, in ms
  double output_throughput = 0, request_throughput = 0;
  bool overloaded = false;
};

struct CapacityOptions {
  double start_rate = 1;    // requests/s, within the bounds of --request-rate (replay_config.h)
  double precision = 0.02;  // stop when high / low <= 1 + precision; 1e-6 to 1
  int max_probes = 40;      // 1 to 1000
};

// The error names the option (--start-rate, --precision, --max-probes).
Status validate(const CapacityOptions& options);

struct CapacityResult {
  double rate = 0;                    // the highest rate probed that meets the SLO (0: none)
  double failing_rate = 0;            // the lowest rate probed that does not (0: none)
  std::vector<CapacityProbe> probes;  // sorted by rate
};

StatusOr<CapacityResult> find_capacity(const ReplayConfig& base, const std::string& trace,
                                       const std::vector<SloBound>& slo, const CapacityOptions& options);

}  // namespace kv::replay
