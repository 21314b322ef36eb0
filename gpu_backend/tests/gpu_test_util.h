// Helpers of the GPU tests: RAII device buffers, host<->device copies of 16-bit values, and
// the comparison of GPU outputs (bf16) with the fp32 CPU reference.
// Tolerance: a bf16 value has an 8-bit significand, so storing an exact result rounds it by at
// most half an ulp, 2^-8 of its magnitude (2^-9 relative to the top of its binade); the
// checks allow |gpu - ref| <= 2^-8 * |ref| + atol, where atol covers fp32 differences of
// summation order and of expf/sincosf against the C library (stated per test).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "gpu_backend/cuda_device.h"
#include "gpu_backend/reference/numerics.h"

namespace kv::gpu::testing {

#define KV_SKIP_WITHOUT_GPU()                           \
  do {                                                  \
    std::string kv_why_;                                \
    if (!::kv::gpu::cuda_device_available(&kv_why_)) {  \
      GTEST_SKIP() << kv_why_ << " (GPU test skipped)"; \
    }                                                   \
  } while (0)

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (cudaMalloc(&ptr_, count * sizeof(T) + 16) != cudaSuccess) ptr_ = nullptr;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return ptr_; }
  void upload(const std::vector<T>& host) {
    ASSERT_EQ(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, count_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  T* ptr_ = nullptr;
  std::size_t count_;
};

inline std::vector<std::uint16_t> to_bf16_bits(const std::vector<float>& x) {
  std::vector<std::uint16_t> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = gpuref::bf16_bits(x[i]);
  return out;
}
inline std::vector<float> from_bf16_bits(const std::vector<std::uint16_t>& x) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = gpuref::bf16_from_bits(x[i]);
  return out;
}

inline void expect_close_bf16(const std::vector<float>& gpu, const std::vector<float>& ref, float atol,
                              const std::string& what) {
  ASSERT_EQ(gpu.size(), ref.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const float tol = std::ldexp(std::fabs(ref[i]), -8) + atol;
    if (!(std::fabs(gpu[i] - ref[i]) <= tol) && ++bad <= 5) {
      ADD_FAILURE() << what << ": index " << i << " gpu " << gpu[i] << " reference " << ref[i] << " tolerance " << tol;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace kv::gpu::testing
