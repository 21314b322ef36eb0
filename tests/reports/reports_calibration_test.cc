// kvsim calibrate's library: a synthetic profile from known efficiencies is fitted back, the
// preset file round-trips, and bad profiles and preset files are named by file and line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "replay/held_out.h"
#include "replay/replay_config.h"
#include "sim/calibration.h"
#include "sim/hardware_specs.h"

namespace kv::sim {
namespace {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir =
      fs::temp_directory_path() / ("kvsim_calibration_test_" + std::to_string(::getpid())) / info->name();
  fs::create_directories(dir);
  return (dir / name).string();
}

// The h100-sxm preset priced with its global pair only (its measured per-class terms cleared),
// so that a truth built from it differs from it by the global efficiencies alone.
sim::GpuSpec h100_global_pair() {
  sim::GpuSpec g = *sim::find_gpu_spec("h100-sxm");
  g.gemm_compute_efficiency_pct = g.gemm_bandwidth_efficiency_pct = 0;
  g.gemm_fp8_compute_efficiency_pct = g.gemm_fp8_bandwidth_efficiency_pct = 0;
  g.attention_compute_efficiency_pct = g.attention_bandwidth_efficiency_pct = 0;
  g.elementwise_compute_efficiency_pct = g.elementwise_bandwidth_efficiency_pct = 0;
  g.gemm_latency_ns = g.attention_latency_ns = g.elementwise_latency_ns = 0;
  return g;
}

sim::GpuSpec truth_spec() {
  sim::GpuSpec t = h100_global_pair();
  t.name = "test-truth";
  t.compute_efficiency_pct = 58;
  t.bandwidth_efficiency_pct = 73;
  return t;
}

TEST(Calibration, RecoversKnownEfficienciesFromANoisyProfile) {
  const ModelShape model = *find_model_shape("llama3-8b");
  const std::string path = scratch("profile.csv");
  std::ofstream(path, std::ios::binary) << synthetic_profile_csv(model, truth_spec(), 0.03, 7);
  auto rows = read_profile(path);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(rows->size(), 245u);
  auto cal = calibrate(*rows, model, h100_global_pair(), "fitted");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_NEAR(cal->all.compute_pct, 58, 2);
  EXPECT_NEAR(cal->all.bandwidth_pct, 73, 2);
  EXPECT_LT(cal->all.median_ape, 0.04);
  EXPECT_GT(cal->base_errors.median_ape, 0.07);  // the uncalibrated preset is off by ~10%
  ASSERT_EQ(cal->classes.size(), 3u);
  EXPECT_EQ(cal->classes[0].scope, "gemm");
  EXPECT_NEAR(cal->classes[0].compute_pct, 58, 3);
  EXPECT_EQ(cal->classes[2].scope, "elementwise");
  EXPECT_EQ(cal->classes[2].compute_bound, 0u);  // memory-bound: compute stays the base's 70%
  EXPECT_EQ(cal->classes[2].compute_pct, 70);
  EXPECT_EQ(cal->spec.name, "fitted");
  EXPECT_EQ(cal->spec.launch_overhead_ns, 4000);

  // Noise-free, the fit is exact.
  std::ofstream(path, std::ios::binary) << synthetic_profile_csv(model, truth_spec(), 0.0, 7);
  auto exact = calibrate(*read_profile(path), model, h100_global_pair(), "fitted");
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->all.compute_pct, 58);
  EXPECT_EQ(exact->all.bandwidth_pct, 73);
}

TEST(Calibration, PresetFileRoundTripsAndLoadsByName) {
  const ModelShape model = *find_model_shape("llama3-8b");
  const std::string profile = scratch("profile.csv");
  std::ofstream(profile, std::ios::binary) << synthetic_profile_csv(model, truth_spec(), 0.01, 3);
  auto cal = calibrate(*read_profile(profile), model, *sim::find_gpu_spec("h100-sxm"), "rt-preset");
  ASSERT_TRUE(cal.ok());
  const std::string text = calibration_preset_text(*cal, "profile.csv");
  EXPECT_EQ(text.rfind("# kvsim GPU preset", 0), 0u);
  auto back = sim::parse_gpu_spec_text("rt.gpu", text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->name, "rt-preset");
  EXPECT_EQ(back->compute_efficiency_pct, cal->spec.compute_efficiency_pct);
  EXPECT_EQ(back->bandwidth_efficiency_pct, cal->spec.bandwidth_efficiency_pct);
  EXPECT_EQ(back->peak_flops, cal->spec.peak_flops);
  // --gpu NAME finds NAME.gpu in the preset search path.
  const std::string dir = scratch("presets-dir");
  fs::create_directories(dir);
  std::ofstream(dir + "/rt-preset.gpu", std::ios::binary) << text;
  std::string file;
  auto found = replay::find_gpu("rt-preset", dir, &file);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(file, dir + "/rt-preset.gpu");
  EXPECT_EQ(found->compute_efficiency_pct, cal->spec.compute_efficiency_pct);
  EXPECT_FALSE(replay::find_gpu("no-such-preset", dir, &file).ok());
}

TEST(Calibration, HeldOutStepTimesMeetTheTargetOnlyWhenCalibrated) {
  sim::GpuSpec fitted = truth_spec();
  fitted.name = "test-fitted";
  fitted.compute_efficiency_pct = 57;
  auto good = replay::held_out_error("traces/data/sharegpt_sample.kvtrace", 40, *find_model_shape("llama3-8b"),
                                     truth_spec(), fitted, 0.02, 1);
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_GT(good->steps, 100);
  EXPECT_LE(good->median_ape, 0.05);
  EXPECT_LE(good->p90_ape, 0.10);
  auto base = replay::held_out_error("traces/data/sharegpt_sample.kvtrace", 40, *find_model_shape("llama3-8b"),
                                     truth_spec(), h100_global_pair(), 0.02, 1);
  ASSERT_TRUE(base.ok());
  EXPECT_GT(base->median_ape, good->median_ape);
}

TEST(CalibrationBadInput, NamesTheFileAndLine) {
  const std::string path = scratch("bad.csv");
  std::ofstream(path, std::ios::binary) << "kernel,num_tokens,num_seqs,context_tokens,time_ns\nqkv_proj,abc,0,0,5\n";
  auto rows = read_profile(path);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find(path + ":2:"), std::string::npos) << rows.status().message();

  auto unknown = sim::parse_gpu_spec_text("x.gpu", "# comment\nname = x\nfoo = 3\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "x.gpu:3: unknown key 'foo'");
  auto negative = sim::parse_gpu_spec_text("x.gpu", "name = x\ncompute_efficiency_pct = -4\n");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().message(), "x.gpu:2: compute_efficiency_pct: '-4' is not a non-negative integer");
  auto builtin = sim::parse_gpu_spec_text("x.gpu", "name = h200\n");
  ASSERT_FALSE(builtin.ok());
  EXPECT_NE(builtin.status().message().find("is a built-in preset"), std::string::npos);
  auto over = sim::parse_gpu_spec_text("x.gpu", "name = y\nbandwidth_efficiency_pct = 150\n");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(), "x.gpu:2: bandwidth_efficiency_pct: 150 is above the bound 100 percent");
  EXPECT_FALSE(sim::parse_gpu_spec_text("x.gpu", "compute_efficiency_pct = 50\n").ok());  // no name
  // Huge figures were accepted (strtoll saturated longer numbers at 2^63 - 1); now each field
  // has a bound and the error names the file, line, key and bound. The inputs are in
  // fuzz/regressions/gpu_preset/.
  auto flops = sim::parse_gpu_spec_text("x.gpu", "name = y\n\npeak_flops = 1000000000000000000000\n");
  ASSERT_FALSE(flops.ok());
  EXPECT_EQ(flops.status().message(),
            "x.gpu:3: peak_flops: 1000000000000000000000 is above the bound 1000000000000000000 FLOP/s");
  auto memory = sim::parse_gpu_spec_text("x.gpu", "name = y\nmemory_bytes = 1125899906842625\n");
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.status().message(),
            "x.gpu:2: memory_bytes: 1125899906842625 is above the bound 1125899906842624 bytes");
  auto at_bound =
      sim::parse_gpu_spec_text("x.gpu", "name = y\nmemory_bytes = 1125899906842624\nhost_step_ns = 1000000000000\n");
  ASSERT_TRUE(at_bound.ok()) << at_bound.status().message();
  EXPECT_EQ(at_bound->memory_bytes, std::int64_t{1} << 50);
  auto exponent = sim::parse_gpu_spec_text("x.gpu", "name = y\nhbm_bytes_per_s = 1e300\n");
  ASSERT_FALSE(exponent.ok());
  EXPECT_EQ(exponent.status().message(), "x.gpu:2: hbm_bytes_per_s: '1e300' is not a non-negative integer");
  // strtoll stopped at a NUL byte and took "5\0garbage" for 5.
  const std::string nul("name = y\nclock_mhz = 5\0garbage\n", 31);
  auto with_nul = sim::parse_gpu_spec_text("x.gpu", nul);
  ASSERT_FALSE(with_nul.ok());
  EXPECT_EQ(with_nul.status().message().rfind("x.gpu:2: clock_mhz: '5", 0), 0u) << with_nul.status().message();
  EXPECT_FALSE(sim::load_gpu_spec_file(scratch("missing.gpu")).ok());
}

}  // namespace
TEST(CalibrationTest, HostTermsFitToHostStepRows) {
  // Rows made from 250 us + 3 us/request + 20 ns/token are fitted back exactly.
  std::vector<sim::HostRow> rows;
  for (std::int64_t seqs : {1, 8, 64, 256}) {
    for (std::int64_t tokens : {seqs, seqs + 512, seqs + 4096})
      rows.push_back({tokens, seqs, 250000 + 3000 * seqs + 20 * tokens});
  }
  sim::HostFit f = sim::fit_host_terms(rows);
  EXPECT_EQ(f.rows, rows.size());
  EXPECT_EQ(f.step_ns, 250000);
  EXPECT_EQ(f.per_request_ns, 3000);
  EXPECT_EQ(f.per_token_ns, 20);
  EXPECT_LT(f.max_ape, 1e-9);
  // One request per row: requests and the constant cannot be told apart; the fit keeps the
  // constant and the tokens.
  std::vector<sim::HostRow> single;
  for (std::int64_t tokens : {1, 100, 1000}) single.push_back({tokens, 1, 100000 + 50 * tokens});
  f = sim::fit_host_terms(single);
  EXPECT_EQ(f.step_ns, 100000);
  EXPECT_EQ(f.per_request_ns, 0);
  EXPECT_EQ(f.per_token_ns, 50);
  // The profile reader keeps host_step rows apart from kernels, and calibrate() sets the terms.
  auto table = sim::ProfileTable::parse("p.csv",
                                        "kernel,num_tokens,num_seqs,context_tokens,time_ns\n"
                                        "qkv_proj,1,0,0,40000\nhost_step,10,2,0,1000\n");
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_EQ(table->num_rows(), 1u);
  ASSERT_EQ(table->host_rows().size(), 1u);
  EXPECT_EQ(table->host_rows()[0].num_seqs, 2);
  EXPECT_EQ(sim::ProfileTable::parse("p.csv", "kernel,num_tokens,num_seqs,context_tokens,time_ns\nhost_step,10,0,0,5\n")
                .status()
                .message(),
            "p.csv:2: column 2 (num_tokens): a host_step row needs num_tokens >= 1, num_seqs >= 1 and time_ns >= 0");
}

}  // namespace kv::sim
