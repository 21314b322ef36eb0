// Fitting the serving terms to a benchmark result (replay/serving_fit.h, replay/bench_result.h):
// a fit recovers the terms a replay was run with from that replay's own figures; a target out
// of reach is reported, not forced; the result reader takes Python's JSON and names bad fields.
#include "replay/serving_fit.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "replay/bench_result.h"
#include "replay/replay_builder.h"

namespace kv::replay {
namespace {

constexpr const char* kTrace = "traces/data/sharegpt_sample.kvtrace";

ReplayConfig config_with(const std::vector<std::pair<std::string, std::string>>& options) {
  ReplayConfig c;
  for (const auto& [name, value] : options) {
    const Status s = set_option(c, name, value);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return c;
}

const std::vector<std::pair<std::string, std::string>> kWorkload = {
    {"model", "llama3-8b"}, {"request-rate", "8"}, {"limit", "60"}, {"verify", "off"}};

ServingMetrics serve(std::vector<std::pair<std::string, std::string>> options) {
  options.insert(options.begin(), kWorkload.begin(), kWorkload.end());
  ReplayConfig c = config_with(options);
  c.run.replay.keep_decision_text = false;
  auto built = build_replay(c, kTrace);
  EXPECT_TRUE(built.ok()) << built.status().message();
  auto summary = built->make_replayer(c)->run();
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  return summary->serving;
}

TEST(ServingFit, RecoversTheTermsARunWasMadeWith) {
  const ServingMetrics truth = serve({{"host-overhead", "3000000,500,0"}, {"frontend", "0,0,0,0,40000000"}});
  auto fit = fit_serving(config_with(kWorkload), kTrace, truth.ttft_ms.mean, truth.tpot_ms.mean);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_TRUE(fit->host_step.reached);
  EXPECT_TRUE(fit->latency.reached);
  // Step times are discrete in the decisions they lead to: the mean TPOT pins the host term to
  // within a few of the bisection's 10 us steps (1%); the latency then absorbs what that
  // residual moves the mean TTFT by (1%).
  EXPECT_NEAR(static_cast<double>(fit->host_step.ns), 3e6, 3e4);
  EXPECT_NEAR(static_cast<double>(fit->latency.ns), 4e7, 4e5);
  EXPECT_NEAR(fit->after.tpot_ms.mean, truth.tpot_ms.mean, 0.01 * truth.tpot_ms.mean);
  EXPECT_NEAR(fit->after.ttft_ms.mean, truth.ttft_ms.mean, 0.01 * truth.ttft_ms.mean);
  // The run as given (the preset's 40 us per step, no front end) is the starting point.
  EXPECT_LT(fit->before.tpot_ms.mean, truth.tpot_ms.mean);
  EXPECT_LT(fit->before.ttft_ms.mean, truth.ttft_ms.mean);
  // The options printed reproduce the fitted run.
  const ServingMetrics again = serve({{"host-overhead", fit->host_overhead}, {"frontend", fit->frontend}});
  EXPECT_EQ(again.tpot_ms.mean, fit->after.tpot_ms.mean);
  EXPECT_EQ(again.ttft_ms.mean, fit->after.ttft_ms.mean);
}

TEST(ServingFit, KeepsTheOtherFrontendAndHostTerms) {
  ReplayConfig c = config_with(kWorkload);
  ASSERT_TRUE(set_option(c, "frontend", "13000,2070,20000,13000").ok());
  ASSERT_TRUE(set_option(c, "host-overhead", "100000,700,9").ok());
  const ServingMetrics given = serve({{"frontend", "13000,2070,20000,13000"}, {"host-overhead", "100000,700,9"}});
  auto fit = fit_serving(c, kTrace, given.ttft_ms.mean * 1.5, given.tpot_ms.mean * 1.2);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->frontend, "13000,2070,20000,13000," + std::to_string(fit->latency.ns));
  EXPECT_EQ(fit->host_overhead, std::to_string(fit->host_step.ns) + ",700,9");
  EXPECT_EQ(fit->before.tpot_ms.mean, given.tpot_ms.mean);
}

TEST(ServingFit, ATargetOutOfReachIsReportedNotForced) {
  auto fit = fit_serving(config_with(kWorkload), kTrace, /*mean_ttft_ms=*/1e-3, /*mean_tpot_ms=*/1e-3);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->host_step.ns, 0);
  EXPECT_FALSE(fit->host_step.reached);
  EXPECT_EQ(fit->latency.ns, 0);
  EXPECT_FALSE(fit->latency.reached);
}

TEST(ServingFit, AnUnreadableTraceIsAnError) {
  auto fit = fit_serving(config_with(kWorkload), "/nonexistent/t.kvtrace", 100, 10);
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("/nonexistent/t.kvtrace"), std::string::npos) << fit.status().message();
}

class BenchResultTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ = std::filesystem::temp_directory_path() / ("kvsim_bench_result_" + std::to_string(getpid()) + ".json");
    std::ofstream(path_) << text;
    return path_.string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_F(BenchResultTest, ReadsVllmKeysAndPythonsNonJsonTokens) {
  const std::string path = write(
      R"({"date": "x", "request_rate": Infinity, "completed": 500, "duration": 68.35, "mean_ttft_ms": 199.42,
          "median_ttft_ms": 177.75, "std_ttft_ms": NaN, "p99_ttft_ms": 461.73, "mean_tpot_ms": 43.07,
          "mean_itl_ms": -Infinity, "generated_texts": ["NaN is text here", "a \"quoted\" Infinity"]})");
  auto r = read_bench_result(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->figure("mean_ttft_ms"), 199.42);
  EXPECT_EQ(r->figure("p99_ttft_ms"), 461.73);
  EXPECT_EQ(r->figure("duration"), 68.35);
  EXPECT_FALSE(r->has("mean_itl_ms"));  // -Infinity reads as absent
  EXPECT_FALSE(r->has("median_tpot_ms"));
  EXPECT_EQ(r->completed.value(), 500);
  EXPECT_FALSE(r->request_rate.has_value());
}

TEST_F(BenchResultTest, BadFilesNameTheFileAndTheKey) {
  std::string path = write(R"({"mean_ttft_ms": 1})");
  EXPECT_EQ(read_bench_result(path).status().message(), path + ": 'mean_tpot_ms' is missing (the fit needs it)");
  path = write(R"({"mean_ttft_ms": 1, "mean_tpot_ms": "fast"})");
  EXPECT_EQ(read_bench_result(path).status().message(), path + ": 'mean_tpot_ms' must be a number, got \"fast\"");
  path = write(R"({"mean_ttft_ms": 1, "mean_tpot_ms": 2, "p99_itl_ms": -3})");
  EXPECT_EQ(read_bench_result(path).status().message(), path + ": 'p99_itl_ms' must be a number >= 0, got -3");
  path = write(R"([1, 2])");
  EXPECT_NE(read_bench_result(path).status().message().find("not a JSON object"), std::string::npos);
  path = write(R"({"mean_ttft_ms": 1,)");
  EXPECT_NE(read_bench_result(path).status().message().find("not valid JSON"), std::string::npos);
  EXPECT_EQ(read_bench_result("/nonexistent/r.json").status().message(), "/nonexistent/r.json: cannot open");
}

TEST(ServingFigure, MapsVllmKeysOntoTheReplaysMetrics) {
  ServingMetrics m;
  m.duration_s = 12.5;
  m.ttft_ms.mean = 1;
  m.tpot_ms.median = 2;
  m.itl_ms.percentiles = {{50, 3}, {99, 4}};
  EXPECT_EQ(serving_figure(m, "duration").value(), 12.5);
  EXPECT_EQ(serving_figure(m, "mean_ttft_ms").value(), 1);
  EXPECT_EQ(serving_figure(m, "median_tpot_ms").value(), 2);
  EXPECT_EQ(serving_figure(m, "p99_itl_ms").value(), 4);
  EXPECT_FALSE(serving_figure(m, "p99_e2el_ms").has_value());  // not computed
  EXPECT_EQ(bench_result_keys().size(), 13u);
}

}  // namespace
}  // namespace kv::replay
