// ReplayConfig's option table: each row's range is stated once and held both when an option is
// parsed and when a config built in code is validated.
#include "replay/replay_config.h"

#include <gtest/gtest.h>

#include <string>

namespace kv::replay {
namespace {

std::string error_of(const ReplayConfig& c) { return c.validate().message(); }

TEST(ReplayConfigRanges, EveryDefaultLiesInsideItsRowsRange) {
  const ReplayConfig defaults;
  ASSERT_TRUE(defaults.validate().ok()) << defaults.validate().message();
  for (const ConfigOption& o : config_options()) {
    if (!o.check) continue;
    EXPECT_TRUE(o.check(defaults).ok()) << o.name << ": " << o.check(defaults).message();
    ReplayConfig round_trip;  // the printed default parses back
    EXPECT_TRUE(set_option(round_trip, o.name, o.get(defaults)).ok()) << o.name << " = " << o.get(defaults);
  }
}

TEST(ReplayConfigRanges, ConfigsBuiltInCodeAreHeldToTheRowsRanges) {
  ReplayConfig c;
  c.scheduler.cache.block_size = 0;
  EXPECT_EQ(error_of(c), "--block-size: must be in 1..1024, got 0");
  c = ReplayConfig();
  c.scheduler.max_num_seqs = 0;
  EXPECT_EQ(error_of(c), "--max-num-seqs: must be in 1..1048576, got 0");
  c = ReplayConfig();
  c.device.gpu_memory_utilization = 1.5;
  EXPECT_EQ(error_of(c), "--gpu-memory-utilization: must be in (0, 1], got 1.5");
  c = ReplayConfig();
  c.arrivals.burstiness = 0;
  EXPECT_EQ(error_of(c), "--burstiness: must be from 0.001 to 1000, got 0");
  c = ReplayConfig();
  c.arrivals.request_rate = -1;
  EXPECT_EQ(error_of(c), "--request-rate: must be 0 or from 0.0001 to 1e+09 or inf, got -1");
  c = ReplayConfig();
  c.run.replay.metric_percentiles = {50, 150};
  EXPECT_EQ(error_of(c), "--metric-percentiles: each must be in (0, 100], got 150");
  c = ReplayConfig();
  c.run.replay.max_concurrency = -1;
  EXPECT_EQ(error_of(c), "--max-concurrency: must be in 0..1073741824, got -1");
}

TEST(ReplayConfigRanges, ParsingAndValidatingAgreeOnTheBounds) {
  ReplayConfig c;
  EXPECT_TRUE(set_option(c, "block-size", "1024").ok());
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  EXPECT_EQ(set_option(c, "block-size", "1025").message(), "--block-size: must be in 1..1024, got 1025");
  EXPECT_TRUE(set_option(c, "request-rate", "inf").ok());
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
}

}  // namespace
}  // namespace kv::replay
