#include "replay/serving_fit.h"

#include <cmath>
#include <functional>

#include "replay/replay_builder.h"

namespace kv::replay {

namespace {

// The two terms a replay of the fit runs with (invariant 1).
struct Terms {
  std::int64_t host_step_ns = 0, latency_ns = 0;
};

class FitRuns {
 public:
  FitRuns(const ReplayConfig& config, std::string trace) : base_(config), trace_(std::move(trace)) {
    base_.run.replay.keep_decision_text = false;
    base_.device.verify = sim::VerifyMode::kOff;
    const sim::GpuSpec gpu = config.device.effective_gpu();
    host_request_ns_ = gpu.host_per_request_ns;
    host_token_ns_ = gpu.host_per_token_ns;
  }

  std::string host_overhead(const Terms& t) const {
    return std::to_string(t.host_step_ns) + "," + std::to_string(host_request_ns_) + "," +
           std::to_string(host_token_ns_);
  }
  std::string frontend(const Terms& t) const {
    const FrontendModel& f = base_.run.replay.frontend;
    return std::to_string(f.request_ns) + "," + std::to_string(f.prompt_token_ns) + "," +
           std::to_string(f.output_token_ns) + "," + std::to_string(f.step_ns) + "," + std::to_string(t.latency_ns);
  }

  // The serving metrics of one replay with `t`; `as_given` runs the caller's config untouched.
  StatusOr<ServingMetrics> run(const Terms& t, bool as_given = false) {
    ReplayConfig c = base_;
    if (!as_given) {
      if (Status s = set_option(c, "host-overhead", host_overhead(t)); !s.ok()) return s;
      if (Status s = set_option(c, "frontend", frontend(t)); !s.ok()) return s;
    }
    auto built = build_replay(c, trace_);
    if (!built.ok()) return built.status();
    auto summary = built->make_replayer(c)->run();
    if (!summary.ok()) return summary.status();
    ++replays_;
    return summary->serving;
  }

  int replays() const { return replays_; }
  std::int64_t host_step_given() const { return base_.device.effective_gpu().host_step_ns; }
  std::int64_t latency_given() const { return base_.run.replay.frontend.request_latency_ns; }

 private:
  ReplayConfig base_;
  std::string trace_;
  std::int64_t host_request_ns_ = 0, host_token_ns_ = 0;
  int replays_ = 0;
};

// Invariant 2 for a mean that grows with x: `mean(x)` in ms, `target` in ms.
StatusOr<FittedTerm> bisect(const std::function<StatusOr<double>(std::int64_t)>& mean, double target) {
  auto at_lo = mean(0);
  if (!at_lo.ok()) return at_lo.status();
  if (*at_lo >= target) return FittedTerm{0, *at_lo - target < 1e-6 * target};
  auto at_hi = mean(kMaxTermNs);
  if (!at_hi.ok()) return at_hi.status();
  if (*at_hi < target) return FittedTerm{kMaxTermNs, false};
  std::int64_t lo = 0, hi = kMaxTermNs;
  double f_lo = *at_lo, f_hi = *at_hi;
  while (hi - lo > kResolutionNs) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    auto f = mean(mid);
    if (!f.ok()) return f.status();
    (*f < target ? lo : hi) = mid;
    (*f < target ? f_lo : f_hi) = *f;
  }
  return FittedTerm{target - f_lo <= f_hi - target ? lo : hi, true};
}

// Fits `term` of `t` to `target_ms`, the mean of `metric`, with the other term held; `t` takes
// the fitted value.
StatusOr<FittedTerm> fit_term(FitRuns& runs, Terms& t, std::int64_t Terms::*term, LatencyStats ServingMetrics::*metric,
                              double target_ms) {
  auto fitted = bisect(
      [&](std::int64_t ns) -> StatusOr<double> {
        Terms trial = t;
        trial.*term = ns;
        auto m = runs.run(trial);
        if (!m.ok()) return m.status();
        return ((*m).*metric).mean;
      },
      target_ms);
  if (fitted.ok()) t.*term = fitted->ns;
  return fitted;
}

}  // namespace

StatusOr<ServingFit> fit_serving(const ReplayConfig& config, const std::string& trace_path, double mean_ttft_ms,
                                 double mean_tpot_ms) {
  FitRuns runs(config, trace_path);
  ServingFit fit;
  auto before = runs.run({}, /*as_given=*/true);
  if (!before.ok()) return before.status();
  fit.before = *before;
  Terms t{runs.host_step_given(), runs.latency_given()};
  for (fit.rounds = 1; fit.rounds <= kMaxRounds; ++fit.rounds) {
    const Terms previous = t;
    auto host = fit_term(runs, t, &Terms::host_step_ns, &ServingMetrics::tpot_ms, mean_tpot_ms);
    if (!host.ok()) return host.status();
    auto latency = fit_term(runs, t, &Terms::latency_ns, &ServingMetrics::ttft_ms, mean_ttft_ms);
    if (!latency.ok()) return latency.status();
    fit.host_step = *host;
    fit.latency = *latency;
    if (std::llabs(t.host_step_ns - previous.host_step_ns) <= kResolutionNs &&
        std::llabs(t.latency_ns - previous.latency_ns) <= kResolutionNs) {
      break;
    }
  }
  fit.rounds = std::min(fit.rounds, kMaxRounds);
  auto after = runs.run(t);
  if (!after.ok()) return after.status();
  fit.after = *after;
  fit.replays = runs.replays();
  fit.host_overhead = runs.host_overhead(t);
  fit.frontend = runs.frontend(t);
  return fit;
}

}  // namespace kv::replay
