// Hybrid models above the core: presets and their groups, the scheduler over several groups,
// `kvsim replay --model gpt-oss-20b` end to end (per-group figures, verification on), and the
// reduction check: with a window beyond every sequence, the windowed path gives the hit rate
// of the dense twin.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "model/catalog/model_shape.h"
#include "replay/replay_builder.h"
#include "tests/kvsim_runner.h"
#include "traces/replay_source.h"

namespace kv {
namespace {

namespace fs = std::filesystem;
using namespace kv::replay;

const char* kTrace = "traces/data/sharegpt_sample.kvtrace";

TEST(HybridPresets, GptOss20bHasTwoGroupsOfTwelveLayers) {
  const ModelShape m = *find_model_shape("gpt-oss-20b");
  EXPECT_TRUE(m.is_hybrid());
  EXPECT_EQ(m.num_layers_of(AttentionType::kSlidingWindow), 12);
  EXPECT_EQ(m.layer_type(0), AttentionType::kSlidingWindow);
  EXPECT_EQ(m.layer_type(1), AttentionType::kFullAttention);
  auto groups = m.kv_cache_groups(16);
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ(describe((*groups)[0].spec), "sliding_window(128)");
  EXPECT_EQ(describe((*groups)[1].spec), "full");
  // A page: 16 tokens * 8 KV heads * (64 + 64) * 2 bytes; a group's block over 12 layers.
  EXPECT_EQ((*groups)[0].spec.page_size_bytes(), 16 * 8 * 128 * 2);
  EXPECT_EQ((*groups)[1].group_page_size_bytes, 12 * 16 * 8 * 128 * 2);
}

TEST(HybridPresets, GemmaAndScoutGroups) {
  auto gemma = find_model_shape("gemma-3-27b")->kv_cache_groups(16);
  ASSERT_TRUE(gemma.ok()) << gemma.status().message();
  // 52 sliding and 10 full layers: group size 10, six sliding groups (the last padded), one full.
  EXPECT_EQ(gemma->size(), 7u);
  auto scout = find_model_shape("llama-4-scout")->kv_cache_groups(16);
  ASSERT_TRUE(scout.ok()) << scout.status().message();
  EXPECT_EQ(scout->size(), 4u);  // 36 chunked, 12 full: group size 12
  EXPECT_FALSE(find_model_shape("llama3-8b")->is_hybrid());
  EXPECT_FALSE(find_model_shape("gpt-oss-20b-dense")->is_hybrid());
  EXPECT_EQ(with_sliding_window(*find_model_shape("gpt-oss-20b"), 4096).sliding_window, 4096);
}

// The trace's requests, every one arriving at time 0: the schedule then does not depend on
// the cost model's step times (which differ between a hybrid model and its dense twin: twice
// the block ids, no cascade attention).
class AllAtOnce : public RequestSource {
 public:
  explicit AllAtOnce(std::unique_ptr<RequestSource> inner) : inner_(std::move(inner)) {}
  StatusOr<bool> next(RequestSpec* out) override {
    auto more = inner_->next(out);
    if (more.ok() && *more) out->arrival_time_us = 0;
    return more;
  }

 private:
  std::unique_ptr<RequestSource> inner_;
};

ReplaySummary replay(const std::string& model, int sliding_window, std::int64_t limit, bool all_at_once = false) {
  ReplayConfig c;
  EXPECT_TRUE(set_option(c, "model", model).ok());
  EXPECT_TRUE(set_option(c, "sliding-window", std::to_string(sliding_window)).ok());
  c.run.limit = limit;
  c.device.kv_cache_tokens = 4'000'000;  // no eviction: hits depend only on what was computed
  c.device.verify = sim::VerifyMode::kFast;
  c.run.replay.keep_decision_text = false;
  trace::ReplaySourceOptions so;
  so.limit = limit;
  auto source = trace::TraceRequestSource::open(kTrace, so);
  EXPECT_TRUE(source.ok()) << source.status().message();
  if (!source.ok()) return {};
  const trace::TraceHeader header = (*source)->header();
  std::unique_ptr<RequestSource> requests = std::move(source).value();
  if (all_at_once) requests = std::make_unique<AllAtOnce>(std::move(requests));
  auto run = build_replay(c, std::move(requests), header.hash_seed, header.source);
  EXPECT_TRUE(run.ok()) << run.status().message();
  if (!run.ok()) return {};
  auto summary = run->make_replayer(c)->run();
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  return summary.ok() ? *summary : ReplaySummary{};
}

TEST(HybridReplay, WindowBeyondEverySequenceReducesToTheDenseTwin) {
  const ReplaySummary hybrid = replay("gpt-oss-20b", 1 << 20, 200, /*all_at_once=*/true);
  const ReplaySummary dense = replay("gpt-oss-20b-dense", 0, 200, /*all_at_once=*/true);
  EXPECT_TRUE(hybrid.violations.empty()) << hybrid.violations.front();
  ASSERT_EQ(hybrid.groups.size(), 2u);
  EXPECT_TRUE(dense.groups.empty());
  EXPECT_GT(dense.cache.hits, 0);
  EXPECT_EQ(hybrid.cache.hits, dense.cache.hits);
  EXPECT_EQ(hybrid.cache.queries, dense.cache.queries);
  EXPECT_EQ(hybrid.admitted_hit_tokens, dense.admitted_hit_tokens);
  EXPECT_DOUBLE_EQ(hybrid.hit_rate, dense.hit_rate);
  // Both groups reuse every hit block: nothing falls out of a window this wide.
  EXPECT_EQ(hybrid.groups[0].hit_tokens, hybrid.groups[1].hit_tokens);
}

TEST(HybridReplay, TheRealWindowDropsBlocks) {
  const ReplaySummary s = replay("gpt-oss-20b", 0, 200);
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(s.groups[0].spec, "sliding_window(128)");
  // The sliding group holds at most a window's worth of blocks per request.
  EXPECT_LT(s.groups[0].peak_blocks_in_use, s.groups[1].peak_blocks_in_use);
  EXPECT_LE(s.groups[0].hit_tokens, s.groups[1].hit_tokens);
}

test::KvsimRun run_kvsim(const std::string& args) { return test::run_kvsim(KVSIM_BIN, args); }

TEST(HybridReplay, CliReplaysGptOss20bWithPerGroupFigures) {
  const fs::path out = fs::temp_directory_path() / ("kvsim_hybrid_cli_" + std::to_string(::getpid()));
  fs::remove_all(out);
  test::KvsimRun o = run_kvsim("replay --model gpt-oss-20b --trace " + std::string(kTrace) +
                               " --verify fast --progress off --out " + out.string());
  ASSERT_EQ(o.status, 0) << o.output();
  EXPECT_NE(o.output().find("no violations"), std::string::npos) << o.output();
  EXPECT_NE(o.output().find("group 0 sliding_window(128)"), std::string::npos) << o.output();
  EXPECT_NE(o.output().find("group 1 full"), std::string::npos) << o.output();
  std::ifstream in(out / "summary.json");
  std::stringstream json;
  json << in.rdbuf();
  EXPECT_NE(json.str().find("\"kv_cache_groups\""), std::string::npos);
  EXPECT_NE(json.str().find("\"peak_blocks_in_use\""), std::string::npos);
  std::ifstream log(out / "decisions.log");
  std::string first;
  std::getline(log, first);
  EXPECT_NE(first.find(" groups=["), std::string::npos) << first;
  fs::remove_all(out);
}

TEST(HybridReplay, SlidingWindowOptionIsInTheTable) {
  ReplayConfig c;
  EXPECT_TRUE(set_option(c, "sliding-window", "512").ok());
  EXPECT_EQ(c.device.sliding_window, 512);
  EXPECT_FALSE(set_option(c, "sliding-window", "-1").ok());
  EXPECT_TRUE(set_option(c, "model", "gpt-oss-20b").ok());
  EXPECT_EQ(c.effective_model().sliding_window, 512);
  EXPECT_TRUE(c.validate().ok());
  c.device.kind = DeviceKind::kGpu;  // the CUDA backend runs hybrid models (per-group block tables)
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  c.device.kind = DeviceKind::kSim;
  EXPECT_TRUE(set_option(c, "model", "llama3-8b").ok());
  EXPECT_EQ(c.validate().message(), "--sliding-window: model llama3-8b has no sliding-window layer");
}

// A hybrid model on the CUDA device: without a GPU (or without CUDA in this build) the run
// stops with one clear error and a normal non-zero exit, never a crash; with one it runs.
TEST(HybridReplay, CliHybridOnTheGpuDeviceRunsOrSaysWhyNot) {
  const fs::path out = fs::temp_directory_path() / ("kvsim_hybrid_gpu_" + std::to_string(::getpid()));
  fs::remove_all(out);
  test::KvsimRun o = run_kvsim("replay --model gpt-oss-20b --device gpu --limit 3 --trace " + std::string(kTrace) +
                               " --progress off --out " + out.string());
  const bool no_gpu = o.output().find("--device gpu: no CUDA device: ") != std::string::npos;
  const bool no_cuda = o.output().find("this kvsim was built without CUDA") != std::string::npos;
  if (no_gpu || no_cuda) {
    EXPECT_GT(o.status, 0) << o.output();  // an exit code, not a signal (-1)
  } else {
    EXPECT_EQ(o.status, 0) << o.output();
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace kv
