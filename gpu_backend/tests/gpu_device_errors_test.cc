// CudaDevice without a usable GPU (the CI case): bad options and a missing device or driver are
// clear Statuses, never a crash. Runs everywhere the backend builds.
#include <gtest/gtest.h>

#include "gpu_backend/cuda_device.h"
#include "model/catalog/model_shape.h"

namespace kv::gpu {
namespace {

CudaDeviceOptions scenario_options() {
  CudaDeviceOptions o;
  o.block_size = 4;
  o.num_gpu_blocks = 16;
  o.max_num_seqs = 4;
  o.max_model_len = 32;
  o.max_num_batched_tokens = 64;
  return o;
}

TEST(GpuDeviceErrors, NoDeviceOrBadOptionsIsAClearStatus) {
  CudaDeviceOptions o = scenario_options();
  o.dtype = "fp8";
  StatusOr<std::unique_ptr<Device>> bad = make_cuda_device(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dtype 'fp8'"), std::string::npos) << bad.status().message();
  o = scenario_options();
  o.model = "gpt-9";
  ASSERT_FALSE(make_cuda_device(o).ok());
  std::string why;
  if (cuda_device_available(&why)) GTEST_SKIP() << "a CUDA device is present: the no-device path is not reachable";
  EXPECT_EQ(why.rfind("no CUDA device", 0), 0u) << why;
  StatusOr<std::unique_ptr<Device>> none = make_cuda_device(scenario_options());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message().rfind("no CUDA device", 0), 0u) << none.status().message();
}

// Hybrid options: groups that do not fit the model are a Status naming the layer; a good
// hybrid layout without a GPU fails like a dense one, with "no CUDA device".
TEST(GpuDeviceErrors, HybridGroupsAreCheckedAndNeedADeviceLikeDenseOnes) {
  const std::vector<KvCacheGroupSpec> gpt_oss = find_model_shape("gpt-oss-20b")->kv_cache_groups(4).value();
  CudaDeviceOptions o = scenario_options();
  o.kv_cache_groups = gpt_oss;  // 24 layers for the 2-layer tiny model
  StatusOr<std::unique_ptr<Device>> bad = make_cuda_device(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("layers.2"), std::string::npos) << bad.status().message();
  o = scenario_options();
  o.model = "gpt-oss-20b";
  o.kv_cache_groups = gpt_oss;
  o.block_size = 16;  // the groups' block size is 4
  bad = make_cuda_device(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("block size"), std::string::npos) << bad.status().message();
  std::string why;
  if (cuda_device_available(&why)) GTEST_SKIP() << "a CUDA device is present: the no-device path is not reachable";
  o.block_size = 4;
  StatusOr<std::unique_ptr<Device>> none = make_cuda_device(o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message().rfind("no CUDA device", 0), 0u) << none.status().message();
}

// Mamba groups are run (a good layout without a GPU fails with "no CUDA device"); speculative
// state blocks and cross-attention groups are refused with a Status naming them.
TEST(GpuDeviceErrors, MambaGroupsAreAcceptedCrossAttentionAndSpeculativeStatesAreNot) {
  ModelShape m = find_model_shape("tiny").value();
  m.layer_types = {AttentionType::kMamba, AttentionType::kFullAttention};
  m.mamba_state_bytes = 2048;
  CudaDeviceOptions o = scenario_options();
  o.block_size = m.attention_block_size(4);
  o.kv_cache_groups = m.kv_cache_groups(4, MambaCacheMode::kAlign, 32, /*num_speculative_blocks=*/2).value();
  StatusOr<std::unique_ptr<Device>> bad = make_cuda_device(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("speculative"), std::string::npos) << bad.status().message();
  ModelShape cross = find_model_shape("tiny").value();
  cross.cross_attention = true;
  o.block_size = 4;
  o.kv_cache_groups = cross.kv_cache_groups(4).value();
  bad = make_cuda_device(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not run by the device"), std::string::npos) << bad.status().message();
  std::string why;
  if (cuda_device_available(&why)) GTEST_SKIP() << "a CUDA device is present: the no-device path is not reachable";
  for (MambaCacheMode mode : {MambaCacheMode::kNone, MambaCacheMode::kAlign, MambaCacheMode::kAll}) {
    o.block_size = m.attention_block_size(4);
    o.kv_cache_groups = m.kv_cache_groups(4, mode, 32).value();
    StatusOr<std::unique_ptr<Device>> none = make_cuda_device(o);
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.status().message().rfind("no CUDA device", 0), 0u)
        << to_string(mode) << ": " << none.status().message();
  }
}

}  // namespace
}  // namespace kv::gpu
