// LatencyCounts: an exact distribution of integer latencies (microseconds) kept as distinct
// values and their counts, for the samples of which there is one per output token (ITL):
// a run of millions of tokens costs one entry per distinct gap, not 8 bytes a token.
// Invariants:
//   1. Exact: count(), value_at(i) and the sums below equal those of the sorted list of every
//      sample added; nothing is approximated.
//   2. sorted() lists (value, count) in increasing value order with count > 0; it is rebuilt
//      after an add(), so reading it between adds costs a sort each time.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kv::replay {

class LatencyCounts {
 public:
  void add(std::int64_t value) {
    ++counts_[value];
    ++count_;
    dirty_ = true;
  }
  // Adds every sample of `other` (a fleet's engines into the fleet).
  void merge(const LatencyCounts& other);
  std::int64_t count() const { return count_; }
  // (value, count), increasing values.
  const std::vector<std::pair<std::int64_t, std::int64_t>>& sorted() const;
  // The i-th smallest sample, 0 <= i < count().
  std::int64_t value_at(std::int64_t i) const;

 private:
  std::unordered_map<std::int64_t, std::int64_t> counts_;  // read only through sorted()
  std::int64_t count_ = 0;
  mutable bool dirty_ = false;
  mutable std::vector<std::pair<std::int64_t, std::int64_t>> sorted_;
  mutable std::vector<std::int64_t> ends_;  // ends_[k]: samples with value <= sorted_[k].first
};

}  // namespace kv::replay
