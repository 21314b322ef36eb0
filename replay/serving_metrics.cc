#include "replay/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/util/percentile.h"

namespace kv::replay {

LatencyStats latency_stats(std::vector<double> v, const std::vector<double>& percentiles) {
  LatencyStats s;
  std::sort(v.begin(), v.end());
  s.count = static_cast<std::int64_t>(v.size());
  if (!v.empty()) {
    double sum = 0;
    for (double x : v) sum += x;
    s.mean = sum / static_cast<double>(v.size());
    double sq = 0;
    for (double x : v) sq += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(sq / static_cast<double>(v.size()));
    s.median = percentile_of_sorted(v, 50);
  }
  for (double p : percentiles) s.percentiles.emplace_back(p, percentile_of_sorted(v, p));
  return s;
}

namespace {
double to_ms(std::int64_t us) { return static_cast<double>(us) / 1000.0; }

// percentile_of_sorted over the samples of `us` in milliseconds, the same arithmetic.
double percentile_of_counts(const LatencyCounts& us, double p) {
  if (us.count() == 0) return 0;
  const double h = static_cast<double>(us.count() - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
  const auto lo = static_cast<std::int64_t>(std::floor(h));
  const std::int64_t hi = std::min(lo + 1, us.count() - 1);
  const double a = to_ms(us.value_at(lo)), b = to_ms(us.value_at(hi));
  return a + (h - static_cast<double>(lo)) * (b - a);
}
}  // namespace

// Sums in increasing order, one addition per sample, as the vector form does after its sort.
LatencyStats latency_stats(const LatencyCounts& us, const std::vector<double>& percentiles) {
  LatencyStats s;
  s.count = us.count();
  if (s.count > 0) {
    double sum = 0;
    for (const auto& [value, n] : us.sorted()) {
      const double x = to_ms(value);
      for (std::int64_t k = 0; k < n; ++k) sum += x;
    }
    s.mean = sum / static_cast<double>(s.count);
    double sq = 0;
    for (const auto& [value, n] : us.sorted()) {
      const double x = to_ms(value);
      for (std::int64_t k = 0; k < n; ++k) sq += (x - s.mean) * (x - s.mean);
    }
    s.std = std::sqrt(sq / static_cast<double>(s.count));
    s.median = percentile_of_counts(us, 50);
  }
  for (double p : percentiles) s.percentiles.emplace_back(p, percentile_of_counts(us, p));
  return s;
}

namespace {
double median_ttft_ms(std::vector<std::int64_t> ttft_us) {
  std::sort(ttft_us.begin(), ttft_us.end());
  return percentile_of_sorted(ttft_us, 50) / 1000.0;
}
}  // namespace

OverloadVerdict judge_overload(const std::vector<std::pair<std::int64_t, std::int64_t>>& arrival_and_ttft_us,
                               double ttft_bound_ms) {
  OverloadVerdict v;
  auto by_arrival = arrival_and_ttft_us;
  std::stable_sort(by_arrival.begin(), by_arrival.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::int64_t> all, first, last;
  const std::size_t n = by_arrival.size(), fifth = n / 5;
  for (std::size_t i = 0; i < n; ++i) {
    all.push_back(by_arrival[i].second);
    if (i < fifth) first.push_back(by_arrival[i].second);
    if (i >= n - fifth) last.push_back(by_arrival[i].second);
  }
  char buf[256];
  // Only an open-loop arrival process can outrun the server: in an offline batch (every request
  // at one instant, t = 0 as benchmark_prefix_caching.py sends them) a later TTFT is a later
  // place in one queue that only drains, and its median measures the batch, not an overload.
  if (n == 0 || by_arrival.front().first == by_arrival.back().first) return v;
  // The same when the last fifth arrived at the instant the first fifth did.
  if (fifth >= 5 && by_arrival[n - fifth].first > by_arrival[fifth - 1].first) {
    const double a = median_ttft_ms(first), b = median_ttft_ms(last);
    if (b >= 1000 && b >= 4 * a) {
      std::snprintf(buf, sizeof buf,
                    "median TTFT of the last fifth of requests is %.1f s, %.1fx that of the first fifth (%.1f s): "
                    "the queue grew for the whole run",
                    b / 1000, a > 0 ? b / a : 0.0, a / 1000);
      return {true, buf};
    }
  }
  if (ttft_bound_ms > 0) {
    const double m = median_ttft_ms(all);
    if (m > ttft_bound_ms) {
      std::snprintf(buf, sizeof buf, "median TTFT is %.1f s, above the bound of %.1f s", m / 1000,
                    ttft_bound_ms / 1000);
      return {true, buf};
    }
  }
  return v;
}

}  // namespace kv::replay
