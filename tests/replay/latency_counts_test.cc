// LatencyCounts: the counted form gives the very same stats as the list of every sample.
#include "replay/latency_counts.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "replay/serving_metrics.h"

namespace kv::replay {
namespace {

TEST(LatencyCountsTest, ValueAtWalksTheSortedSamples) {
  LatencyCounts c;
  for (std::int64_t v : {30, 10, 30, 20, 30}) c.add(v);
  EXPECT_EQ(c.count(), 5);
  EXPECT_EQ(c.sorted(), (std::vector<std::pair<std::int64_t, std::int64_t>>{{10, 1}, {20, 1}, {30, 3}}));
  EXPECT_EQ(c.value_at(0), 10);
  EXPECT_EQ(c.value_at(1), 20);
  EXPECT_EQ(c.value_at(2), 30);
  EXPECT_EQ(c.value_at(4), 30);
  c.add(5);
  EXPECT_EQ(c.value_at(0), 5);
  EXPECT_EQ(c.value_at(5), 30);
}

// Bit-identical to latency_stats over the samples in milliseconds, whatever the order added.
TEST(LatencyCountsTest, StatsEqualThoseOfTheFullList) {
  LatencyCounts c;
  std::vector<double> ms;
  std::uint64_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto us = static_cast<std::int64_t>((x >> 33) % 977) * 131 + 7;  // repeated values
    c.add(us);
    ms.push_back(static_cast<double>(us) / 1000.0);
  }
  const std::vector<double> ps = {0, 1, 50, 90, 99, 99.9, 100};
  const LatencyStats a = latency_stats(ms, ps), b = latency_stats(c, ps);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.std, b.std);
  EXPECT_EQ(a.median, b.median);
  EXPECT_EQ(a.percentiles, b.percentiles);
  const LatencyStats empty = latency_stats(LatencyCounts{}, ps);
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(empty.percentiles.front().second, 0);
}

}  // namespace
}  // namespace kv::replay
