// kvsim report's library: run folders made by tiny replays (caching on and off, and a "measured"
// run whose device reports step times 3% above the prediction), the report's sections, and bad
// input naming the file and line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/sched/scheduler.h"
#include "replay/replayer.h"
#include "reports/gnuplot.h"
#include "reports/report.h"
#include "reports/run_folder.h"
#include "reports/run_reader.h"
#include "sim/sim_device.h"
#include "tests/kvsim_runner.h"

namespace kv::reports {
namespace {

namespace fs = std::filesystem;
using replay::Replayer;
using replay::ReplayOptions;

fs::path scratch() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::temp_directory_path() / ("kvsim_reports_test_" + std::to_string(::getpid())) / info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class VectorSource final : public RequestSource {
 public:
  explicit VectorSource(std::vector<RequestSpec> v) : v_(std::move(v)) {}
  StatusOr<bool> next(RequestSpec* out) override {
    if (i_ >= v_.size()) return false;
    *out = v_[i_++];
    return true;
  }

 private:
  std::vector<RequestSpec> v_;
  std::size_t i_ = 0;
};

// 30 requests sharing a 64-token prefix, 5 ms apart.
std::vector<RequestSpec> requests() {
  std::vector<RequestSpec> out;
  for (int i = 0; i < 30; ++i) {
    RequestSpec r;
    r.id = "q" + std::to_string(i);
    for (int t = 0; t < 64; ++t) r.prompt.push_back(t + 1);
    for (int t = 0; t < 24 + i % 7; ++t) r.prompt.push_back(1000 + 100 * i + t);
    for (int t = 0; t < 6 + i % 5; ++t) r.outputs.push_back(7 + t);
    r.arrival_time_us = 5000LL * i;
    out.push_back(std::move(r));
  }
  return out;
}

// Stands for a GPU: the simulator's plan results with a measured time 3% above its duration.
class MeasuredDevice final : public Device {
 public:
  explicit MeasuredDevice(std::unique_ptr<Device> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "gpu:test"; }
  StepResult execute(const StepPlan& plan) override {
    StepResult r = inner_->execute(plan);
    r.measured_ns = r.duration_ns + r.duration_ns * 3 / 100;
    return r;
  }

 private:
  std::unique_ptr<Device> inner_;
};

void make_run(const fs::path& dir, bool caching, bool measured) {
  SchedulerConfig sc;
  sc.cache.num_blocks = 120;
  sc.cache.enable_caching = caching;
  Scheduler scheduler(sc);
  sim::SimOptions so;
  so.model = find_model_shape("tiny").value();
  auto sim_dev = sim::make_sim_device(so);
  ASSERT_TRUE(sim_dev.ok());
  std::unique_ptr<Device> device = std::move(*sim_dev);
  std::unique_ptr<StepTimePredictor> predictor;
  if (measured) {
    device = std::make_unique<MeasuredDevice>(std::move(device));
    auto p = sim::CostPredictor::create(so);
    ASSERT_TRUE(p.ok());
    predictor = std::move(*p);
  }
  VectorSource source(requests());
  auto folder = RunFolder::create(dir.string(), true);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  Replayer replayer(scheduler, *device, source, ReplayOptions{}, predictor.get());
  replayer.on_step = [&](const StepRecord& r) { (*folder)->add_step(r); };
  replayer.on_request_done = [&](const RequestMetrics& m) { (*folder)->add_request(m); };
  auto summary = replayer.run();
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  const RunConfig config = {{"device", device->name()},
                            {"model", "tiny"},
                            {"prefix_caching", caching ? "on" : "off"},
                            {"block_size", "16"},
                            {"trace_source", "reports_report_test"}};
  ASSERT_TRUE((*folder)->finish(config, *summary, replayer.log(), 0.0).ok());
}

TEST(ReportRuns, ReadsBackWhatTheReplayWrote) {
  const fs::path d = scratch();
  make_run(d / "on", true, false);
  auto run = load_run((d / "on").string());
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->label, "on");
  EXPECT_EQ(run->config_value("prefix_caching"), "on");
  EXPECT_EQ(run->request_rows.size(), 30u);
  EXPECT_EQ(static_cast<std::int64_t>(run->step_rows.size()), run->steps);
  EXPECT_FALSE(run->measured());
  EXPECT_EQ(run->digest.size(), 64u);
  EXPECT_GT(run->hit_rate, 0.4);  // 64 of about 90 prompt tokens are shared
  std::int64_t cached = 0;
  for (const RequestRow& r : run->request_rows) cached += r.cached_tokens;
  EXPECT_EQ(cached, run->hits);
}

// steps.csv rows are the text printf's "%lld" and "%.6f" give, at the extremes of each field.
TEST(ReportRuns, StepRowsAreThePrintfText) {
  const fs::path d = scratch() / "step-rows";
  auto folder = RunFolder::create(d.string(), true);
  ASSERT_TRUE(folder.ok());
  std::string want;
  const double usages[] = {0.0, 0.1234565, 1.0 / 3, 0.9999995, 1.0, -0.0, 12345.678, 1e300};
  const std::int64_t extremes[] = {0, -1, 9, 10, INT64_MAX, INT64_MIN, 1234567890123};
  for (std::size_t i = 0; i < std::size(usages); ++i) {
    StepRecord r;
    const std::int64_t big = extremes[i % std::size(extremes)];
    r.step = big;
    r.start_us = static_cast<std::int64_t>(i);
    r.duration_ns = extremes[(i + 4) % std::size(extremes)];
    r.predicted_ns = 7;
    r.num_requests = static_cast<int>(i) - 3;
    r.running = INT32_MAX;
    r.waiting = INT32_MIN;
    r.kv_usage = usages[i];
    r.evictions_total = big / 3;
    r.counters.kv_slots_read = big;
    (*folder)->add_step(r);
    char row[1024];
    std::snprintf(row, sizeof row, "%lld,%lld,%lld,%lld,%lld,%d,%lld,%lld,%lld,%d,%d,%d,%d,%.6f,%lld,%lld,%lld,%lld\n",
                  static_cast<long long>(r.step), static_cast<long long>(r.start_us),
                  static_cast<long long>(r.duration_ns), static_cast<long long>(r.predicted_ns),
                  static_cast<long long>(r.measured_ns), r.num_requests, static_cast<long long>(r.prefill_tokens),
                  static_cast<long long>(r.decode_tokens), static_cast<long long>(r.cached_tokens), r.running,
                  r.waiting, r.preempted, r.finished, r.kv_usage, static_cast<long long>(r.free_blocks),
                  static_cast<long long>(r.evictions_total), static_cast<long long>(r.counters.tokens_computed),
                  static_cast<long long>(r.counters.kv_slots_read));
    want += row;
  }
  ReplaySummary s;
  replay::DecisionLog log(true);
  ASSERT_TRUE((*folder)->finish({{"device", "sim"}}, s, log, 0.0).ok());
  const std::string steps = read(d / "steps.csv");
  EXPECT_EQ(steps.substr(steps.find('\n') + 1), want);
}

TEST(ReportRuns, HostileRequestIdsRoundTripThroughRequestsCsv) {  // commas, quotes, line breaks
  const fs::path d = scratch() / "hostile";
  auto folder = RunFolder::create(d.string(), true);
  ASSERT_TRUE(folder.ok());
  const std::vector<std::string> ids = {"plain", "a,b", "say \"hi\"", "\"", ",\",\"", "two\nlines", "cr\r\nlf"};
  for (const std::string& id : ids) {
    RequestMetrics m;
    m.id = id;
    m.status = "rejected";
    m.reject_reason = "prompt of " + id + ", too long";
    (*folder)->add_request(m);
  }
  ReplaySummary s;
  replay::DecisionLog log(true);
  ASSERT_TRUE((*folder)->finish({{"device", "sim"}}, s, log, 0.0).ok());
  auto run = load_run(d.string());
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->request_rows.size(), ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(run->request_rows[i].id, ids[i]);
  EXPECT_EQ(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
  EXPECT_EQ(csv_field("line\nbreak"), "\"line\nbreak\"");
  EXPECT_EQ(csv_field("plain"), "plain");
}

TEST(ReportRuns, CachingPairAndSimulatedVsMeasured) {
  const fs::path d = scratch();
  make_run(d / "caching-on", true, false);
  make_run(d / "caching-off", false, false);
  make_run(d / "gpu-on", true, true);
  ReportOptions o;
  o.runs = {(d / "caching-on").string(), (d / "caching-off").string(), (d / "gpu-on").string()};
  o.out_dir = (d / "report").string();
  auto r = write_report(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string md = read(r->markdown_path);
  EXPECT_NE(md.find("caching-on (on) vs caching-off (off): the configurations differ only in prefix caching."),
            std::string::npos);
  EXPECT_NE(md.find("| hit rate (%) |"), std::string::npos);
  EXPECT_NE(md.find("The decision-log digests are equal"), std::string::npos);
  EXPECT_NE(md.find("The hit rates are equal"), std::string::npos);
  EXPECT_NE(md.find("absolute percentage error median 2.9"), std::string::npos) << md;
  EXPECT_NE(md.find("Fidelity target (median <= 5%, p90 <= 10%): met."), std::string::npos);
  EXPECT_NE(md.find("Skipped: none of these run folders has a per-kernel breakdown"), std::string::npos);
  const std::string html = read(r->html_path);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  if (gnuplot_available()) {
    EXPECT_EQ(r->plots.size(), 6u);  // usage, hit rate, 3 CDFs, one scatter
    EXPECT_NE(md.find("![KV-cache usage over time"), std::string::npos);
    EXPECT_NE(html.find("data:image/svg+xml;base64,"), std::string::npos);
    EXPECT_TRUE(fs::exists(d / "report" / "ttft_cdf.png"));
  }
  // The report refuses to overwrite without force.
  auto again = write_report(o);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("is not empty (use --force"), std::string::npos);
}

TEST(ReportRuns, KernelBreakdownWhenPresent) {
  const fs::path d = scratch();
  make_run(d / "run", true, false);
  std::ofstream(d / "run" / "kernels.csv") << "kernel,launches,total_ns\nattention,10,3000000\nqkv_proj,10,1000000\n";
  ReportOptions o;
  o.runs = {(d / "run").string()};
  o.out_dir = (d / "report").string();
  auto r = write_report(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string md = read(r->markdown_path);
  EXPECT_NE(md.find("| attention | 10 | 3.000 | 75.00% |"), std::string::npos) << md;
  EXPECT_NE(md.find("No two runs differ only in prefix caching"), std::string::npos);
  EXPECT_NE(md.find("all runs are simulated"), std::string::npos);
}

TEST(ReportBadInput, NamesTheFileAndLine) {
  const fs::path d = scratch();
  auto none = load_run((d / "nowhere").string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("not a directory"), std::string::npos);
  fs::create_directories(d / "empty");
  auto empty = load_run((d / "empty").string());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("not a run folder (no summary.json"), std::string::npos);

  make_run(d / "run", true, false);
  std::string steps = read(d / "run" / "steps.csv");
  const std::size_t third = steps.find('\n', steps.find('\n') + 1) + 1;  // start of line 3
  steps.insert(third, "x");
  std::ofstream(d / "run" / "steps.csv", std::ios::binary) << steps;
  auto bad_csv = load_run((d / "run").string());
  ASSERT_FALSE(bad_csv.ok());
  EXPECT_NE(bad_csv.status().message().find((d / "run" / "steps.csv").string() + ":3: "), std::string::npos)
      << bad_csv.status().message();

  make_run(d / "run2", true, false);
  std::ofstream(d / "run2" / "summary.json") << "{\"config\": {\n  \"device\": \n}";
  auto bad_json = load_run((d / "run2").string());
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.status().message().find("summary.json: not valid JSON"), std::string::npos);
  EXPECT_NE(bad_json.status().message().find("line 3"), std::string::npos) << bad_json.status().message();
  // A number beyond a double is the JSON library's out_of_range, not a parse_error.
  std::ofstream(d / "run2" / "summary.json") << "{\"config\": {\"device\": 1e400}}";
  auto huge = load_run((d / "run2").string());
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find((d / "run2" / "summary.json").string() + ": not valid JSON: "),
            std::string::npos)
      << huge.status().message();
}

// Found by fuzzing: empty numeric cells of steps.csv, requests.csv and kernels.csv were read as 0.
TEST(ReportBadInput, EmptyNumericCellsAreErrors) {
  const fs::path d = scratch();
  make_run(d / "run", true, false);
  const std::string good_steps = read(d / "run" / "steps.csv");
  std::string steps = good_steps;
  const std::size_t second = steps.find('\n') + 1;  // start of line 2: "0,..." -> ",..."
  steps.erase(second, steps.find(',', second) - second);
  std::ofstream(d / "run" / "steps.csv", std::ios::binary) << steps;
  auto bad = load_run((d / "run").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), (d / "run" / "steps.csv").string() + ":2: column step: '' is not an integer");

  std::ofstream(d / "run" / "steps.csv", std::ios::binary) << good_steps;
  std::ofstream(d / "run" / "kernels.csv") << "kernel,launches,total_ns\nattention,,3000000\n";
  bad = load_run((d / "run").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), (d / "run" / "kernels.csv").string() + ":2: column launches: '' is not an integer");
  fs::remove(d / "run" / "kernels.csv");

  std::string requests = read(d / "run" / "requests.csv");
  const std::size_t comma = requests.find(',', requests.find('\n'));     // after record 2's id
  requests.erase(comma + 1, requests.find(',', comma + 1) - comma - 1);  // its arrival_us
  std::ofstream(d / "run" / "requests.csv", std::ios::binary) << requests;
  bad = load_run((d / "run").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            (d / "run" / "requests.csv").string() + ":2: column arrival_us: '' is not an integer");
}

TEST(ReportCli, ExitsTwoOnBadInput) {
  const fs::path d = scratch();
  const kv::test::KvsimRun r =
      kv::test::run_kvsim(KVSIM_BIN, "report " + (d / "missing").string() + " --out " + (d / "out").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("kvsim report: " + (d / "missing").string() + ": not a directory"), std::string::npos) << r.err;
  const kv::test::KvsimRun sweep = kv::test::run_kvsim(
      KVSIM_BIN,
      "sweep --trace traces/data/sharegpt_sample.kvtrace --capacity 1e4 --policy mru --out " + (d / "sw").string());
  EXPECT_EQ(sweep.status, 2);
  EXPECT_NE(sweep.err.find("unknown policy 'mru'"), std::string::npos) << sweep.err;
}

// `kvsim report` on tables whose rows do not match their header, or with quoting they do not
// allow: exit 2 and one line naming the file, the line and the field.
TEST(ReportCli, MalformedTablesNameFileLineAndField) {
  const fs::path d = scratch();
  make_run(d / "run", true, false);
  const std::string good_requests = read(d / "run" / "requests.csv");
  const std::string requests_csv = (d / "run" / "requests.csv").string();
  auto report = [&] {
    return kv::test::run_kvsim(KVSIM_BIN, "report " + (d / "run").string() + " --out " + (d / "out").string());
  };
  std::string requests = good_requests;
  requests.erase(requests.find(',', requests.find('\n')),
                 requests.find('\n', requests.find('\n') + 1) - requests.find(',', requests.find('\n')));
  std::ofstream(requests_csv, std::ios::binary) << requests;  // line 2 is its id alone
  kv::test::KvsimRun r = report();
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(requests_csv + ": line 2: 1 fields where the header has 12: field arrival_us is missing"),
            std::string::npos)
      << r.err;

  requests = good_requests;
  requests.insert(requests.find('\n', requests.find('\n') + 1), ",extra");  // line 2 ends ",extra"
  std::ofstream(requests_csv, std::ios::binary) << requests;
  r = report();
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(requests_csv + ": line 2: 13 fields where the header has 12: an extra field after reason"),
            std::string::npos)
      << r.err;
  std::ofstream(requests_csv, std::ios::binary) << good_requests;

  // A field of 100,000 nested quotes: steps.csv has no quoting, so the first quote is the error.
  const std::string steps_csv = (d / "run" / "steps.csv").string();
  std::string steps = read(steps_csv);
  steps.insert(steps.find('\n') + 1, std::string(100000, '"'));
  std::ofstream(steps_csv, std::ios::binary) << steps;
  r = report();
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(steps_csv + ": line 2: field step: a quote (this file has no quoting)"), std::string::npos)
      << r.err.substr(0, 300);
  EXPECT_LT(r.err.size(), 1000u);
}

TEST(SweepCli, SequenceModeAddsTheOptimumUnlessToldNot) {
  const fs::path d = scratch();
  const std::string base =
      "sweep --trace traces/data/sharegpt_sample.kvtrace --capacity 2e4 "
      "--policy lru,slru --limit 200 --jobs 2 --no-plot --progress off --out ";
  ASSERT_EQ(kv::test::run_kvsim(KVSIM_BIN, base + (d / "with").string()).status, 0);
  ASSERT_EQ(kv::test::run_kvsim(KVSIM_BIN, base + (d / "without").string() + " --no-optimum").status, 0);
  std::istringstream with(read(d / "with" / "sweep.csv"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(with, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1].rfind("sharegpt_sample,20000,lru,16,sequence,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("sharegpt_sample,20000,slru,16,sequence,", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("sharegpt_sample,20000,optimum,16,sequence,", 0), 0u) << lines[3];
  EXPECT_NE(lines[3].find(",200,0,1251,"), std::string::npos) << "200 requests, pool of 1251 blocks: " << lines[3];
  const std::string without = read(d / "without" / "sweep.csv");
  EXPECT_EQ(std::count(without.begin(), without.end(), '\n'), 3);
  EXPECT_EQ(without.find("optimum"), std::string::npos);
}

TEST(SweepCli, ServingModeFillsLatencyColumns) {
  const fs::path d = scratch();
  const kv::test::KvsimRun r =
      kv::test::run_kvsim(KVSIM_BIN,
                          "sweep --trace traces/data/sharegpt_sample.kvtrace --mode serving "
                          "--capacity 2e4,1e6 --limit 40 --jobs 2 --no-plot --progress off --out " +
                              (d / "sw").string());
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream csv(read(d / "sw" / "sweep.csv"));
  std::string header, small, large;
  std::getline(csv, header);
  std::getline(csv, small);
  std::getline(csv, large);
  EXPECT_NE(header.find(",ttft_p50_ms,ttft_p90_ms,tpot_p50_ms,"), std::string::npos);
  EXPECT_EQ(small.rfind("sharegpt_sample,20000,lru,16,serving,", 0), 0u) << small;
  EXPECT_EQ(large.rfind("sharegpt_sample,1000000,lru,16,serving,", 0), 0u) << large;
  EXPECT_EQ(large.find(",,"), std::string::npos) << "every serving column is filled: " << large;
}

}  // namespace
}  // namespace kv::reports
