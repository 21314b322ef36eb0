// CudaDevice end to end; skips without a GPU (gpu_device_errors_test covers that case). With a GPU: the hand-made
// prefix-sharing plans (reference/prefix_scenario.h) with prefix caching on and off give the same final hidden states,
// both match the CPU reference engine, prompt tokens computed equal what the plans say, CUDA-graph replay agrees with
// eager execution, and profiling writes the simulator's CSV. Hybrid layouts (the real scheduler's plans for the tiny
// model with gpt-oss-20b's pattern, reference/hybrid_scenario.h): per-group block tables with null blocks,
// sliding-window and chunked layers, against the CPU reference, caching on against off, graphs against eager; a Mamba
// layer (GpuDeviceMamba: state blocks, align moves, state hits) in modes align and all against the reference and
// against mode none. Tolerance
// on hidden states: relative RMS difference <= 2^-5 and max abs difference <= 0.25 on unit-RMS vectors. Each layer
// stores ~8 intermediate tensors in bf16 (2^-9 relative rounding each) and cuBLAS may pick different kernels (summation
// orders) for different batch sizes, so cache-on and cache-off runs are close, not bit-identical; 2^-5 is 16 bf16
// half-ulps.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "gpu_backend/cuda_device.h"
#include "gpu_backend/reference/hybrid_scenario.h"
#include "gpu_backend/reference/prefix_scenario.h"
#include "gpu_backend/reference/ref_model.h"
#include "gpu_backend/tests/gpu_test_util.h"

namespace kv::gpu {
namespace {

using HiddenLog = std::map<std::pair<RequestId, std::int64_t>, std::vector<float>>;

CudaDeviceOptions scenario_options() {
  CudaDeviceOptions o;
  o.model = "tiny";
  o.seed = 1;
  o.block_size = 4;
  o.num_gpu_blocks = 16;
  o.max_num_seqs = 4;
  o.max_model_len = 32;
  o.max_num_batched_tokens = 64;
  return o;
}

TEST(GpuDevice, PoolLargerThanFreeMemoryNamesBothSizes) {
  KV_SKIP_WITHOUT_GPU();
  CudaDeviceOptions o = scenario_options();
  o.model = "llama3-8b";
  o.block_size = 16;
  o.max_model_len = 1024;
  o.num_gpu_blocks = 100000000;  // 100M blocks of 2 MiB
  StatusOr<std::unique_ptr<Device>> d = make_cuda_device(o);
  ASSERT_FALSE(d.ok());
  const std::string m = d.status().message();
  EXPECT_NE(m.find("needs"), std::string::npos) << m;
  EXPECT_NE(m.find("free"), std::string::npos) << m;
}

struct DeviceRun {
  HiddenLog hidden;
  std::vector<std::int64_t> prompt_tokens;
  std::vector<StepResult> results;
};

DeviceRun run_device(const std::vector<StepPlan>& plans, CudaDeviceOptions o) {
  DeviceRun run;
  o.on_hidden_state = [&](const RequestId& id, std::int64_t pos, const std::vector<float>& h) {
    run.hidden[{id, pos}] = h;
  };
  StatusOr<std::unique_ptr<Device>> d = make_cuda_device(o);
  EXPECT_TRUE(d.ok()) << d.status().message();
  if (!d.ok()) return run;
  for (const StepPlan& p : plans) {
    StepResult r = (*d)->execute(p);
    EXPECT_TRUE(r.violations.empty()) << r.violations.front();
    EXPECT_GE(r.measured_ns, 0);
    EXPECT_EQ(r.duration_ns, r.measured_ns);
    run.prompt_tokens.push_back(r.counters.prompt_tokens_computed);
    run.results.push_back(std::move(r));
  }
  return run;
}

void expect_close_hidden(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double diff2 = 0.0, ref2 = 0.0, max_abs = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    diff2 += d * d;
    ref2 += static_cast<double>(b[i]) * b[i];
    max_abs = std::max(max_abs, std::fabs(d));
  }
  EXPECT_LE(std::sqrt(diff2 / ref2), 1.0 / 32) << what;
  EXPECT_LE(max_abs, 0.25) << what;
}

TEST(GpuDevice, PrefixCachingOnAndOffGiveTheSameHiddenStatesAndPromptCounts) {
  KV_SKIP_WITHOUT_GPU();
  const gpuref::scenario::Scenario s;
  const DeviceRun on = run_device(s.plans(true), scenario_options());
  const DeviceRun off = run_device(s.plans(false), scenario_options());
  EXPECT_EQ(on.prompt_tokens, gpuref::scenario::expected_prompt_tokens(true));
  EXPECT_EQ(off.prompt_tokens, gpuref::scenario::expected_prompt_tokens(false));
  ASSERT_EQ(on.hidden.size(), 12u + 7u + 15u);
  for (const auto& [key, h] : on.hidden) {
    ASSERT_TRUE(off.hidden.count(key));
    expect_close_hidden(h, off.hidden.at(key), key.first + "@" + std::to_string(key.second) + " on vs off");
  }
  // Teacher-forced outputs: exactly the plans' next tokens.
  const std::vector<StepPlan> plans = s.plans(true);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    std::vector<std::pair<RequestId, TokenId>> expected;
    for (const auto& r : plans[i].requests) {
      if (r.samples) expected.emplace_back(r.id, r.next_token);
    }
    EXPECT_EQ(on.results[i].sampled, expected) << "step " << i;
  }
  // Against the CPU reference engine (bf16 emulation, same seed and plans).
  gpuref::RefEngineOptions ro;
  ro.block_size = 4;
  ro.num_blocks = 16;
  ro.max_rows = 4;
  ro.max_blocks_per_row = 8;
  gpuref::RefEngine ref(ro);
  HiddenLog ref_hidden;
  for (const StepPlan& p : plans) {
    StatusOr<gpuref::RefStepOutput> out = ref.execute(p);
    ASSERT_TRUE(out.ok()) << out.status().message();
    std::size_t t = 0;
    const auto h = static_cast<std::size_t>(ro.model.hidden);
    for (const auto& r : p.requests) {
      for (std::size_t j = 0; j < r.token_ids.size(); ++j, ++t) {
        ref_hidden[{r.id, r.num_computed_tokens + static_cast<std::int64_t>(j)}] =
            std::vector<float>(out->final_hidden.begin() + static_cast<std::ptrdiff_t>(t * h),
                               out->final_hidden.begin() + static_cast<std::ptrdiff_t>((t + 1) * h));
      }
    }
  }
  for (const auto& [key, h] : on.hidden) {
    expect_close_hidden(h, ref_hidden.at(key), key.first + "@" + std::to_string(key.second) + " GPU vs CPU reference");
  }
}

// Decode steps of three requests (a uniform-decode batch of 3, padded to 4): graph replay and
// eager execution agree, and the replay is reused across steps.
TEST(GpuDevice, CudaGraphReplayAgreesWithEager) {
  KV_SKIP_WITHOUT_GPU();
  const std::vector<StepPlan> plans = gpuref::scenario::lockstep_decode_plans();
  CudaDeviceOptions eager = scenario_options();
  eager.cudagraph_mode = "NONE";
  CudaDeviceOptions graph = scenario_options();
  graph.cudagraph_capture_sizes = {1, 2, 4, 8};
  const DeviceRun e = run_device(plans, eager);
  const DeviceRun g = run_device(plans, graph);
  ASSERT_EQ(e.hidden.size(), g.hidden.size());
  for (const auto& [key, h] : g.hidden) {
    expect_close_hidden(h, e.hidden.at(key), key.first + "@" + std::to_string(key.second) + " graph vs eager");
  }
  ASSERT_EQ(g.results.size(), 5u);
  EXPECT_EQ(g.results[2].counters.kernels, 1);  // one graph launch, no block-table update
  EXPECT_GT(e.results[2].counters.kernels, 10);
  EXPECT_EQ(g.results[1].counters.tokens_computed, 3);  // padding is not counted
}

TEST(GpuDevice, ProfilingWritesTheSimulatorsCsv) {
  KV_SKIP_WITHOUT_GPU();
  const std::string path = ::testing::TempDir() + "gpu_profile_test.csv";
  std::remove(path.c_str());
  CudaDeviceOptions o = scenario_options();
  o.profile_csv = path;
  o.duration_ns = [](const StepPlan&, std::int64_t) { return std::int64_t{12345}; };
  const gpuref::scenario::Scenario s;
  {
    StatusOr<std::unique_ptr<Device>> d = make_cuda_device(o);
    ASSERT_TRUE(d.ok()) << d.status().message();
    const StepResult r = (*d)->execute(s.plans(true)[0]);
    ASSERT_TRUE(r.violations.empty()) << r.violations.front();
    EXPECT_EQ(r.duration_ns, 12345);
  }
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "kernel,num_tokens,num_seqs,context_tokens,time_ns");
  std::vector<std::string> kernels;
  while (std::getline(in, line)) {
    kernels.push_back(line.substr(0, line.find(',')));
    EXPECT_NE(line.find(",10,1,10,"), std::string::npos) << line;  // 10 tokens, 1 sequence, 10 context tokens
  }
  EXPECT_EQ(kernels,
            (std::vector<std::string>{"slot_mapping", "rmsnorm", "qkv_proj", "rotary", "cache_write", "attention",
                                      "o_proj", "gate_up_proj", "silu_mul", "down_proj", "lm_head"}));
}

HiddenLog reference_hidden(const std::vector<StepPlan>& plans, const std::vector<KvCacheGroupSpec>& groups,
                           int block_size = gpuref::scenario::kHybridBlockSize) {
  gpuref::RefEngineOptions ro;
  ro.block_size = block_size;
  ro.num_blocks = gpuref::scenario::kHybridNumBlocks;
  ro.max_rows = gpuref::scenario::kHybridMaxSeqs;
  ro.max_blocks_per_row = gpuref::scenario::kHybridMaxModelLen / block_size;
  ro.kv_cache_groups = groups;
  gpuref::RefEngine ref(ro);
  HiddenLog hidden;
  const auto h = static_cast<std::size_t>(ro.model.hidden);
  for (const StepPlan& p : plans) {
    StatusOr<gpuref::RefStepOutput> out = ref.execute(p);
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (!out.ok()) return hidden;
    std::size_t t = 0;
    for (const auto& r : p.requests) {
      for (std::size_t j = 0; j < r.token_ids.size(); ++j, ++t) {
        hidden[{r.id, r.num_computed_tokens + static_cast<std::int64_t>(j)}] =
            std::vector<float>(out->final_hidden.begin() + static_cast<std::ptrdiff_t>(t * h),
                               out->final_hidden.begin() + static_cast<std::ptrdiff_t>((t + 1) * h));
      }
    }
  }
  return hidden;
}

CudaDeviceOptions hybrid_options(const std::vector<KvCacheGroupSpec>& groups) {
  CudaDeviceOptions o = scenario_options();
  o.kv_cache_groups = groups;
  o.num_gpu_blocks = gpuref::scenario::kHybridNumBlocks;
  o.max_model_len = gpuref::scenario::kHybridMaxModelLen;
  o.cudagraph_capture_sizes = {1, 2, 4, 8};
  return o;
}

class GpuDeviceHybrid : public ::testing::TestWithParam<int> {};

TEST_P(GpuDeviceHybrid, MatchesTheReferenceWithCachingOnAndOffAndGraphs) {
  KV_SKIP_WITHOUT_GPU();
  const std::vector<KvCacheGroupSpec> groups = gpuref::scenario::tiny_hybrid_groups(GetParam());
  const std::vector<StepPlan> on_plans = gpuref::scenario::hybrid_plans(groups, true);
  const DeviceRun on = run_device(on_plans, hybrid_options(groups));
  const DeviceRun off = run_device(gpuref::scenario::hybrid_plans(groups, false), hybrid_options(groups));
  CudaDeviceOptions eager_options = hybrid_options(groups);
  eager_options.cudagraph_mode = "NONE";
  const DeviceRun eager = run_device(on_plans, eager_options);
  const HiddenLog ref = reference_hidden(on_plans, groups);
  ASSERT_FALSE(on.hidden.empty());
  ASSERT_EQ(on.hidden.size(), ref.size());
  for (const auto& [key, h] : on.hidden) {
    const std::string at = key.first + "@" + std::to_string(key.second);
    ASSERT_TRUE(off.hidden.count(key) && eager.hidden.count(key) && ref.count(key)) << at;
    expect_close_hidden(h, ref.at(key), at + " GPU vs CPU reference");
    expect_close_hidden(h, off.hidden.at(key), at + " caching on vs off");
    expect_close_hidden(h, eager.hidden.at(key), at + " graphs vs eager");
  }
  std::int64_t graph_steps = 0;  // a graph replay is 1 launch (2 with a block-table update)
  for (const StepResult& r : on.results)
    graph_steps += r.counters.tokens_computed > 0 && r.counters.kernels <= 2 ? 1 : 0;
  EXPECT_GT(graph_steps, 0);
}

INSTANTIATE_TEST_SUITE_P(Reaches, GpuDeviceHybrid, ::testing::Values(8, 6, -8, -6),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return (i.param > 0 ? "sliding" : "chunked") +
                                  std::to_string(i.param > 0 ? i.param : -i.param);
                         });

// The tiny model with a Mamba layer (reference/hybrid_scenario.h, 16-token blocks): modes align
// and all (caching on: state hits, align moves copied on the GPU) against the CPU reference,
// against mode none without caching (states from scratch), and graphs against eager.
class GpuDeviceMamba : public ::testing::TestWithParam<MambaCacheMode> {};

TEST_P(GpuDeviceMamba, MatchesTheReferenceAndTheStatesComputedFromScratch) {
  KV_SKIP_WITHOUT_GPU();
  const int block = gpuref::scenario::kMambaBlockSize;
  const std::vector<KvCacheGroupSpec> groups = gpuref::scenario::tiny_mamba_groups(GetParam());
  const std::vector<KvCacheGroupSpec> none_groups = gpuref::scenario::tiny_mamba_groups(MambaCacheMode::kNone);
  const std::vector<StepPlan> plans = gpuref::scenario::hybrid_plans(groups, true, block);
  CudaDeviceOptions o = hybrid_options(groups);
  o.block_size = block;
  const DeviceRun on = run_device(plans, o);
  CudaDeviceOptions none_options = hybrid_options(none_groups);
  none_options.block_size = block;
  const DeviceRun off = run_device(gpuref::scenario::hybrid_plans(none_groups, false, block), none_options);
  o.cudagraph_mode = "NONE";
  const DeviceRun eager = run_device(plans, o);
  const HiddenLog ref = reference_hidden(plans, groups, block);
  ASSERT_FALSE(on.hidden.empty());
  ASSERT_EQ(on.hidden.size(), ref.size());
  for (const auto& [key, h] : on.hidden) {
    const std::string at = key.first + "@" + std::to_string(key.second);
    ASSERT_TRUE(off.hidden.count(key) && eager.hidden.count(key) && ref.count(key)) << at;
    expect_close_hidden(h, ref.at(key), at + " GPU vs CPU reference");
    expect_close_hidden(h, off.hidden.at(key), at + " caching on vs mode none");
    expect_close_hidden(h, eager.hidden.at(key), at + " graphs vs eager");
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, GpuDeviceMamba, ::testing::Values(MambaCacheMode::kAlign, MambaCacheMode::kAll),
                         [](const ::testing::TestParamInfo<MambaCacheMode>& i) { return to_string(i.param); });

TEST(GpuDevice, HybridPlansOnADenseDeviceAreViolationsNotCrashes) {
  KV_SKIP_WITHOUT_GPU();
  const std::vector<KvCacheGroupSpec> groups = gpuref::scenario::tiny_hybrid_groups(8);
  CudaDeviceOptions dense = hybrid_options({});
  StatusOr<std::unique_ptr<Device>> d = make_cuda_device(dense);
  ASSERT_TRUE(d.ok()) << d.status().message();
  const StepResult r = (*d)->execute(gpuref::scenario::hybrid_plans(groups, true).front());
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_NE(r.violations[0].find("KV-cache groups"), std::string::npos) << r.violations[0];
}

}  // namespace
}  // namespace kv::gpu
