// Grid sweeps on threads: every point's summary is the same whatever the number of worker
// threads (results are kept by index; each point owns its run). Built under ThreadSanitizer
// by the tsan preset (label threads).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "replay/grid_sweep.h"

namespace kv::replay {
namespace {

const char* kTrace = "traces/data/sharegpt_sample.kvtrace";

std::vector<ReplaySummary> run_on(int jobs) {
  ReplayConfig base;
  base.run.limit = 80;
  base.run.replay.keep_decision_text = false;
  std::vector<GridAxis> axes;
  for (const char* text : {"request-rate=4,16", "eviction-policy=lru,lfu"}) {
    auto axis = parse_axis(text);
    EXPECT_TRUE(axis.ok()) << axis.status().message();
    axes.push_back(*axis);
  }
  auto points = grid_points(base, axes);
  EXPECT_TRUE(points.ok()) << points.status().message();
  auto summaries = run_grid(*points, kTrace, jobs, GridHooks{});
  EXPECT_TRUE(summaries.ok()) << summaries.status().message();
  return summaries.ok() ? *summaries : std::vector<ReplaySummary>{};
}

TEST(GridSweep, SameSummariesWhateverTheThreads) {
  const std::vector<ReplaySummary> one = run_on(1), three = run_on(3);
  ASSERT_EQ(one.size(), 4u);
  ASSERT_EQ(three.size(), one.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].digest, three[i].digest) << "point " << i;
    EXPECT_EQ(one[i].serving.ttft_ms.mean, three[i].serving.ttft_ms.mean) << "point " << i;
  }
  EXPECT_NE(one[0].digest, one[2].digest);  // the request rate changes the decisions
}

}  // namespace
}  // namespace kv::replay
