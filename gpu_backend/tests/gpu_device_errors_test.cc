// CudaDevice without a usable GPU (the CI case): bad options and a missing device or driver are
// clear Statuses, never a crash. Runs everywhere the backend builds.
#include <gtest/gtest.h>

#include "gpu_backend/cuda_device.h"

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

}  // namespace
}  // namespace kv::gpu
