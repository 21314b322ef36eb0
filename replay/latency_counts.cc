#include "replay/latency_counts.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv::replay {

const std::vector<std::pair<std::int64_t, std::int64_t>>& LatencyCounts::sorted() const {
  if (!dirty_) return sorted_;
  sorted_.assign(counts_.begin(), counts_.end());
  std::sort(sorted_.begin(), sorted_.end());
  ends_.clear();
  std::int64_t end = 0;
  for (const auto& [value, n] : sorted_) ends_.push_back(end += n);
  dirty_ = false;
  return sorted_;
}

void LatencyCounts::merge(const LatencyCounts& other) {
  for (const auto& [value, n] : other.sorted()) counts_[value] += n;
  count_ += other.count_;
  dirty_ = dirty_ || other.count_ > 0;
}

std::int64_t LatencyCounts::value_at(std::int64_t i) const {
  KV_CHECK(i >= 0 && i < count_, "sample " << i << " of " << count_);
  sorted();
  const auto k = std::upper_bound(ends_.begin(), ends_.end(), i) - ends_.begin();
  return sorted_[static_cast<std::size_t>(k)].first;
}

}  // namespace kv::replay
