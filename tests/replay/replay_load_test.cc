// Load control and benchmark-shaped results: the arrival processes of --request-rate (mean
// and dispersion for a fixed seed), --max-concurrency, the overload verdict, and result.json's
// figures recomputed from requests.csv.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/util/percentile.h"
#include "replay/arrivals.h"
#include "replay/capacity_search.h"
#include "replay/grid_sweep.h"
#include "replay/replay_builder.h"
#include "reports/grid_report.h"
#include "reports/result_json.h"
#include "reports/run_folder.h"
#include "traces/trace.h"

namespace kv::replay {
namespace {

namespace fs = std::filesystem;

const char* const kTrace = "traces/data/sharegpt_sample.kvtrace";

// n requests, all stamped at 0, in order.
class CountingSource final : public RequestSource {
 public:
  explicit CountingSource(int n) : n_(n) {}
  StatusOr<bool> next(RequestSpec* out) override {
    if (i_ == n_) return false;
    *out = RequestSpec{};
    out->id = "r" + std::to_string(i_++);
    out->prompt = {1, 2, 3};
    return true;
  }

 private:
  int n_, i_ = 0;
};

// Mean and coefficient of variation of the gaps of `n` arrivals.
std::pair<double, double> gap_stats(ArrivalOptions o, int n) {
  ArrivalSource src(std::make_unique<CountingSource>(n), o);
  RequestSpec r;
  std::vector<double> gaps;
  std::int64_t last = -1;
  while (*src.next(&r)) {
    if (last >= 0) gaps.push_back(static_cast<double>(r.arrival_time_us - last) / 1e6);
    last = r.arrival_time_us;
  }
  double mean = 0, sq = 0;
  for (double g : gaps) mean += g;
  mean /= static_cast<double>(gaps.size());
  for (double g : gaps) sq += (g - mean) * (g - mean);
  return {mean, std::sqrt(sq / static_cast<double>(gaps.size())) / mean};
}

TEST(Arrivals, PoissonGapsHaveTheRequestedMeanAndUnitDispersion) {
  const auto [mean, cv] = gap_stats({4.0, 1.0, 1.0, 7}, 20000);
  EXPECT_NEAR(mean, 0.25, 0.25 * 0.03);
  EXPECT_NEAR(cv, 1.0, 0.03);  // exponential gaps: std == mean
}

TEST(Arrivals, BurstinessSetsTheGammaShape) {
  const auto [mean, cv] = gap_stats({4.0, 4.0, 1.0, 7}, 20000);
  EXPECT_NEAR(mean, 0.25, 0.25 * 0.03);
  EXPECT_NEAR(cv, 0.5, 0.03);  // gamma(k): cv = 1 / sqrt(k)
  const auto bursty = gap_stats({4.0, 0.25, 1.0, 7}, 20000);
  EXPECT_NEAR(bursty.first, 0.25, 0.25 * 0.06);
  EXPECT_NEAR(bursty.second, 2.0, 0.12);
}

TEST(Arrivals, SameSeedSameArrivalsInfinityAllAtZero) {
  ArrivalSource a(std::make_unique<CountingSource>(50), {3.0, 1.0, 1.0, 11});
  ArrivalSource b(std::make_unique<CountingSource>(50), {3.0, 1.0, 1.0, 11});
  ArrivalSource inf(std::make_unique<CountingSource>(50), {std::numeric_limits<double>::infinity(), 1.0, 1.0, 11});
  RequestSpec x, y, z;
  while (*a.next(&x)) {
    ASSERT_TRUE(*b.next(&y));
    ASSERT_TRUE(*inf.next(&z));
    EXPECT_EQ(x.arrival_time_us, y.arrival_time_us);
    EXPECT_EQ(z.arrival_time_us, 0);
  }
}

ReplaySummary replay(ReplayConfig c) {
  c.device.model = find_model_shape("llama3-8b").value();
  c.device.verify = sim::VerifyMode::kOff;
  c.run.replay.keep_decision_text = false;
  auto run = build_replay(c, kTrace);
  EXPECT_TRUE(run.ok()) << run.status().message();
  auto s = run->make_replayer(c)->run();
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

TEST(Overload, AnOverloadedRunIsFlaggedAndAnUnloadedOneIsNot) {
  ReplayConfig c;
  c.run.limit = 400;
  c.device.kv_cache_tokens = 200000;
  c.arrivals.request_rate = 200;  // far beyond what one simulated H100 serves on these prompts
  const ReplaySummary hot = replay(c);
  EXPECT_TRUE(hot.overload.overloaded);
  EXPECT_NE(hot.overload.reason.find("last fifth"), std::string::npos) << hot.overload.reason;
  c.arrivals.request_rate = 0.5;
  const ReplaySummary calm = replay(c);
  EXPECT_FALSE(calm.overload.overloaded) << calm.overload.reason;
}

// An offline batch: every request at t = 0, served one after another, so TTFT rises with the
// position in the queue. The queue only drains: no verdict of growth.
TEST(Overload, AnOfflineBatchIsNotAGrowingQueue) {
  std::vector<std::pair<std::int64_t, std::int64_t>> batch;
  for (std::int64_t i = 0; i < 100; ++i) batch.emplace_back(0, 100'000 + i * 200'000);  // 0.1 s .. 19.9 s
  EXPECT_FALSE(judge_overload(batch, 60000).overloaded) << judge_overload(batch, 60000).reason;
  for (auto& [arrival, ttft] : batch) arrival = 7'000'000;  // all at one later instant
  EXPECT_FALSE(judge_overload(batch, 60000).overloaded);
  EXPECT_FALSE(judge_overload(batch, 1000).overloaded);  // a batch's median TTFT is its size, not an overload
  // The same TTFTs under an open-loop process (one arrival every 0.1 s): the queue grew.
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i].first = static_cast<std::int64_t>(i) * 100'000;
  const OverloadVerdict open = judge_overload(batch, 60000);
  EXPECT_TRUE(open.overloaded);
  EXPECT_NE(open.reason.find("the queue grew for the whole run"), std::string::npos) << open.reason;
}

TEST(Overload, AReplayOfAnOfflineBatchIsNotFlaggedButTheSameLoadOpenLoopIs) {
  ReplayConfig c;
  c.run.limit = 400;
  c.device.kv_cache_tokens = 200000;
  c.arrivals.request_rate = std::numeric_limits<double>::infinity();  // every request at t = 0
  const ReplaySummary batch = replay(c);
  EXPECT_FALSE(batch.overload.overloaded) << batch.overload.reason;
  c.arrivals.request_rate = 200;
  EXPECT_TRUE(replay(c).overload.overloaded);
}

// The most requests in the engine (running + waiting) after any step.
std::int64_t peak_in_flight(ReplayConfig c) {
  c.device.model = find_model_shape("llama3-8b").value();
  c.device.verify = sim::VerifyMode::kOff;
  auto run = build_replay(c, kTrace);
  EXPECT_TRUE(run.ok()) << run.status().message();
  auto replayer = run->make_replayer(c);
  std::int64_t peak = 0;
  replayer->on_step = [&](const StepRecord& r) { peak = std::max<std::int64_t>(peak, r.running + r.waiting); };
  auto s = replayer->run();
  EXPECT_TRUE(s.ok() && s->requests_finished == c.run.limit);
  return peak;
}

TEST(MaxConcurrency, NeverMoreRequestsInFlightThanTheLimit) {
  ReplayConfig c;
  c.run.limit = 200;
  c.device.kv_cache_tokens = 200000;
  c.arrivals.request_rate = std::numeric_limits<double>::infinity();
  c.run.replay.max_concurrency = 8;
  EXPECT_EQ(peak_in_flight(c), 8);
  c.run.replay.max_concurrency = 0;
  EXPECT_GT(peak_in_flight(c), 8);
}

// result.json's figures, recomputed from requests.csv.
TEST(ResultJson, FiguresMatchThePerRequestFile) {
  ReplayConfig c;
  c.run.limit = 300;
  c.device.kv_cache_tokens = 400000;
  c.arrivals.request_rate = 4;
  c.run.replay.metric_percentiles = {50, 99};
  c.run.replay.goodput.ttft_ms = 200;
  auto run = build_replay(c, kTrace);
  ASSERT_TRUE(run.ok()) << run.status().message();
  const fs::path dir = fs::temp_directory_path() / ("kvsim_result_json_" + std::to_string(::getpid()));
  auto folder = reports::RunFolder::create(dir.string(), true);
  ASSERT_TRUE(folder.ok());
  auto replayer = run->make_replayer(c);
  replayer->on_request_done = [&](const RequestMetrics& m) { (*folder)->add_request(m); };
  auto s = replayer->run();
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*folder)->finish(run->description, *s, replayer->log(), 0).ok());

  std::ifstream rf(dir / "result.json");
  const nlohmann::json j = nlohmann::json::parse(rf);
  std::ifstream csv(dir / "requests.csv");
  std::string line;
  std::getline(csv, line);
  std::vector<double> ttft, e2el;
  std::int64_t outputs = 0, inputs = 0, good = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ttft.push_back(std::stod(f[4]) / 1000);
    e2el.push_back(std::stod(f[5]) / 1000);
    inputs += std::stoll(f[6]);
    outputs += std::stoll(f[7]);
    good += std::stod(f[4]) / 1000 <= 200;
  }
  EXPECT_EQ(j["completed"].get<std::int64_t>(), static_cast<std::int64_t>(ttft.size()));
  EXPECT_EQ(j["total_input_tokens"].get<std::int64_t>(), inputs);
  EXPECT_EQ(j["total_output_tokens"].get<std::int64_t>(), outputs);
  const double duration = j["duration"].get<double>();
  EXPECT_NEAR(j["output_throughput"].get<double>(), static_cast<double>(outputs) / duration, 1e-9);
  EXPECT_NEAR(j["request_goodput"].get<double>(), static_cast<double>(good) / duration, 1e-9);
  double mean = 0;
  for (double v : ttft) mean += v;
  EXPECT_NEAR(j["mean_ttft_ms"].get<double>(), mean / static_cast<double>(ttft.size()), 1e-6);
  EXPECT_NEAR(j["median_ttft_ms"].get<double>(), percentile(ttft, 50), 1e-6);
  EXPECT_NEAR(j["p99_e2el_ms"].get<double>(), percentile(e2el, 99), 1e-6);
  for (const char* key : {"date",
                          "endpoint_type",
                          "backend",
                          "label",
                          "model_id",
                          "tokenizer_id",
                          "num_prompts",
                          "request_rate",
                          "burstiness",
                          "max_concurrency",
                          "duration",
                          "completed",
                          "failed",
                          "total_input_tokens",
                          "total_output_tokens",
                          "request_throughput",
                          "request_goodput",
                          "output_throughput",
                          "total_token_throughput",
                          "max_output_tokens_per_s",
                          "max_concurrent_requests",
                          "mean_ttft_ms",
                          "median_ttft_ms",
                          "std_ttft_ms",
                          "p99_ttft_ms",
                          "mean_tpot_ms",
                          "median_tpot_ms",
                          "std_tpot_ms",
                          "p99_tpot_ms",
                          "mean_itl_ms",
                          "median_itl_ms",
                          "std_itl_ms",
                          "p99_itl_ms",
                          "mean_e2el_ms",
                          "median_e2el_ms",
                          "std_e2el_ms",
                          "p99_e2el_ms"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  fs::remove_all(dir);
}

TEST(Capacity, TheRateFoundMeetsTheSloAndTwentyPercentMoreDoesNot) {
  ReplayConfig c;
  c.run.limit = 200;
  c.device.kv_cache_tokens = 400000;
  c.device.verify = sim::VerifyMode::kOff;
  auto slo = parse_slo("ttft-p99=300,tpot-p99=30");
  ASSERT_TRUE(slo.ok());
  auto r = find_capacity(c, kTrace, *slo, CapacityOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_GT(r->rate, 0);
  EXPECT_LE(r->failing_rate / r->rate, 1.02 + 1e-9);
  auto meets = [&](double rate) {
    ReplayConfig at = c;
    at.arrivals.request_rate = rate;
    at.run.replay.metric_percentiles = {99};
    const ReplaySummary s = replay(at);
    return slo_figure(s.serving, (*slo)[0]) <= 300 && slo_figure(s.serving, (*slo)[1]) <= 30;
  };
  EXPECT_TRUE(meets(r->rate));
  EXPECT_FALSE(meets(1.2 * r->rate));
  EXPECT_FALSE(parse_slo("ttft-p101=5").ok());
  for (const char* bad : {"ttft-p99=nan", "ttft-p99=inf", "ttft-p99=1e30", "ttft-p99=0x10", "ttft-p0x10=5"}) {
    EXPECT_FALSE(parse_slo(bad).ok()) << bad;
  }
  EXPECT_EQ(parse_slo("ttft-p99=1e30").status().message(),
            "--slo: 'ttft-p99=1e30': the limit must be from 0.001 to 1e9 ms");
  EXPECT_EQ(parse_slo("tbt-p99=5").status().message(), "--slo: 'tbt-p99=5': metric must be ttft, tpot, itl or e2el");
}

TEST(GridSweep, CrossProductInOrderAndTheSameTableOnAnyNumberOfThreads) {
  ReplayConfig c;
  c.run.limit = 60;
  c.device.kv_cache_tokens = 200000;
  c.device.verify = sim::VerifyMode::kOff;
  auto rate = parse_axis("request-rate=2,8");
  auto block = parse_axis("block-size=16,32");
  ASSERT_TRUE(rate.ok() && block.ok());
  auto points = grid_points(c, {*rate, *block});
  ASSERT_TRUE(points.ok()) << points.status().message();
  ASSERT_EQ(points->size(), 4u);
  EXPECT_EQ((*points)[1].name, "request-rate=2,block-size=32");
  EXPECT_EQ((*points)[2].config.arrivals.request_rate, 8);
  auto one = run_grid(*points, kTrace, 1, {});
  auto two = run_grid(*points, kTrace, 2, {});
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(reports::grid_csv(*points, *one), reports::grid_csv(*points, *two));
  EXPECT_EQ(parse_axis("block-size=16,abc").status().message(), "--vary: --block-size: 'abc' is not an integer");
  EXPECT_FALSE(parse_axis("no-such-option=1").ok());
}

TEST(LoadOptions, BadValuesNameTheOption) {
  ReplayConfig c;
  EXPECT_EQ(set_option(c, "request-rate", "-3").message(),
            "--request-rate: must be a number from 0.0001 to 1e+09 or inf, got '-3'");
  EXPECT_TRUE(set_option(c, "request-rate", "inf").ok());
  EXPECT_TRUE(std::isinf(c.arrivals.request_rate));
  EXPECT_EQ(set_option(c, "goodput", "ttft:abc").message(),
            "--goodput: 'ttft:abc' is not METRIC:MILLISECONDS (ttft, tpot or e2el)");
  EXPECT_EQ(set_option(c, "goodput", "tbt:5").message(), "--goodput: unknown metric 'tbt' (valid: ttft, tpot, e2el)");
  EXPECT_TRUE(set_option(c, "goodput", "ttft:500 tpot:50").ok());
  EXPECT_EQ(c.run.replay.goodput.tpot_ms, 50);
  EXPECT_EQ(set_option(c, "metric-percentiles", "50,101").message(),
            "--metric-percentiles: '101' is not a percentile in (0, 100]");
  EXPECT_EQ(set_option(c, "burstiness", "0").message(), "--burstiness: must be a number from 0.001 to 1000, got '0'");
}

// Found by fuzzing: inf, nan, 1e30 and -1 passed for rates, scales and durations, and overflowed
// arrival times or never arrived. Each is one error naming the option, from set_option or, for
// a field set directly, from validate().
TEST(LoadOptions, NonFiniteAndAbsurdValuesNameTheOption) {
  for (const char* option : {"request-rate", "burstiness", "rate-scale", "overload-ttft-ms"}) {
    for (const char* bad : {"nan", "-inf", "1e30", "-1", "1e-30", "", " 5", "5 ", "0x10"}) {
      ReplayConfig c;
      const Status s = set_option(c, option, bad);
      ASSERT_FALSE(s.ok()) << option << " " << bad;
      EXPECT_EQ(s.message().rfind(std::string("--") + option + ":", 0), 0u) << s.message();
    }
  }
  for (const char* bad : {"inf", "1e30", "-1", "nan"}) {
    ReplayConfig c;
    EXPECT_FALSE(set_option(c, "goodput", std::string("ttft:") + bad).ok()) << bad;
    EXPECT_FALSE(set_option(c, "max-steps", bad).ok()) << bad;
    EXPECT_FALSE(set_option(c, "limit", bad).ok()) << bad;
    EXPECT_FALSE(set_option(c, "kv-events-linger-ms", bad).ok()) << bad;
  }
  const double nan = std::nan("");
  const std::pair<void (*)(ReplayConfig&, double), std::string> fields[] = {
      {[](ReplayConfig& c, double v) { c.arrivals.request_rate = v; }, "--request-rate:"},
      {[](ReplayConfig& c, double v) { c.arrivals.burstiness = v; }, "--burstiness:"},
      {[](ReplayConfig& c, double v) { c.arrivals.rate_scale = v; }, "--rate-scale:"},
      {[](ReplayConfig& c, double v) { c.run.replay.overload_ttft_ms = v; }, "--overload-ttft-ms:"},
      {[](ReplayConfig& c, double v) { c.run.replay.goodput.ttft_ms = v; }, "--goodput:"},
      {[](ReplayConfig& c, double v) { c.device.gpu_memory_utilization = v; }, "--gpu-memory-utilization:"},
  };
  for (const auto& [set, option] : fields) {
    for (double bad : {nan, 1e30}) {
      ReplayConfig c;
      set(c, bad);
      EXPECT_EQ(c.validate().message().rfind(option, 0), 0u) << option << " " << bad << ": " << c.validate().message();
    }
  }
  ReplayConfig c;
  c.arrivals.request_rate = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(c.validate().message().rfind("--request-rate:", 0), 0u);
}

TEST(PoolOptions, AKvCacheOfLessThanOneBlockIsAnError) {
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "kv-cache-tokens", "15").ok());
  EXPECT_EQ(c.validate().message(),
            "--kv-cache-tokens: 15 tokens do not fill one block of --block-size 16: the pool would hold no request");
  ASSERT_TRUE(set_option(c, "block-size", "8").ok());
  EXPECT_TRUE(c.validate().ok());
  EXPECT_FALSE(set_option(c, "kv-cache-tokens", "-5").ok());
  EXPECT_FALSE(set_option(c, "num-blocks", "inf").ok());
}

// Requests "late", "late1", ... at the given times.
class AtTimes final : public RequestSource {
 public:
  explicit AtTimes(std::vector<std::int64_t> us) : us_(std::move(us)) {}
  StatusOr<bool> next(RequestSpec* out) override {
    if (i_ == us_.size()) return false;
    *out = RequestSpec{};
    out->id = i_ == 0 ? "late" : "late" + std::to_string(i_);
    out->prompt = {1, 2, 3};
    out->outputs = std::vector<TokenId>{4};
    out->arrival_time_us = us_[i_++];
    return true;
  }

 private:
  std::vector<std::int64_t> us_;
  std::size_t i_ = 0;
};

// Found by fuzzing: arrival_time_us * 1000 overflowed in the replayer and the request arrived at
// t = 0. An arrival past the trace format's limit is now an error naming the request.
TEST(Arrivals, ArrivalsPastTheLimitAreErrorsNotWrapped) {
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "model", "tiny").ok());
  ASSERT_TRUE(set_option(c, "num-blocks", "64").ok());
  auto run = build_replay(c, std::make_unique<AtTimes>(std::vector<std::int64_t>{std::int64_t{1} << 62}), "0", "test");
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto s = run->make_replayer(c)->run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "request late: arrival time 4611686018427387904 us is beyond 1000000000000000 (about 31 years)");
  // The latest legal arrival replays, and the clock reaches it.
  auto last =
      build_replay(c, std::make_unique<AtTimes>(std::vector<std::int64_t>{trace::kMaxArrivalTimeUs}), "0", "test");
  ASSERT_TRUE(last.ok());
  auto ok = last->make_replayer(c)->run();
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_GE(ok->sim_time_us, trace::kMaxArrivalTimeUs);

  // --rate-scale stretches a trace past the limit: an error, not an overflow.
  ArrivalOptions slow;
  slow.rate_scale = 1e-3;
  ArrivalSource stretched(std::make_unique<AtTimes>(std::vector<std::int64_t>{0, trace::kMaxArrivalTimeUs}), slow);
  RequestSpec r;
  ASSERT_TRUE(stretched.next(&r).ok());
  const StatusOr<bool> far = stretched.next(&r);
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.status().message().find("request late1: arrival time"), std::string::npos) << far.status().message();
  ArrivalOptions tiny_rate;
  tiny_rate.request_rate = 1e-300;
  ArrivalSource never(std::make_unique<CountingSource>(3), tiny_rate);
  ASSERT_TRUE(never.next(&r).ok());  // the first request is at 0
  const StatusOr<bool> second = never.next(&r);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("request r1: arrival time"), std::string::npos) << second.status().message();
}

// Each SLO bound reads the statistic of the metric it names, nothing nearby.
TEST(Capacity, AnSloBoundReadsTheStatisticItNames) {
  ServingMetrics m;
  const auto stats = [](double base) {
    LatencyStats s;
    s.mean = base + 1;
    s.median = base + 2;
    s.percentiles = {{90, base + 3}, {99, base + 4}};
    return s;
  };
  m.ttft_ms = stats(10);
  m.tpot_ms = stats(20);
  m.itl_ms = stats(30);
  m.e2el_ms = stats(40);
  auto slo = parse_slo("ttft-mean=1,tpot-median=1,itl-p90=1,e2el-p99=1,itl-mean=1,e2el-median=1,ttft-p75=1");
  ASSERT_TRUE(slo.ok()) << slo.status().message();
  std::vector<double> figures;
  for (const SloBound& b : *slo) figures.push_back(slo_figure(m, b));
  EXPECT_EQ(figures, (std::vector<double>{11, 22, 33, 44, 31, 42, INFINITY}));  // p75 was not computed
}

TEST(Capacity, OptionsOutsideTheirRangesNameTheOption) {
  EXPECT_TRUE(validate(CapacityOptions()).ok());
  CapacityOptions o;
  o.start_rate = std::numeric_limits<double>::infinity();
  EXPECT_EQ(validate(o).message().rfind("--start-rate:", 0), 0u);
  o = CapacityOptions();
  o.precision = -1;
  EXPECT_EQ(validate(o).message().rfind("--precision:", 0), 0u);
  o = CapacityOptions();
  o.max_probes = 1 << 30;
  EXPECT_EQ(validate(o).message().rfind("--max-probes:", 0), 0u);
}

}  // namespace
}  // namespace kv::replay
