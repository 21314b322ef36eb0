// Replays through the scheduler onto the simulated device: determinism of the decision log,
// accounting of computed prompt tokens, verification on, and a planted fault caught.
#include "replay/replayer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "sim/fault_injection.h"
#include "sim/sim_device.h"
#include "traces/generators.h"
#include "traces/replay_source.h"

namespace kv {
namespace {

namespace fs = std::filesystem;
using namespace kv::replay;

// A ShareGPT-style trace written once for the whole suite.
const std::string& sample_trace() {
  static const std::string path = [] {
    const fs::path p = fs::temp_directory_path() / ("kvsim_replay_test_" + std::to_string(::getpid()) + ".kvtrace");
    trace::TraceHeader h;
    h.source = "replay_test";
    auto w = trace::TraceWriter::create(p.string(), h, /*overwrite=*/true);
    EXPECT_TRUE(w.ok()) << w.status().message();
    trace::ShareGptGenOptions g;
    g.num_requests = 120;
    g.seed = 7;
    g.rate = 40;
    g.max_model_len = 4096;
    auto n = trace::generate_sharegpt(g, *w);
    EXPECT_TRUE(n.ok()) << n.status().message();
    EXPECT_TRUE(w->close().ok());
    static const std::string* to_remove = new std::string(p.string());  // outlives static destruction
    std::atexit([] {
      std::error_code ec;
      fs::remove(*to_remove, ec);
    });
    return p.string();
  }();
  return path;
}

struct RunResult {
  ReplaySummary summary;
  std::string log;
};

RunResult run(bool caching, int num_blocks, sim::VerifyMode verify, std::int64_t budget = 2048,
              Device* device_override = nullptr) {
  auto source = trace::TraceRequestSource::open(sample_trace(), {});
  EXPECT_TRUE(source.ok()) << source.status().message();
  SchedulerConfig sc;
  sc.cache.num_blocks = num_blocks;
  sc.cache.block_size = 16;
  sc.cache.enable_caching = caching;
  sc.cache.max_model_len = 8192;
  sc.max_num_batched_tokens = budget;
  sc.max_num_seqs = 32;
  Scheduler scheduler(sc);
  sim::SimOptions so;
  so.model = find_model_shape("tiny").value();
  so.verify = verify;
  auto dev = sim::make_sim_device(so);
  EXPECT_TRUE(dev.ok());
  ReplayOptions ro;
  ro.check_invariants_every_step = true;
  Replayer replayer(scheduler, device_override ? *device_override : **dev, **source, ro);
  auto summary = replayer.run();
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  return {*summary, replayer.log().text()};
}

TEST(ReplayTest, SameInputsGiveTheSameDecisionLog) {
  RunResult a = run(true, 400, sim::VerifyMode::kFast);
  RunResult b = run(true, 400, sim::VerifyMode::kOff);  // verification does not change decisions
  EXPECT_EQ(a.summary.digest, b.summary.digest);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.summary.requests_finished, 120);
  EXPECT_TRUE(a.summary.violations.empty()) << a.summary.violations.front();
  RunResult c = run(false, 400, sim::VerifyMode::kFast);
  EXPECT_NE(a.summary.digest, c.summary.digest);
}

TEST(ReplayTest, ComputedPromptTokensAreThePromptMinusHits) {
  // A pool big enough that nothing is preempted: every prompt token is either a hit or computed.
  RunResult r = run(true, 4000, sim::VerifyMode::kFull);
  ASSERT_EQ(r.summary.preemptions, 0);
  EXPECT_TRUE(r.summary.violations.empty());
  EXPECT_GT(r.summary.cache.hits, 0);
  EXPECT_EQ(r.summary.prompt_tokens_computed, r.summary.prompt_tokens - r.summary.cache.hits);
  RunResult off = run(false, 4000, sim::VerifyMode::kFast);
  EXPECT_EQ(off.summary.prompt_tokens_computed, off.summary.prompt_tokens);
  EXPECT_EQ(off.summary.output_tokens, r.summary.output_tokens);
}

TEST(ReplayTest, TightPoolPreemptsAndStillVerifiesClean) {
  RunResult r = run(true, 300, sim::VerifyMode::kFull, 4096);
  EXPECT_GT(r.summary.preemptions, 0);
  EXPECT_GT(r.summary.evictions, 0);
  EXPECT_EQ(r.summary.requests_finished + r.summary.requests_rejected, 120);
  EXPECT_TRUE(r.summary.violations.empty()) << r.summary.violations.front();
}

TEST(ReplayTest, PlantedCorruptionIsReported) {
  sim::SimOptions so;
  so.model = find_model_shape("tiny").value();
  so.verify = sim::VerifyMode::kFast;
  auto inner = sim::SimDevice::create(so);
  ASSERT_TRUE(inner.ok());
  sim::FaultInjectingDevice faulty(std::move(*inner));
  // Corrupt a slot of block 1 (the first block handed out, part of the shared system prompt).
  faulty.overwrite_slot(/*step=*/3, /*slot=*/16 + 5, /*fingerprint=*/0xdeadbeef);
  RunResult r = run(true, 400, sim::VerifyMode::kFast, 2048, &faulty);
  ASSERT_FALSE(r.summary.violations.empty());
  EXPECT_NE(r.summary.violations.front().find("slot 21"), std::string::npos) << r.summary.violations.front();
}

}  // namespace
}  // namespace kv
