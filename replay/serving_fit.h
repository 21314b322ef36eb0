// ServingFit: the time outside the simulated GPU that a `vllm bench serve` result implies,
// found by replaying the benchmark's workload: the engine's host time per step (fitted to the
// mean TPOT) and a fixed latency per request outside the engine (fitted to the mean TTFT).
// docs/fidelity.md, "Fitting the serving terms to a benchmark".
// Invariants:
//   1. Every replay of the fit is the caller's config with two settings changed: the host's
//      time per step (--host-overhead STEP,REQUEST,TOKEN with the effective GPU's per-request
//      and per-token terms kept; its per-block term becomes 0) and the front end's LATENCY_NS
//      (its other terms kept).
//   2. Each term is fitted by bisection over integer ns in [0, kMaxTermNs] to kResolutionNs:
//      the smallest value whose mean reaches the target, or the nearer neighbour. A target the
//      range cannot reach leaves the term at the nearer end with reached = false.
//   3. A round fits the host term, then the latency; rounds repeat until one moves neither
//      term by more than kResolutionNs, at most kMaxRounds.
//   4. Deterministic: the same config, trace and targets give the same fit.
#pragma once

#include <cstdint>
#include <string>

#include "model/util/status.h"
#include "replay/replay_config.h"
#include "replay/serving_metrics.h"

namespace kv::replay {

inline constexpr std::int64_t kMaxTermNs = 1'000'000'000;  // the bound of both options
inline constexpr std::int64_t kResolutionNs = 10'000;
inline constexpr int kMaxRounds = 6;

struct FittedTerm {
  std::int64_t ns = 0;
  bool reached = false;  // the fitted run's mean is the target's, to the resolution
};

struct ServingFit {
  FittedTerm host_step, latency;
  int rounds = 0, replays = 0;
  ServingMetrics before, after;  // the caller's config, and the fitted one
  // The option values that give the fitted run.
  std::string host_overhead, frontend;
};

// Fits the two terms to `mean_ttft_ms` and `mean_tpot_ms` over replays of `trace_path` with
// `config` (kept as it is but for invariant 1; decision text and verification off).
StatusOr<ServingFit> fit_serving(const ReplayConfig& config, const std::string& trace_path, double mean_ttft_ms,
                                 double mean_tpot_ms);

}  // namespace kv::replay
