// Percentiles: the one definition kvsim uses for every reported percentile (latencies, trace
// lengths, calibration errors), numpy's default "linear" method:
//   for sorted values v[0..n-1] and p in [0, 100], h = (n - 1) * p / 100,
//   result = v[floor(h)] + (h - floor(h)) * (v[floor(h) + 1] - v[floor(h)]).
// So p = 0 is the minimum, p = 100 the maximum, and the median of an even count is the mean of
// the two middle values. An empty set gives 0. Integer inputs are interpolated in double and
// the result is exact up to double rounding (callers that print integers round it).
// Pure functions; the sorted variant does not sort.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace kv {

template <typename T>
double percentile_of_sorted(const std::vector<T>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double h = static_cast<double>(sorted.size() - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const auto a = static_cast<double>(sorted[lo]);
  const auto b = static_cast<double>(sorted[hi]);
  return a + (h - static_cast<double>(lo)) * (b - a);
}

// Sorts a copy of `values`.
template <typename T>
double percentile(std::vector<T> values, double p) {
  std::sort(values.begin(), values.end());
  return percentile_of_sorted(values, p);
}

}  // namespace kv
