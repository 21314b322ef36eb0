// Calibration with per-kernel-class terms: a synthetic profile made with different efficiencies
// and fixed latencies per class is fitted back to them, and the preset kvsim calibrate writes
// carries them as keys that read back equal.
#include "sim/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/cost_model.h"
#include "sim/hardware_specs.h"
#include "sim/kernel_class.h"
#include "sim/profile_table.h"

namespace kv::sim {
namespace {

ModelShape llama() { return *find_model_shape("llama3-8b"); }

// Each class runs at its own efficiencies; attention and elementwise kernels have a floor.
GpuSpec per_class_truth() {
  GpuSpec t = *find_gpu_spec("h200");
  t.name = "per-class-truth";
  t.compute_efficiency_pct = 58;
  t.bandwidth_efficiency_pct = 73;
  t.gemm_compute_efficiency_pct = 91;
  t.gemm_bandwidth_efficiency_pct = 84;
  t.attention_compute_efficiency_pct = 12;
  t.attention_bandwidth_efficiency_pct = 23;
  t.attention_latency_ns = 35'000;
  t.elementwise_bandwidth_efficiency_pct = 41;
  t.elementwise_latency_ns = 4'000;
  return t;
}

// The rows of a synthetic profile of `truth` running `model`.
std::vector<ProfileRow> synthetic_rows(const GpuSpec& truth, double sigma, const ModelShape& model = llama()) {
  auto table = ProfileTable::parse("synthetic.csv", synthetic_profile_csv(model, truth, sigma, 11));
  EXPECT_TRUE(table.ok()) << table.status().message();
  return table->all_rows();
}

const EfficiencyFit& class_fit(const Calibration& c, KernelClass cls) {
  for (const EfficiencyFit& f : c.classes) {
    if (f.scope == kernel_class_name(cls)) return f;
  }
  ADD_FAILURE() << "no fit for " << kernel_class_name(cls);
  return c.all;
}

TEST(PerClassCalibration, NoiseFreeProfileIsFittedBackExactly) {
  const GpuSpec truth = per_class_truth();
  auto cal = calibrate(synthetic_rows(truth, 0.0), llama(), *find_gpu_spec("h200"), "fitted");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  ASSERT_EQ(cal->classes.size(), 3u);
  for (int k = 0; k < kNumKernelClasses; ++k) {
    const auto cls = static_cast<KernelClass>(k);
    const RooflineTerms want = truth.terms_for(cls);
    const RooflineTerms got = cal->spec.terms_for(cls);
    SCOPED_TRACE(std::string(kernel_class_name(cls)));
    EXPECT_EQ(got.bandwidth_efficiency_pct, want.bandwidth_efficiency_pct);
    EXPECT_NEAR(static_cast<double>(got.latency_ns), static_cast<double>(want.latency_ns), 2.0);
    EXPECT_LT(class_fit(*cal, cls).max_ape, 0.001);
  }
  EXPECT_EQ(cal->spec.gemm_compute_efficiency_pct, 91);
  EXPECT_EQ(cal->spec.attention_compute_efficiency_pct, 12);
  // No elementwise row is compute-bound: its compute efficiency is the base preset's.
  EXPECT_EQ(class_fit(*cal, KernelClass::kElementwise).compute_bound, 0u);
  EXPECT_EQ(cal->spec.elementwise_compute_efficiency_pct, 70);
  // One pair over all rows cannot fit three classes.
  EXPECT_GT(cal->all.median_ape, 0.1);
}

TEST(PerClassCalibration, NoisyProfileIsFittedBackClosely) {
  const GpuSpec truth = per_class_truth();
  auto cal = calibrate(synthetic_rows(truth, 0.03), llama(), *find_gpu_spec("h200"), "fitted");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_NEAR(cal->spec.gemm_compute_efficiency_pct, 91, 3);
  EXPECT_NEAR(cal->spec.gemm_bandwidth_efficiency_pct, 84, 3);
  EXPECT_NEAR(cal->spec.attention_compute_efficiency_pct, 12, 1);
  EXPECT_NEAR(cal->spec.attention_bandwidth_efficiency_pct, 23, 2);
  EXPECT_NEAR(cal->spec.elementwise_bandwidth_efficiency_pct, 41, 2);
  EXPECT_NEAR(static_cast<double>(cal->spec.attention_latency_ns), 35'000, 2'000);
  EXPECT_NEAR(static_cast<double>(cal->spec.elementwise_latency_ns), 4'000, 400);
  EXPECT_LT(class_fit(*cal, KernelClass::kAttention).median_ape, 0.04);
}

TEST(PerClassCalibration, Fp8WeightsAreFittedToTheirOwnTermsAndKeepThe16BitOnes) {
  GpuSpec truth = per_class_truth();
  truth.gemm_fp8_compute_efficiency_pct = 63;
  truth.gemm_fp8_bandwidth_efficiency_pct = 71;
  ModelShape fp8 = llama();
  fp8.dtype = DType::kFp8;  // lm_head stays 16-bit: the gemm class gets rows of both kinds
  auto cal = calibrate(synthetic_rows(truth, 0.0, fp8), fp8, *find_gpu_spec("h200"), "fitted");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  const EfficiencyFit* fp8_fit = nullptr;
  for (const EfficiencyFit& f : cal->classes) {
    if (f.scope == "gemm_fp8") fp8_fit = &f;
  }
  ASSERT_NE(fp8_fit, nullptr);
  EXPECT_LT(fp8_fit->max_ape, 0.001);
  EXPECT_EQ(cal->spec.gemm_fp8_compute_efficiency_pct, 63);
  EXPECT_EQ(cal->spec.gemm_fp8_bandwidth_efficiency_pct, 71);
  // The lm_head rows alone fit the 16-bit terms, which the fp8 fit leaves as they are.
  EXPECT_EQ(cal->spec.gemm_compute_efficiency_pct, 91);
  EXPECT_EQ(cal->spec.gemm_bandwidth_efficiency_pct, 84);
  EXPECT_EQ(fp8_fit->latency_ns, cal->spec.gemm_latency_ns);
}

// A step's GPU time is its forward and lm_head: the step's duration less the host's work, the
// copies and the launches around the graph.
TEST(StepCheck, PricesTheForwardOfAFullGraphStep) {
  const GpuSpec h100 = *find_gpu_spec("h100-sxm");
  const std::vector<StepRow> rows = {
      {true, 1, 1, 1001, 5'600'000}, {true, 64, 64, 64 * 2049, 0}, {false, 1024, 1, 1024, 0}};
  const StepCheck check = check_steps(rows, llama(), h100);
  ASSERT_EQ(check.predicted_ns.size(), 3u);
  CudaGraphConfig graphs;
  graphs.mode = CudaGraphMode::kFullDecodeOnly;
  CostModel cost(llama(), h100, graphs, nullptr);
  StepShape one;
  one.num_tokens = one.num_seqs = one.num_sampled = 1;
  one.kv_tokens_read = one.attended_pairs = 1001;
  one.uniform_decode = true;
  const std::int64_t whole = cost.cost(one).duration_ns;
  // About 5.7 ms in all (CostModelTest.DecodeOnLlama3_8bH100IsBandwidthBound), of which the
  // host, copies and launches are under 0.1 ms; lm_head alone reads 1.05 GB (0.37 ms).
  EXPECT_LT(check.predicted_ns[0], whole);
  EXPECT_GT(check.predicted_ns[0], whole - 100'000);
  EXPECT_GT(check.predicted_ns[1], check.predicted_ns[0]);  // 64 sequences read more KV
  // A prefill of 1024 tokens: 2 * 7.0 G projection and MLP parameters * 1024 = 14.4 TFLOP at
  // 80% of 989 TFLOP/s = 18 ms, plus attention and the one row of logits: compute-bound.
  EXPECT_GT(check.predicted_ns[2], 18'000'000);
  EXPECT_LT(check.predicted_ns[2], 22'000'000);
  // The error is over the rows with a time: |5.6 ms - predicted| / 5.6 ms.
  const double want = std::fabs(static_cast<double>(check.predicted_ns[0]) / 5'600'000 - 1);
  EXPECT_DOUBLE_EQ(check.median_ape, want);
  EXPECT_DOUBLE_EQ(check.max_ape, want);
  // A profile's measured kernel times replace the roofline where it has the kernel.
  auto profile = ProfileTable::parse("p.csv",
                                     "kernel,num_tokens,num_seqs,context_tokens,time_ns\n"
                                     "gate_up_proj,1,0,0,1000000\n");
  ASSERT_TRUE(profile.ok()) << profile.status().message();
  const StepCheck slow = check_steps(rows, llama(), h100, &*profile);
  const std::int64_t roofline_ns = cost.cycles_to_ns(cost.kernel_cycles(Kernel::kGateUpProj, {1, 1, 0}, 0));
  EXPECT_NEAR(static_cast<double>(slow.predicted_ns[0] - check.predicted_ns[0]),
              32.0 * static_cast<double>(1'000'000 - roofline_ns), 100.0);  // each of 32 layers
}

TEST(PerClassCalibration, PresetTextCarriesTheClassKeysAndRoundTrips) {
  auto cal = calibrate(synthetic_rows(per_class_truth(), 0.0), llama(), *find_gpu_spec("h200"), "fitted");
  ASSERT_TRUE(cal.ok());
  const std::string text = calibration_preset_text(*cal, "synthetic.csv");
  EXPECT_NE(text.find("\nattention_compute_efficiency_pct = 12\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ngemm_compute_efficiency_pct = 91\n"), std::string::npos) << text;
  auto back = parse_gpu_spec_text("fitted.gpu", text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  for (int k = 0; k < kNumKernelClasses; ++k) {
    const auto cls = static_cast<KernelClass>(k);
    EXPECT_EQ(back->terms_for(cls).compute_efficiency_pct, cal->spec.terms_for(cls).compute_efficiency_pct);
    EXPECT_EQ(back->terms_for(cls).bandwidth_efficiency_pct, cal->spec.terms_for(cls).bandwidth_efficiency_pct);
    EXPECT_EQ(back->terms_for(cls).latency_ns, cal->spec.terms_for(cls).latency_ns);
  }
  EXPECT_EQ(gpu_spec_to_text(*back, "h200", ""), gpu_spec_to_text(cal->spec, "h200", ""));
}

}  // namespace
}  // namespace kv::sim
