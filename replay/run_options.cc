#include "replay/run_options.h"

#include <cstdio>
#include <string>

namespace kv::replay {

namespace {

Status bad(const std::string& option, const std::string& why) { return Status::error("--" + option + ": " + why); }

std::string bound(double v) {  // 0.001, 1e+09
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Status RunOptions::validate() const {
  const auto outside = [](double v, double lo, double hi) { return !(v >= lo && v <= hi); };
  if (outside(replay.overload_ttft_ms, kMinMs, kMaxMs)) {
    return bad("overload-ttft-ms", "must be from " + bound(kMinMs) + " to " + bound(kMaxMs));
  }
  for (double p : replay.metric_percentiles) {
    if (!(p > 0 && p <= 100)) return bad("metric-percentiles", "each must be in (0, 100]");
  }
  const GoodputSlo& g = replay.goodput;
  for (double ms : {g.ttft_ms, g.tpot_ms, g.e2el_ms}) {  // < 0: no bound
    if (!(ms < 0) && outside(ms, kMinMs, kMaxMs)) {
      return bad("goodput", "each bound must be from " + bound(kMinMs) + " to " + bound(kMaxMs) + " ms");
    }
  }
  if (replay.max_concurrency < 0) return bad("max-concurrency", "must be >= 0");
  return {};
}

}  // namespace kv::replay
