// Per-kernel-class roofline terms (sim/kernel_class.h, GpuSpec::terms_for): the preset keys are
// optional and bounded, a preset without them prices every step exactly as the global pair
// does, and each kernel is priced with its class's terms.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/cost_model.h"
#include "sim/hardware_specs.h"
#include "sim/kernel_class.h"

namespace kv::sim {
namespace {

ModelShape llama() { return *find_model_shape("llama3-8b"); }

TEST(KernelClass, EveryKernelHasOneClass) {
  EXPECT_EQ(kernel_class(Kernel::kQkvProj), KernelClass::kGemm);
  EXPECT_EQ(kernel_class(Kernel::kLmHead), KernelClass::kGemm);
  EXPECT_EQ(kernel_class(Kernel::kAttention), KernelClass::kAttention);
  EXPECT_EQ(kernel_class(Kernel::kCacheWrite), KernelClass::kElementwise);
  EXPECT_EQ(kernel_class(Kernel::kSlotMapping), KernelClass::kElementwise);
  EXPECT_EQ(kernel_class_name(KernelClass::kElementwise), "elementwise");
}

TEST(PerClassPresetFile, KeysAreOptionalAndBounded) {
  auto one = parse_gpu_spec_text("x.gpu", "name = x\nbase = h100-sxm\nattention_latency_ns = 54000\n");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->terms_for(KernelClass::kAttention).latency_ns, 54'000);
  EXPECT_EQ(one->terms_for(KernelClass::kAttention).compute_efficiency_pct, 70);  // the global one
  EXPECT_EQ(one->terms_for(KernelClass::kGemm).latency_ns, 0);
  auto over = parse_gpu_spec_text("x.gpu", "name = x\ngemm_bandwidth_efficiency_pct = 101\n");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(), "x.gpu:2: gemm_bandwidth_efficiency_pct: 101 is above the bound 100 percent");
  // A preset without per-class keys over a base without them prints none of them.
  GpuSpec plain = *find_gpu_spec("a100-80gb");
  plain.name = "plain";
  EXPECT_EQ(gpu_spec_to_text(plain, "a100-80gb", "").find("gemm_"), std::string::npos);
  // Over a base with measured kernels, a per-class 0 is written, so it reads back as 0.
  GpuSpec cleared = *find_gpu_spec("h200");
  cleared.name = "cleared";
  cleared.gemm_fp8_compute_efficiency_pct = 0;
  const std::string text = gpu_spec_to_text(cleared, "h200", "");
  EXPECT_NE(text.find("\ngemm_fp8_compute_efficiency_pct = 0\n"), std::string::npos) << text;
  auto back = parse_gpu_spec_text("cleared.gpu", text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->gemm_fp8_compute_efficiency_pct, 0);
  EXPECT_EQ(back->terms_for(KernelClass::kGemm, true).compute_efficiency_pct, cleared.gemm_compute_efficiency_pct);
}

// Steps of every kind the cost model prices.
std::vector<StepShape> shapes() {
  std::vector<StepShape> out;
  for (std::int64_t seqs : {1, 8, 64}) {
    StepShape d;
    d.num_tokens = d.num_seqs = d.num_sampled = seqs;
    d.kv_tokens_read = d.attended_pairs = seqs * 1001;
    d.uniform_decode = true;
    out.push_back(d);
  }
  for (std::int64_t tokens : {16, 512, 8192}) {
    StepShape p;
    p.num_tokens = tokens;
    p.num_seqs = p.num_sampled = 1;
    p.kv_tokens_read = 2048 + tokens;
    p.attended_pairs = tokens * 2048 + tokens * (tokens + 1) / 2;
    p.num_block_ids = tokens / 16;
    out.push_back(p);
  }
  return out;
}

std::vector<std::int64_t> durations(const char* model, const GpuSpec& g, CudaGraphMode mode) {
  CudaGraphConfig graphs;
  graphs.mode = mode;
  CostModel cm(*find_model_shape(model), g, graphs, nullptr);
  std::vector<std::int64_t> out;
  for (const StepShape& s : shapes()) out.push_back(cm.cost(s).duration_ns);
  return out;
}

TEST(PerClassPricing, WithoutClassKeysEveryStepPricesAsTheGlobalPair) {
  for (const char* model : {"llama3-8b", "gpt-oss-20b", "nemotron-h-8b"}) {
    for (CudaGraphMode mode : {CudaGraphMode::kNone, CudaGraphMode::kFullAndPiecewise}) {
      const GpuSpec builtin = *find_gpu_spec("b200");  // a preset without measured kernels
      GpuSpec copy = builtin;
      copy.name = "b200-file";
      auto file = parse_gpu_spec_text("b200-file.gpu", gpu_spec_to_text(copy, "b200", ""));
      ASSERT_TRUE(file.ok());
      // The same pair spelled out per class, with no latency, is the same price too.
      GpuSpec spelled = builtin;
      spelled.gemm_compute_efficiency_pct = spelled.attention_compute_efficiency_pct =
          spelled.elementwise_compute_efficiency_pct = builtin.compute_efficiency_pct;
      spelled.gemm_bandwidth_efficiency_pct = spelled.attention_bandwidth_efficiency_pct =
          spelled.elementwise_bandwidth_efficiency_pct = builtin.bandwidth_efficiency_pct;
      const std::vector<std::int64_t> want = durations(model, builtin, mode);
      EXPECT_EQ(durations(model, *file, mode), want) << model;
      EXPECT_EQ(durations(model, spelled, mode), want) << model;
    }
  }
  // The shipped figure of one qkv_proj launch (sim_cost_model_test's) is unchanged.
  CostModel cm(llama(), *find_gpu_spec("h100-sxm"), CudaGraphConfig{}, nullptr);
  EXPECT_EQ(cm.roofline_cycles(cm.work(Kernel::kQkvProj, {1, 1, 0}, 0)), 35013);
}

TEST(PerClassPricing, EachKernelIsPricedWithItsClassTerms) {
  GpuSpec g = *find_gpu_spec("b200");  // a preset without measured kernels
  CostModel plain(llama(), g, CudaGraphConfig{}, nullptr);
  g.attention_latency_ns = 50'000;
  g.gemm_bandwidth_efficiency_pct = 40;
  CostModel classed(llama(), g, CudaGraphConfig{}, nullptr);
  const KernelQuery one{1, 1, 1000};
  EXPECT_EQ(classed.kernel_cycles(Kernel::kAttention, one, 1000),
            plain.kernel_cycles(Kernel::kAttention, one, 1000) + classed.ns_to_cycles(50'000));
  // qkv_proj of one token is memory-bound: half the bandwidth, twice the cycles (rounded up).
  EXPECT_NEAR(static_cast<double>(classed.kernel_cycles(Kernel::kQkvProj, one, 0)),
              2.0 * static_cast<double>(plain.kernel_cycles(Kernel::kQkvProj, one, 0)), 2.0);
  EXPECT_EQ(classed.kernel_cycles(Kernel::kRmsnorm, one, 0), plain.kernel_cycles(Kernel::kRmsnorm, one, 0));
}

TEST(PerClassPricing, Fp8GemmTermsPriceGemmsWithFp8WeightsOnly) {
  GpuSpec g = *find_gpu_spec("b200");
  ModelShape fp8 = llama();
  fp8.dtype = DType::kFp8;
  const KernelQuery one{1, 1, 1000};
  CostModel plain(fp8, g, CudaGraphConfig{}, nullptr);
  g.gemm_fp8_bandwidth_efficiency_pct = g.bandwidth_efficiency_pct / 2;
  CostModel classed(fp8, g, CudaGraphConfig{}, nullptr);
  CostModel bf16(llama(), g, CudaGraphConfig{}, nullptr);
  CostModel bf16_plain(llama(), *find_gpu_spec("b200"), CudaGraphConfig{}, nullptr);
  // The fp8 projection is memory-bound: half the bandwidth, twice the cycles (rounded up).
  EXPECT_NEAR(static_cast<double>(classed.kernel_cycles(Kernel::kQkvProj, one, 0)),
              2.0 * static_cast<double>(plain.kernel_cycles(Kernel::kQkvProj, one, 0)), 2.0);
  // The LM head stays 16-bit, and a bf16 model's projections ignore the fp8 terms.
  EXPECT_EQ(classed.kernel_cycles(Kernel::kLmHead, one, 0), plain.kernel_cycles(Kernel::kLmHead, one, 0));
  EXPECT_EQ(bf16.kernel_cycles(Kernel::kQkvProj, one, 0), bf16_plain.kernel_cycles(Kernel::kQkvProj, one, 0));
}

}  // namespace
}  // namespace kv::sim
